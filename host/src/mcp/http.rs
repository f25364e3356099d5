//! The streamable-HTTP transport at `/mcp`, with axum.
//!
//! It binds loopback by default. Any other address needs a bearer token, and whenever a
//! token is set every request without `Authorization: Bearer <token>` gets 401. A request
//! whose `Origin` is not allowed ([`super::access`]) gets 403, and so does one whose
//! `Host` is not loopback on a loopback server (rmcp's guard against DNS rebinding).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use axum::http::StatusCode;
use axum::middleware;
use axum::serve::ListenerExt;
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::access::{self, Bearer, HttpAccess};
use super::RunboxServer;

/// The path clients connect to.
pub const PATH: &str = "/mcp";

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

/// The axum app: MCP at [`PATH`], guarded by the token when there is one and by the
/// allowed origins always.
pub fn router(
    server: RunboxServer,
    access: &HttpAccess,
    loopback_only: bool,
    shutdown: CancellationToken,
) -> Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(super::MAX_MESSAGE_BYTES)
        .with_allowed_origins(access::allowed_origins(
            loopback_only,
            &access.allow_origins,
        ))
        // With no origin allowed (a public address without --allow-origin), every
        // request that carries one is refused.
        .enforce_origin_validation();
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
    match &access.token {
        Some(token) => router.layer(middleware::from_fn_with_state(
            Bearer::new(token),
            access::require_bearer,
        )),
        None => router,
    }
}

/// Serves until ctrl-c or SIGTERM; `ready` gets the URL once the socket is bound.
pub async fn serve(
    server: RunboxServer,
    addr: SocketAddr,
    access: &HttpAccess,
    ready: impl FnOnce(&str),
) -> Result<()> {
    check_bind(addr, access)?;
    let shutdown = CancellationToken::new();
    let app = router(
        server,
        access,
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
