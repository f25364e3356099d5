//! The packages `deploy/packages` builds (packaging/README.md), installed from the built
//! files and started the way an MCP client's configuration starts them:
//!
//! - npm: `npx -y --package LAUNCHER.tgz --package PLATFORM.tgz runbox-mcp mcp` with an
//!   empty npm cache and prefix, driven by the MCP Python SDK's stdio client; the launcher
//!   passes arguments, stdio, exit codes and signals through, and names the platform when
//!   its package is missing.
//! - Python: the wheel built by maturin, `pip install --no-index`ed into a fresh venv,
//!   whose `runbox mcp` the same client drives.
//!
//! npm runs offline here (`npm_config_offline`): the platform tarball given beside the
//! launcher satisfies its optional dependency, so nothing is looked up in a registry (a
//! published launcher gets the package from there instead). The npm packages wrap this
//! test binary's runbox (`RUNBOX_RELEASE_BINARY`); the wheel's maturin runs `cargo build
//! --release`, which finds target/ up to date after `cargo test --release`.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// npm's name for this machine (Node's `process.platform-process.arch`).
fn npm_platform() -> String {
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{}-{cpu}", std::env::consts::OS)
}

/// `deploy/packages PART` into `out`; the files it printed, with how long it took.
fn build(part: &str, out: &Path, env: &[(&str, &Path)]) -> (Vec<PathBuf>, Duration) {
    let start = Instant::now();
    let result = Command::new("sh")
        .arg(repo().join("deploy/packages"))
        .arg(part)
        .env("RUNBOX_PACKAGES_DIR", out)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run deploy/packages");
    assert!(
        result.status.success(),
        "deploy/packages {part} failed ({}):\n{}{}",
        result.status,
        text(&result.stdout),
        text(&result.stderr)
    );
    let files: Vec<PathBuf> = text(&result.stdout).lines().map(PathBuf::from).collect();
    for file in &files {
        assert!(file.is_file(), "deploy/packages printed {}", file.display());
    }
    (files, start.elapsed())
}

/// The npm tarballs (launcher, platform package) of this test binary's runbox, built once
/// into target/install-test/npm.
fn npm_packages() -> (PathBuf, PathBuf) {
    static PACKAGES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    PACKAGES
        .get_or_init(|| {
            let out = repo().join("target/install-test/npm");
            std::fs::create_dir_all(&out).unwrap();
            let binary = Path::new(env!("CARGO_BIN_EXE_runbox"));
            let (files, took) = build("npm", &out, &[("RUNBOX_RELEASE_BINARY", binary)]);
            let version = env!("CARGO_PKG_VERSION");
            let launcher = out.join(format!("runbox-mcp-{version}.tgz"));
            let platform = out.join(format!("runbox-mcp-{}-{version}.tgz", npm_platform()));
            assert_eq!(files, [launcher.clone(), platform.clone()]);
            let size = |p: &Path| std::fs::metadata(p).unwrap().len();
            eprintln!(
                "npm packages built in {:.1} s: {} ({} bytes), {} ({} bytes)",
                took.as_secs_f64(),
                launcher.display(),
                size(&launcher),
                platform.display(),
                size(&platform)
            );
            (launcher, platform)
        })
        .clone()
}

/// An empty npm home, cache and global prefix, offline; as `(name, value)` environment.
struct NpmEnv {
    _dir: tempfile::TempDir,
    vars: Vec<(&'static str, String)>,
}

impl NpmEnv {
    fn new() -> NpmEnv {
        let dir = tempfile::tempdir().unwrap();
        let sub = |name: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(&path).unwrap();
            path.to_str().unwrap().to_string()
        };
        let vars = vec![
            ("HOME", sub("home")),
            ("npm_config_cache", sub("cache")),
            ("npm_config_prefix", sub("prefix")),
            ("npm_config_offline", "true".into()),
            ("npm_config_update_notifier", "false".into()),
            ("npm_config_fund", "false".into()),
            ("npm_config_audit", "false".into()),
        ];
        NpmEnv { _dir: dir, vars }
    }

    fn apply<'a>(&self, command: &'a mut Command) -> &'a mut Command {
        command.envs(self.vars.iter().map(|(k, v)| (k, v)))
    }

    /// `npm install`s `tarballs` into a new prefix; its launcher's script.
    fn install(&self, tarballs: &[&Path]) -> PathBuf {
        let prefix = Path::new(&self.vars[0].1).join("project");
        std::fs::create_dir_all(&prefix).unwrap();
        let out = self
            .apply(Command::new("npm").args(["install", "--prefix"]))
            .arg(&prefix)
            .args(tarballs)
            .stdin(Stdio::null())
            .output()
            .expect("run npm install");
        assert!(
            out.status.success(),
            "npm install {tarballs:?}:\n{}",
            text(&out.stderr)
        );
        prefix.join("node_modules/runbox-mcp/bin/runbox-mcp.js")
    }
}

