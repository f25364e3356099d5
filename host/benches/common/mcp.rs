//! `runbox mcp` as a child process, driven by rmcp's client over its stdio: what a bench
//! measures as an MCP round trip.

use std::process::Stdio;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

pub struct McpServer {
    client: RunningService<RoleClient, ()>,
    pid: u32,
}

impl McpServer {
    /// Starts `runbox mcp --quiet ARGS` on the benches' cache and initializes.
    pub async fn start(args: &[&str]) -> McpServer {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_runbox"));
        command
            .arg("mcp")
            .arg("--quiet")
            .args(args)
            .env("RUNBOX_CACHE_DIR", super::cache_dir())
            .stderr(Stdio::null());
        let transport = TokioChildProcess::new(command).expect("start runbox mcp");
        let pid = transport.id().expect("a child process");
        let client = ().serve(transport).await.expect("initialize");
        McpServer { client, pid }
    }

    pub async fn call(&self, tool: &'static str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            unreachable!("arguments are an object")
        };
        let params = CallToolRequestParams::new(tool).with_arguments(JsonObject::from_iter(args));
        self.client.call_tool(params).await.expect("tools/call")
    }

    /// Runs `code` and checks it printed `expected`.
    pub async fn expect(&self, runtime: &str, code: &str, stdin: Option<&str>, expected: &str) {
        let mut args = json!({"runtime": runtime, "code": code, "timeout_seconds": 60});
        if let Some(stdin) = stdin {
            args["stdin"] = json!(stdin);
        }
        let result = self.call("run_code", args).await;
        check(&result, expected);
    }

    /// A new session of `runtime`; its id.
    pub async fn create_session(&self, runtime: &str) -> String {
        let result = self
            .call("create_session", json!({"runtime": runtime}))
            .await;
        result.structured_content.expect("structuredContent")["session_id"]
            .as_str()
            .expect("a session id")
            .to_string()
    }

    /// Runs `code` in session `id` and checks it printed `expected`.
    pub async fn expect_in(&self, id: &str, code: &str, expected: &str) {
        let result = self
            .call("run_code", json!({"session_id": id, "code": code}))
            .await;
        check(&result, expected);
    }

    /// A `/proc/PID/status` field in KiB: `VmRSS`, or its parts `RssAnon` (heap and
    /// linear memories), `RssFile` (mapped files: the compiled runtimes' code) and
    /// `RssShmem` (memfd-backed copy-on-write memory images).
    pub fn status_kib(&self, field: &str) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

fn check(result: &CallToolResult, expected: &str) {
    let content = result
        .structured_content
        .as_ref()
        .unwrap_or_else(|| panic!("{result:?}"));
    assert_eq!(content["stdout"], expected, "{content}");
}
