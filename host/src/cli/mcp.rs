//! `runbox mcp`: its settings, one flag per setting, each with a `RUNBOX_…` environment
//! variable, and the command that serves.
//!
//! The plugins file and the cache directory are global flags (`--plugins`, `--cache-dir`).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use runbox::mcp::ServerSettings;
use runbox::mcp::Transport;
use runbox::mcp::DEFAULT_DRAIN_TIMEOUT;
use runbox::mcp::DEFAULT_MAX_HTTP_SESSIONS;
use runbox::mcp::{access, HttpAccess};
use runbox::mcp::{HttpLimits, DEFAULT_MAX_CONNECTIONS};
use runbox::mcp::{ResultLimits, DEFAULT_MAX_RESULT_BYTES, MIN_MAX_RESULT_BYTES};
use runbox::mcp::{TaskSettings, DEFAULT_MAX_TASKS, DEFAULT_MAX_TASK_TIMEOUT, DEFAULT_TASK_AFTER};
use runbox::mcp::{DEFAULT_RESOURCE_TTL, DEFAULT_RETAINED_BYTES};
use runbox::mcp::{DEFAULT_SHOWN_BYTES, MIN_SHOWN_BYTES};
use runbox::service::Replica;
use runbox::service::ToolsConfig;
use runbox::service::DEFAULT_MAX_QUEUED;
use runbox::service::{Gateway, GatewaySettings};
use runbox::service::{
    LimitSettings, RunboxOptions, DEFAULT_HIBERNATE_AFTER, DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE,
};
use runbox::service::{
    StoreSettings, DEFAULT_MAX_ENTRY_BYTES, DEFAULT_MAX_STORED, DEFAULT_STORED_TTL,
};
use runbox::service::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TOOL_CALLS,
};

use super::global::GlobalArgs;
use super::limits::{seconds, LimitArgs};

