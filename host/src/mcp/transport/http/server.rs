//! The streamable-HTTP transport at `/mcp`: axum for routing, rmcp for MCP, and a
//! connection loop of runbox's own.
//!
//! - Who may call: it binds loopback by default; any other address needs a bearer token,
//!   and whenever a token is set every request without `Authorization: Bearer <token>`
//!   gets 401. A request whose `Origin` is not allowed ([`super::access`]) gets 403, and
//!   so does one whose `Host` is not loopback on a loopback server (against DNS
//!   rebinding): checked first, for every request ([`super::origin`]).
//! - What a connection may hold: at most `--max-connections` at once (the rest wait in
//!   the kernel's backlog, leaving descriptors for runs), HTTP/1.1 with the request
//!   headers due within [`HEADER_READ_TIMEOUT`] and the body within
//!   [`BODY_READ_TIMEOUT`]; a client that stops reading what it is sent is cut off after
//!   [`STALLED_WRITE_TIMEOUT`] ([`super::stalled_write`]).
//! - What a message may cost: every body is screened before rmcp parses it
//!   ([`crate::mcp::intake`]); parsing is charged to the server's memory budget until the
//!   response starts.
//! - Beside `/mcp`: `/healthz`, `/readyz` and `/metrics` ([`super::ops`]). The first
//!   SIGTERM (or ctrl-c) drains: new sessions are refused, work under way finishes
//!   (within `--drain-timeout`), then the server stops; a second one stops it at once.
//!   A replica's handshake-era session ids carry its id ([`super::session_ids`]).
//! - Clients of the 2026-07-28 revision are served statelessly, their answers as one JSON
//!   body when nothing precedes them (a big `resources/read` is not limited by a client's
//!   cap on one server-sent event). Handshake-era clients get a capped protocol session
//!   ([`super::protocol_sessions`]); their `resources/read` is answered here as one JSON body
//!   too, for the same reason. Either era's read is charged to the server's budget
//!   until its client has taken it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::model::ErrorCode;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::access::{self, Bearer, HttpAccess};
use super::ops::{self, Ops, DEFAULT_DRAIN_TIMEOUT, DRAIN_GRACE};
use super::origin::{self, OriginRules};
use super::protocol_sessions::{CappedProtocolSessions, DEFAULT_MAX_HTTP_SESSIONS};
use super::session_ids::replica_session_ids;
use super::stalled_write::{StalledWriteTimeout, STALLED_WRITE_TIMEOUT};
use crate::mcp::handler::server::RunboxServer;
use crate::mcp::intake::{Intake, Refusal, MAX_MESSAGE_BYTES};
use crate::service::Held;

/// The path clients connect to.
pub const PATH: &str = "/mcp";
/// A client must send a request's headers within this.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A client must send a request's body within this.
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections open at once, by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// Bodies up to this size are looked into for a method runbox answers itself.
const SMALL_BODY: usize = 64 << 10;

/// The HTTP transport's own bounds.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Connections open at once (`--max-connections`).
    pub max_connections: usize,
    /// Handshake-era protocol sessions open at once (`--max-http-sessions`).
    pub max_sessions: usize,
    /// How long a drain waits for work under way (`--drain-timeout`).
    pub drain_timeout: Duration,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_sessions: DEFAULT_MAX_HTTP_SESSIONS,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }
}

/// Refuses to serve a non-loopback address without a token.
pub fn check_bind(addr: SocketAddr, access: &HttpAccess) -> Result<()> {
    if !addr.ip().is_loopback() && access.token.is_none() {
        bail!(
            "{addr} is not a loopback address: serving it needs a bearer token \
             (--token-file, --token or RUNBOX_TOKEN)"
        );
    }
    Ok(())
}

/// What the screening middleware needs.
#[derive(Clone)]
struct Screen {
    intake: Intake,
    server: RunboxServer,
    sessions: Arc<CappedProtocolSessions>,
}

