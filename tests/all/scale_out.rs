//! Replicas behind a stock balancer (docs/scale-out.md): three `runbox mcp --http
//! --replica-id` processes and HAProxy on loopback, configured by
//! `deploy/haproxy/generate`, driven through the balancer by the MCP Python SDK in both
//! of its modes (tests/mcp_client/scale_out.py).

use crate::common;
use crate::mcp::scenario_with_env;

/// The scale-out `scenario` with `client` ("auto" or "legacy"), HAProxy installed first.
fn cluster_scenario(scenario: &str, client: &str) {
    let haproxy = common::haproxy();
    let haproxy = haproxy.to_str().expect("a UTF-8 path");
    scenario_with_env(
        "scale_out.py",
        &[scenario],
        client,
        &[("RUNBOX_HAPROXY", haproxy)],
    );
}

fn cluster(client: &str) {
    cluster_scenario("cluster", client);
}

/// Replicas sharing a session store: a drained replica's sessions continue elsewhere.
#[test]
fn a_drained_replicas_sessions_continue_on_another_with_the_default_client() {
    cluster_scenario("durable", "auto");
}

#[test]
fn a_drained_replicas_sessions_continue_on_another_with_handshake_era_clients() {
    cluster_scenario("durable", "legacy");
}

#[test]
fn a_cluster_behind_haproxy_with_the_default_client() {
    cluster("auto");
}

#[test]
fn a_cluster_behind_haproxy_with_handshake_era_clients() {
    cluster("legacy");
}
