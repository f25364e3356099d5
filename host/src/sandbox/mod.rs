//! One run's sandbox (or one session's, across its calls): its scratch directory and
//! read-only mounts, its limits, its captured output, and the stores its programs run in.

pub mod clock;
pub mod commands;
pub mod filesystem;
pub mod journal;
pub mod linker;
mod process;
pub mod program;
pub mod reaper;
pub mod replay_clock;
// The module is named for the type it holds, as the folder's other files are.
#[allow(clippy::module_inception)]
mod sandbox;
pub mod store;
pub mod tool_device;
pub mod turn_doors;
pub mod turns;

pub use process::{at_rest_tool, run_tool};
pub use sandbox::{
    CommandFuture, CommandHost, CommandResult, Mount, ProgramCompiles, Sandbox, SandboxConfig,
    StoreState, Tool, ToolLead,
};
