//! What the MCP handler is configured with beyond the [`crate::service::Runbox`]: how
//! large results may be, how long what they leave out is kept, and how long calls become
//! tasks. (The command line's flags for them are the binary's, `cli/mcp.rs`.)

use std::time::Duration;

use crate::mcp::handler::content::ResultLimits;
use crate::mcp::handler::tasks::TaskSettings;

/// What the MCP handler needs beyond the [`crate::service::Runbox`]: how large results
/// may be, how long what they leave out is kept, and how long calls become tasks.
#[derive(Debug, Clone)]
pub struct ServerSettings {
    pub results: ResultLimits,
    pub resource_ttl: Duration,
    pub retained_bytes: u64,
    pub tasks: TaskSettings,
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            results: ResultLimits::default(),
            resource_ttl: crate::mcp::handler::retained::DEFAULT_RESOURCE_TTL,
            retained_bytes: crate::mcp::handler::retained::DEFAULT_RETAINED_BYTES,
            tasks: TaskSettings::default(),
        }
    }
}
