//! The MCP tools, one file each: its input and output types (its JSON schemas are
//! generated from them), its description, the fix-ups its schemas get at start-up, and its
//! arguments read into its input type (`arguments.rs`: plain-words errors from the same
//! schema). `server.rs` dispatches each call to the service.

mod arguments;
pub mod close_session;
pub mod create_session;
pub mod fork_session;
pub mod list_runtimes;
pub mod run_code;
mod units;

pub use units::secs;
