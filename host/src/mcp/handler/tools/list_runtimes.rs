//! `list_runtimes`: its result (the runtimes, the limits, code mode's servers) and its
//! description.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::service::{LimitSettings, RuntimeInfo, SessionMode};

/// What list_runtimes does, as its tools/list entry says it.
pub const DESCRIPTION: &str = "The runtimes (versions, samples, how sessions keep state) and \
                               a run's limits.";

/// One runtime in `list_runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RuntimeEntry {
    /// The name `run_code` takes.
    pub name: String,
    /// The language it runs.
    pub language: String,
    /// The interpreter's version.
    pub version: String,
    /// The usual file extension of its programs, without the dot.
    pub extension: String,
    /// A short program that runs in it.
    pub sample: Option<String>,
    /// Whether a session keeps variables, functions and imports between calls (files
    /// carry over in every session).
    pub session_state: bool,
    /// How a session's state is kept, when it is: "snapshot" (its interpreter's memory is
    /// copied: fork_session works, a stored session resumes in milliseconds) or "replay"
    /// (its calls run again). Only present when `session_state` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_mode: Option<SessionMode>,
    /// What a model should know about the runtime beyond its name and version, if anything.
    pub note: Option<String>,
    /// Packages the server's operator added (`NAME==VERSION`): importable in every run
    /// and session. Only present when there are some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub packages: Vec<String>,
    /// Only while it is not ready yet (first start): what is being done, e.g.
    /// "preparing: compiling … (for 40 s)"; a call waits for it. Or "failed: why".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preparation: Option<String>,
}

impl From<RuntimeInfo> for RuntimeEntry {
    fn from(info: RuntimeInfo) -> Self {
        RuntimeEntry {
            name: info.name,
            language: info.language,
            version: info.version,
            extension: info.extension,
            sample: info.sample,
            session_state: info.session_state,
            session_mode: info.session_mode,
            note: info.note,
            packages: info.packages,
            preparation: info.preparation,
        }
    }
}

/// The limits every run gets, in `list_runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// The time limit of a run that asks for none.
    pub default_timeout_seconds: f64,
    /// The most `timeout_seconds` may ask for; larger values are capped.
    pub max_timeout_seconds: f64,
    /// What compiling and linking may take, apart from the program's time limit.
    pub compile_timeout_seconds: f64,
    /// Memory a run may use, in MiB.
    pub memory_mb: u64,
    /// Output kept per stream, in bytes.
    pub output_bytes: u64,
    /// Sessions open at once, at most.
    pub max_sessions: u64,
    /// A session ends after this many seconds without calls.
    pub session_idle_timeout_seconds: f64,
}

impl Limits {
    pub fn new(
        limits: &LimitSettings,
        max_sessions: usize,
        session_idle: std::time::Duration,
    ) -> Self {
        Limits {
            default_timeout_seconds: limits.default_timeout.as_secs_f64(),
            max_timeout_seconds: limits.max_timeout.as_secs_f64(),
            compile_timeout_seconds: limits.compile_timeout.as_secs_f64(),
            memory_mb: limits.memory_bytes >> 20,
            output_bytes: limits.output_bytes as u64,
            max_sessions: max_sessions as u64,
            session_idle_timeout_seconds: session_idle.as_secs_f64(),
        }
    }
}

/// The `structuredContent` of `list_runtimes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListRuntimesOutput {
    /// The runtimes `run_code` accepts.
    pub runtimes: Vec<RuntimeEntry>,
    /// The limits of every run.
    pub limits: Limits,
    /// Upstream servers whose tools programs may call (code mode, docs/tools.md); absent
    /// without `--tools-config`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<ToolServerEntry>>,
    /// What programs may reach over the network, in one line (docs/network.md).
    pub network: String,
}

/// `network` without `--net-config`.
pub const NO_NETWORK: &str = "No network: nothing outside the sandbox is reachable (runbox was started without a network policy, --net-config).";

/// One upstream server, as `list_runtimes` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolServerEntry {
    /// What programs call it by (`tools.SERVER.TOOL` in python).
    pub server: String,
    /// Connected, with its tools listed.
    pub available: bool,
    /// Why it is unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Its allowed tools, a line each: `name(args): what it does`.
    pub tools: Vec<String>,
}

impl ToolServerEntry {
    pub fn listing(catalog: &crate::service::Catalog) -> Vec<ToolServerEntry> {
        catalog
            .servers
            .iter()
            .map(|s| ToolServerEntry {
                server: s.name.clone(),
                available: s.available,
                message: s.message.clone(),
                tools: s
                    .tools
                    .iter()
                    .map(|t| crate::service::tool_line(t, 120))
                    .collect(),
            })
            .collect()
    }
}
