//! One run's sandbox (or one session's, across its calls): its scratch directory and
//! read-only mounts, its limits, its captured output, and the stores its programs run in.

pub mod clock;
pub mod commands;
pub mod journal;
pub mod linker;
mod process;
pub use process::run_tool;
pub mod filesystem;
pub mod program;
pub mod replay_clock;
pub mod store;
pub mod tool_device;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use wasmtime_wasi::p2::bindings::CommandPre;

use crate::budget::disk::DiskBudget;
use crate::budget::memory::MemoryBudget;
use crate::budget::output::OutputCapture;
use crate::engine::SandboxEngine;
use program::ProgramCompiles;
use store::StoreState;

/// A preview1 tool a plugin may spawn by name.
#[derive(Clone)]
pub struct Tool {
    /// `argv[0]` the program sees.
    pub argv0: String,
    pub pre: CommandPre<StoreState>,
    /// Given before the caller's arguments and environment: a reactor served before its
    /// snapshot is taken runs the snapshot's program first, in the snapshot's environment
    /// (see `plugin::provisional`). Empty for every other tool.
    pub lead: ToolLead,
}

/// Arguments and environment a tool is always started with, ahead of the caller's.
#[derive(Debug, Clone, Default)]
pub struct ToolLead {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl ToolLead {
    /// `argv` for `tool` called with `args`, and its environment with `env`.
    pub fn apply(
        &self,
        argv0: &str,
        args: Vec<String>,
        env: Vec<(String, String)>,
    ) -> (Vec<String>, Vec<(String, String)>) {
        let mut argv = Vec::with_capacity(1 + self.args.len() + args.len());
        argv.push(argv0.to_string());
        argv.extend(self.args.iter().cloned());
        argv.extend(args);
        let mut all_env = self.env.clone();
        all_env.extend(env);
        (argv, all_env)
    }
}

/// A read-only directory shown to the sandbox.
#[derive(Debug, Clone)]
pub struct Mount {
    pub host: PathBuf,
    pub guest: String,
}

/// What a sandbox is made of: [`Sandbox::new`] is the one way to build one.
pub struct SandboxConfig {
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
    /// The cap on what one call may write, each stream.
    pub output_bytes: usize,
    pub memory: MemoryBudget,
    /// The scratch directory's cap: bytes of file data and files created.
    pub disk: DiskBudget,
    /// Resources (descriptors, streams, …) each of its stores may hold.
    pub resources_per_store: usize,
    /// A durable session's journal: its stores draw randomness and time through it.
    pub journal: Option<crate::sandbox::journal::Journal>,
    /// Code mode: the upstream tools this run may call through `/tools/call`.
    pub tool_calls: Option<Arc<crate::upstream::ToolCalls>>,
    /// Without `tool_calls`: an empty directory to show at `/tools` instead (see
    /// `store.rs`); `None` only where no snapshot runs (deriving files).
    pub empty_tools_dir: Option<PathBuf>,
    /// The other runtimes its plugin may run as commands (`commands.rs`); `None` in a
    /// command's own sandbox and where no plugin runs.
    pub commands: Option<Arc<dyn commands::CommandHost>>,
}

/// Everything the stores of one run share; in a session, across its calls: what it was
/// made of (read through `Deref`, `sandbox.memory`) and what its calls change.
pub struct Sandbox {
    config: SandboxConfig,
    /// What the current call writes; taken when it ends.
    pub output: OutputCapture,
    /// Programs the current call compiled into the cache: kept only if it completes.
    new_programs: Mutex<Vec<PathBuf>>,
}

impl std::ops::Deref for Sandbox {
    type Target = SandboxConfig;

    fn deref(&self) -> &SandboxConfig {
        &self.config
    }
}

impl Sandbox {
    pub fn new(config: SandboxConfig) -> Arc<Sandbox> {
        Arc::new(Sandbox {
            output: OutputCapture::new(config.output_bytes),
            new_programs: Mutex::default(),
            config,
        })
    }

    /// Starts a new call: earlier calls' refusals are forgotten (what the sandbox holds
    /// stays charged). The call's deadline is its task's (see [`clock`]).
    pub fn begin_call(&self) {
        self.memory.begin_call();
        if let Some(calls) = &self.tool_calls {
            calls.begin_call();
        }
        self.disk.begin_call();
        self.new_programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// Removes the programs this call added to the compiled cache (the call did not
    /// complete, so nothing it produced is kept).
    pub fn forget_new_programs(&self) {
        let programs =
            std::mem::take(&mut *self.new_programs.lock().unwrap_or_else(|e| e.into_inner()));
        for path in programs {
            let _ = std::fs::remove_file(path);
        }
    }
}
