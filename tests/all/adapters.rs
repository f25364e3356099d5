//! The adapters' own unit tests (`adapters/*/src`), run natively: `adapters/` is a cargo
//! workspace of its own, built for wasm32-wasip2 by host/build.rs, so the root
//! `cargo test` would not run them otherwise.

use std::path::PathBuf;
use std::process::Command;

/// The triple of the machine the tests run on, from `rustc -vV`.
fn host_triple() -> String {
    let out = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_string()
}

#[test]
fn the_adapters_unit_tests_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .arg("test")
        .arg("--manifest-path")
        .arg(root.join("adapters/Cargo.toml"))
        .args(["--workspace", "--target", &host_triple()])
        // A target directory of its own: the outer cargo's is not ours to lock.
        .arg("--target-dir")
        .arg(root.join("target/adapters-native"))
        .output()
        .expect("run cargo test for the adapters");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the adapters' tests failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every adapter with tests ran some.
    let ran: usize = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ok. "))
        .filter_map(|l| l.split_whitespace().next()?.parse::<usize>().ok())
        .sum();
    assert!(ran >= 20, "only {ran} adapter tests ran:\n{stdout}");
}
