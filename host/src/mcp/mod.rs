//! `runbox mcp`: the MCP server. [`server`] is the handler (the `run_code`,
//! `list_runtimes`, `create_session` and `close_session` tools), [`arguments`] checks
//! what calls send, [`content`] and [`schema`] are the shapes clients see, [`progress`]
//! keeps long calls alive, [`settings`] are the flags; the transports are stdio (below)
//! and streamable HTTP ([`http`], guarded by [`access`]).

pub mod access;
pub mod arguments;
pub mod content;
pub mod http;
pub mod progress;
pub mod schema;
pub mod server;
pub mod settings;

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use anyhow::{Context as _, Result};
use rmcp::ServiceExt;
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

use crate::cli::GlobalArgs;

pub use server::RunboxServer;
pub use settings::McpArgs;

/// The largest JSON-RPC message runbox reads, over stdio (one line) or HTTP (one body).
/// Larger messages are dropped by the transport; anything up to this size is parsed, so
/// an oversized `code` gets a clear tool error instead of silence.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// `runbox mcp`: checks the settings, starts preparing the runtimes in the background
/// (fetching and compiling what is missing, progress on stderr) and serves at once, until
/// the client goes away. A call for a runtime still being prepared waits for it.
pub async fn main(global: &GlobalArgs, args: McpArgs) -> Result<()> {
    let options = args.runbox_options()?;
    let access = args.http_access()?;
    if let Some(addr) = args.http {
        http::check_bind(addr, &access)?;
    }
    let runbox = Arc::new(global.start(options)?);
    let names = runbox.runtime_names().join(", ");
    let server = RunboxServer::new(runbox.clone());
    let served = match args.http {
        Some(addr) => {
            http::serve(server, addr, &access, |url| {
                eprintln!("runbox: serving MCP at {url} ({names})");
            })
            .await
        }
        None => {
            eprintln!("runbox: serving MCP on stdio ({names})");
            serve_stdio(server).await
        }
    };
    // Every session's files go with the server.
    runbox.close_all_sessions();
    served
}

/// Serves one client on stdin/stdout. stdout carries only protocol messages.
///
/// When stdin ends the client is gone: every run still under way is cancelled at once
/// (rmcp would otherwise let handlers finish for a few seconds before cancelling them).
pub async fn serve_stdio(server: RunboxServer) -> Result<()> {
    let closed = CancellationToken::new();
    let stdin = EndSignal::new(tokio::io::stdin(), closed.clone());
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new(stdin, tokio::io::stdout())
        .with_max_line_length(MAX_MESSAGE_BYTES);
    let running = server
        .serve_with_ct(transport, closed)
        .await
        .context("MCP session over stdio did not start")?;
    running.waiting().await?;
    Ok(())
}

/// A reader that cancels a token when its input ends (or fails).
struct EndSignal<R> {
    inner: R,
    ended: CancellationToken,
}

impl<R> EndSignal<R> {
    fn new(inner: R, ended: CancellationToken) -> Self {
        EndSignal { inner, ended }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EndSignal<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        match &poll {
            Poll::Ready(Ok(())) if buf.filled().len() == before && buf.remaining() > 0 => {
                self.ended.cancel()
            }
            Poll::Ready(Err(_)) => self.ended.cancel(),
            _ => {}
        }
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn end_of_input_cancels() {
        let ended = CancellationToken::new();
        let mut reader = EndSignal::new(&b"abc"[..], ended.clone());
        let mut buf = [0u8; 2];
        assert_eq!(reader.read(&mut buf).await.unwrap(), 2);
        assert!(!ended.is_cancelled());
        assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
        assert!(!ended.is_cancelled());
        assert_eq!(reader.read(&mut buf).await.unwrap(), 0);
        assert!(ended.is_cancelled());
    }
}
