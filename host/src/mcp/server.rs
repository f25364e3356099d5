//! The MCP handler: the `run_code` and `list_runtimes` tools over a loaded [`Runbox`].
//!
//! One request: rmcp parses `tools/call` → [`RunboxServer::run_code`] checks the arguments →
//! [`Runbox::run`] with a token that rmcp cancels on `notifications/cancelled` or when the
//! connection ends → the outcome as `structuredContent` plus readable text.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ServerCapabilities, ServerConfig,
};
use rmcp::{tool, tool_handler, tool_router, ServerHandler};
use tokio_util::sync::CancellationToken;

use super::schema::{self, ListRuntimesOutput, RunCodeInput, RunCodeOutput};
use crate::service::{LimitOverrides, LimitSettings, RunRequest, Runbox, RuntimeInfo};

/// The MCP server: cheap to clone (one per HTTP session), all clones share one [`Runbox`]
/// and so one limit of concurrent runs.
#[derive(Clone)]
pub struct RunboxServer {
    runbox: Arc<Runbox>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl RunboxServer {
    /// A handler for the runtimes `runbox` has loaded: their names become `run_code`'s
    /// `runtime` enum and its description tells a model what it can run.
    pub fn new(runbox: Arc<Runbox>) -> Self {
        let runtimes = runbox.runtimes();
        let limits = runbox.limits().clone();
        let mut tool_router = Self::tool_router();
        let route = tool_router
            .map
            .get_mut("run_code")
            .expect("run_code is a tool");
        route.attr.input_schema = schema::run_code_input_schema(&runtimes, &limits);
        route.attr.description = Some(run_code_description(&runtimes, &limits).into());
        RunboxServer {
            runbox,
            tool_router,
        }
    }

    /// Run a program in a sandbox (the description is written at start-up).
    #[tool(
        name = "run_code",
        input_schema = schema::run_code_base_input_schema(),
        output_schema = schema::run_code_output_schema(),
        annotations(
            title = "Run code",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn run_code(
        &self,
        Parameters(arguments): Parameters<JsonObject>,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let input = match self.parse_arguments(arguments) {
            Ok(input) => input,
            Err(message) => return CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        let request = RunRequest {
            runtime: input.runtime,
            code: input.code,
            stdin: input.stdin.map(String::into_bytes),
            args: Vec::new(),
            limits: LimitOverrides {
                timeout: input.timeout,
                memory_bytes: None,
            },
        };
        match self.runbox.run(request, cancel).await {
            Ok(outcome) => {
                let output = RunCodeOutput::from(outcome);
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(output.to_text())]);
                result.structured_content =
                    Some(serde_json::to_value(&output).expect("RunCodeOutput serializes"));
                result
            }
            Err(e) => CallToolResult::error(vec![ContentBlock::text(e.to_string())]),
        }
    }

    /// What `run_code` can run, and within which limits.
    #[tool(
        name = "list_runtimes",
        description = "The runtimes run_code accepts (name, language, version, file extension, \
                       a sample program) and the limits every run gets.",
        annotations(
            title = "List runtimes",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_runtimes(&self) -> Json<ListRuntimesOutput> {
        Json(ListRuntimesOutput {
            runtimes: self.runbox.runtimes().into_iter().map(Into::into).collect(),
            limits: self.runbox.limits().into(),
        })
    }
}

/// The largest `code` a call may send; larger is a tool error saying so.
pub const MAX_CODE_BYTES: usize = 4 << 20;
/// The largest `stdin` a call may send.
pub const MAX_STDIN_BYTES: usize = 4 << 20;

/// `run_code`'s arguments, checked.
struct CheckedInput {
    runtime: String,
    code: String,
    stdin: Option<String>,
    timeout: Option<Duration>,
}

impl RunboxServer {
    /// Checks `run_code`'s arguments; the error names the valid runtimes.
    fn parse_arguments(&self, arguments: JsonObject) -> Result<CheckedInput, String> {
        let names = self.runbox.runtime_names();
        let usage = || {
            format!(
                "run_code takes {{\"runtime\": one of {}, \"code\": string, \"stdin\"?: string, \
                 \"timeout_seconds\"?: number}}",
                names.join(", ")
            )
        };
        let input: RunCodeInput = serde_json::from_value(arguments.into())
            .map_err(|e| format!("invalid arguments: {e}; {}", usage()))?;
        if !names.contains(&input.runtime) {
            return Err(format!(
                "unknown runtime `{}`; valid runtimes: {}",
                input.runtime,
                names.join(", ")
            ));
        }
        let too_big = |field: &str, len: usize, max: usize| {
            format!(
                "invalid arguments: `{field}` is {len} bytes; the limit is {} MiB",
                max >> 20
            )
        };
        if input.code.len() > MAX_CODE_BYTES {
            return Err(too_big("code", input.code.len(), MAX_CODE_BYTES));
        }
        if let Some(stdin) = input.stdin.as_ref().filter(|s| s.len() > MAX_STDIN_BYTES) {
            return Err(too_big("stdin", stdin.len(), MAX_STDIN_BYTES));
        }
        let max = self.runbox.limits().max_timeout;
        let timeout = match input.timeout_seconds {
            None => None,
            Some(secs) if secs > 0.0 && secs.is_finite() => {
                Some(Duration::from_secs_f64(secs.min(max.as_secs_f64())))
            }
            Some(secs) => {
                return Err(format!(
                    "invalid arguments: timeout_seconds must be a number of seconds above 0, \
                     not {secs}; {}",
                    usage()
                ))
            }
        };
        Ok(CheckedInput {
            runtime: input.runtime,
            code: input.code,
            stdin: input.stdin,
            timeout,
        })
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RunboxServer {
    fn get_info(&self) -> ServerConfig {
        let names = self.runbox.runtime_names().join(", ");
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("runbox", env!("CARGO_PKG_VERSION"))
                    .with_title("runbox: run code in a sandbox"),
            )
            .with_instructions(format!(
                "runbox runs programs in WebAssembly sandboxes. Call run_code with a runtime \
                 ({names}) and the program's source; list_runtimes tells versions, samples and \
                 limits."
            ))
    }
}

/// The tool description, written for a model: what runs, what the sandbox allows, the limits.
pub fn run_code_description(runtimes: &[RuntimeInfo], limits: &LimitSettings) -> String {
    let listed: Vec<String> = runtimes
        .iter()
        .map(|r| format!("- {}: {} {}", r.name, r.language, r.version))
        .collect();
    format!(
        "Run a program in a sandbox and get its output. Runtimes:\n{}\n\n\
         Each call starts fresh in a WebAssembly sandbox: only the language's standard library \
         is there (no packages, nothing can be installed), there is no network, no host files, \
         and no files are kept between calls (scratch files written during a run are gone \
         afterwards). Give input with `stdin`; command-line arguments are not supported.\n\n\
         Limits per run: {} s wall-clock by default (`timeout_seconds` may ask for up to {} s), \
         {} of memory, {} of output per stream.\n\n\
         The result has `status` (completed, crashed, terminated, timeout), `exit_code` \
         (when completed), `stdout`, `stderr`, `tty` (both interleaved as written), `error`, \
         `truncated` and `duration_ms`. A program that exits non-zero is still `completed`.",
        listed.join("\n"),
        schema::secs(limits.default_timeout.as_secs_f64()),
        schema::secs(limits.max_timeout.as_secs_f64()),
        bytes(limits.memory_bytes),
        bytes(limits.output_bytes as u64),
    )
}

/// A size as people write it: `512 MiB`, `64 KiB`, `1000 bytes`.
fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_names_runtimes_and_limits() {
        let runtimes = [RuntimeInfo {
            name: "python".into(),
            language: "Python".into(),
            version: "3.11.3".into(),
            extension: "py".into(),
            sample: None,
        }];
        let text = run_code_description(&runtimes, &LimitSettings::default());
        for needle in [
            "- python: Python 3.11.3",
            "standard library",
            "no network",
            "no files are kept between calls",
            "10 s wall-clock",
            "up to 60 s",
            "512 MiB of memory",
            "1 MiB of output",
        ] {
            assert!(text.contains(needle), "{needle:?} not in {text}");
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(bytes(512 << 20), "512 MiB");
        assert_eq!(bytes(64 << 10), "64 KiB");
        assert_eq!(bytes(1000), "1000 bytes");
    }
}