#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    /// Serve the streamable-HTTP transport at http://ADDR/mcp instead of stdio. A bare port
    /// means 127.0.0.1:PORT. Any address but loopback needs --token.
    #[arg(long, env = "RUNBOX_HTTP", value_name = "ADDR", value_parser = parse_http_addr)]
    pub http: Option<SocketAddr>,
    /// Bearer token HTTP clients must send (`Authorization: Bearer TOKEN`), at least 32
    /// characters. Prefer --token-file: a flag shows in `ps`.
    #[arg(
        long,
        env = "RUNBOX_TOKEN",
        value_name = "TOKEN",
        hide_env_values = true,
        conflicts_with = "token_file"
    )]
    pub token: Option<String>,
    /// Read the bearer token from this file (surrounding whitespace ignored).
    #[arg(long, env = "RUNBOX_TOKEN_FILE", value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// A browser origin allowed to call the HTTP server, like https://app.example:443 or
    /// http://localhost:* (repeat, or comma-separate). Requests with any other `Origin`
    /// get 403; requests without one (non-browser clients) are not affected. A loopback
    /// server always allows loopback origins.
    #[arg(
        long = "allow-origin",
        env = "RUNBOX_ALLOW_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ',',
        value_parser = access::check_origin
    )]
    pub allow_origins: Vec<String>,
    /// Wall-clock limit of a run that asks for none, in seconds [default: 10, or
    /// --max-timeout when that is lower].
    #[arg(long, env = "RUNBOX_DEFAULT_TIMEOUT", value_name = "SECS")]
    pub default_timeout: Option<f64>,
    /// The most a run may ask for with `timeout_seconds`; larger requests are capped.
    #[arg(long, env = "RUNBOX_MAX_TIMEOUT", value_name = "SECS",
          default_value_t = LimitSettings::default().max_timeout.as_secs_f64())]
    pub max_timeout: f64,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Expose only these runtimes (comma-separated names from the plugins file; default all).
    #[arg(
        long,
        env = "RUNBOX_RUNTIMES",
        value_name = "NAMES",
        value_delimiter = ','
    )]
    pub runtimes: Vec<String>,
    /// Runs at once; further calls wait for a free slot.
    #[arg(
        long,
        env = "RUNBOX_MAX_CONCURRENT",
        value_name = "N",
        default_value_t = 8
    )]
    pub max_concurrent: usize,
    /// Calls that may wait for a free slot; past them a call gets a prompt "busy" tool error.
    #[arg(long, env = "RUNBOX_MAX_QUEUED", value_name = "N", default_value_t = DEFAULT_MAX_QUEUED)]
    pub max_queued: usize,
    /// Memory all runs and waiting calls together may hold, in MiB [default: three
    /// quarters of the machine's memory]. Past it a run's allocation fails, or a new call
    /// gets a "busy" tool error.
    #[arg(long, env = "RUNBOX_SERVER_MEMORY_MB", value_name = "N")]
    pub server_memory_mb: Option<u64>,
    /// Programs produced by runs (a compiler's output) compiled at once [default: half the cores];
    /// more wait, within their own time limit.
    #[arg(long, env = "RUNBOX_MAX_COMPILES", value_name = "N")]
    pub max_compiles: Option<usize>,
    /// Sessions open at once (create_session); one more is a tool error naming the cap.
    #[arg(long, env = "RUNBOX_MAX_SESSIONS", value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// A session ends after this many seconds without calls; its files are removed.
    #[arg(
        long,
        env = "RUNBOX_SESSION_IDLE_TIMEOUT",
        value_name = "SECS",
        default_value_t = DEFAULT_SESSION_IDLE.as_secs_f64()
    )]
    pub session_idle_timeout: f64,
    /// Keep sessions in this directory when they hibernate, and when the server stops, so
    /// that they survive a restart and move between replicas that share it
    /// (docs/mcp.md, "Durable sessions"). Without it, sessions live in memory only.
    #[arg(long, env = "RUNBOX_SESSION_STORE", value_name = "DIR")]
    pub session_store: Option<PathBuf>,
    /// With --session-store: a session idle for this many seconds is stored and its
    /// memory freed; its next call resumes it. Only sessions in memory count against
    /// --max-sessions (when it is reached, the least recently used idle one is stored).
    #[arg(long, env = "RUNBOX_SESSION_HIBERNATE_AFTER", value_name = "SECS", default_value_t = DEFAULT_HIBERNATE_AFTER.as_secs_f64())]
    pub session_hibernate_after: f64,
    /// With --session-store: the most sessions it keeps; storing one more fails (the
    /// session then stays in memory).
    #[arg(long, env = "RUNBOX_MAX_STORED_SESSIONS", value_name = "N", default_value_t = DEFAULT_MAX_STORED)]
    pub max_stored_sessions: usize,
    /// With --session-store: a stored session is removed this many seconds after it was
    /// stored.
    #[arg(long, env = "RUNBOX_SESSION_TTL", value_name = "SECS", default_value_t = DEFAULT_STORED_TTL.as_secs_f64())]
    pub session_ttl: f64,
    /// With --session-store: the most one stored session may hold, in MiB (its files and
    /// the journal of its calls).
    #[arg(long, env = "RUNBOX_MAX_STORED_SESSION_MB", value_name = "N", default_value_t = DEFAULT_MAX_ENTRY_BYTES >> 20)]
    pub max_stored_session_mb: u64,
    /// Output a result shows per stream, in bytes: past it, the head and the tail with a
    /// marker between them (the whole output is linked, see --resource-ttl).
    #[arg(long, env = "RUNBOX_SHOWN_OUTPUT_BYTES", value_name = "BYTES", default_value_t = DEFAULT_SHOWN_BYTES)]
    pub shown_output_bytes: usize,
    /// The largest serialized run_code result, in bytes (files past it are linked, not
    /// inlined).
    #[arg(long, env = "RUNBOX_MAX_RESULT_BYTES", value_name = "BYTES", default_value_t = DEFAULT_MAX_RESULT_BYTES)]
    pub max_result_bytes: usize,
    /// How long what a result left out (the whole output, output files) stays readable
    /// with resources/read, in seconds.
    #[arg(long, env = "RUNBOX_RESOURCE_TTL", value_name = "SECS", default_value_t = DEFAULT_RESOURCE_TTL.as_secs_f64())]
    pub resource_ttl: f64,
    /// Memory for what results left out, all results together, in bytes (part of the
    /// server's memory budget); what does not fit is not linked.
    #[arg(long, env = "RUNBOX_RETAINED_BYTES", value_name = "BYTES", default_value_t = DEFAULT_RETAINED_BYTES)]
    pub retained_bytes: u64,
    /// The most `timeout_seconds` may ask for from a client that speaks MCP tasks (its
    /// long calls become tasks); --max-timeout still caps other clients.
    #[arg(long, env = "RUNBOX_MAX_TASK_TIMEOUT", value_name = "SECS", default_value_t = DEFAULT_MAX_TASK_TIMEOUT.as_secs_f64())]
    pub max_task_timeout: f64,
    /// A call from a client that speaks MCP tasks that has not finished after this many
    /// seconds is answered with a task to poll.
    #[arg(long, env = "RUNBOX_TASK_AFTER", value_name = "SECS", default_value_t = DEFAULT_TASK_AFTER.as_secs_f64())]
    pub task_after: f64,
    /// Tasks kept at once (working, or finished and not yet expired).
    #[arg(long, env = "RUNBOX_MAX_TASKS", value_name = "N", default_value_t = DEFAULT_MAX_TASKS)]
    pub max_tasks: usize,
    /// HTTP connections open at once; more wait to be accepted.
    #[arg(long, env = "RUNBOX_MAX_CONNECTIONS", value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// MCP protocol sessions of handshake-era HTTP clients open at once (clients of the
    /// 2026-07-28 revision need none); one more `initialize` gets 503.
    #[arg(long, env = "RUNBOX_MAX_HTTP_SESSIONS", value_name = "N", default_value_t = DEFAULT_MAX_HTTP_SESSIONS)]
    pub max_http_sessions: usize,
    /// This replica's name behind a load balancer (1 to 32 of a-z, 0-9, -): every
    /// session id, task id and resource URI it hands out starts with it, and a request
    /// for another replica's handle gets an error naming that replica
    /// (docs/scale-out.md).
    #[arg(long, env = "RUNBOX_REPLICA_ID", value_name = "ID", value_parser = parse_replica_id)]
    pub replica_id: Option<String>,
    /// On SIGTERM (or ctrl-c) an HTTP server drains: /readyz fails, new sessions are
    /// refused, and work under way gets this many seconds to finish before the server
    /// stops (a second signal stops it at once).
    #[arg(long, env = "RUNBOX_DRAIN_TIMEOUT", value_name = "SECS", default_value_t = DEFAULT_DRAIN_TIMEOUT.as_secs_f64())]
    pub drain_timeout: f64,
    /// Upstream MCP servers whose tools programs in the sandbox may call ("code mode"): a
    /// TOML file naming each server (a stdio command or an HTTP URL) and its allowed tools
    /// (docs/tools.md). An upstream that cannot start is reported, never fatal.
    #[arg(long, env = "RUNBOX_TOOLS_CONFIG", value_name = "FILE")]
    pub tools_config: Option<PathBuf>,
    /// With --tools-config: tool calls one run may make; the next is refused.
    #[arg(long, env = "RUNBOX_MAX_TOOL_CALLS", value_name = "N", default_value_t = DEFAULT_MAX_TOOL_CALLS)]
    pub max_tool_calls: u32,
    /// With --tools-config: the largest request a program may send to a tool, in bytes.
    #[arg(long, env = "RUNBOX_MAX_TOOL_REQUEST_BYTES", value_name = "BYTES", default_value_t = DEFAULT_MAX_REQUEST_BYTES)]
    pub max_tool_request_bytes: usize,
    /// With --tools-config: the largest answer a tool may give, in bytes (a stdio server
    /// that sends more is restarted; the call fails with a `limit` error).
    #[arg(long, env = "RUNBOX_MAX_TOOL_RESULT_BYTES", value_name = "BYTES", default_value_t = DEFAULT_MAX_ANSWER_BYTES)]
    pub max_tool_result_bytes: usize,
    /// Network egress by policy: a TOML file naming the hosts programs may reach, the
    /// secrets they may use there (placeholders in the sandbox, values only on the wire)
    /// and per-run caps (docs/network.md). Without it nothing is reachable.
    #[arg(long, env = "RUNBOX_NET_CONFIG", value_name = "FILE")]
    pub net_config: Option<PathBuf>,
}

