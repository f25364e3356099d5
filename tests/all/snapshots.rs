//! Sessions as snapshots (docs/mcp.md, "Forking a session"): a session's interpreter
//! state taken below the language and written into fresh instances.

use std::sync::Arc;

use runbox::service::{RunRequest, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

async fn runbox_of(runtimes: &[&str]) -> Arc<Runbox> {
    Arc::new(
        crate::common::own_runbox(RunboxOptions {
            only: runtimes.iter().map(|r| r.to_string()).collect(),
            ..crate::common::options()
        })
        .await,
    )
}

/// Runs `code` in session `id`: its stdout, and it must have exited 0.
async fn say(runbox: &Runbox, id: &str, code: &str) -> String {
    let outcome = runbox
        .run(
            RunRequest {
                code: code.into(),
                session_id: Some(id.into()),
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .unwrap_or_else(|e| panic!("{code}: {e}"));
    let stdout = String::from_utf8_lossy(&outcome.output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&outcome.output.stderr).into_owned();
    assert_eq!(
        outcome.exit_code,
        Some(0),
        "{code}: {stdout}{stderr}{:?}",
        outcome.error
    );
    stdout
}

/// The parent, its children and a fork of a fork each change and print their own state.
async fn forks_live_apart(runtime: &str, set: &str, add: &str, show: &str) {
    let runbox = runbox_of(&[runtime]).await;
    let parent = runbox.create_session(runtime).await.unwrap().session_id;
    say(&runbox, &parent, set).await;
    let children = runbox.fork_session(&parent, 2).await.unwrap();
    assert_eq!(children.len(), 2);
    let (a, b) = (&children[0].session_id, &children[1].session_id);
    assert_ne!(a, b);
    say(&runbox, a, add).await;
    let grandchild = runbox
        .fork_session(a, 1)
        .await
        .unwrap()
        .remove(0)
        .session_id;
    say(&runbox, &grandchild, add).await;
    say(&runbox, &parent, add).await;
    say(&runbox, &parent, add).await;
    say(&runbox, &parent, add).await;
    assert_eq!(say(&runbox, &parent, show).await, "4\n", "parent");
    assert_eq!(say(&runbox, a, show).await, "2\n", "first child");
    assert_eq!(say(&runbox, b, show).await, "1\n", "second child");
    assert_eq!(
        say(&runbox, &grandchild, show).await,
        "3\n",
        "fork of a fork"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_forks_live_apart() {
    forks_live_apart(
        "javascript",
        "var n = 1; const kept = [n]",
        "n += 1; kept.push(n)",
        "console.log(n)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typescript_forks_live_apart() {
    forks_live_apart(
        "typescript",
        "var n: number = 1;",
        "n += 1;",
        "console.log(n)",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn shell_forks_live_apart() {
    forks_live_apart("shell", "n=1", "n=$((n + 1))", "echo $n").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_forks_live_apart() {
    forks_live_apart(
        "python",
        "n = 1\nkept = [n]",
        "n += 1\nkept.append(n)",
        "print(n)",
    )
    .await;
}