/// The axum app: MCP at [`PATH`], every body screened, guarded by the token when there is
/// one and by the allowed origins always; `/metrics` behind the token too, the probes
/// open.
pub fn router(
    server: RunboxServer,
    intake: Intake,
    sessions: Arc<CappedProtocolSessions>,
    ops: &Ops,
    access: &HttpAccess,
    loopback_only: bool,
    shutdown: CancellationToken,
) -> Router {
    let origins = access::allowed_origins(loopback_only, &access.allow_origins);
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(MAX_MESSAGE_BYTES)
        // A stateless answer with nothing before it goes as one JSON body.
        .with_json_response(true)
        .with_allowed_origins(origins.clone())
        // With no origin allowed (a public address without --allow-origin), every
        // request that carries one is refused.
        .enforce_origin_validation();
    if !loopback_only {
        // rmcp accepts only loopback `Host` headers by default (against DNS rebinding);
        // a server meant for other hosts is guarded by its token instead.
        config = config.disable_allowed_hosts();
    }
    let screen = Screen {
        intake,
        server: server.clone(),
        sessions: sessions.clone(),
    };
    let replica = server.runbox().replica().clone();
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    let mcp = Router::new()
        .route_service(PATH, service)
        .layer(middleware::from_fn_with_state(screen, screen_body))
        .layer(middleware::from_fn_with_state(replica, replica_session_ids))
        // Before anything answers (the screen answers some requests itself).
        .layer(middleware::from_fn_with_state(
            OriginRules::new(&origins, loopback_only),
            origin::check,
        ))
        .layer(middleware::from_fn_with_state(
            ops.clone(),
            ops::count_answering,
        ));
    let guarded = mcp.merge(ops.metrics(loopback_only)).fallback(|| async {
        (
            StatusCode::NOT_FOUND,
            "runbox serves MCP at /mcp (and /healthz, /readyz, /metrics)\n",
        )
    });
    let guarded = match &access.token {
        Some(token) => guarded.layer(middleware::from_fn_with_state(
            Bearer::new(token),
            access::require_bearer,
        )),
        None => guarded,
    };
    ops.probes().merge(guarded)
}

/// The few fields of a small message runbox looks at before rmcp does.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<HeadParams>,
}

#[derive(Deserialize)]
struct HeadParams {
    #[serde(default)]
    uri: Option<String>,
}

/// Reads a POST's body (within the size cap and [`BODY_READ_TIMEOUT`]), screens it, and
/// hands it on with its parse charged to the server's budget until the response starts;
/// answers itself what rmcp would answer as a server-sent event (a handshake-era
/// `resources/read`) or refuse late (an `initialize` past the session cap).
async fn screen_body(State(screen): State<Screen>, request: Request, next: Next) -> Response {
    if request.method() == Method::DELETE {
        // rmcp ends the session and says 202; clients (the Python SDK) take only 200 or
        // 204 for success and warn "Session termination failed: 202".
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        return response;
    }
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let read = axum::body::to_bytes(body, MAX_MESSAGE_BYTES);
    let bytes = match tokio::time::timeout(BODY_READ_TIMEOUT, read).await {
        Err(_) => {
            return plain(
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "runbox: the request body did not arrive within {} s\n",
                    BODY_READ_TIMEOUT.as_secs()
                ),
            )
        }
        Ok(Err(_)) => {
            let refusal = Refusal::TooLarge {
                bytes: MAX_MESSAGE_BYTES + 1,
            };
            return json_response(StatusCode::PAYLOAD_TOO_LARGE, &refusal.answer(b""));
        }
        Ok(Ok(bytes)) => bytes,
    };
    let parse = match screen.intake.screen(&bytes) {
        Ok(reservation) => reservation,
        Err(refusal) => {
            tracing::warn!("refused an HTTP message before parsing it: {refusal}");
            let status = match refusal {
                Refusal::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
                _ => StatusCode::BAD_REQUEST,
            };
            return json_response(status, &refusal.answer(&bytes));
        }
    };
    if bytes.len() <= SMALL_BODY {
        if let Ok(head) = serde_json::from_slice::<Head>(&bytes) {
            if let Some(answer) = screen.answer_itself(&parts.headers, head).await {
                return answer;
            }
        }
    }
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    drop(parse);
    response
}

impl Screen {
    /// The answer to a message runbox handles before rmcp, if it is one.
    async fn answer_itself(&self, headers: &axum::http::HeaderMap, head: Head) -> Option<Response> {
        let session = headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let uri = head.params.as_ref().and_then(|p| p.uri.as_deref());
        match (head.method.as_deref(), session) {
            // The result app (`ui://…`) is rmcp's to answer: whether a client gets it
            // depends on its capabilities, which rmcp knows.
            (Some("resources/read"), _) if uri.is_some_and(|u| u.starts_with("ui://")) => None,
            (Some("initialize"), None) if self.sessions.is_full() => {
                let error = json!({"jsonrpc": "2.0", "id": head.id, "error": {
                    "code": ErrorCode::INTERNAL_ERROR.0,
                    "message": crate::mcp::transport::http::protocol_sessions::SessionsError::Full {
                        max: self.sessions.max()
                    }.to_string()}});
                let mut response = json_response(StatusCode::SERVICE_UNAVAILABLE, &error);
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                Some(response)
            }
            (Some("resources/read"), Some(session)) => {
                let known = self
                    .sessions
                    .has_session(&session.into())
                    .await
                    .unwrap_or(false);
                if !known {
                    // rmcp's own answer for an unknown session.
                    return None;
                }
                Some(self.read_answer(head, false))
            }
            // A 2026-07-28 read whose headers agree with its body (anything else is
            // rmcp's to refuse): answered here too, so that its answer is charged until
            // it is sent.
            (Some("resources/read"), None) if stateless_read(headers, &head) => {
                Some(self.read_answer(head, true))
            }
            _ => None,
        }
    }

