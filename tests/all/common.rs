//! Shared set-up for the integration tests: one artifact cache for every test run
//! (`RUNBOX_CACHE_DIR`, or `target/runbox-cache`), one loaded [`Runbox`] per test binary.

#![allow(dead_code)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use runbox::manifest::Manifest;
use runbox::plugin::artifact::{Cache, Progress};
use runbox::service::RunOutcome;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use tokio_util::sync::CancellationToken;

/// The runtimes the adversarial suite attacks: every default runtime but `sqlite`, whose
/// programs are SQL for a shell that runs on python's CPython (the conformance suite's guarantee
/// checks cover it).
pub const ATTACKED_RUNTIMES: &[&str] = &[
    "python",
    "quickjs",
    "ruby",
    "php-cgi",
    "clang",
    "clangpp",
    "javascript",
    "typescript",
    "shell",
    "prolog",
];

/// The cache the tests share, so artifacts are fetched and compiled once.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os("RUNBOX_CACHE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/runbox-cache"),
    }
}

/// Runs `command` with `stdin` written to it and closed, collecting its output.
pub fn output_with_stdin(command: &mut Command, stdin: &str) -> Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

pub fn cache() -> Cache {
    Cache::at(cache_dir())
}

/// Options for a test's [`Runbox`]: produced programs are compiled by the real binary
/// (a test executable cannot run the `__compile-program` subcommand itself).
pub fn options() -> RunboxOptions {
    RunboxOptions {
        compiler_exe: Some(PathBuf::from(env!("CARGO_BIN_EXE_runbox"))),
        ..RunboxOptions::default()
    }
}

/// The built-in runtimes, loaded once per test binary.
pub fn runbox() -> Arc<Runbox> {
    static RUNBOX: OnceLock<Arc<Runbox>> = OnceLock::new();
    RUNBOX
        .get_or_init(|| {
            let manifest = Manifest::builtin().expect("built-in plugins.toml");
            let options = RunboxOptions {
                max_concurrent: 8,
                ..options()
            };
            Arc::new(
                Runbox::load(&manifest, &cache(), options, &Progress::stderr())
                    .expect("load the built-in runtimes"),
            )
        })
        .clone()
}

/// A [`Runbox`] of a test's own (no other test takes its warm instances or slots), with
/// the built-in runtimes `options` selects, from the shared cache.
pub async fn own_runbox(options: RunboxOptions) -> Runbox {
    tokio::task::spawn_blocking(move || {
        let manifest = Manifest::builtin().expect("built-in plugins.toml");
        Runbox::load(&manifest, &cache(), options, &Progress::stderr()).expect("load the runtimes")
    })
    .await
    .unwrap()
}

/// Runs `code` in `runtime` on `runbox` within `timeout`.
pub async fn run_on(
    runbox: &Runbox,
    runtime: &str,
    code: &str,
    timeout: Duration,
) -> Result<RunOutcome, runbox::service::CallError> {
    runbox
        .run(
            RunRequest {
                runtime: runtime.into(),
                code: code.into(),
                limits: LimitOverrides {
                    timeout: Some(timeout),
                    ..LimitOverrides::default()
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
}

/// Runs `code` in `runtime` with an optional stdin and timeout.
pub async fn run_with(
    runtime: &str,
    code: &str,
    stdin: Option<&str>,
    timeout: Option<Duration>,
) -> RunOutcome {
    let rb = runbox();
    rb.run(
        RunRequest {
            runtime: runtime.to_string(),
            code: code.to_string(),
            stdin: stdin.map(|s| s.as_bytes().to_vec()),
            args: vec![],
            limits: LimitOverrides {
                timeout,
                memory_bytes: None,
                max_timeout: None,
            },
            ..RunRequest::default()
        },
        CancellationToken::new(),
    )
    .await
    .expect("run")
}

/// Runs `code` with explicit timeout and memory cap.
pub async fn run_limited(
    runtime: &str,
    code: &str,
    timeout: Duration,
    memory_bytes: u64,
) -> RunOutcome {
    runbox()
        .run(
            RunRequest {
                runtime: runtime.to_string(),
                code: code.to_string(),
                limits: LimitOverrides {
                    timeout: Some(timeout),
                    memory_bytes: Some(memory_bytes),
                    max_timeout: None,
                },
                ..RunRequest::default()
            },
            CancellationToken::new(),
        )
        .await
        .expect("run")
}

pub async fn run(runtime: &str, code: &str) -> RunOutcome {
    run_with(runtime, code, None, None).await
}

/// HAProxy (Debian's `haproxy`), for the tests of `deploy/` and of replicas behind it: its
/// path, installed with apt-get when it is missing (said on stderr, never skipped).
pub fn haproxy() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| debian_program("haproxy", "haproxy"))
        .clone()
}

/// `program` from the Debian package `package`: where it is (on `PATH`, or in an `sbin`
/// directory a user's `PATH` may lack), installed with apt-get first when it is missing,
/// through `sudo -n` when not root. Panics, saying what to install, when it cannot be.
fn debian_program(program: &str, package: &str) -> PathBuf {
    let find = || {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .chain(["/usr/sbin", "/sbin", "/usr/bin"].map(PathBuf::from))
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    };
    if let Some(found) = find() {
        return found;
    }
    // Straight to stderr: libtest's capture would hide eprintln! of a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "{program} is missing: installing Debian's {package} with apt-get"
    );
    let root = unsafe { libc::geteuid() } == 0;
    let apt = |args: &[&str]| {
        let mut command = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        command
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = ["install", "-y", "--no-install-recommends", package];
    // The package lists may be missing on a fresh machine.
    let installed = apt(&install) || (apt(&["update"]) && apt(&install));
    assert!(
        installed,
        "{program} is missing and `apt-get install {package}` failed{}: install it to run \
         these tests",
        if root {
            ""
        } else {
            " (not root, and `sudo -n` did not work)"
        }
    );
    find().unwrap_or_else(|| panic!("apt-get installed {package}, but no {program} is found"))
}
