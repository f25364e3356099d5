//! Replicas behind a stock balancer (docs/scale-out.md): three `runbox mcp --http
//! --replica-id` processes and HAProxy on loopback, configured by
//! `deploy/haproxy/generate`, driven through the balancer by the MCP Python SDK in both
//! of its modes (tests/mcp_client/scale_out.py).

use std::process::Command;

use crate::mcp::scenario_with;

/// HAProxy from Debian, installed with apt-get when it is missing (said, never skipped).
fn haproxy() {
    if Command::new("haproxy").arg("-v").output().is_ok() {
        return;
    }
    eprintln!("scale_out: HAProxy is missing; installing it with apt-get (Debian's haproxy)");
    let status = Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends", "haproxy"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .expect("run apt-get");
    if !status.success() {
        // The package lists may be missing on a fresh machine.
        let update = Command::new("apt-get").arg("update").status();
        assert!(update.is_ok_and(|s| s.success()), "apt-get update failed");
        let status = Command::new("apt-get")
            .args(["install", "-y", "--no-install-recommends", "haproxy"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .expect("run apt-get");
        assert!(status.success(), "apt-get install haproxy failed");
    }
    let version = Command::new("haproxy").arg("-v").output();
    assert!(
        version.is_ok_and(|v| v.status.success()),
        "haproxy does not run after apt-get installed it"
    );
}

#[test]
fn a_cluster_behind_haproxy_with_the_default_client() {
    haproxy();
    scenario_with("scale_out.py", &["cluster"], "auto");
}

#[test]
fn a_cluster_behind_haproxy_with_handshake_era_clients() {
    haproxy();
    scenario_with("scale_out.py", &["cluster"], "legacy");
}
