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