/// An MCP client's `npx -y runbox-mcp mcp`, with the local tarballs in place of the
/// registry's: the Python SDK starts it, and a python run says hello.
#[test]
fn npx_starts_runbox_mcp_for_an_mcp_client() {
    let (launcher, platform) = npm_packages();
    let npm = NpmEnv::new();
    let env: Vec<(&str, &str)> = npm.vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let start = Instant::now();
    crate::mcp::scenario_with_env(
        "installed.py",
        &[
            "hello from npx",
            "npx",
            "-y",
            "--package",
            launcher.to_str().unwrap(),
            "--package",
            platform.to_str().unwrap(),
            "runbox-mcp",
            "mcp",
        ],
        "legacy",
        &env,
    );
    eprintln!(
        "npx: installed, started and answered in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// The blocks of docs/clients.md's "Without Rust: npx or uvx": the command and arguments
/// of the one whose command is `command`.
fn docs_block(command: &str) -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/clients.md")).unwrap();
    let section = doc
        .split("\n## ")
        .find(|s| s.starts_with("Without Rust: npx or uvx\n"))
        .expect("docs/clients.md has ## Without Rust: npx or uvx");
    let blocks: Vec<serde_json::Value> = section
        .split("```json\n")
        .skip(1)
        .map(|rest| serde_json::from_str(&rest[..rest.find("```").unwrap()]).unwrap())
        .collect();
    let server = blocks
        .iter()
        .map(|b| &b["mcpServers"]["runbox"])
        .find(|s| s["command"] == command)
        .unwrap_or_else(|| panic!("no {command} block in docs/clients.md: {blocks:?}"));
    let mut line = vec![command.to_string()];
    line.extend(
        server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string()),
    );
    line
}

/// docs/clients.md's npx block, exactly as a user copies it, run where the packages this
/// repository built are installed (npx takes a project's own before the registry's).
#[test]
fn the_docs_npx_block_starts_runbox_for_an_mcp_client() {
    let (launcher, platform) = npm_packages();
    let npm = NpmEnv::new();
    let script = npm.install(&[&launcher, &platform]);
    let project = script
        .ancestors()
        .nth(4)
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let line = docs_block("npx");
    let mut args = vec!["hello from the docs' npx block"];
    args.extend(line.iter().map(String::as_str));
    let mut env: Vec<(&str, &str)> = npm.vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("RUNBOX_TEST_SERVER_CWD", &project));
    crate::mcp::scenario_with_env("installed.py", &args, "legacy", &env);
}

/// Without its platform's package (npm could not fetch the optional dependency, here
/// offline; or it was left out), the launcher fails and says which platform it needs.
#[test]
fn the_launcher_names_the_platform_it_has_no_binary_for() {
    let (launcher, _) = npm_packages();
    let npm = NpmEnv::new();
    let out = npm
        .apply(Command::new("npx").args(["-y", "--package"]))
        .arg(&launcher)
        .args(["runbox-mcp", "mcp"])
        .stdin(Stdio::null())
        .output()
        .expect("run npx");
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let platform = npm_platform();
    assert!(
        stderr.contains(&format!("no runbox binary for this platform, {platform}"))
            && stderr.contains(&format!("@runbox-mcp/{platform}")),
        "{stderr}"
    );
}

/// The launcher runs the binary with the same arguments, stdin and stdout, and exits with
/// its exit code; a signal that ends the binary ends the launcher the same way.
#[test]
fn the_launcher_passes_arguments_stdio_and_exit_status_through() {
    let (launcher, platform) = npm_packages();
    let npm = NpmEnv::new();
    let script = npm.install(&[&launcher, &platform]);
    let program = "import sys\nprint(6 * 7)\nsys.exit(3)";
    let args = ["--quiet", "run", "python", "-"];
    let run = |command: &mut Command| {
        common::output_with_stdin(
            command
                .args(args)
                .env("RUNBOX_CACHE_DIR", common::cache_dir()),
            program,
        )
    };
    let direct = run(&mut Command::new(env!("CARGO_BIN_EXE_runbox")));
    let launched = run(Command::new("node").arg(&script));
    assert_eq!(text(&direct.stdout), "42\n", "{}", text(&direct.stderr));
    assert_eq!(text(&launched.stdout), "42\n", "{}", text(&launched.stderr));
    assert_eq!(launched.status.code(), direct.status.code());
    assert_ne!(direct.status.code(), Some(0));

    // A bad argument: the same message and exit code as the binary's own.
    let bad = |command: &mut Command| -> Output {
        command
            .arg("--no-such-option")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let direct = bad(&mut Command::new(env!("CARGO_BIN_EXE_runbox")));
    let launched = bad(Command::new("node").arg(&script));
    assert_eq!(launched.status.code(), direct.status.code());
    assert_eq!(text(&launched.stderr), text(&direct.stderr));

    // The binary killed: the launcher dies of the same signal.
    let (mut node, child) = launch_mcp(&script);
    unsafe { libc::kill(child, libc::SIGKILL) };
    let status = wait_for(&mut node, Duration::from_secs(10)).expect("the launcher to end");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
}

/// SIGTERM and SIGINT sent to the launcher (an MCP client stopping its server) reach the
/// binary: both are gone soon after, though the server's stdin is still open.
#[test]
fn the_launcher_forwards_sigterm_and_sigint() {
    let (launcher, platform) = npm_packages();
    let npm = NpmEnv::new();
    let script = npm.install(&[&launcher, &platform]);
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let (mut node, child) = launch_mcp(&script);
        unsafe { libc::kill(node.id() as i32, signal) };
        let status = wait_for(&mut node, Duration::from_secs(15));
        let child_alive = Path::new(&format!("/proc/{child}")).exists();
        if status.is_none() {
            let _ = node.kill();
        }
        if child_alive {
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        assert!(
            status.is_some(),
            "the launcher is still running after signal {signal}"
        );
        assert!(
            !child_alive,
            "runbox (pid {child}) outlived the launcher after signal {signal}"
        );
    }
}

/// `node SCRIPT mcp` with stdin held open, once its `runbox` child has answered
/// `initialize`; the launcher and the child's pid.
fn launch_mcp(script: &Path) -> (std::process::Child, i32) {
    let mut node = Command::new("node")
        .arg(script)
        .args(["mcp", "--quiet"])
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the launcher");
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"install-test","version":"0"}}}"#;
    let stdin = node.stdin.as_mut().unwrap();
    writeln!(stdin, "{initialize}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    BufReader::new(node.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.contains("\"serverInfo\""), "no answer: {line:?}");
    let pid = node.id();
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    let child: Vec<i32> = children
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(child.len(), 1, "the launcher's children: {children:?}");
    (node, child[0])
}

