//! `runbox mcp`: the MCP server. [`server`] is the handler (the `run_code`,
//! `list_runtimes`, `create_session` and `close_session` tools, `resources/read`, the
//! `tasks/*` methods), [`arguments`] checks what calls send, [`content`] and [`schema`]
//! are the shapes clients see ([`shown`]: how much of an output; [`retained`]: what a
//! result left out, readable for a while), [`tasks`] lets long runs outlive their call,
//! [`progress`] keeps long calls alive, [`settings`] are the flags; the transports are
//! [`stdio`] and streamable HTTP ([`http`], guarded by [`access`]), both behind
//! [`intake`] (every message screened before it is parsed, by [`message_scan`]).

pub mod access;
pub mod arguments;
pub mod content;
pub mod http;
pub mod http_sessions;
pub mod intake;
pub mod message_scan;
pub mod progress;
pub mod retained;
pub mod schema;
pub mod server;
pub mod settings;
pub mod shown;
pub mod stdio;
pub mod tasks;

use std::sync::Arc;

use anyhow::Result;

use crate::cli::GlobalArgs;

pub use server::RunboxServer;
pub use settings::McpArgs;

pub use intake::MAX_MESSAGE_BYTES;

/// `runbox mcp`: checks the settings, starts preparing the runtimes in the background
/// (fetching and compiling what is missing, progress on stderr) and serves at once, until
/// the client goes away. A call for a runtime still being prepared waits for it.
pub async fn main(global: &GlobalArgs, args: McpArgs) -> Result<()> {
    let options = args.runbox_options()?;
    let settings = args.server_settings()?;
    let access = args.http_access()?;
    if let Some(addr) = args.http {
        http::check_bind(addr, &access)?;
    }
    let runbox = Arc::new(global.start(options)?);
    let names = runbox.runtime_names().join(", ");
    let server = RunboxServer::with_settings(runbox.clone(), settings);
    let cancel_tasks = server.clone();
    let intake = intake::Intake::new(runbox.server_memory());
    let served = match args.http {
        Some(addr) => {
            http::serve(server, intake, addr, &access, args.http_limits(), |url| {
                eprintln!("runbox: serving MCP at {url} ({names})");
            })
            .await
        }
        None => {
            eprintln!("runbox: serving MCP on stdio ({names})");
            stdio::serve_stdio(server, intake).await
        }
    };
    // Every session's files go with the server, and every task's run stops.
    cancel_tasks.cancel_tasks();
    runbox.close_all_sessions();
    served
}
