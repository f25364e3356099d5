//! Code mode (docs/tools.md): what one tool call costs a program in the sandbox, beside the same
//! call made directly by an MCP client.
//!
//! `cargo bench --bench tool_calls [-- ROUNDS]` (default 15 rounds). The upstream is npm's
//! `@modelcontextprotocol/server-everything` over stdio, warm (installed into
//! `target/mcp-upstream` by the tests, or here with npm when it is missing); its `echo`
//! tool is called:
//!
//! - directly, by rmcp's client over the server's stdio: the floor any client pays;
//! - from python (`tools.everything.echo(message=…)`) and from the shell (`tool everything
//!   echo --message …`) in one runbox run, `CALLS` calls per run, less the same run
//!   without the calls, divided by `CALLS`: the cost of one call through the device;
//! - from python, for a tool the host refuses (not on the allow-list): the device's own
//!   cost, with no upstream.
//!
//! Prints a markdown table (bench/RESULTS.md's "Tool calls").

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{median, ms, per_call};
use rmcp::model::{CallToolRequestParams, JsonObject};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use runbox::service::RunboxOptions;
use runbox::upstream::config::ToolsConfig;
use runbox::upstream::{Gateway, GatewaySettings};

const SERVER_EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";
const SERVER_FILESYSTEM: &str = "@modelcontextprotocol/server-filesystem@2026.8.31";
/// Tool calls per timed run.
const CALLS: usize = 50;

/// server-everything's entry point, installed once into `target/mcp-upstream`.
fn server_everything() -> PathBuf {
    let prefix = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/mcp-upstream");
    let bin = prefix.join("node_modules/.bin/mcp-server-everything");
    if !bin.exists() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .args([SERVER_EVERYTHING, SERVER_FILESYSTEM])
            .status()
            .expect("run npm");
        assert!(status.success(), "npm install failed");
    }
    bin
}

fn main() {
    let rounds = common::rounds(15);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    rt.block_on(bench(rounds));
}

async fn bench(rounds: usize) {
    let bin = server_everything();
    let direct = direct_calls(&bin, rounds).await;

    let config = ToolsConfig::parse(
        &format!(
            "[servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\nallow = [\"echo\"]\n",
            bin.to_string_lossy()
        ),
        std::path::Path::new("."),
    )
    .expect("config");
    let gateway = Gateway::start(
        config,
        GatewaySettings {
            max_calls_per_run: 10_000,
            ..GatewaySettings::default()
        },
    )
    .expect("gateway");
    gateway.settled(Duration::from_secs(60)).await;
    let options = RunboxOptions {
        gateway: Some(gateway.clone()),
        ..RunboxOptions::default()
    };
    let runbox = common::load_builtin(&["python", "shell"], options);

    let py =
        |body: &str| format!("import tools\nfor i in range({CALLS}):\n    {body}\nprint('done')");
    let python = per_call(
        &runbox,
        "python",
        (&py("tools.everything.echo(message='hi')"), &py("pass")),
        CALLS,
        rounds,
    )
    .await;
    let refused = per_call(
        &runbox,
        "python",
        (&py("try:\n        tools.everything.get_env()\n    except tools.ToolError:\n        pass"), &py("pass")),
        CALLS,
        rounds,
    )
    .await;
    let sh = |body: &str| format!("for i in $(seq {CALLS}); do {body}; done; echo done");
    let shell = per_call(
        &runbox,
        "shell",
        (
            &sh("tool everything echo --message hi > /dev/null"),
            &sh("true > /dev/null"),
        ),
        CALLS,
        rounds,
    )
    .await;
    gateway.stop();

    println!("## Tool calls (code mode)\n");
    println!("server-everything's `echo` over stdio, warm; {CALLS} calls per run, {rounds} runs; ms per call (median).\n");
    println!("| call | ms per call | added over the direct call |");
    println!("| --- | --- | --- |");
    println!("| rmcp client → server (direct) | {direct:.3} | |");
    println!(
        "| python `tools.everything.echo(…)` | {python:.3} | {:.3} |",
        python - direct
    );
    println!(
        "| shell `tool everything echo …` | {shell:.3} | {:.3} |",
        shell - direct
    );
    println!("| python, refused by the host (no upstream) | {refused:.3} | |");
}

/// The median time of one `echo` call made by rmcp's client straight to the server.
async fn direct_calls(bin: &std::path::Path, rounds: usize) -> f64 {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(bin)
        .arg("stdio")
        .stderr(std::process::Stdio::null());
    let client =
        ().serve(TokioChildProcess::new(cmd).expect("start server-everything"))
            .await
            .expect("initialize");
    let call = || {
        let mut args = JsonObject::new();
        args.insert("message".into(), "hi".into());
        client.call_tool(CallToolRequestParams::new("echo").with_arguments(args))
    };
    for _ in 0..10 {
        call().await.expect("echo");
    }
    let mut times = Vec::new();
    for _ in 0..rounds * CALLS {
        let started = Instant::now();
        call().await.expect("echo");
        times.push(started.elapsed());
    }
    let _ = client.cancel().await;
    ms(median(&mut times))
}
