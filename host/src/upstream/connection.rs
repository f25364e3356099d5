//! One upstream server: connecting to it as an MCP client (rmcp's), listing its tools at
//! start and whenever it says its list changed, and connecting again (with backoff) when
//! it dies. Its state is published for the catalog; calls borrow its live connection.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::Tool;
use rmcp::service::{NotificationContext, Peer, RoleClient, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ServiceExt};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::config::{expand_env, ServerConfig, TransportConfig};
use super::http_client::CappedHttp;
use super::oversize::OversizeLines;

/// How long a server may take to start and answer `initialize` and `tools/list`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// The first wait before connecting again, doubled after each failure up to the last.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A connection that lived this long resets the backoff.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// Where a server is.
#[derive(Clone)]
pub enum Link {
    Connecting,
    /// `tools` is shared: every call looks at it, and it is cloned with the link.
    Ready {
        peer: Peer<RoleClient>,
        tools: Arc<Vec<Tool>>,
    },
    Down {
        message: String,
    },
}

/// One upstream server and its current link.
pub struct Upstream {
    pub config: ServerConfig,
    link: Mutex<Link>,
}

impl Upstream {
    pub fn new(config: ServerConfig) -> Arc<Upstream> {
        Arc::new(Upstream {
            config,
            link: Mutex::new(Link::Connecting),
        })
    }

