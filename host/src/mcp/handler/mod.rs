//! What the MCP server answers: [`server`] is the handler, dispatching the tools
//! ([`tools`]: `run_code`, `list_runtimes`, `create_session` and `close_session`, a file
//! each, with their arguments, results, descriptions and schemas), `resources/read` and
//! the `tasks/*` methods; [`app`] the page it shows clients of MCP Apps; [`content`] the
//! results' content and [`schema`] the schemas as clients accept them ([`shown`]: how much
//! of an output; [`retained`]: what a result left out, readable for a while); [`tasks`]
//! lets long runs outlive their call, [`progress`] keeps long calls alive, [`settings`]
//! configure the handler.

pub mod app;
pub mod content;
pub mod progress;
pub mod retained;
pub mod schema;
pub mod server;
pub mod settings;
pub mod shown;
pub mod tasks;
pub mod tools;
