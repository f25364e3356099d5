//! One run's sandbox: its scratch directory and read-only mounts, its limits, its
//! captured output, and the stores its programs run in.

pub mod disk;
pub mod linker;
pub mod memory;
pub mod output;
mod process;
pub mod program;
pub mod quota_fs;
pub mod store;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime_wasi::p2::bindings::CommandPre;

use crate::engine::SandboxEngine;
use disk::DiskBudget;
use memory::MemoryBudget;
use output::OutputCapture;
use program::ProgramCompiles;
use store::StoreState;

/// Host-side bindings of the `runbox:plugin` WIT package.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
        imports: {
            "runbox:plugin/process.spawn": async | trappable,
            default: trappable,
        },
        exports: { default: async },
    });
}

/// A preview1 tool a plugin may spawn by name.
#[derive(Clone)]
pub struct Tool {
    /// `argv[0]` the program sees.
    pub argv0: String,
    pub pre: CommandPre<StoreState>,
}

/// A read-only directory shown to the sandbox.
#[derive(Debug, Clone)]
pub struct Mount {
    pub host: PathBuf,
    pub guest: String,
}

/// Everything the stores of one run share.
pub struct RunContext {
    pub engine: SandboxEngine,
    /// How produced programs are compiled and linked.
    pub programs: Arc<ProgramCompiles>,
    /// Tools the plugin may spawn, by name.
    pub tools: Arc<HashMap<String, Tool>>,
    /// The plugin's settings (`runbox:plugin/config`).
    pub settings: Arc<Vec<(String, Vec<String>)>>,
    /// The writable scratch directory, preopened at `/`.
    pub scratch: PathBuf,
    pub mounts: Arc<Vec<Mount>>,
    pub output: OutputCapture,
    pub memory: MemoryBudget,
    /// The scratch directory's cap: bytes of file data and files created.
    pub disk: DiskBudget,
    pub deadline: Instant,
    /// Cancelled when the client gives up on the run; every store checks it each tick.
    pub cancel: CancellationToken,
    /// Programs this run compiled into the cache: kept only if the run completes.
    pub new_programs: Mutex<Vec<PathBuf>>,
}

impl RunContext {
    /// Removes the programs this run added to the compiled cache (the run did not
    /// complete, so nothing it produced is kept).
    pub fn forget_new_programs(&self) {
        let programs =
            std::mem::take(&mut *self.new_programs.lock().unwrap_or_else(|e| e.into_inner()));
        for path in programs {
            let _ = std::fs::remove_file(path);
        }
    }
}
