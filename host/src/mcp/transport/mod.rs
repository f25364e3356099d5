//! How MCP messages arrive and leave: [`stdio`], and streamable HTTP ([`http`]) with the
//! operator's endpoints beside it. Both hand each message to [`crate::mcp::intake`] first.

pub mod http;
pub mod stdio;
