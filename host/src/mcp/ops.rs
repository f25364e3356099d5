//! What operators and balancers ask an HTTP server (docs/scale-out.md): `/healthz`
//! (alive), `/readyz` (runtimes prepared and not draining), `/metrics` (Prometheus
//! text), and the drain that SIGTERM starts.
//!
//! `/healthz` and `/readyz` say nothing but up or not, and probes (a balancer's, a
//! kubelet's) seldom carry tokens, so they are open; `/metrics` tells the load and needs
//! the bearer token when the server has one, like `/mcp`.
//!
//! Draining: `/readyz` fails at once (the balancer stops sending new work), new sessions
//! are refused with a tool error, and calls, sessions and tasks under way go on; once no
//! request is being answered and no task is working (or at `--drain-timeout`), the
//! server stops.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::http_sessions::CappedSessions;
use super::tasks::POLL_INTERVAL_MS;
use super::RunboxServer;
use crate::metrics::Exposition;

/// How long a server waits for work under way when it drains, by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

/// What the endpoints and the drain look at.
#[derive(Clone)]
pub struct Ops {
    server: RunboxServer,
    http_sessions: Arc<CappedSessions>,
    /// MCP requests (POSTs) being answered now.
    answering: Arc<AtomicUsize>,
}

impl Ops {
    pub fn new(server: RunboxServer, http_sessions: Arc<CappedSessions>) -> Ops {
        Ops {
            server,
            http_sessions,
            answering: Arc::default(),
        }
    }

    /// `/healthz` and `/readyz`, which need no token.
    pub fn probes(&self) -> Router {
        Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz))
            .with_state(self.clone())
    }

    /// `/metrics`, behind the same guards as `/mcp`.
    pub fn metrics(&self) -> Router {
        Router::new()
            .route("/metrics", get(metrics))
            .with_state(self.clone())
    }

    fn is_draining(&self) -> bool {
        self.server.runbox().sessions().is_draining()
    }

    /// Refuses new sessions from now on and fails `/readyz`; the rest goes on.
    pub fn start_draining(&self) {
        self.server.runbox().sessions().start_draining();
    }

    /// Whether nothing is under way: no MCP request being answered, no run, no call
    /// waiting for one, no task working.
    fn is_idle(&self) -> bool {
        let (running, waiting) = self.server.runbox().runs_and_waiting();
        self.answering.load(Ordering::SeqCst) == 0
            && running == 0
            && waiting == 0
            && self.server.tasks().working() == 0
    }

    /// Stops every run under way and waits (a few seconds at most) until their calls
    /// are answered, so that none is cut off without a result.
    pub async fn stop_runs(&self) {
        self.server.stop_runs();
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.answering.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until nothing is under way, then a little longer when tasks finished
    /// recently (so their clients, polling every [`POLL_INTERVAL_MS`], can fetch the
    /// results); gives up at `timeout`. Says whether it got idle.
    pub async fn drained(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let linger = Duration::from_millis(2 * POLL_INTERVAL_MS);
        loop {
            while !self.is_idle() {
                if Instant::now() >= deadline {
                    return false;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if self.server.tasks().kept() == 0 {
                return true;
            }
            let until = (Instant::now() + linger).min(deadline);
            tokio::time::sleep_until(until.into()).await;
            if self.is_idle() {
                return true;
            }
        }
    }
}

/// Counts the MCP requests being answered, for the drain.
pub async fn count_answering(State(ops): State<Ops>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    ops.answering.fetch_add(1, Ordering::SeqCst);
    let _done = Decrement(ops.answering.clone());
    next.run(request).await
}

struct Decrement(Arc<AtomicUsize>);

impl Drop for Decrement {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn readyz(State(ops): State<Ops>) -> Response {
    if ops.is_draining() {
        return (StatusCode::SERVICE_UNAVAILABLE, "draining\n").into_response();
    }
    let preparing = ops.server.runbox().preparing();
    if !preparing.is_empty() {
        let text = format!("preparing {}\n", preparing.join(", "));
        return (StatusCode::SERVICE_UNAVAILABLE, text).into_response();
    }
    (StatusCode::OK, "ready\n").into_response()
}

async fn metrics(State(ops): State<Ops>) -> Response {
    let runbox = ops.server.runbox();
    let mut page = Exposition::default();
    runbox.run_metrics().write(&mut page);
    let (running, waiting) = runbox.runs_and_waiting();
    page.gauge(
        "runbox_runs_in_progress",
        "Runs under way now.",
        running as f64,
    );
    page.gauge(
        "runbox_queue_depth",
        "Calls waiting for a run slot now.",
        waiting as f64,
    );
    page.gauge(
        "runbox_sessions",
        "Sessions open now (create_session).",
        runbox.sessions().len() as f64,
    );
    page.gauge(
        "runbox_sessions_max",
        "Sessions that may be open at once (--max-sessions).",
        runbox.sessions().max() as f64,
    );
    let tasks = ops.server.tasks();
    let working = tasks.working();
    page.family(
        "runbox_tasks",
        "gauge",
        "MCP tasks kept now, working or finished.",
    );
    page.sample("runbox_tasks", &[("state", "working")], working as f64);
    page.sample(
        "runbox_tasks",
        &[("state", "finished")],
        tasks.kept().saturating_sub(working) as f64,
    );
    let memory = runbox.server_memory();
    page.gauge(
        "runbox_memory_budget_used_bytes",
        "Bytes of the server's memory budget in use (runs, waiting calls, kept results).",
        memory.used() as f64,
    );
    page.gauge(
        "runbox_memory_budget_bytes",
        "The server's memory budget (--server-memory-mb).",
        memory.cap() as f64,
    );
    page.gauge(
        "runbox_http_sessions",
        "MCP protocol sessions of handshake-era HTTP clients open now.",
        ops.http_sessions.open() as f64,
    );
    page.gauge(
        "runbox_draining",
        "1 while the server drains before it stops.",
        if ops.is_draining() { 1.0 } else { 0.0 },
    );
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(Exposition::CONTENT_TYPE),
        )],
        page.into_string(),
    )
        .into_response()
}
