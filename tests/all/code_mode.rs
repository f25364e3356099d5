//! Code mode (docs/tools.md): programs in the sandbox call the tools of real upstream MCP
//! servers, npm's `server-everything`, `server-filesystem` and `server-memory` (pinned in
//! tests/mcp_client/npm-packages.toml, installed once into `target/mcp-upstream`), PyPI's
//! `mcp-server-time` and `mcp-server-git` (in the scenarios' venv,
//! tests/mcp_client/requirements.txt) and
//! `tests/mcp_client/upstream_failures.py` (the Python SDK's server), driven through the
//! Python SDK's default `Client` and its handshake-era `ClientSession.initialize()` (the
//! scenarios are `tests/mcp_client/code_mode.py`).

use crate::mcp::{npm_prefix, scenario_with_env};

fn code_mode(scenario: &str, client: &str) {
    let prefix = npm_prefix("mcp-upstream");
    let prefix = prefix.to_string_lossy().into_owned();
    scenario_with_env(
        "code_mode.py",
        &[scenario],
        client,
        &[("RUNBOX_TEST_UPSTREAM_NPM", &prefix)],
    );
}

#[test]
fn programs_call_upstream_tools() {
    code_mode("calls", "auto");
}

#[test]
fn programs_call_upstream_tools_with_the_handshake() {
    code_mode("calls", "legacy");
}

#[test]
fn tool_calls_within_limits_leave_the_server_healthy() {
    code_mode("limits", "auto");
}

/// Sessions made before their upstream went down, came back and changed its tool list
/// keep calling it (python, javascript, shell), and see the new tool.
#[test]
fn sessions_keep_calling_across_upstream_changes() {
    code_mode("live", "auto");
}

/// The same over streamable HTTP, with the handshake-era client.
#[test]
fn sessions_keep_calling_across_upstream_changes_over_http() {
    code_mode("live_http", "legacy");
}

/// A server that cannot start, tried again and again, changes nothing for the others.
#[test]
fn a_failing_server_leaves_the_sessions_of_others_alone() {
    code_mode("failing_neighbour", "legacy");
}

/// An answer past the cap fails its call alone: the connection and the other calls go on.
#[test]
fn an_answer_past_the_cap_fails_only_its_call() {
    code_mode("oversize", "auto");
}

#[test]
fn an_answer_past_the_cap_from_an_http_upstream_fails_only_its_call() {
    code_mode("oversize_http", "legacy");
}

/// Open devices are capped per run, and the requests they hold are charged to it.
#[test]
fn device_requests_are_charged_and_capped() {
    code_mode("device_budget", "auto");
}

/// The description says what each tool hands back; programs written from it work.
#[test]
fn programs_written_from_the_description_work_with_five_real_servers() {
    code_mode("answers", "auto");
}

#[test]
fn an_upstream_over_streamable_http() {
    code_mode("http_upstream", "legacy");
}

#[test]
fn a_resumed_session_replays_tool_answers() {
    code_mode("durable", "auto");
}

/// Without a tools config, `import tools` says why there is no such module.
#[tokio::test(flavor = "multi_thread")]
async fn without_tools_import_tools_says_why() {
    let out = crate::common::run("python", "import tools\n").await;
    assert_eq!(out.exit_code, Some(1), "{out:?}");
    let err = out.stderr();
    assert!(
        err.contains("No module named 'tools'") && err.contains("runbox mcp --tools-config"),
        "{err}"
    );
    assert!(!err.contains("cannot install packages"), "{err}");
}
