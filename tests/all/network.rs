//! Network egress by policy (docs/network.md): programs in python, javascript,
//! typescript and the shell reach loopback HTTP(S) servers by names the policy maps to
//! 127.0.0.1, through the Python SDK over stdio and HTTP (the scenarios are
//! `tests/mcp_client/network.py`).

use crate::mcp::scenario_with;

#[test]
fn allowed_requests_work_and_others_are_refused_in_every_runtime() {
    scenario_with("network.py", &["runtimes"], "auto");
}

#[test]
fn the_network_works_over_http_and_is_counted() {
    scenario_with("network.py", &["over_http"], "auto");
}

#[test]
fn the_network_works_over_http_with_the_handshake() {
    scenario_with("network.py", &["over_http"], "legacy");
}

#[test]
fn without_a_policy_nothing_is_reachable() {
    scenario_with("network.py", &["no_policy"], "auto");
}

#[test]
fn a_resumed_session_replays_answers_without_fetching_again() {
    scenario_with("network.py", &["durable"], "auto");
}

#[test]
fn pure_python_packages_install_at_run_time_and_native_ones_are_refused() {
    scenario_with("network.py", &["packages"], "auto");
}

/// A program talking to the device itself, past the bindings: nothing it writes reaches a
/// host the policy does not name, and a server that never answers cannot hold the run.
#[test]
fn hostile_requests_are_refused_and_a_silent_server_cannot_hold_a_run() {
    scenario_with("network.py", &["hostile"], "auto");
}

#[test]
fn a_runs_answers_stop_at_its_byte_cap() {
    scenario_with("network.py", &["byte_cap"], "auto");
}
