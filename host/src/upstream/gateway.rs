//! The gateway between the sandbox and the upstream servers: it starts their
//! connections, publishes what programs may call (the catalog and the `/tools`
//! directory), and makes each call a program asks for through the device, after the
//! checks that keep the sandbox to its allow-lists and caps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject};
use rmcp::ServiceError;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::answer::{Answer, Failure};
use super::catalog::{Catalog, ServerView};
use super::config::ToolsConfig;
use super::connection::{Link, Upstream};
use super::oversize;
use crate::metrics::Exposition;

/// Tool calls one run may make, by default.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 100;
/// The largest request a program may write to the device, by default.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 1 << 20;
/// The largest answer a tool may give, by default.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 4 << 20;

/// The gateway's caps.
#[derive(Debug, Clone)]
pub struct GatewaySettings {
    pub max_calls_per_run: u32,
    pub max_request_bytes: usize,
    pub max_answer_bytes: usize,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        GatewaySettings {
            max_calls_per_run: DEFAULT_MAX_TOOL_CALLS,
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }
}

/// What is published now: the catalog, and the files of `/tools` made from it.
#[derive(Default)]
struct Published {
    catalog: Arc<Catalog>,
    files: Vec<(&'static str, String)>,
}

pub struct Gateway {
    upstreams: Vec<Arc<Upstream>>,
    pub settings: GatewaySettings,
    /// Holds the one `/tools` directory and the staging area its files are written in
    /// before they replace the old ones; removed with the gateway.
    root: tempfile::TempDir,
    /// The directory shown at `/tools` to every store, for the gateway's whole life: a
    /// sandbox keeps the directory it was given, so a new catalog replaces the files in
    /// it, never the directory itself.
    dir: Arc<PathBuf>,
    /// Catalogs published so far (one per change of what programs are told).
    generation: AtomicU64,
    published: Mutex<Published>,
    /// Woken when any server's link changes.
    changed: Arc<Notify>,
    /// Woken after each publication (for whoever tells MCP clients).
    pub republished: Arc<Notify>,
    stop: CancellationToken,
    calls: Mutex<BTreeMap<(String, String, &'static str), u64>>,
}

impl Gateway {
    /// Starts connecting to every server of `config` (in the background: an upstream
    /// that cannot start never stops runbox's own start) and publishes `/tools` in a
    /// directory of its own. Must be called within a tokio runtime.
    pub fn start(config: ToolsConfig, settings: GatewaySettings) -> std::io::Result<Arc<Gateway>> {
        let root = tempfile::Builder::new().prefix("runbox-tools-").tempdir()?;
        let dir = root.path().join("tools");
        std::fs::create_dir(&dir)?;
        std::fs::create_dir(root.path().join(STAGING))?;
        // The device: an empty file whose opens the sandbox's filesystem turns into calls.
        std::fs::write(dir.join(DEVICE_NAME), b"")?;
        let upstreams: Vec<Arc<Upstream>> = config.servers.into_iter().map(Upstream::new).collect();
        let gateway = Arc::new(Gateway {
            upstreams,
            settings,
            root,
            dir: Arc::new(dir),
            generation: AtomicU64::new(0),
            published: Mutex::default(),
            changed: Arc::new(Notify::new()),
            republished: Arc::new(Notify::new()),
            stop: CancellationToken::new(),
            calls: Mutex::new(BTreeMap::new()),
        });
        gateway.publish()?;
        for upstream in &gateway.upstreams {
            tokio::spawn(upstream.clone().supervise(
                gateway.settings.max_answer_bytes,
                gateway.changed.clone(),
                gateway.stop.clone(),
            ));
        }
        let weak = Arc::downgrade(&gateway);
        let changed = gateway.changed.clone();
        let stop = gateway.stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = changed.notified() => {}
                    _ = stop.cancelled() => return,
                }
                let Some(gateway) = weak.upgrade() else {
                    return;
                };
                if let Err(e) = gateway.publish() {
                    tracing::error!("cannot write the /tools directory: {e}");
                }
            }
        });
        Ok(gateway)
    }

    /// Stops every connection (their stdio servers are killed).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// Waits until no server is still connecting (each connected or failed), at most
    /// `limit`: so that the first listing a client sees has the tools.
    pub async fn settled(&self, limit: Duration) {
        let _ = tokio::time::timeout(limit, async {
            loop {
                let waiting = self.changed_or_republished();
                if !self
                    .upstreams
                    .iter()
                    .any(|u| matches!(u.link(), Link::Connecting))
                {
                    return;
                }
                waiting.await;
            }
        })
        .await;
    }

    fn changed_or_republished(&self) -> impl std::future::Future<Output = ()> + '_ {
        let notified = self.republished.notified();
        async move {
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }

    pub fn catalog(&self) -> Arc<Catalog> {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .catalog
            .clone()
    }

    /// The directory shown at `/tools`: the same for the gateway's whole life.
    pub fn dir(&self) -> Arc<PathBuf> {
        self.dir.clone()
    }

    /// Catalogs published so far: a change of what programs are told counts one.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    fn current_catalog(&self) -> Catalog {
        let servers = self
            .upstreams
            .iter()
            .map(|u| {
                let (available, message, tools) = match u.link() {
                    Link::Connecting => (false, Some("connecting".to_string()), Arc::default()),
                    Link::Down { message } => (false, Some(message), Arc::default()),
                    Link::Ready { tools, .. } => (true, None, tools),
                };
                ServerView {
                    name: u.config.name.clone(),
                    available,
                    message,
                    tools: tools
                        .iter()
                        .filter(|t| u.config.allow.allows(&t.name))
                        .cloned()
                        .collect(),
                }
            })
            .collect();
        Catalog { servers }
    }

    /// Publishes the current catalog, when it differs from the one published: each file of
    /// `/tools` is written aside and renamed over the old one, so that a program reads
    /// either the old file or the new one, and a sandbox keeps its directory. A server
    /// that keeps failing the same way changes nothing, so it publishes nothing.
    fn publish(&self) -> std::io::Result<()> {
        let catalog = self.current_catalog();
        let files = vec![
            ("README.md", catalog.readme()),
            ("tools.json", catalog.tools_json()),
            ("index.d.ts", catalog.declarations()),
        ];
        let mut published = self.published.lock().unwrap_or_else(|e| e.into_inner());
        let first = self.generation.load(Ordering::SeqCst) == 0;
        if !first && published.files == files {
            return Ok(());
        }
        let staging = self.root.path().join(STAGING);
        for (name, text) in &files {
            let aside = staging.join(name);
            std::fs::write(&aside, text)?;
            std::fs::rename(&aside, self.dir.join(name))?;
        }
        published.catalog = Arc::new(catalog);
        published.files = files;
        self.generation.fetch_add(1, Ordering::SeqCst);
        drop(published);
        self.republished.notify_waiters();
        Ok(())
    }

    /// Makes the call `request` asks for (the device's bytes), and says how it went.
    /// The caller races it against the run's deadline: dropping it cancels the call
    /// upstream.
    pub async fn call(&self, request: &[u8]) -> Answer {
        let (server, tool, answer) = self.checked_call(request).await;
        self.count(&server, &tool, answer.status);
        answer
    }

    async fn checked_call(&self, request: &[u8]) -> (String, String, Answer) {
        let unknown = || (String::from("-"), String::from("-"));
        if request.len() > self.settings.max_request_bytes {
            let (s, t) = unknown();
            let message = format!(
                "the request is {} bytes, over the {} byte cap on a tool call's request",
                request.len(),
                self.settings.max_request_bytes
            );
            return (s, t, Answer::failed(Failure::Limit, message));
        }
        let (server, tool, arguments) = match parse_request(request) {
            Ok(p) => p,
            Err(message) => {
                let (s, t) = unknown();
                return (s, t, Answer::failed(Failure::BadRequest, message));
            }
        };
        let Some(upstream) = self.upstreams.iter().find(|u| u.config.name == server) else {
            let names: Vec<&str> = self
                .upstreams
                .iter()
                .map(|u| u.config.name.as_str())
                .collect();
            let message = format!(
                "no server is named `{server}`; the servers are: {}",
                names.join(", ")
            );
            let (s, t) = unknown();
            return (s, t, Answer::failed(Failure::UnknownServer, message));
        };
        let (server_label, tool_label) = Gateway::labels(upstream, &tool);
        let answer = self.allowed_call(upstream, &tool, arguments).await;
        (server_label, tool_label, answer)
    }

    /// How a call is labelled in /metrics: names a program made up (a tool off the list,
    /// or one its server does not list) are `-`, so that programs cannot grow the
    /// counters without bound.
    fn labels(upstream: &Upstream, tool: &str) -> (String, String) {
        let listed = upstream.config.allow.allows(tool)
            && matches!(upstream.link(), Link::Ready { tools, .. } if tools.iter().any(|t| t.name == tool));
        let tool = if listed {
            tool.to_string()
        } else {
            "-".to_string()
        };
        (upstream.config.name.clone(), tool)
    }

    /// The call of `tool` on `upstream`, if its allow-list has it.
    async fn allowed_call(&self, upstream: &Upstream, tool: &str, arguments: JsonObject) -> Answer {
        let server = &upstream.config.name;
        if !upstream.config.allow.allows(tool) {
            let message = format!(
                "`{tool}` of `{server}` is not on the server's allow-list; allowed: {}",
                upstream.config.allow.describe()
            );
            return Answer::failed(Failure::NotAllowed, message);
        }
        let peer = loop {
            let waiting = self.changed_or_republished();
            match upstream.link() {
                Link::Ready { peer, .. } => break peer,
                Link::Down { message } => {
                    let message = format!("the server `{server}` is unavailable: {message}");
                    return Answer::failed(Failure::Unavailable, message);
                }
                Link::Connecting => waiting.await,
            }
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = Some(arguments);
        let answer = match peer.call_tool_once(params).await {
            Ok(CallToolResponse::Complete(result)) => Answer::from_result(result),
            Ok(_) => Answer::failed(
                Failure::Unavailable,
                format!("`{server}` answered `{tool}` with a task or a request for input, which runbox does not take from upstream servers"),
            ),
            // An answer past the cap, dropped as it streamed: this call alone fails.
            Err(ServiceError::McpError(e)) if oversize::is_over_cap(&e) => Answer::failed(
                Failure::Limit,
                format!("the call to `{tool}` of `{server}` failed: {}", e.message),
            ),
            Err(e) => {
                // The transport's own error may name the server's URL: it goes to the log.
                tracing::warn!(server = %server, tool = %tool, "an upstream tool call failed: {e}");
                Answer::failed(
                    Failure::Unavailable,
                    format!(
                        "the call to `{tool}` of `{server}` failed: the connection to the server \
                         ended or failed during the call (runbox's log says why); it is being \
                         connected again"
                    ),
                )
            }
        };
        if answer.bytes.len() > self.settings.max_answer_bytes {
            let message = format!(
                "the answer of `{tool}` is {} bytes, over the {} byte cap on a tool's answer",
                answer.bytes.len(),
                self.settings.max_answer_bytes
            );
            return Answer::failed(Failure::Limit, message);
        }
        answer
    }

    /// Counts a call that never reached [`Gateway::call`] (the run's cap, its deadline).
    pub fn count(&self, server: &str, tool: &str, status: &'static str) {
        let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        *calls
            .entry((server.to_string(), tool.to_string(), status))
            .or_default() += 1;
    }

    /// Writes `runbox_tool_calls_total{server,tool,status}`.
    pub fn write_metrics(&self, out: &mut Exposition) {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        out.family(
            "runbox_tool_calls_total",
            "counter",
            "Tool calls programs made through /tools/call, by upstream server, tool and status.",
        );
        for ((server, tool, status), n) in calls.iter() {
            out.sample(
                "runbox_tool_calls_total",
                &[("server", server), ("tool", tool), ("status", status)],
                *n as f64,
            );
        }
    }
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .upstreams
            .iter()
            .map(|u| u.config.name.as_str())
            .collect();
        f.debug_struct("Gateway")
            .field("servers", &names)
            .finish_non_exhaustive()
    }
}

