//! Code mode (issue 28, docs/tools.md): programs in the sandbox call the tools of real
//! upstream MCP servers, npm's `server-everything` and `server-filesystem` (installed once
//! into `target/mcp-upstream`) and `tests/mcp_client/upstream_failures.py` (the Python
//! SDK's server), driven through the Python SDK's default `Client` and its handshake-era
//! `ClientSession.initialize()` (the scenarios are `tests/mcp_client/code_mode.py`).

use crate::mcp::{npm_prefix, scenario_with_env};

const SERVER_EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
const SERVER_FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";

fn code_mode(scenario: &str, client: &str) {
    let prefix = npm_prefix("mcp-upstream", &[SERVER_EVERYTHING, SERVER_FILESYSTEM]);
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