    /// The answer to a `resources/read`: the kept output or file, charged to the server's
    /// budget until the client has taken it (see [`held_json_response`]).
    fn read_answer(&self, head: Head, stateless: bool) -> Response {
        let uri = head.params.and_then(|p| p.uri).unwrap_or_default();
        let id = head.id.unwrap_or(Value::Null);
        match self.server.read_kept(&uri) {
            Ok((contents, answer)) => {
                let message = ReadAnswer {
                    jsonrpc: "2.0",
                    id: &id,
                    result: ReadContents {
                        contents: [&contents],
                        result_type: stateless.then_some("complete"),
                    },
                };
                let body = serde_json::to_vec(&message).expect("contents serialize");
                drop(contents);
                held_json_response(body, answer)
            }
            Err(error) => {
                let message = json!({"jsonrpc": "2.0", "id": id, "error": error});
                json_response(StatusCode::OK, &message)
            }
        }
    }
}

/// Whether a message without a protocol session is a 2026-07-28 `resources/read` whose
/// `Mcp-Method` and `Mcp-Name` headers say what its body says.
fn stateless_read(headers: &axum::http::HeaderMap, head: &Head) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let uri = head.params.as_ref().and_then(|p| p.uri.as_deref());
    header("mcp-protocol-version") == Some(CURRENT_REVISION)
        && header("mcp-method") == Some("resources/read")
        && uri.is_some()
        && header("mcp-name") == uri
}

/// The revision whose requests carry their protocol version and need no session.
const CURRENT_REVISION: &str = "2026-07-28";

#[derive(Serialize)]
struct ReadAnswer<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: ReadContents<'a>,
}

#[derive(Serialize)]
struct ReadContents<'a> {
    contents: [&'a rmcp::model::ResourceContents; 1],
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

/// How much of a held answer hyper takes at a time: the charge ends when the last piece
/// has been taken, so at most this much is sent uncharged.
const HELD_CHUNK: usize = 64 << 10;

/// A JSON answer that holds `charge` on the server's budget until the client has taken
/// it (or the connection ends: a client that reads nothing is cut off by
/// `stalled_write.rs`), not only until it was rendered.
fn held_json_response(body: Vec<u8>, charge: Held) -> Response {
    let body = bytes::Bytes::from(body);
    let len = body.len();
    let pieces = (0..len)
        .step_by(HELD_CHUNK)
        .map(move |at| body.slice(at..(at + HELD_CHUNK).min(len)));
    let stream =
        futures::stream::unfold((pieces, Some(charge)), |(mut pieces, charge)| async move {
            let piece = pieces.next()?;
            Some((Ok::<_, std::convert::Infallible>(piece), (pieces, charge)))
        });
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CONTENT_LENGTH, HeaderValue::from(len)),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

fn json_response(status: StatusCode, message: &Value) -> Response {
    let body = serde_json::to_vec(message).expect("JSON values serialize");
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

fn plain(status: StatusCode, text: String) -> Response {
    (status, text).into_response()
}

/// Serves until ctrl-c or SIGTERM; `ready` gets the URL once the socket is bound.
pub async fn serve(
    server: RunboxServer,
    intake: Intake,
    addr: SocketAddr,
    access: &HttpAccess,
    limits: HttpLimits,
    ready: impl FnOnce(&str),
) -> Result<()> {
    check_bind(addr, access)?;
    let shutdown = CancellationToken::new();
    let sessions = Arc::new(CappedProtocolSessions::new(
        limits.max_sessions,
        server.server_memory(),
    ));
    let ops = Ops::new(server.clone(), sessions.clone());
    let replica = server.runbox().replica().id().is_some();
    let app = router(
        server,
        intake,
        sessions,
        &ops,
        access,
        addr.ip().is_loopback(),
        shutdown.child_token(),
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    ready(&format!("http://{local}{PATH}"));
    tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            stop_signal().await;
            let grace = if replica { DRAIN_GRACE } else { Duration::ZERO };
            drain(&ops, limits.drain_timeout, grace).await;
            ops.close().await;
            // Ends every session, which cancels anything still left.
            shutdown.cancel();
        }
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.context("the connection slots closed")?,
            _ = shutdown.cancelled() => break,
        };
        let tcp = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => tcp,
                Err(e) => {
                    // Out of descriptors, say: wait a little instead of spinning.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = shutdown.cancelled() => break,
        };
        tokio::spawn(serve_connection(tcp, app.clone(), slot, shutdown.clone()));
    }
    // Connections the kernel completed but nobody accepted yet would be reset when the
    // listener closes, after their clients sent a request: answer them too.
    // (A plain non-blocking `accept` until it would block: the syscall itself, not the
    // reactor's last word on readiness.)
    let listener = listener.into_std()?;
    while let Ok((tcp, _)) = listener.accept() {
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            break;
        };
        let tcp = tcp
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpStream::from_std(tcp));
        if let Ok(tcp) = tcp {
            tokio::spawn(serve_connection(tcp, app.clone(), slot, shutdown.clone()));
        }
    }
    // No new connection from here on: a balancer's connect fails at once and it tries
    // another replica, rather than waiting on one that is never answered.
    drop(listener);
    // Give connections winding down a moment to send their last bytes.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(6), slots.acquire_many(all)).await;
    Ok(())
}

