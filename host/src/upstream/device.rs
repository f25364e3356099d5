//! What serves a device of the sandbox (`sandbox/tool_device.rs`): one trait for code
//! mode's `/tools/call` and the network's `/net/fetch`, below both and the sandbox.

use crate::budget::memory::MemoryBudget;

use super::answer::Answer;

/// What answers a device's requests for one run: code mode's tool calls
/// (`upstream::ToolCalls`) or the network's requests (`net::NetCalls`).
#[async_trait::async_trait]
pub trait DeviceService: Send + Sync {
    /// The device's path in the sandbox, for messages (`/tools/call`).
    fn path(&self) -> &'static str;
    /// The device's file name in the directory it is shown in.
    fn file_name(&self) -> &'static str;
    /// The largest request a program may write.
    fn max_request_bytes(&self) -> usize;
    /// Counts one more open device descriptor, if fewer than `max` are open.
    fn device_opened(&self, max: usize) -> bool;
    /// Counts one device descriptor less.
    fn device_closed(&self);
    /// Makes one call (from the run's caps): the answer's bytes.
    async fn call(&self, request: &[u8], memory: &MemoryBudget) -> Answer;
    /// Counts a call the run's deadline cut short.
    fn timed_out(&self);
}
