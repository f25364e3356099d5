//! What a reactor tool needs to run in turns as a session's resident: kept apart from
//! `turns.rs` so a `Tool` (in `sandbox.rs`) can name it without importing its driver.

use std::sync::Arc;

use wasmtime::component::ComponentExportIndex;

use crate::state::StateAccess;

/// How a reactor tool runs in turns (`[plugins.NAME.tools.TOOL.reactor]`'s `resume`).
pub struct TurnDoors {
    /// The component's `turn` export.
    pub turn: ComponentExportIndex,
    /// The program every feed runs.
    pub resume: String,
    /// The program a copy of a session runs once made.
    pub after_fork: Option<String>,
    /// The doors into the tool's state.
    pub state: Option<Arc<StateAccess>>,
}
