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
//! request is being answered and no task is working (or at `--drain-timeout`), and a
//! replica has waited [`DRAIN_GRACE`] for its balancer to notice, the server closes: a
//! request arriving then gets `503` (safe to send elsewhere: nothing of it ran), the
//! answers under way are written to their end, and only then does it stop.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;

use super::protocol_sessions::CappedProtocolSessions;
use crate::mcp::handler::server::RunboxServer;
use crate::mcp::handler::tasks::POLL_INTERVAL_MS;
use crate::service::Exposition;

/// How long a server waits for work under way when it drains, by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a replica keeps serving after the signal even with nothing under way: its
/// balancer notices the failing `/readyz` within this (HAProxy as deploy/ configures it:
/// two checks 500 ms apart), so no request is sent to a replica that has closed.
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// The longest a closing server waits for the answers under way to be written.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// What the endpoints and the drain look at.
#[derive(Clone)]
pub struct Ops {
    server: RunboxServer,
    http_sessions: Arc<CappedProtocolSessions>,
    /// MCP requests (POSTs) being answered now, until their answer's last byte.
    answering: Arc<AtomicUsize>,
    /// Set when the server stops taking requests.
    closing: Arc<AtomicBool>,
}

impl Ops {
    pub fn new(server: RunboxServer, http_sessions: Arc<CappedProtocolSessions>) -> Ops {
        Ops {
            server,
            http_sessions,
            answering: Arc::default(),
            closing: Arc::default(),
        }
    }

    /// `/healthz` and `/readyz`, which need no token.
    pub fn probes(&self) -> Router {
        Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route("/readyz", get(readyz))
            .with_state(self.clone())
    }

    /// `/metrics`, behind the token like `/mcp` (the caller's layer); it answers no
    /// browser (a request with an `Origin`), and a loopback server only loopback `Host`s,
    /// against DNS rebinding.
    pub fn metrics(&self, loopback_only: bool) -> Router {
        Router::new()
            .route("/metrics", get(metrics))
            .layer(axum::middleware::from_fn(
                move |request: Request, next: Next| {
                    let refused = refuse_metrics(request.headers(), loopback_only);
                    async move {
                        match refused {
                            Some(why) => (StatusCode::FORBIDDEN, why).into_response(),
                            None => next.run(request).await,
                        }
                    }
                },
            ))
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

    /// Stops every run under way; their calls are answered (as the server stopped them).
    pub fn stop_runs(&self) {
        self.server.stop_runs();
    }

    /// Takes no more requests (they get `503`) and waits, at most [`CLOSE_WAIT`], until
    /// every answer under way has been written.
    pub async fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let deadline = Instant::now() + CLOSE_WAIT;
        while self.answering.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // With a session store, every session is stored now, while the balancer is
        // still told 503 (and retries elsewhere): a call for one of them after this
        // resumes it on another replica.
        let runbox = self.server.runbox().clone();
        if runbox.sessions().is_durable() {
            let _ = tokio::task::spawn_blocking(move || runbox.close_all_sessions()).await;
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

/// Counts the MCP requests being answered, until the last byte of their answer (an
/// event stream's included), for the drain; once the server closes, refuses new ones.
pub async fn count_answering(State(ops): State<Ops>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    // Counted before the check, so `close` never misses one that got past it.
    ops.answering.fetch_add(1, Ordering::SeqCst);
    let done = Decrement(ops.answering.clone());
    if ops.closing.load(Ordering::SeqCst) {
        drop(done);
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [
                (header::RETRY_AFTER, HeaderValue::from_static("1")),
                (header::CONNECTION, HeaderValue::from_static("close")),
            ],
            "runbox: this server is stopping; nothing of the request ran: send it again\n",
        )
            .into_response();
    }
    let (parts, body) = next.run(request).await.into_parts();
    // The count ends when the body is written out or dropped.
    let body = body.into_data_stream().map(move |chunk| {
        let _counted = &done;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// Why `/metrics` refuses a request, if it does.
fn refuse_metrics(headers: &HeaderMap, loopback_only: bool) -> Option<&'static str> {
    if headers.contains_key(header::ORIGIN) {
        return Some("runbox: /metrics answers no browser\n");
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.split(':').next().unwrap_or(""),
    };
    let loopback = matches!(name, "localhost" | "127.0.0.1" | "::1");
    (loopback_only && !loopback)
        .then_some("runbox: a loopback server answers loopback hosts only\n")
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
    if let Some(gateway) = runbox.gateway() {
        gateway.write_metrics(&mut page);
    }
    if let Some(net) = runbox.net() {
        net.write_metrics(&mut page);
    }
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
        "Sessions open now (create_session), in memory.",
        runbox.sessions().len() as f64,
    );
    if runbox.sessions().is_durable() {
        page.gauge(
            "runbox_sessions_stored",
            "Sessions in the session store (--session-store), hibernated here or left by any replica.",
            runbox.sessions().stored() as f64,
        );
    }
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