/// The device's file name in the `/tools` directory.
pub const DEVICE_NAME: &str = "call";

/// Where a new catalog's files are written before they replace the published ones (beside
/// the `/tools` directory, on the same filesystem, so that the rename is atomic).
const STAGING: &str = "staging";

/// An upper bound of the memory `request` takes once parsed into JSON values: its text,
/// and per value (each number, string, array, object and member) what a value and its
/// share of a collection cost. Counted before parsing, so that the parse is paid for first.
pub fn parsed_size_bound(request: &[u8]) -> usize {
    /// A `serde_json::Value` (32 bytes) in a collection that may hold twice what it uses,
    /// plus a member's key and map entry.
    const PER_VALUE: usize = 128;
    let mut values = 1usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in request {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b':' | b'[' | b'{' => values += 1,
            _ => {}
        }
    }
    request
        .len()
        .saturating_add(values.saturating_mul(PER_VALUE))
}

/// `(server, tool, arguments)` of a device request.
fn parse_request(request: &[u8]) -> Result<(String, String, JsonObject), String> {
    let value: Value = serde_json::from_slice(request).map_err(|e| {
        format!("the request is not JSON ({e}); write {{\"server\": …, \"tool\": …, \"arguments\": {{…}}}}")
    })?;
    let Value::Object(mut obj) = value else {
        return Err(
            "the request must be a JSON object {\"server\", \"tool\", \"arguments\"}".into(),
        );
    };
    let text = |obj: &mut JsonObject, key: &str| match obj.remove(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(format!("the request's `{key}` must be a non-empty string")),
    };
    let server = text(&mut obj, "server")?;
    let tool = text(&mut obj, "tool")?;
    let arguments = match obj.remove("arguments") {
        None | Some(Value::Null) => JsonObject::new(),
        Some(Value::Object(a)) => a,
        Some(_) => return Err("the request's `arguments` must be a JSON object".into()),
    };
    Ok((server, tool, arguments))
}

