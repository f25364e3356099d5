//! `runbox mcp`: the MCP server, in three parts that each use the service
//! ([`crate::service`]) and nothing below it:
//!
//! - [`handler`]: what the server answers (the tools, resources, tasks, the result app)
//!   and the shapes clients see;
//! - [`transport`]: how messages arrive and leave (stdio, streamable HTTP with its
//!   access rules and sessions, and the operator's endpoints);
//! - [`intake`]: every message screened, and charged to the server's memory, before it
//!   is parsed.

pub mod handler;
pub mod intake;
pub mod transport;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;

use crate::service::Runbox;
use transport::http;
use transport::stdio;

pub use handler::content::{ResultLimits, DEFAULT_MAX_RESULT_BYTES, MIN_MAX_RESULT_BYTES};
pub use handler::retained::{DEFAULT_RESOURCE_TTL, DEFAULT_RETAINED_BYTES};
pub use handler::server::RunboxServer;
pub use handler::settings::ServerSettings;
pub use handler::shown::{DEFAULT_SHOWN_BYTES, MIN_SHOWN_BYTES};
pub use handler::tasks::{
    TaskSettings, DEFAULT_MAX_TASKS, DEFAULT_MAX_TASK_TIMEOUT, DEFAULT_TASK_AFTER,
};
pub use intake::MAX_MESSAGE_BYTES;
pub use transport::http::access::{self, HttpAccess};
pub use transport::http::ops::DEFAULT_DRAIN_TIMEOUT;
pub use transport::http::protocol_sessions::DEFAULT_MAX_HTTP_SESSIONS;
pub use transport::http::{check_bind, HttpLimits, DEFAULT_MAX_CONNECTIONS};

/// How `runbox mcp` is reached.
pub enum Transport {
    /// One client on stdin and stdout.
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http {
        addr: SocketAddr,
        access: HttpAccess,
        limits: HttpLimits,
    },
}

/// Serves MCP for `runbox` over `transport` until the client goes away (stdio) or a
/// signal (HTTP); `serving` is told where ("on stdio", "at http://…/mcp") once it does.
/// Every session's files go, and every task's run stops, when it returns.
pub async fn serve(
    runbox: Arc<Runbox>,
    settings: ServerSettings,
    transport: Transport,
    serving: impl FnOnce(&str),
) -> Result<()> {
    let server = RunboxServer::with_settings(runbox.clone(), settings);
    let intake = intake::Intake::new(runbox.server_memory());
    let served = match transport {
        Transport::Http {
            addr,
            access,
            limits,
        } => {
            http::serve(server.clone(), intake, addr, &access, limits, |url| {
                serving(&format!("at {url}"))
            })
            .await
        }
        Transport::Stdio => {
            serving("on stdio");
            tokio::select! {
                served = stdio::serve_stdio(server.clone(), intake) => served,
                // Stopped by a signal rather than by the client: runs under way end
                // (terminated) and, with a session store, the sessions are stored.
                _ = http::stop_signal() => {
                    tracing::info!("stopping on a signal");
                    server.stop_runs();
                    Ok(())
                }
            }
        }
    };
    server.cancel_tasks();
    runbox.close_all_sessions();
    served
}
