//! Replicas behind a stock balancer (docs/scale-out.md): three `runbox mcp --http
//! --replica-id` processes and HAProxy on loopback, configured by
//! `deploy/haproxy/generate`, driven through the balancer by the MCP Python SDK in both
//! of its modes (tests/mcp_client/scale_out.py).

use crate::common;
use crate::mcp::scenario_with_env;

/// The cluster scenario with `client` ("auto" or "legacy"), HAProxy installed first.
fn cluster(client: &str) {
    let haproxy = common::haproxy();
    let haproxy = haproxy.to_str().expect("a UTF-8 path");
    scenario_with_env(
        "scale_out.py",
        &["cluster"],
        client,
        &[("RUNBOX_HAPROXY", haproxy)],
    );
}

#[test]
fn a_cluster_behind_haproxy_with_the_default_client() {
    cluster("auto");
}

#[test]
fn a_cluster_behind_haproxy_with_handshake_era_clients() {
    cluster("legacy");
}
