//! How MCP messages arrive and leave: [`stdio`], and streamable HTTP ([`http`], guarded
//! by [`access`] and [`origin`], its sessions capped by [`http_sessions`] and named by
//! [`session_ids`], slow readers cut off by [`stalled_write`]) with the operator's
//! endpoints beside it ([`ops`]). Both hand each message to [`crate::mcp::intake`] first.

pub mod access;
pub mod http;
pub mod http_sessions;
pub mod ops;
pub mod origin;
pub mod session_ids;
pub mod stalled_write;
pub mod stdio;
