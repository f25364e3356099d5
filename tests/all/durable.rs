//! Durable sessions (docs/mcp.md, "Durable sessions"): `runbox mcp --session-store`,
//! driven by the MCP Python SDK in both of its modes, over stdio and HTTP
//! (tests/mcp_client/durable.py). The loopback cluster of the scale-out suite with a
//! shared store is in `scale_out`.

use crate::mcp::scenario_with;

/// `durable.py TRANSPORT SCENARIO` with `client`.
fn durable(transport: &str, scenario: &str, client: &str) {
    scenario_with("durable.py", &[transport, scenario], client);
}

#[test]
fn every_stateful_runtime_survives_a_restart_over_stdio() {
    durable("stdio", "restart", "auto");
}

#[test]
fn every_stateful_runtime_survives_a_restart_over_stdio_handshake() {
    durable("stdio", "restart", "legacy");
}

#[test]
fn every_stateful_runtime_survives_a_sigterm_over_http() {
    durable("http", "restart", "auto");
}

#[test]
fn every_stateful_runtime_survives_a_sigterm_over_http_handshake() {
    durable("http", "restart", "legacy");
}

#[test]
fn a_session_moves_to_another_replica() {
    durable("http", "moves", "auto");
}

#[test]
fn two_hundred_sessions_live_with_sixteen_in_memory() {
    durable("stdio", "many", "auto");
}

#[test]
fn after_kill_9_a_session_resumes_as_last_stored_and_says_so() {
    durable("http", "kill9", "auto");
}

#[test]
fn a_resumed_session_is_held_by_one_process_for_a_minute() {
    durable("http", "held_by_one", "auto");
}

#[test]
fn four_resumes_at_once_each_make_room() {
    durable("stdio", "resumes_at_once", "auto");
}

#[test]
fn big_resumes_at_once_stay_within_the_memory_budget() {
    durable("http", "big_resumes_within_budget", "auto");
}

#[test]
fn damaged_and_foreign_entries_are_refused() {
    durable("stdio", "damaged", "auto");
}

#[test]
fn a_session_that_draws_without_end_is_stored_without_its_state_and_says_so() {
    durable("stdio", "unkept", "auto");
}

#[test]
fn a_stdio_server_stores_its_sessions_on_sigterm() {
    durable("stdio", "sigterm_stdio", "auto");
}

/// A stored entry is checksummed, not signed: one forged to hold more files than the
/// scratch caps allow is refused when it is resumed, before any of them is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_forged_entry_past_the_scratch_caps_is_refused() {
    use runbox::service::{RunRequest, RunboxOptions};
    use runbox::session::directory::{StoreSettings, DEFAULT_MAX_STORED, DEFAULT_STORED_TTL};
    use runbox::session::entry::{StoredFile, StoredSession};
    use tokio_util::sync::CancellationToken;

    let store = tempfile::tempdir().unwrap();
    let runbox = crate::common::own_runbox(RunboxOptions {
        only: vec!["quickjs".into()],
        session_store: Some(StoreSettings {
            dir: store.path().to_path_buf(),
            max_entries: DEFAULT_MAX_STORED,
            ttl: DEFAULT_STORED_TTL,
            max_entry_bytes: 1 << 30,
        }),
        ..crate::common::options()
    })
    .await;
    let session = runbox.create_session("quickjs").await.unwrap();
    let id = session.session_id;
    let call = |code: &str| RunRequest {
        runtime: String::new(),
        code: code.into(),
        session_id: Some(id.clone()),
        ..RunRequest::default()
    };
    let first = runbox
        .run(
            call("var kept = 1; console.log(kept)"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(first.output.stdout, b"1\n");
    assert!(runbox.sessions().hibernate(&id), "stored");
    let path = store.path().join(format!("{id}.session"));
    let mut entry = StoredSession::decode(&std::fs::read(&path).unwrap()).unwrap();
    let cap = runbox.limits().scratch_files;
    entry.files.extend((0..=cap).map(|i| StoredFile {
        path: format!("forged-{i}"),
        contents: None,
    }));
    std::fs::write(&path, entry.encode()).unwrap();
    let refused = runbox
        .run(call("console.log(kept)"), CancellationToken::new())
        .await;
    let message = refused.expect_err("refused").to_string();
    assert!(message.contains("more than the scratch caps"), "{message}");
    // Nothing of it was written: the scratch root holds no forged file.
    let forged = walk_count(runbox.scratch_root(), "forged-");
    assert_eq!(forged, 0, "forged files were written");
}

/// Files under `dir` whose names start with `prefix`.
fn walk_count(dir: &std::path::Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let here = usize::from(e.file_name().to_string_lossy().starts_with(prefix));
            here + if e.path().is_dir() {
                walk_count(&e.path(), prefix)
            } else {
                0
            }
        })
        .sum()
}
