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

/// A new session of `runtime` in which `code` ran: its id.
async fn session_after(runbox: &Runbox, runtime: &str, code: &str) -> String {
    let id = runbox.create_session(runtime).await.unwrap().session_id;
    say(runbox, &id, code).await;
    id
}

/// Why forking session `id` into `count` copies is refused (it must be).
async fn refused_fork(runbox: &Runbox, id: &str, count: usize) -> String {
    match runbox.fork_session(id, count).await {
        Ok(_) => panic!("forking {id} into {count} was not refused"),
        Err(e) => e.to_string(),
    }
}

/// The parent, its children and a fork of a fork each change and print their own state.
async fn forks_live_apart(runtime: &str, set: &str, add: &str, show: &str) {
    let runbox = runbox_of(&[runtime]).await;
    let parent = session_after(&runbox, runtime, set).await;
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
    // A later fork of the parent has what it wrote since its first.
    let late = runbox.fork_session(&parent, 1).await.unwrap().remove(0);
    assert_eq!(
        say(&runbox, &late.session_id, show).await,
        "4\n",
        "a later fork"
    );
    say(&runbox, &late.session_id, add).await;
    assert_eq!(
        say(&runbox, &parent, show).await,
        "4\n",
        "parent after a later fork"
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
async fn python_forks_live_apart() {
    forks_live_apart(
        "python",
        "n = 1\nkept = [n]",
        "n += 1\nkept.append(n)",
        "print(n)",
    )
    .await;
}

/// State past the interpreter's start-up size (a 32 MB array, in memory the session grew
/// into, which copies share until they write) is copied as exactly as a small variable.
#[tokio::test(flavor = "multi_thread")]
async fn python_forks_of_a_large_array_live_apart() {
    forks_live_apart(
        "python",
        "import numpy as np\nbig = np.ones(4_000_000)",
        "big += 1",
        "print(int(big[-1]) if big.min() == big.max() else 'torn')",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn javascript_forks_of_a_large_array_live_apart() {
    forks_live_apart(
        "javascript",
        "var big = new Float64Array(4_000_000).fill(1)",
        "big.fill(big[0] + 1)",
        "console.log(big[0] === big[2_000_000] && big[0] === big[3_999_999] ? big[0] : 'torn')",
    )
    .await;
}

/// As after `os.fork`, python re-seeds `random` in each copy: the copies draw apart.
#[tokio::test(flavor = "multi_thread")]
async fn python_forks_draw_different_random_numbers() {
    let runbox = runbox_of(&["python"]).await;
    let parent = session_after(&runbox, "python", "import random\nrandom.seed(7)").await;
    let children = runbox.fork_session(&parent, 2).await.unwrap();
    let draw = "print(random.random())";
    let mut drawn = vec![say(&runbox, &parent, draw).await];
    for child in &children {
        drawn.push(say(&runbox, &child.session_id, draw).await);
    }
    drawn.sort();
    drawn.dedup();
    assert_eq!(drawn.len(), 3, "the same numbers drawn: {drawn:?}");
}

/// A runtime whose sessions are replayed says so, and nothing is made: quickjs (a
/// command waiting for input between calls) and shell (`session-snapshots = false`).
#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_runtime_says_it_cannot_fork() {
    for (runtime, set) in [("quickjs", "var n = 1"), ("shell", "n=1; echo $n")] {
        let runbox = runbox_of(&[runtime]).await;
        let parent = session_after(&runbox, runtime, set).await;
        let e = refused_fork(&runbox, &parent, 2).await;
        assert!(e.contains("session_mode \"replay\""), "{runtime}: {e}");
        assert_eq!(runbox.sessions().len(), 1);
    }
}

/// Forks count against `--max-sessions` before any is made: too many are refused whole.
#[tokio::test(flavor = "multi_thread")]
async fn forks_past_the_session_cap_are_refused_whole() {
    let runbox = Arc::new(
        crate::common::own_runbox(RunboxOptions {
            only: vec!["javascript".into()],
            max_sessions: 3,
            ..crate::common::options()
        })
        .await,
    );
    let parent = session_after(&runbox, "javascript", "var n = 1").await;
    let e = refused_fork(&runbox, &parent, 3).await;
    assert!(e.contains("--max-sessions"), "{e}");
    assert_eq!(runbox.sessions().len(), 1, "half a fork was made");
    let children = runbox.fork_session(&parent, 2).await.unwrap();
    assert_eq!(runbox.sessions().len(), 3);
    for child in children {
        assert_eq!(
            say(&runbox, &child.session_id, "console.log(n)").await,
            "1\n"
        );
    }
}

/// Twenty copies of a session holding a million numbers, made at once, fit the memory budget and
/// each runs; copies past the budget are refused whole, before any is made.
#[tokio::test(flavor = "multi_thread")]
async fn twenty_forks_at_once_within_the_memory_budget() {
    let runbox = Arc::new(
        crate::common::own_runbox(RunboxOptions {
            only: vec!["javascript".into()],
            server_memory_bytes: 1536 << 20,
            max_sessions: 64,
            ..crate::common::options()
        })
        .await,
    );
    let parent = runbox
        .create_session("javascript")
        .await
        .unwrap()
        .session_id;
    say(
        &runbox,
        &parent,
        "var big = new Array(1 << 20).fill(0).map((_, i) => i); var n = 1",
    )
    .await;
    let (first, second) = tokio::join!(
        runbox.fork_session(&parent, 16),
        runbox.fork_session(&parent, 4)
    );
    let mut children: Vec<String> = first.unwrap().into_iter().map(|c| c.session_id).collect();
    children.extend(second.unwrap().into_iter().map(|c| c.session_id));
    assert_eq!(children.len(), 20);
    // Each copy's memory is charged to the server's budget, as its source's is.
    let budget = runbox.server_memory();
    eprintln!(
        "{} MiB of {} MiB in use",
        budget.used() >> 20,
        budget.cap() >> 20
    );
    assert!(
        budget.used() >= 21 * (16 << 20),
        "{} MiB in use",
        budget.used() >> 20
    );
    for child in &children {
        let shown = say(&runbox, child, "n += 1; console.log(n, big[12345])").await;
        assert_eq!(shown, "2 12345\n");
    }
    // Sixteen more copies of a bigger source do not fit what is left: none is made.
    say(
        &runbox,
        &parent,
        "var more = new Array(4 << 20).fill(0).map((_, i) => i)",
    )
    .await;
    let open = runbox.sessions().len();
    let e = refused_fork(&runbox, &parent, 16).await;
    assert!(e.contains("memory budget"), "{e}");
    assert_eq!(runbox.sessions().len(), open, "half a fork was made");
}

/// A runbox with a session store in `store`.
async fn stored_runbox(runtime: &str, store: &std::path::Path) -> Arc<Runbox> {
    use runbox::session::directory::{StoreSettings, DEFAULT_MAX_STORED, DEFAULT_STORED_TTL};
    Arc::new(
        crate::common::own_runbox(RunboxOptions {
            only: vec![runtime.into()],
            session_store: Some(StoreSettings {
                dir: store.to_path_buf(),
                max_entries: DEFAULT_MAX_STORED,
                ttl: DEFAULT_STORED_TTL,
                max_entry_bytes: 1 << 30,
            }),
            ..crate::common::options()
        })
        .await,
    )
}

/// A python session holding 32 MB of random floats (kept in its entry as they are, and
/// mapped from the entry's file when resumed) lives on exactly through being written
/// over, forked, stored again with its entry replaced while a fork still maps it, and
/// resumed again.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_mapped_from_its_entry_forks_and_is_stored_again() {
    let store = tempfile::tempdir().unwrap();
    let runbox = stored_runbox("python", store.path()).await;
    let parent = session_after(
        &runbox,
        "python",
        "import numpy as np\nbig = np.random.default_rng(1).random(4_000_000)\ns0 = float(big.sum())",
    )
    .await;
    let moved = "print(round(float(big.sum()) - s0))";
    assert!(runbox.sessions().hibernate(&parent), "stored");
    assert_eq!(say(&runbox, &parent, moved).await, "0\n", "resumed");
    say(&runbox, &parent, "big[:500_000] += 1").await;
    let child = runbox
        .fork_session(&parent, 1)
        .await
        .unwrap()
        .remove(0)
        .session_id;
    say(&runbox, &parent, "big[:500_000] += 1").await;
    // The parent is stored again (its entry's file replaced) while the child maps the old.
    assert!(runbox.sessions().hibernate(&parent), "stored again");
    assert_eq!(say(&runbox, &child, moved).await, "500000\n", "the fork");
    assert!(runbox.sessions().hibernate(&child), "the fork stored");
    assert_eq!(
        say(&runbox, &child, moved).await,
        "500000\n",
        "the fork resumed"
    );
    assert_eq!(
        say(&runbox, &parent, moved).await,
        "1000000\n",
        "the parent resumed"
    );
    say(&runbox, &child, "big[-1] = 0").await;
    assert_eq!(
        say(&runbox, &parent, "print(big[-1] != 0)").await,
        "True\n",
        "the parent does not see the fork's write"
    );
}

/// A python session whose call read the clock in a loop for three seconds (which no
/// record of draws could keep) is stored with its interpreter's state and comes back at
/// once, exact, in a new server: nothing runs again.
#[tokio::test(flavor = "multi_thread")]
async fn a_stored_python_session_comes_back_without_running_its_calls() {
    let store = tempfile::tempdir().unwrap();
    let first = stored_runbox("python", store.path()).await;
    let id = first.create_session("python").await.unwrap().session_id;
    let counted = say(
        &first,
        &id,
        "import time\nt = time.perf_counter()\nn = 0\n\
         while time.perf_counter() - t < 3: n += 1\nopen('kept.txt', 'w').write(str(n))\nprint(n)",
    )
    .await;
    assert!(first.sessions().hibernate(&id), "stored");
    drop(first);

    let second = stored_runbox("python", store.path()).await;
    let started = std::time::Instant::now();
    let outcome = second
        .run(
            RunRequest {
                code: "print(n)\nprint(open('kept.txt').read())".into(),
                session_id: Some(id.clone()),
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&outcome.output.stdout);
    assert_eq!(
        stdout,
        format!("{counted}{}\n", counted.trim()),
        "{outcome:?}"
    );
    assert!(outcome.notice.is_none(), "{:?}", outcome.notice);
    // Running the loop again would take its three seconds.
    assert!(took.as_secs_f64() < 2.0, "resuming took {took:?}");
}

/// A stored image is checked page by page: a page changed (and the entry's checksum
/// made to match, as a forger would), or an entry from another build of the runtime, is
/// refused with a clear error and nothing of it is loaded.
#[tokio::test(flavor = "multi_thread")]
async fn a_changed_page_or_another_build_is_refused() {
    use runbox::session::entry::StoredSession;
    let store = tempfile::tempdir().unwrap();
    let runbox = stored_runbox("javascript", store.path()).await;
    let path = |id: &str| store.path().join(format!("{id}.session"));
    let stored = |id: &str| StoredSession::decode(&std::fs::read(path(id)).unwrap()).unwrap();
    let resume = |id: String| {
        let runbox = runbox.clone();
        async move {
            runbox
                .run(
                    RunRequest {
                        code: "console.log(n)".into(),
                        session_id: Some(id),
                        ..RunRequest::default()
                    },
                    CancellationToken::new(),
                )
                .await
        }
    };

    let tampered = session_after(
        &runbox,
        "javascript",
        "var n = 'secret'.repeat(100000).length",
    )
    .await;
    assert!(runbox.sessions().hibernate(&tampered));
    let mut entry = stored(&tampered);
    let image = entry
        .image
        .as_mut()
        .expect("a javascript session is stored as its state");
    assert!(!image.pages.is_empty());
    let page = &mut image.pages[0];
    page.stored = runbox::state::Payload::new(
        zstd::bulk::compress(&vec![0x41; page.len as usize], 1).unwrap(),
    );
    page.raw = false;
    std::fs::write(path(&tampered), entry.encode()).unwrap();
    let e = resume(tampered.clone()).await.unwrap_err().to_string();
    assert!(e.contains("does not match its checksum"), "{e}");

    let foreign = session_after(&runbox, "javascript", "var n = 2").await;
    assert!(runbox.sessions().hibernate(&foreign));
    let mut entry = stored(&foreign);
    entry.plugin = "another build".into();
    std::fs::write(path(&foreign), entry.encode()).unwrap();
    let e = resume(foreign.clone()).await.unwrap_err().to_string();
    assert!(e.contains("another version"), "{e}");

    // The same entry, as this build wrote it, resumes.
    let kept = session_after(&runbox, "javascript", "var n = 3").await;
    assert!(runbox.sessions().hibernate(&kept));
    let outcome = resume(kept).await.unwrap();
    assert_eq!(outcome.output.stdout, b"3\n");
}

/// `snapshots.py TRANSPORT SCENARIO` with `client` (the Python SDK's default `Client`,
/// "auto", or `ClientSession.initialize()`, "legacy").
fn scenario(transport: &str, scenario: &str, client: &str) {
    crate::mcp::scenario_with("snapshots.py", &[transport, scenario], client);
}

#[test]
fn forks_through_mcp_over_stdio() {
    scenario("stdio", "fork", "auto");
}

#[test]
fn forks_through_mcp_over_stdio_handshake() {
    scenario("stdio", "fork", "legacy");
}

#[test]
fn forks_through_mcp_over_http() {
    scenario("http", "fork", "auto");
}

#[test]
fn forks_through_mcp_over_http_handshake() {
    scenario("http", "fork", "legacy");
}

#[test]
fn a_stored_session_comes_back_exact_after_kill_9_without_replay() {
    scenario("http", "kill9", "auto");
}

#[test]
fn a_stored_session_comes_back_exact_after_kill_9_without_replay_handshake() {
    scenario("http", "kill9", "legacy");
}

/// A session resumed from its snapshot is stored as its state again, and again: each
/// resume goes on from the last.
#[tokio::test(flavor = "multi_thread")]
async fn a_resumed_session_is_stored_as_its_state_again() {
    use runbox::session::entry::StoredSession;
    for (runtime, set, add, show) in [
        ("javascript", "var n = 1", "n += 1", "console.log(n)"),
        ("python", "n = 1", "n += 1", "print(n)"),
    ] {
        let store = tempfile::tempdir().unwrap();
        let runbox = stored_runbox(runtime, store.path()).await;
        let id = session_after(&runbox, runtime, set).await;
        for round in 2..5 {
            assert!(runbox.sessions().hibernate(&id), "{runtime} stored");
            let path = store.path().join(format!("{id}.session"));
            let entry = StoredSession::decode(&std::fs::read(path).unwrap()).unwrap();
            assert!(
                entry.image.is_some(),
                "{runtime}: round {round} stored no state"
            );
            say(&runbox, &id, add).await;
            assert_eq!(
                say(&runbox, &id, show).await,
                format!("{round}\n"),
                "{runtime}"
            );
        }
    }
}

/// sqlite starts every run from the snapshot its shell was loaded into (plugins.toml):
/// SQLite's own random numbers are drawn afresh in each run (nothing seeded in the
/// snapshot), the SQLite is CPython 3.15's, and a session's tables and settings carry
/// over (csv rows end in CRLF, as the sqlite3 shell's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_runs_from_its_snapshot_with_fresh_randomness() {
    const TEN_S: std::time::Duration = std::time::Duration::from_secs(10);
    let runbox = runbox_of(&["sqlite"]).await;
    draws_differ(
        &runbox,
        "sqlite",
        "select random(); select hex(randomblob(8));",
    )
    .await;
    let out = crate::common::run_on(
        &runbox,
        "sqlite",
        "select sqlite_version() >= '3.54';",
        TEN_S,
    )
    .await
    .unwrap();
    assert_eq!(out.stdout(), "1\n", "{}", out.tty());
    let id = runbox.create_session("sqlite").await.unwrap().session_id;
    assert_eq!(
        say(&runbox, &id, "create table t(x); insert into t values (6);").await,
        ""
    );
    assert_eq!(
        say(&runbox, &id, ".mode csv\nselect x * 7 from t;").await,
        "42\r\n"
    );
    assert_eq!(say(&runbox, &id, "select x, x from t;").await, "6,6\r\n");
}

/// The same from python: SQLite's generator is never seeded from the clock's second, so
/// runs in one second draw different numbers through `sqlite3` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sqlite_random_differs_from_run_to_run() {
    let runbox = runbox_of(&["python"]).await;
    let code = "import sqlite3\nc = sqlite3.connect(':memory:')\nprint(c.execute('select random(), hex(randomblob(8))').fetchone())";
    draws_differ(&runbox, "python", code).await;
}

/// Runs `code` three times (within a second), each completing with an output of its own.
async fn draws_differ(runbox: &Runbox, runtime: &str, code: &str) {
    let mut draws = std::collections::HashSet::new();
    for _ in 0..3 {
        let out = crate::common::run_on(runbox, runtime, code, std::time::Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(0), "{}", out.tty());
        assert!(
            draws.insert(out.stdout().into_owned()),
            "a draw repeated: {draws:?}"
        );
    }
}