impl Default for McpArgs {
    fn default() -> Self {
        let limits = LimitSettings::default();
        McpArgs {
            http: None,
            token: None,
            token_file: None,
            allow_origins: Vec::new(),
            default_timeout: None,
            max_timeout: limits.max_timeout.as_secs_f64(),
            limits: LimitArgs::default(),
            runtimes: Vec::new(),
            max_concurrent: RunboxOptions::default().max_concurrent,
            max_queued: DEFAULT_MAX_QUEUED,
            server_memory_mb: None,
            max_compiles: None,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE.as_secs_f64(),
            session_store: None,
            session_hibernate_after: DEFAULT_HIBERNATE_AFTER.as_secs_f64(),
            max_stored_sessions: DEFAULT_MAX_STORED,
            session_ttl: DEFAULT_STORED_TTL.as_secs_f64(),
            max_stored_session_mb: DEFAULT_MAX_ENTRY_BYTES >> 20,
            shown_output_bytes: DEFAULT_SHOWN_BYTES,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            resource_ttl: DEFAULT_RESOURCE_TTL.as_secs_f64(),
            retained_bytes: DEFAULT_RETAINED_BYTES,
            max_task_timeout: DEFAULT_MAX_TASK_TIMEOUT.as_secs_f64(),
            task_after: DEFAULT_TASK_AFTER.as_secs_f64(),
            max_tasks: DEFAULT_MAX_TASKS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_http_sessions: DEFAULT_MAX_HTTP_SESSIONS,
            replica_id: None,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT.as_secs_f64(),
            tools_config: None,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_tool_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_tool_result_bytes: DEFAULT_MAX_ANSWER_BYTES,
            net_config: None,
        }
    }
}

