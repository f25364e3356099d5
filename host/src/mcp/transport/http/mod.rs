//! Streamable HTTP at `/mcp` ([`server`]), guarded by [`access`] (bearer tokens, allowed
//! origins) and [`origin`] (the checks on each request), its handshake-era protocol
//! sessions capped by [`protocol_sessions`] and named by [`session_ids`], slow readers cut
//! off by [`stalled_write`], with the operator's endpoints beside it ([`ops`]).

pub mod access;
pub mod ops;
pub mod origin;
pub mod protocol_sessions;
pub mod server;
pub mod session_ids;
pub mod stalled_write;

pub(crate) use server::stop_signal;
pub use server::{check_bind, serve, HttpLimits, DEFAULT_MAX_CONNECTIONS};
