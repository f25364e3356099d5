//! `runbox mcp`: the MCP server. [`server`] is the handler (the `run_code`,
//! `list_runtimes`, `create_session` and `close_session` tools, `resources/read`, the
//! `tasks/*` methods), [`app`] the page it shows clients of MCP Apps, [`arguments`]
//! checks what calls send, [`content`] and [`schema`]
//! are the shapes clients see ([`shown`]: how much of an output; [`retained`]: what a
//! result left out, readable for a while), [`tasks`] lets long runs outlive their call,
//! [`progress`] keeps long calls alive, [`settings`] configure the handler; the transports are
//! [`stdio`] and streamable HTTP ([`http`], guarded by [`access`]), both behind
//! [`intake`] (every message screened before it is parsed, by [`message_scan`]).

pub mod access;
pub mod app;
pub mod arguments;
pub mod content;
pub mod http;
pub mod http_sessions;
pub mod intake;
pub mod message_scan;
pub mod ops;
pub mod origin;
pub mod progress;
pub mod retained;
pub mod schema;
pub mod server;
pub mod session_ids;
pub mod settings;
pub mod shown;
pub mod stalled_write;
pub mod stdio;
pub mod tasks;

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Result;

use crate::service::Runbox;
use access::HttpAccess;
use http::HttpLimits;
use settings::ServerSettings;

pub use server::RunboxServer;

pub use intake::MAX_MESSAGE_BYTES;

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
