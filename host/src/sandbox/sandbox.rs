//! What a sandbox is made of ([`SandboxConfig`]: its scratch directory, mounts, tools,
//! budgets) and the [`Sandbox`] every store of one run shares (one session's, across its
//! calls).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use std::future::Future;
use std::pin::Pin;

use tokio::sync::Semaphore;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::filesystem::{QuotaFsView, StoreDisk, WasiQuotaFsView};
use super::replay_clock::{ReplayClocks, WasiReplayClocksView};
use super::tool_device::StoreDevices;
use crate::budget::memory::StoreMemoryLimiter;
use crate::wit::runbox::plugin::command_line::{Finished, Invocation};

use crate::budget::disk::DiskBudget;
use crate::budget::memory::MemoryBudget;
use crate::budget::output::OutputCapture;
use crate::engine::SandboxEngine;

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
    /// A reactor that runs in turns as a session's resident (see `turns.rs`).
    pub turns: Option<Arc<super::turn_doors::TurnDoors>>,
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
    /// Network egress by policy: the requests this run may make through `/net/fetch`.
    pub net_calls: Option<Arc<crate::net::NetCalls>>,
    /// Without `tool_calls` (or `net_calls`): an empty directory to show at `/tools` (or
    /// `/net`) instead (see `store.rs`); `None` only where no snapshot runs (deriving
    /// files).
    pub empty_tools_dir: Option<PathBuf>,
    /// The other runtimes its plugin may run as commands (`commands.rs`); `None` in a
    /// command's own sandbox and where no plugin runs.
    pub commands: Option<Arc<dyn CommandHost>>,
}

/// Everything the stores of one run share; in a session, across its calls: what it was
/// made of (read through `Deref`, `sandbox.memory`) and what its calls change.
pub struct Sandbox {
    config: SandboxConfig,
    /// What the current call writes; taken when it ends.
    pub output: OutputCapture,
    /// Programs the current call compiled into the cache: kept only if it completes.
    pub(super) new_programs: Mutex<Vec<PathBuf>>,
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
        if let Some(calls) = &self.net_calls {
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

/// What the server shares for compiling produced programs.
pub struct ProgramCompiles {
    /// The tool linker of the program engine.
    pub linker: Linker<StoreState>,
    /// Compiles at once, server-wide.
    pub slots: Arc<Semaphore>,
    /// The runbox executable that runs [`COMPILE_SUBCOMMAND`].
    pub compiler_exe: PathBuf,
}

/// What a command came to: `Ok(Err(_))` when it could not run (the caller says so and
/// goes on), `Err(_)` when it broke a limit or trapped (the whole call ends).
pub type CommandResult = wasmtime::Result<Result<Finished, String>>;

/// A command's run, as the run layer hands it back.
pub type CommandFuture<'a> = Pin<Box<dyn Future<Output = CommandResult> + Send + 'a>>;

/// The runtimes a sandbox may run as commands (`run/commands.rs`).
pub trait CommandHost: Send + Sync {
    /// Each command name, with the runtime that runs it.
    fn available(&self) -> Vec<(String, String)>;

    /// Runs `invocation` (a command name, not a path) in a child of `caller`.
    fn run<'a>(&'a self, caller: &'a Arc<Sandbox>, invocation: Invocation) -> CommandFuture<'a>;
}

/// The data of one wasmtime store: the WASI context of one program in the run, and the
/// sandbox it belongs to.
pub struct StoreState {
    pub(super) wasi: WasiCtx,
    pub(super) table: ResourceTable,
    pub(super) limiter: StoreMemoryLimiter,
    pub(super) disk: StoreDisk,
    pub(super) devices: StoreDevices,
    pub(super) sandbox: Arc<Sandbox>,
}

impl StoreState {
    /// How many host resources (streams, descriptors, a resident program) the store's
    /// guest holds now.
    pub fn live_resources(&mut self) -> usize {
        self.table.iter_mut().count()
    }

    /// The resident programs the store's guest started, in the order it started them.
    pub fn residents(&mut self) -> impl Iterator<Item = &mut crate::wit::resident::Resident> {
        self.table
            .iter_mut()
            .filter_map(|entry| entry.downcast_mut::<crate::wit::resident::Resident>())
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiQuotaFsView for StoreState {
    fn quota_fs(&mut self) -> QuotaFsView<'_> {
        QuotaFsView {
            inner: WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            disk: &mut self.disk,
            devices: &mut self.devices,
        }
    }
}

impl WasiReplayClocksView for StoreState {
    fn replay_clocks(&mut self) -> ReplayClocks<'_> {
        ReplayClocks {
            inner: wasmtime_wasi::clocks::WasiClocksCtxView {
                ctx: self.wasi.clocks(),
                table: &mut self.table,
            },
            journal: self.sandbox.journal.as_ref(),
        }
    }
}