/// How long a connection that came in as the server stops may take to send its request
/// and get the answer, before it is shut down.
const LAST_REQUEST_WINDOW: Duration = Duration::from_secs(1);

/// Serves one connection until it ends or the server stops. At the stop, a request
/// already sent (or being sent) on it is still read and answered: hyper's graceful
/// shutdown alone closes a connection that has not read its first request yet, which
/// its client sees as a reset after it sent the request.
async fn serve_connection(
    tcp: tokio::net::TcpStream,
    app: axum::Router,
    _slot: tokio::sync::OwnedSemaphorePermit,
    shutdown: CancellationToken,
) {
    // Small JSON-RPC messages: send each at once instead of waiting for the peer's ACK.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
    let service = hyper_util::service::TowerToHyperService::new(app);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    // A client that stops reading is cut off: what waits to be sent to it is dropped.
    let io = StalledWriteTimeout::new(hyper_util::rt::TokioIo::new(tcp), STALLED_WRITE_TIMEOUT);
    let connection = builder.serve_connection(io, service).with_upgrades();
    tokio::pin!(connection);
    tokio::select! {
        // Polled first: a connection with its request in hand serves it before it
        // looks at the stop.
        biased;
        _ = connection.as_mut() => return,
        _ = shutdown.cancelled() => {}
    }
    if tokio::time::timeout(LAST_REQUEST_WINDOW, connection.as_mut())
        .await
        .is_ok()
    {
        return;
    }
    connection.as_mut().graceful_shutdown();
    let _ = tokio::time::timeout(Duration::from_secs(5), connection).await;
}

/// Drains until nothing is under way (and `grace` has passed), `timeout` passes, or a
/// second signal comes; then stops what is left.
async fn drain(ops: &Ops, timeout: Duration, grace: Duration) {
    let grace_ends = tokio::time::Instant::now() + grace;
    ops.start_draining();
    tracing::info!(
        "draining: /readyz fails and new sessions are refused; waiting up to {} s for \
         the work under way (a second signal stops at once)",
        timeout.as_secs_f64()
    );
    let idle = tokio::select! {
        idle = async {
            let idle = ops.drained(timeout).await;
            tokio::time::sleep_until(grace_ends).await;
            idle
        } => idle,
        _ = stop_signal() => {
            tracing::warn!("a second signal: stopping the runs under way");
            false
        }
    };
    if idle {
        tracing::info!("drained: nothing is under way; stopping");
    } else {
        tracing::warn!(
            "stopping with work under way (drain timeout {} s or a second signal): its \
             runs end terminated, their calls answered",
            timeout.as_secs_f64()
        );
        ops.stop_runs();
    }
}

pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let local6: SocketAddr = "[::1]:8080".parse().unwrap();
        let open = HttpAccess::default();
        let guarded = HttpAccess {
            token: Some("t".repeat(32)),
            ..HttpAccess::default()
        };
        assert!(check_bind(public, &open).is_err());
        assert!(check_bind(public, &guarded).is_ok());
        assert!(check_bind(local, &open).is_ok());
        assert!(check_bind(local6, &open).is_ok());
    }
}