fn wait_for(child: &mut std::process::Child, within: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// The wheel: maturin builds it (reusing target/'s release build), pip installs it into a
/// fresh venv without an index, and the venv's `runbox mcp` serves the Python SDK.
///
/// Run alone, as `.ci/run` does after the suite (`cargo test --release --test all --
/// --ignored install::the_wheel_installs_with_pip_and_serves_mcp`): maturin's
/// cargo build, fresh or not, links `target/release/runbox` again (removes it, then links
/// it), and the tests running beside it that start that binary then find no file (the
/// full suite of 2026-12-05 failed four that way).
#[test]
#[ignore = "rewrites target/release/runbox, which the other tests run: run it alone"]
fn the_wheel_installs_with_pip_and_serves_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let (files, took) = build("wheel", dir.path(), &[]);
    let [wheel] = files.as_slice() else {
        panic!("deploy/packages wheel printed {files:?}")
    };
    let name = wheel.file_name().unwrap().to_str().unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        name,
        format!(
            "runbox_mcp-{version}-py3-none-manylinux_2_34_{}.whl",
            std::env::consts::ARCH
        )
    );
    eprintln!(
        "wheel built in {:.1} s: {name} ({} bytes)",
        took.as_secs_f64(),
        std::fs::metadata(wheel).unwrap().len()
    );
    let listing = Command::new("python3")
        .args(["-m", "zipfile", "-l"])
        .arg(wheel)
        .output()
        .unwrap();
    let listing = text(&listing.stdout);
    for file in [
        format!("runbox_mcp-{version}.data/scripts/runbox"),
        format!("runbox_mcp-{version}.dist-info/licenses/LICENSE"),
        format!("runbox_mcp-{version}.dist-info/licenses/THIRD_PARTY.md"),
    ] {
        assert!(
            listing.contains(&file),
            "{file} is not in the wheel:\n{listing}"
        );
    }

    let start = Instant::now();
    let venv = dir.path().join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let pip = Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--disable-pip-version-check",
        ])
        .arg(wheel)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(pip.status.success(), "pip install:\n{}", text(&pip.stderr));
    let runbox = venv.join("bin/runbox");
    crate::mcp::scenario_with_env(
        "installed.py",
        &["hello from the wheel", runbox.to_str().unwrap(), "mcp"],
        "legacy",
        &[],
    );
    eprintln!(
        "wheel: venv, pip install and first call in {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // docs/clients.md's uvx block, exactly as a user copies it, offline, with the wheel
    // found beside the tests (uvx is in the scenarios' venv: requirements.txt).
    let start = Instant::now();
    let line = docs_block("uvx");
    let mut args = vec!["hello from the docs' uvx block"];
    args.extend(line.iter().map(String::as_str));
    let uv = dir.path().join("uv");
    let links = wheel.parent().unwrap().to_str().unwrap().to_string();
    let path = std::env::join_paths(std::iter::once(crate::mcp::sdk_bin()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let env = [
        ("PATH", path.to_str().unwrap().to_string()),
        ("UV_OFFLINE", "1".to_string()),
        ("UV_FIND_LINKS", links),
        (
            "UV_CACHE_DIR",
            uv.join("cache").to_str().unwrap().to_string(),
        ),
        (
            "UV_TOOL_DIR",
            uv.join("tools").to_str().unwrap().to_string(),
        ),
        ("UV_PYTHON_DOWNLOADS", "never".to_string()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    crate::mcp::scenario_with_env("installed.py", &args, "legacy", &env);
    eprintln!(
        "uvx: installed, started and first call in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}
