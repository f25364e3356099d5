//! What the MCP server answers: [`server`] is the handler (the `run_code`,
//! `list_runtimes`, `create_session` and `close_session` tools, `resources/read`, the
//! `tasks/*` methods), [`app`] the page it shows clients of MCP Apps, [`arguments`]
//! checks what calls send, [`content`] and [`schema`] are the shapes clients see
//! ([`shown`]: how much of an output; [`retained`]: what a result left out, readable for a
//! while), [`tasks`] lets long runs outlive their call, [`progress`] keeps long calls
//! alive, [`settings`] configure the handler.

pub mod app;
pub mod arguments;
pub mod content;
pub mod progress;
pub mod retained;
pub mod schema;
pub mod server;
pub mod settings;
pub mod shown;
pub mod tasks;
