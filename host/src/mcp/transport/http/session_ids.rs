//! A handshake-era client's `Mcp-Session-Id` carries the replica's id, like every other
//! handle a replica mints (`crate::replica`), so a balancer can keep the client on its
//! replica from the header alone, with no table to lose when the balancer restarts.
//!
//! rmcp mints the protocol session ids; this layer adds `ID.` to the one a response
//! gives and takes it off the ones requests bring. A request with another replica's
//! prefix is answered 404 (the status that tells a client to start a new session) with
//! the reason in a JSON-RPC error.

use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::service::Replica;

const MCP_SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");

pub async fn replica_session_ids(
    State(replica): State<Replica>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(id) = replica.id() else {
        return next.run(request).await;
    };
    if let Some(given) = request.headers().get(&MCP_SESSION_ID) {
        let given = given.to_str().unwrap_or_default().to_string();
        let ours = given
            .strip_prefix(id)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|inner| HeaderValue::from_str(inner).ok());
        match ours {
            Some(inner) => {
                request.headers_mut().insert(MCP_SESSION_ID, inner);
            }
            None => {
                if let Some(elsewhere) = replica.elsewhere("MCP session", &given) {
                    let error = json!({"jsonrpc": "2.0", "id": null, "error": {
                        "code": -32001, "message": elsewhere.to_string()}});
                    return (StatusCode::NOT_FOUND, Json(error)).into_response();
                }
                // Not a replica's id at all: rmcp says it knows no such session.
            }
        }
    }
    let mut response = next.run(request).await;
    let minted = response
        .headers()
        .get(&MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|inner| HeaderValue::from_str(&format!("{id}.{inner}")).ok());
    if let Some(outer) = minted {
        response.headers_mut().insert(MCP_SESSION_ID, outer);
    }
    response
}