/// One run's use of the gateway: how many calls it made (a session's sandbox starts
/// counting again at each call, see `Sandbox::begin_call`), and how many device
/// descriptors its stores hold open.
pub struct ToolCalls {
    pub gateway: Arc<Gateway>,
    made: AtomicU32,
    open_devices: AtomicUsize,
}

impl ToolCalls {
    pub fn new(gateway: Arc<Gateway>) -> Arc<ToolCalls> {
        Arc::new(ToolCalls {
            gateway,
            made: AtomicU32::new(0),
            open_devices: AtomicUsize::new(0),
        })
    }

    /// Counts one more open device descriptor, if fewer than `max` are open.
    pub fn device_opened(&self, max: usize) -> bool {
        self.open_devices
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            })
            .is_ok()
    }

    /// Counts one device descriptor less.
    pub fn device_closed(&self) {
        let _ = self
            .open_devices
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    pub fn begin_call(&self) {
        self.made.store(0, Ordering::SeqCst);
    }

    /// Takes one call of the run's cap; `Err` with the answer past it.
    pub fn take_one(&self) -> Result<(), Answer> {
        let max = self.gateway.settings.max_calls_per_run;
        if self.made.fetch_add(1, Ordering::SeqCst) >= max {
            self.gateway.count("-", "-", Failure::Limit.as_str());
            return Err(Answer::failed(
                Failure::Limit,
                format!("this run already made {max} tool calls, the most one run may make (--max-tool-calls)"),
            ));
        }
        Ok(())
    }

    /// The directory to show at `/tools`.
    pub fn dir(&self) -> Arc<PathBuf> {
        self.gateway.dir()
    }
}

