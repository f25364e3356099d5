//! The streamable-HTTP transport at `/mcp`, with axum.
//!
//! It binds loopback by default. Any other address needs a bearer token, and whenever a
//! token is set every request without `Authorization: Bearer <token>` gets 401.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::RunboxServer;

/// The path clients connect to.
pub const PATH: &str = "/mcp";

/// Refuses to serve a non-loopback address without a token.
pub fn check_bind(addr: SocketAddr, token: Option<&str>) -> Result<()> {
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "{addr} is not a loopback address: serving it needs a bearer token \
             (--token or RUNBOX_TOKEN)"
        );
    }
    Ok(())
}

/// The axum app: MCP at [`PATH`], guarded by the token when there is one.
pub fn router(
    server: RunboxServer,
    token: Option<String>,
    loopback_only: bool,
    shutdown: CancellationToken,
) -> Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(super::MAX_MESSAGE_BYTES);
    if !loopback_only {
        // rmcp accepts only loopback `Host` headers by default (against DNS rebinding);
        // a server meant for other hosts is guarded by its token instead.
        config = config.disable_allowed_hosts();
    }
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = Router::new()
        .route_service(PATH, service)
        .fallback(|| async { (StatusCode::NOT_FOUND, "runbox serves MCP at /mcp\n") });
    match token {
        Some(token) => router.layer(middleware::from_fn_with_state(
            Arc::<str>::from(token),
            require_bearer,
        )),
        None => router,
    }
}

/// Serves until ctrl-c or SIGTERM; `ready` gets the URL once the socket is bound.
pub async fn serve(
    server: RunboxServer,
    addr: SocketAddr,
    token: Option<String>,
    ready: impl FnOnce(&str),
) -> Result<()> {
    check_bind(addr, token.as_deref())?;
    let shutdown = CancellationToken::new();
    let app = router(
        server,
        token,
        addr.ip().is_loopback(),
        shutdown.child_token(),
    );
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    // Small JSON-RPC messages: send each at once instead of waiting for the peer's ACK.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
    });
    ready(&format!("http://{local}{PATH}"));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop_signal().await;
            // Ends every session, which cancels the runs under way.
            shutdown.cancel();
        })
        .await
        .context("HTTP server failed")?;
    Ok(())
}

async fn stop_signal() {
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

async fn require_bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token);
    match presented {
        Some(presented) if same_secret(presented.as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            "runbox: missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

/// The token of an `Authorization: Bearer <token>` value (the scheme is case-insensitive).
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// Compares without stopping at the first difference, so timing tells nothing about the token.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_loopback_needs_a_token() {
        let public: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let local6: SocketAddr = "[::1]:8080".parse().unwrap();
        assert!(check_bind(public, None).is_err());
        assert!(check_bind(public, Some("t")).is_ok());
        assert!(check_bind(local, None).is_ok());
        assert!(check_bind(local6, None).is_ok());
    }

    #[test]
    fn bearer_values() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer "), None);
    }

    #[test]
    fn secrets() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abc", b"abd"));
        assert!(!same_secret(b"abc", b"abcd"));
    }
}