/// `--session-ttl`: longer than other durations, up to 30 days.
fn stored_ttl(secs: f64) -> Result<std::time::Duration> {
    const MAX: f64 = 30.0 * 86_400.0;
    if !(secs > 0.0 && secs <= MAX) {
        bail!("--session-ttl must be a number of seconds above 0 and at most {MAX}, not {secs}");
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

impl McpArgs {
    /// Checks the settings and turns them into the options [`crate::service::Runbox`] loads with.
    pub fn runbox_options(&self) -> Result<RunboxOptions> {
        let max_timeout = seconds("--max-timeout", self.max_timeout)?;
        let default_timeout = match self.default_timeout {
            Some(secs) => seconds("--default-timeout", secs)?,
            None => LimitSettings::default().default_timeout.min(max_timeout),
        };
        if default_timeout > max_timeout {
            bail!(
                "--default-timeout ({} s) is larger than --max-timeout ({} s)",
                default_timeout.as_secs_f64(),
                self.max_timeout
            );
        }
        let limits = self.limits.settings(default_timeout, max_timeout)?;
        if self.max_concurrent == 0 {
            bail!("--max-concurrent must be at least 1");
        }
        let mut only: Vec<String> = Vec::new();
        for name in self.runtimes.iter().map(|n| n.trim()) {
            if !name.is_empty() && !only.iter().any(|n| n == name) {
                only.push(name.to_string());
            }
        }
        let defaults = RunboxOptions::default();
        let server_memory_bytes = match self.server_memory_mb {
            Some(mib) => super::limits::memory_bytes("--server-memory-mb", mib)?,
            None => defaults.server_memory_bytes,
        };
        if server_memory_bytes < limits.memory_bytes {
            bail!(
                "--server-memory-mb ({} MiB) is smaller than --memory-mb ({} MiB): no run could use its cap",
                server_memory_bytes >> 20,
                self.limits.memory_mb
            );
        }
        if self.max_compiles == Some(0) {
            bail!("--max-compiles must be at least 1");
        }
        let session_idle_timeout = seconds("--session-idle-timeout", self.session_idle_timeout)?;
        let session_hibernate_after =
            seconds("--session-hibernate-after", self.session_hibernate_after)?;
        let session_store = match &self.session_store {
            None => None,
            Some(dir) => {
                if self.max_stored_sessions == 0 {
                    bail!("--max-stored-sessions must be at least 1");
                }
                if self.max_stored_session_mb == 0 {
                    bail!("--max-stored-session-mb must be at least 1");
                }
                Some(StoreSettings {
                    dir: dir.clone(),
                    max_entries: self.max_stored_sessions,
                    ttl: stored_ttl(self.session_ttl)?,
                    max_entry_bytes: self.max_stored_session_mb.saturating_mul(1 << 20),
                })
            }
        };
        Ok(RunboxOptions {
            // Each HTTP connection holds a descriptor the runs must not count on.
            connections: if self.http.is_some() {
                self.max_connections
            } else {
                0
            },
            max_queued: self.max_queued,
            server_memory_bytes,
            max_compiles: self.max_compiles.unwrap_or(defaults.max_compiles),
            limits,
            max_concurrent: self.max_concurrent,
            only,
            max_sessions: self.max_sessions,
            session_idle_timeout,
            session_store,
            session_hibernate_after,
            replica: Replica::new(self.replica_id.as_deref())?,
            ..defaults
        })
    }

    /// Checks the result, resource and task settings.
    pub fn server_settings(&self) -> Result<ServerSettings> {
        if self.shown_output_bytes < MIN_SHOWN_BYTES {
            bail!("--shown-output-bytes must be at least {MIN_SHOWN_BYTES}");
        }
        if self.max_result_bytes < MIN_MAX_RESULT_BYTES {
            bail!("--max-result-bytes must be at least {MIN_MAX_RESULT_BYTES}");
        }
        if self.shown_output_bytes.saturating_mul(5) > self.max_result_bytes {
            bail!(
                "--shown-output-bytes ({}) is too large for --max-result-bytes ({}): a result \
                 shows each stream twice, and both interleaved",
                self.shown_output_bytes,
                self.max_result_bytes
            );
        }
        let max_timeout = seconds("--max-timeout", self.max_timeout)?;
        let max_task_timeout = seconds("--max-task-timeout", self.max_task_timeout)?;
        if max_task_timeout < max_timeout {
            bail!(
                "--max-task-timeout ({} s) is lower than --max-timeout ({} s)",
                self.max_task_timeout,
                self.max_timeout
            );
        }
        if self.max_tasks == 0 {
            bail!("--max-tasks must be at least 1");
        }
        Ok(ServerSettings {
            results: ResultLimits {
                shown_bytes: self.shown_output_bytes,
                max_result_bytes: self.max_result_bytes,
            },
            resource_ttl: seconds("--resource-ttl", self.resource_ttl)?,
            retained_bytes: self.retained_bytes,
            tasks: TaskSettings {
                max_timeout: max_task_timeout,
                after: seconds("--task-after", self.task_after)?,
                max_tasks: self.max_tasks,
                ttl: seconds("--resource-ttl", self.resource_ttl)?,
            },
        })
    }

    /// The HTTP transport's own bounds.
    pub fn http_limits(&self) -> Result<HttpLimits> {
        Ok(HttpLimits {
            max_connections: self.max_connections.max(1),
            max_sessions: self.max_http_sessions,
            drain_timeout: seconds("--drain-timeout", self.drain_timeout)?,
        })
    }

    /// What the HTTP transport checks: the token (from --token-file or --token, checked;
    /// an empty --token counts as none) and the allowed origins.
    pub fn http_access(&self) -> Result<HttpAccess> {
        let token = match (&self.token_file, self.token.as_deref()) {
            (Some(path), _) => Some(access::token_from_file(path)?),
            (None, Some(token)) if !token.is_empty() => Some(access::checked_token(token)?),
            (None, _) => None,
        };
        Ok(HttpAccess {
            token,
            allow_origins: self.allow_origins.clone(),
        })
    }
}

/// `runbox mcp`: checks the settings, starts preparing the runtimes in the background
/// (fetching and compiling what is missing, progress on stderr) and serves at once, until
/// the client goes away (stdio) or a signal (HTTP).
pub async fn command(global: &GlobalArgs, args: McpArgs) -> Result<()> {
    let mut options = args.runbox_options()?;
    options.gateway = args.start_gateway().await?;
    options.net = match &args.net_config {
        Some(path) => {
            let cache = global.cache()?;
            let net =
                runbox::service::Net::start(runbox::service::NetConfig::load(path)?, cache.root())?;
            tracing::info!("{}", net.summary());
            Some(net)
        }
        None => None,
    };
    let settings = args.server_settings()?;
    let transport = match args.http {
        Some(addr) => {
            let access = args.http_access()?;
            runbox::mcp::check_bind(addr, &access)?;
            Transport::Http {
                addr,
                access,
                limits: args.http_limits()?,
            }
        }
        None => Transport::Stdio,
    };
    let runbox = std::sync::Arc::new(global.start(options)?);
    let names = runbox.runtime_names().join(", ");
    // Where an HTTP server listens is the one thing its user cannot know otherwise.
    let say_where = !global.quiet || args.http.is_some();
    runbox::mcp::serve(runbox, settings, transport, |place| {
        if say_where {
            eprintln!("runbox: serving MCP {place} ({names})");
        }
    })
    .await
}

impl McpArgs {
    /// Starts connecting to the upstream servers of --tools-config, giving them a few
    /// seconds so that the first tool listing has their tools (a server still starting
    /// then is listed as connecting, and comes in later).
    async fn start_gateway(&self) -> Result<Option<std::sync::Arc<Gateway>>> {
        let Some(path) = &self.tools_config else {
            return Ok(None);
        };
        if self.max_tool_request_bytes == 0 || self.max_tool_result_bytes < 1024 {
            bail!("--max-tool-request-bytes must be at least 1 and --max-tool-result-bytes at least 1024");
        }
        let config = ToolsConfig::load(path)?;
        let settings = GatewaySettings {
            max_calls_per_run: self.max_tool_calls,
            max_request_bytes: self.max_tool_request_bytes,
            max_answer_bytes: self.max_tool_result_bytes,
        };
        let gateway = Gateway::start(config, settings)
            .map_err(|e| anyhow::anyhow!("cannot write the /tools directory: {e}"))?;
        gateway.settled(std::time::Duration::from_secs(15)).await;
        for line in gateway.catalog().summary_lines() {
            tracing::info!("tool: {line}");
        }
        Ok(Some(gateway))
    }
}

fn parse_replica_id(s: &str) -> Result<String, String> {
    Replica::new(Some(s))
        .map(|_| s.to_string())
        .map_err(|e| e.to_string())
}

fn parse_http_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    Err(format!(
        "`{s}` is not an address like 127.0.0.1:8080 or [::1]:8080, nor a port"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn defaults_match_the_library_defaults() {
        let options = McpArgs::default().runbox_options().unwrap();
        let limits = LimitSettings::default();
        assert_eq!(options.limits.default_timeout, limits.default_timeout);
        assert_eq!(options.limits.max_timeout, limits.max_timeout);
        assert_eq!(options.limits.memory_bytes, limits.memory_bytes);
        assert_eq!(options.limits.output_bytes, limits.output_bytes);
        assert!(options.only.is_empty());
    }

    #[test]
    fn bad_settings_are_refused() {
        let bad = [
            McpArgs {
                default_timeout: Some(0.0),
                ..McpArgs::default()
            },
            McpArgs {
                max_timeout: f64::NAN,
                ..McpArgs::default()
            },
            McpArgs {
                default_timeout: Some(30.0),
                max_timeout: 20.0,
                ..McpArgs::default()
            },
            McpArgs {
                limits: LimitArgs {
                    memory_mb: 0,
                    ..LimitArgs::default()
                },
                ..McpArgs::default()
            },
            McpArgs {
                max_concurrent: 0,
                ..McpArgs::default()
            },
            McpArgs {
                limits: LimitArgs {
                    memory_mb: u64::MAX,
                    ..LimitArgs::default()
                },
                ..McpArgs::default()
            },
            McpArgs {
                server_memory_mb: Some(100),
                ..McpArgs::default()
            },
            McpArgs {
                max_compiles: Some(0),
                ..McpArgs::default()
            },
            McpArgs {
                limits: LimitArgs {
                    compile_timeout: 0.0,
                    ..LimitArgs::default()
                },
                ..McpArgs::default()
            },
        ];
        for args in bad {
            assert!(args.runbox_options().is_err(), "{args:?}");
        }
    }

    #[test]
    fn a_low_maximum_lowers_the_default() {
        let args = McpArgs {
            max_timeout: 2.0,
            ..McpArgs::default()
        };
        let limits = args.runbox_options().unwrap().limits;
        assert_eq!(limits.default_timeout, Duration::from_secs(2));
        assert_eq!(limits.max_timeout, Duration::from_secs(2));
    }

    #[test]
    fn runtime_selection_is_trimmed_and_deduplicated() {
        let args = McpArgs {
            runtimes: vec!["python".into(), " ruby".into(), "python".into(), "".into()],
            ..McpArgs::default()
        };
        assert_eq!(args.runbox_options().unwrap().only, ["python", "ruby"]);
    }

    #[test]
    fn tokens_are_checked() {
        let with = |token: &str| McpArgs {
            token: Some(token.into()),
            ..McpArgs::default()
        };
        assert!(with("s3cret").http_access().is_err());
        assert_eq!(with("").http_access().unwrap().token, None);
        let long = "k".repeat(32);
        assert_eq!(with(&long).http_access().unwrap().token, Some(long));
        let missing = McpArgs {
            token_file: Some("/nonexistent/runbox-token".into()),
            ..McpArgs::default()
        };
        assert!(missing.http_access().is_err());
    }

    #[test]
    fn http_addresses() {
        assert_eq!(
            parse_http_addr("8080").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        assert_eq!(
            parse_http_addr("[::1]:9").unwrap(),
            "[::1]:9".parse().unwrap()
        );
        assert!(parse_http_addr("localhost:80").is_err());
    }
}