#[async_trait::async_trait]
impl super::device::DeviceService for ToolCalls {
    fn path(&self) -> &'static str {
        "/tools/call"
    }

    fn file_name(&self) -> &'static str {
        DEVICE_NAME
    }

    fn max_request_bytes(&self) -> usize {
        self.gateway.settings.max_request_bytes
    }

    fn device_opened(&self, max: usize) -> bool {
        ToolCalls::device_opened(self, max)
    }

    fn device_closed(&self) {
        ToolCalls::device_closed(self)
    }

    async fn call(&self, request: &[u8], _memory: &crate::budget::memory::MemoryBudget) -> Answer {
        match self.take_one() {
            Err(over) => over,
            Ok(()) => self.gateway.call(request).await,
        }
    }

    fn timed_out(&self) {
        self.gateway.count("-", "-", Failure::Timeout.as_str());
    }
}

/// Whether `dir` (a directory descriptor's file) is `tools_dir`.
pub fn same_dir(dir: &std::fs::File, tools_dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (dir.metadata(), std::fs::metadata(tools_dir)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_checked() {
        let (s, t, a) =
            parse_request(br#"{"server":"e","tool":"add","arguments":{"a":1}}"#).unwrap();
        assert_eq!((s.as_str(), t.as_str(), a.len()), ("e", "add", 1));
        assert!(parse_request(br#"{"server":"e","tool":"add"}"#)
            .unwrap()
            .2
            .is_empty());
        for (bad, says) in [
            (&b"nope"[..], "not JSON"),
            (br#"[1]"#, "JSON object"),
            (br#"{"tool":"x"}"#, "`server`"),
            (br#"{"server":"e","tool":""}"#, "`tool`"),
            (
                br#"{"server":"e","tool":"x","arguments":[1]}"#,
                "`arguments`",
            ),
        ] {
            let e = parse_request(bad).unwrap_err();
            assert!(e.contains(says), "{e}");
        }
    }

    #[tokio::test]
    async fn calls_are_refused_before_any_upstream_is_asked() {
        let config = ToolsConfig::parse(
            "[servers.e]\ncommand = \"/nonexistent/runbox-test-server\"\nallow = [\"add\"]\n",
            Path::new("."),
        )
        .unwrap();
        let g = Gateway::start(config, GatewaySettings::default()).unwrap();
        let answer = |a: Answer| serde_json::from_slice::<Value>(&a.bytes).unwrap();
        let a = answer(
            g.call(br#"{"server":"e","tool":"rm","arguments":{}}"#)
                .await,
        );
        assert_eq!(a["error"], "not_allowed");
        assert!(
            a["message"].as_str().unwrap().contains("allowed: add"),
            "{a}"
        );
        let a = answer(g.call(br#"{"server":"x","tool":"rm"}"#).await);
        assert_eq!(a["error"], "unknown_server");
        g.settled(Duration::from_secs(10)).await;
        let a = answer(g.call(br#"{"server":"e","tool":"add"}"#).await);
        assert_eq!(a["error"], "unavailable", "{a}");
        let message = a["message"].as_str().unwrap();
        assert!(message.contains("could not be started"), "{a}");
        assert!(
            !message.contains("nonexistent"),
            "the command line stays out: {a}"
        );
        let dir = g.dir();
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            readme.contains("Unavailable: its command could not be started"),
            "{readme}"
        );
        assert!(!readme.contains("nonexistent"), "{readme}");
        assert!(dir.join(DEVICE_NAME).exists());
        let calls = ToolCalls::new(g.clone());
        for _ in 0..DEFAULT_MAX_TOOL_CALLS {
            calls.take_one().unwrap();
        }
        let over = answer(calls.take_one().unwrap_err());
        assert!(
            over["message"]
                .as_str()
                .unwrap()
                .contains("already made 100"),
            "{over}"
        );
        calls.begin_call();
        calls.take_one().expect("a new call counts again");
        g.stop();
    }

    /// A server that cannot start is tried again and again: the catalog says the same
    /// each time, so nothing is published again, and `/tools` is one directory for life.
    #[tokio::test]
    async fn a_server_that_keeps_failing_publishes_nothing_new() {
        use std::os::unix::fs::MetadataExt;
        let config = ToolsConfig::parse(
            "[servers.e]\ncommand = \"/nonexistent/runbox-test-server\"\nallow = \"*\"\n",
            Path::new("."),
        )
        .unwrap();
        let g = Gateway::start(config, GatewaySettings::default()).unwrap();
        g.settled(Duration::from_secs(10)).await;
        let (generation, dir) = (g.generation(), g.dir());
        let inode = std::fs::metadata(dir.as_path()).unwrap().ino();
        let readme = std::fs::metadata(dir.join("README.md")).unwrap().ino();
        // Two more attempts (1 s, then 2 s apart).
        tokio::time::sleep(Duration::from_millis(3_500)).await;
        assert_eq!(
            g.generation(),
            generation,
            "a failure said again publishes nothing"
        );
        assert_eq!(g.dir(), dir);
        assert_eq!(std::fs::metadata(dir.as_path()).unwrap().ino(), inode);
        assert_eq!(
            std::fs::metadata(dir.join("README.md")).unwrap().ino(),
            readme
        );
        // A change is published in the same directory, each file replaced whole.
        g.upstreams[0].set(Link::Connecting, &g.changed);
        for _ in 0..50 {
            if g.generation() > generation {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(g.generation(), generation + 1);
        assert_eq!(std::fs::metadata(dir.as_path()).unwrap().ino(), inode);
        let text = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(text.contains("Unavailable: connecting"), "{text}");
        assert!(dir.join(DEVICE_NAME).exists());
        g.stop();
    }

    #[test]
    fn a_requests_parsed_size_is_bounded_by_its_values() {
        let small = parsed_size_bound(br#"{"a":"x,y:z[{"}"#);
        assert!(
            small < 600,
            "commas and brackets in strings are not values: {small}"
        );
        let many = parsed_size_bound(format!("[{}]", vec!["0"; 1000].join(",")).as_bytes());
        assert!(many >= 1000 * 64, "{many}");
    }
}