    pub fn link(&self) -> Link {
        self.link.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(super) fn set(&self, link: Link, changed: &Notify) {
        *self.link.lock().unwrap_or_else(|e| e.into_inner()) = link;
        changed.notify_one();
    }

    /// Keeps the server connected until `stop`: connect, list, serve, and on the end of a
    /// connection wait and connect again. Every change of link wakes `changed`.
    pub async fn supervise(
        self: Arc<Self>,
        max_answer_bytes: usize,
        changed: Arc<Notify>,
        stop: CancellationToken,
    ) {
        let name = self.config.name.clone();
        let mut backoff = FIRST_BACKOFF;
        loop {
            let list_changed = Arc::new(Notify::new());
            let handler = UpstreamHandler {
                list_changed: list_changed.clone(),
            };
            let began = Instant::now();
            let connected = tokio::select! {
                c = tokio::time::timeout(CONNECT_TIMEOUT, self.connect(handler, max_answer_bytes)) => c
                    .unwrap_or_else(|_| {
                        let why = format!("it did not answer within {} s", CONNECT_TIMEOUT.as_secs());
                        Err(ConnectError { public: why.clone(), detail: why })
                    }),
                _ = stop.cancelled() => return,
            };
            match connected {
                Ok((service, tools, child)) => {
                    tracing::info!(server = %name, tools = tools.len(), "upstream MCP server connected");
                    self.set(
                        Link::Ready {
                            peer: service.peer().clone(),
                            tools: Arc::new(tools),
                        },
                        &changed,
                    );
                    let ended = self.serve(service, &list_changed, &changed, &stop).await;
                    // A stdio server goes with its connection (killed if still running).
                    drop(child);
                    if stop.is_cancelled() {
                        return;
                    }
                    let why = ended;
                    tracing::warn!(server = %name, "upstream MCP server went away: {why}; connecting again");
                    self.set(
                        Link::Down {
                            message: format!("{why}; connecting again"),
                        },
                        &changed,
                    );
                    if began.elapsed() > STABLE_AFTER {
                        backoff = FIRST_BACKOFF;
                    }
                }
                Err(ConnectError { public, detail }) => {
                    tracing::warn!(server = %name, "upstream MCP server unavailable: {detail} (trying again in {} s)", backoff.as_secs());
                    self.set(Link::Down { message: public }, &changed);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {}
                _ = stop.cancelled() => return,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Serves one live connection until it ends (or `stop`), listing the tools again
    /// whenever the server says they changed. Returns why it ended.
    async fn serve(
        &self,
        service: RunningService<RoleClient, UpstreamHandler>,
        list_changed: &Notify,
        changed: &Notify,
        stop: &CancellationToken,
    ) -> String {
        let peer = service.peer().clone();
        let closed = service.cancellation_token();
        let waiting = service.waiting();
        tokio::pin!(waiting);
        loop {
            tokio::select! {
                _ = &mut waiting => return "the connection closed".into(),
                _ = stop.cancelled() => {
                    closed.cancel();
                    return "runbox is stopping".into();
                }
                _ = list_changed.notified() => {
                    match peer.list_all_tools().await {
                        Ok(tools) => {
                            tracing::info!(server = %self.config.name, tools = tools.len(), "upstream tool list changed");
                            let tools = Arc::new(tools);
                            self.set(Link::Ready { peer: peer.clone(), tools }, changed);
                        }
                        Err(e) => tracing::warn!(server = %self.config.name, "listing tools again failed: {e}"),
                    }
                }
            }
        }
    }

    async fn connect(
        &self,
        handler: UpstreamHandler,
        max_answer_bytes: usize,
    ) -> Result<Connected, ConnectError> {
        let mut child = None;
        let service = match &self.config.transport {
            TransportConfig::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args).env_clear();
                // What a command found on PATH (npx, uvx, python) needs to run at all.
                for var in ["PATH", "HOME"] {
                    if let Some(v) = std::env::var_os(var) {
                        cmd.env(var, v);
                    }
                }
                for (k, v) in env {
                    cmd.env(k, expand_env(v).map_err(ConnectError::config)?);
                }
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                cmd.stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::inherit())
                    .kill_on_drop(true);
                let mut spawned = cmd.spawn().map_err(|e| {
                    ConnectError::new(
                        "its command could not be started",
                        format!("cannot start `{command}`: {e}"),
                    )
                })?;
                let stdout = spawned.stdout.take().expect("piped stdout");
                let stdin = spawned.stdin.take().expect("piped stdin");
                child = Some(spawned);
                // An answer past the cap fails its call, and only that (`oversize.rs`).
                let capped = OversizeLines::new(stdout, max_answer_bytes);
                let transport = AsyncRwTransport::new_client(capped, stdin)
                    .with_max_line_length(max_answer_bytes.saturating_add(1));
                handler.serve(transport).await.map_err(|e| {
                    ConnectError::new(
                        "it did not start an MCP session",
                        format!("`{command}` did not start an MCP session: {e}"),
                    )
                })?
            }
            TransportConfig::Http { url, headers } => {
                let mut custom = std::collections::HashMap::new();
                for (k, v) in headers {
                    let name = http::HeaderName::try_from(k.as_str())
                        .map_err(|e| ConnectError::config(format!("header `{k}`: {e}")))?;
                    let value =
                        http::HeaderValue::try_from(expand_env(v).map_err(ConnectError::config)?)
                            .map_err(|e| {
                            ConnectError::config(format!("header `{k}`'s value is not valid: {e}"))
                        })?;
                    custom.insert(name, value);
                }
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(custom)
                    .max_json_response_size(max_answer_bytes)
                    .max_sse_event_size(max_answer_bytes);
                let client = CappedHttp::new(max_answer_bytes).map_err(|e| {
                    ConnectError::new("its HTTP client cannot be made", e.to_string())
                })?;
                let transport = StreamableHttpClientTransport::with_client(client, config);
                handler.serve(transport).await.map_err(|e| {
                    ConnectError::new(
                        "it cannot be reached",
                        format!("cannot connect to {url}: {e}"),
                    )
                })?
            }
        };
        let tools = service.peer().list_all_tools().await.map_err(|e| {
            ConnectError::new("its tools/list failed", format!("tools/list failed: {e}"))
        })?;
        Ok((service, tools, child))
    }
}

/// Why a server could not be connected: what programs and clients are told (`public`:
/// never a command line, URL, header or variable of the config, which may hold secrets),
/// and what runbox's log says (`detail`).
struct ConnectError {
    public: String,
    detail: String,
}

impl ConnectError {
    fn new(public: &str, detail: String) -> ConnectError {
        ConnectError {
            public: format!("{public} (runbox's log says why)"),
            detail,
        }
    }

    /// A problem with the config's values (a variable not set, a bad header).
    fn config(detail: String) -> ConnectError {
        ConnectError::new("its configuration cannot be used", detail)
    }
}

/// A live connection, its tools, and (for a stdio server) the process, killed when
/// dropped.
type Connected = (
    RunningService<RoleClient, UpstreamHandler>,
    Vec<Tool>,
    Option<tokio::process::Child>,
);

/// What runbox does with the notifications of an upstream server: a changed tool list
/// is listed again.
#[derive(Clone)]
struct UpstreamHandler {
    list_changed: Arc<Notify>,
}

impl ClientHandler for UpstreamHandler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.notify_one();
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        let mut info = rmcp::model::ClientConfig::default();
        info.client_info.name = "runbox".into();
        info.client_info.version = env!("CARGO_PKG_VERSION").into();
        info
    }
}
