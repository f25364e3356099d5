//! The facade the CLI and the MCP server use: load the plugins once, then run requests.
//!
//! A request flows: [`Runbox::run`] → admission (queue and server memory,
//! `server_bounds.rs`) → a run slot → a thread of its own (`run_thread.rs`) with a fresh
//! scratch directory and [`RunContext`] → the plugin's `run` export in its own store →
//! the plugin's `process.spawn` calls (`sandbox/process.rs`) → [`classify`] turns how it
//! ended into a [`RunOutcome`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::artifact::{Cache, Progress};
use crate::engine::{ProgramCompiler, SandboxEngine};
use crate::manifest::Manifest;
use crate::outcome::{RunOutcome, RunStatus};
use crate::plugin::{load_plugin, LoadedPlugin, PluginError};
use crate::preparation::{NotReady, PluginSlot, Preparation};
use crate::run_thread;
use crate::sandbox::bindings::exports::runbox::plugin::runtime;
use crate::sandbox::disk::{DiskBudget, DEFAULT_SCRATCH_BYTES, DEFAULT_SCRATCH_FILES};
use crate::sandbox::linker::{plugin_linker, tool_linker};
use crate::sandbox::memory::MemoryBudget;
use crate::sandbox::output::{OutputCapture, OutputLimitExceeded};
use crate::sandbox::program::{CompileLimitExceeded, ProgramCompiles};
use crate::sandbox::store::{new_store, ProgramIo, StoreState, MAX_RESOURCES_PER_STORE};
use crate::sandbox::RunContext;
use crate::scratch::{RunDir, ScratchError, ScratchRoot};
use crate::server_bounds::{
    default_server_memory, raise_descriptor_limit, Admission, Busy, DEFAULT_MAX_QUEUED,
};

/// One program to run, as a client asks for it.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// A runtime name from plugins.toml, e.g. `python`.
    pub runtime: String,
    pub code: String,
    /// `None`: the program sees end of input at once.
    pub stdin: Option<Vec<u8>>,
    pub args: Vec<String>,
    /// Per-run limits; `None` fields take the server's defaults.
    pub limits: LimitOverrides,
}

#[derive(Debug, Clone, Default)]
pub struct LimitOverrides {
    pub timeout: Option<Duration>,
    pub memory_bytes: Option<u64>,
}

/// The limits every run gets, and the ceiling a request may ask for.
#[derive(Debug, Clone)]
pub struct LimitSettings {
    pub default_timeout: Duration,
    pub max_timeout: Duration,
    pub memory_bytes: u64,
    pub output_bytes: usize,
    /// Bytes of file data a run may keep in its scratch directory.
    pub scratch_bytes: u64,
    /// Files, directories and links a run may create in its scratch directory.
    pub scratch_files: u64,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            default_timeout: Duration::from_secs(10),
            max_timeout: Duration::from_secs(60),
            memory_bytes: 512 << 20,
            output_bytes: 1 << 20,
            scratch_bytes: DEFAULT_SCRATCH_BYTES,
            scratch_files: DEFAULT_SCRATCH_FILES,
        }
    }
}

/// A runtime, as listed to users.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuntimeInfo {
    pub name: String,
    pub language: String,
    pub version: String,
    pub extension: String,
    /// A short sample program (the manifest's first sample).
    pub sample: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("unknown runtime `{name}`; valid runtimes: {}", valid.join(", "))]
    UnknownRuntime { name: String, valid: Vec<String> },
    #[error("{0}")]
    InvalidRequest(String),
    /// The host could not set the run up (disk full, broken plugin); not the caller's fault.
    #[error("runbox could not run the program: {0}")]
    Host(String),
    /// The queue or the server's memory is full; the call was not started.
    #[error(transparent)]
    Busy(Busy),
    /// The runtime is still being prepared, or could not be.
    #[error(transparent)]
    NotReady(#[from] NotReady),
}

/// How to start a [`Runbox`].
#[derive(Debug, Clone)]
pub struct RunboxOptions {
    pub limits: LimitSettings,
    /// Runs at once; more wait for a slot.
    pub max_concurrent: usize,
    /// Calls that may wait for a slot; more are refused at once as busy.
    pub max_queued: usize,
    /// Memory all runs and waiting calls together may hold.
    pub server_memory_bytes: u64,
    /// Produced programs compiled at once, server-wide.
    pub max_compiles: usize,
    /// The compiler of produced programs.
    pub program_compiler: ProgramCompiler,
    /// The runbox executable that compiles produced programs (default: this executable).
    pub compiler_exe: Option<PathBuf>,
    /// Where runs' scratch directories live (default: `scratch/` in the cache directory).
    pub scratch_dir: Option<PathBuf>,
    /// Only these runtimes (all when empty).
    pub only: Vec<String>,
}

impl Default for RunboxOptions {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        RunboxOptions {
            limits: LimitSettings::default(),
            max_concurrent: 8,
            max_queued: DEFAULT_MAX_QUEUED,
            server_memory_bytes: default_server_memory(),
            max_compiles: cores.div_ceil(2),
            program_compiler: ProgramCompiler::default(),
            compiler_exe: None,
            scratch_dir: None,
            only: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Plugin(#[from] PluginError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error("cannot set up the sandbox linker: {0:#}")]
    Linker(anyhow::Error),
    #[error("unknown runtime `{name}` in the runtime selection; plugins file has: {}", valid.join(", "))]
    UnknownSelection { name: String, valid: Vec<String> },
    #[error(transparent)]
    Scratch(#[from] ScratchError),
    #[error("cannot find the runbox executable (to compile produced programs): {0}")]
    Executable(std::io::Error),
}

/// Loaded plugins, ready to run.
pub struct Runbox {
    engine: SandboxEngine,
    plugins: IndexMap<String, Arc<PluginSlot>>,
    limits: LimitSettings,
    admission: Admission,
    programs: Arc<ProgramCompiles>,
    scratch: Arc<ScratchRoot>,
}

/// How long after a run's deadline the server stops waiting for its thread (stuck in a
/// slow syscall) and answers with what it has.
const DEADLINE_BACKSTOP: Duration = Duration::from_secs(1);
/// How long a cancelled run's thread gets to wind down before the server answers.
const CANCEL_GRACE: Duration = Duration::from_millis(200);

impl Runbox {
    /// Fetches what is missing, compiles what is not cached, and prepares every plugin
    /// before returning; fails on the first runtime that cannot be prepared.
    /// Blocking: call from a blocking context (it can take minutes the first time).
    pub fn load(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: &Progress,
    ) -> Result<Runbox, StartError> {
        let (runbox, preparer) = Runbox::unprepared(manifest, cache, options)?;
        preparer.prepare_all(progress, true)?;
        Ok(runbox)
    }

    /// Like [`Runbox::load`], but returns at once and prepares the runtimes on a thread of
    /// their own: a call for a runtime waits until it is ready (see `preparation.rs`).
    pub fn start(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: Progress,
    ) -> Result<Runbox, StartError> {
        let (runbox, preparer) = Runbox::unprepared(manifest, cache, options)?;
        let progress = progress.observed(preparer.observer());
        std::thread::Builder::new()
            .name("runbox-prepare".into())
            .spawn(move || {
                let _ = preparer.prepare_all(&progress, false);
            })
            .map_err(StartError::Executable)?;
        Ok(runbox)
    }

    /// Everything but the runtimes themselves, and what prepares them.
    fn unprepared(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
    ) -> Result<(Runbox, Preparer), StartError> {
        let valid: Vec<String> = manifest.plugins.keys().cloned().collect();
        for name in &options.only {
            if !manifest.plugins.contains_key(name) {
                return Err(StartError::UnknownSelection {
                    name: name.clone(),
                    valid: valid.clone(),
                });
            }
        }
        let descriptors = raise_descriptor_limit();
        // A run holds two stores at most (the plugin and one child).
        let needed = (options.max_concurrent as u64) * 2 * MAX_RESOURCES_PER_STORE as u64;
        if descriptors < needed {
            tracing::warn!(
                "the open-file limit is {descriptors}; {} concurrent runs may need up to {needed}",
                options.max_concurrent
            );
        }
        let engine = SandboxEngine::new(&cache.root().join("compiled"), options.program_compiler)?;
        let linker_err = |e: wasmtime::Error| StartError::Linker(e.into());
        let plugin_linker = plugin_linker(engine.engine()).map_err(linker_err)?;
        let tool_linker = tool_linker(engine.engine()).map_err(linker_err)?;
        let plugins: IndexMap<String, Arc<PluginSlot>> = manifest
            .plugins
            .iter()
            .filter(|(name, _)| options.only.is_empty() || options.only.contains(name))
            .map(|(name, spec)| (name.clone(), Arc::new(PluginSlot::new(spec.clone()))))
            .collect();
        let compiler_exe = match options.compiler_exe {
            Some(exe) => exe,
            None => std::env::current_exe().map_err(StartError::Executable)?,
        };
        let programs = Arc::new(ProgramCompiles {
            linker: tool_linker_for_programs(&engine)?,
            slots: Arc::new(Semaphore::new(options.max_compiles.max(1))),
            compiler_exe,
        });
        let scratch_dir = options
            .scratch_dir
            .unwrap_or_else(|| cache.root().join("scratch"));
        let preparer = Preparer {
            slots: plugins.values().cloned().collect(),
            current: Arc::default(),
            cache: cache.clone(),
            engine: engine.clone(),
            plugin_linker,
            tool_linker,
        };
        let runbox = Runbox {
            engine,
            plugins,
            limits: options.limits,
            admission: Admission::new(
                options.max_concurrent,
                options.max_queued,
                options.server_memory_bytes,
            ),
            programs,
            scratch: Arc::new(ScratchRoot::open(&scratch_dir)?),
        };
        Ok((runbox, preparer))
    }

    /// Whether every runtime is prepared (or failed): nothing is left to wait for.
    pub fn all_prepared(&self) -> bool {
        self.plugins
            .values()
            .all(|p| !matches!(p.state(), Preparation::Preparing))
    }

    pub fn runtimes(&self) -> Vec<RuntimeInfo> {
        self.plugins
            .values()
            .map(|p| RuntimeInfo {
                name: p.spec.name.clone(),
                language: p.spec.language.clone(),
                version: p.spec.version.clone(),
                extension: p.spec.extension.clone(),
                sample: p.spec.samples.first().map(|s| s.code.clone()),
            })
            .collect()
    }

    pub fn runtime_names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
    }

    pub fn limits(&self) -> &LimitSettings {
        &self.limits
    }

    /// Where this server keeps its runs' scratch directories.
    pub fn scratch_root(&self) -> &std::path::Path {
        self.scratch.path()
    }

    /// Asks the plugin behind `runtime` to describe itself (`runtime.describe`), in a
    /// fresh sandbox like any run: in a run slot, under the default deadline.
    pub async fn describe(&self, runtime: &str) -> Result<runtime::Info, RunError> {
        let limits = self.run_limits(&LimitOverrides::default())?;
        let plugin = self.plugin_arc(runtime, limits.timeout).await?;
        let cancel = CancellationToken::new();
        let mut ticket = self
            .admission
            .admit(4 * self.limits.output_bytes)
            .map_err(RunError::Busy)?;
        let slot = self
            .admission
            .slot(&mut ticket, &cancel)
            .await
            .expect("never cancelled");
        let (ended, run) = self
            .call_in_sandbox(&plugin, limits, PluginCall::Describe, cancel, slot)
            .await?;
        match ended {
            Ended::Returned(Ok(PluginReturn::Info(info))) => Ok(info),
            other => {
                let outcome = classify(other, &run, limits.timeout, Duration::ZERO);
                Err(RunError::Host(format!(
                    "`{runtime}`: describe failed: {}",
                    outcome.error.unwrap_or_else(|| "no answer".into())
                )))
            }
        }
    }

    /// The plugin behind `runtime`, waiting up to `wait` while it is being prepared.
    async fn plugin_arc(
        &self,
        runtime: &str,
        wait: Duration,
    ) -> Result<Arc<LoadedPlugin>, RunError> {
        let slot = self
            .plugins
            .get(runtime)
            .ok_or_else(|| RunError::UnknownRuntime {
                name: runtime.to_string(),
                valid: self.runtime_names(),
            })?;
        if let Some(plugin) = slot.ready() {
            return Ok(plugin);
        }
        Ok(slot.wait_ready(wait).await?)
    }

    /// The limits of one run: the request's, within the server's.
    fn run_limits(&self, overrides: &LimitOverrides) -> Result<RunLimits, RunError> {
        let timeout = overrides.timeout.unwrap_or(self.limits.default_timeout);
        if timeout.is_zero() {
            return Err(RunError::InvalidRequest(
                "timeout must be greater than zero".into(),
            ));
        }
        let memory = overrides
            .memory_bytes
            .unwrap_or(self.limits.memory_bytes)
            .min(self.limits.memory_bytes);
        Ok(RunLimits {
            timeout: timeout.min(self.limits.max_timeout),
            memory_bytes: usize::try_from(memory).unwrap_or(usize::MAX),
        })
    }

    /// Runs one program. Waits for a free slot when `max_concurrent` runs are under way;
    /// refused at once as busy when the queue or the server's memory is full.
    /// Cancelling `cancel` ends the run with status `terminated`.
    pub async fn run(
        &self,
        request: RunRequest,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let limits = self.run_limits(&request.limits)?;
        // A runtime still being prepared is waited for within the call's own time limit.
        let plugin = self.plugin_arc(&request.runtime, limits.timeout).await?;
        let payload = request.code.len()
            + request.stdin.as_ref().map_or(0, Vec::len)
            + request.args.iter().map(String::len).sum::<usize>();
        // Output is kept per stream, and again interleaved.
        let output = 4 * self.limits.output_bytes;
        let mut ticket = self
            .admission
            .admit(payload.saturating_add(output))
            .map_err(RunError::Busy)?;
        let Some(slot) = self.admission.slot(&mut ticket, &cancel).await else {
            return Ok(cancelled_before_start());
        };
        let started = Instant::now();
        let span = tracing::info_span!(
            "run",
            runtime = %request.runtime,
            session = tracing::field::Empty,
            status = tracing::field::Empty,
            duration_ms = tracing::field::Empty,
            peak_memory = tracing::field::Empty,
            scratch_bytes = tracing::field::Empty,
        );
        let call = PluginCall::Run(runtime::RunRequest {
            code: request.code,
            args: request.args,
            stdin: request.stdin,
            files: Vec::new(),
        });
        let (ended, run) = self
            .call_in_sandbox(&plugin, limits, call, cancel, slot)
            .instrument(span.clone())
            .await?;
        let outcome = classify(ended, &run, limits.timeout, started.elapsed());
        if outcome.status != RunStatus::Completed {
            run.forget_new_programs();
        }
        span.record("status", outcome.status.as_str());
        span.record("duration_ms", outcome.duration.as_millis() as u64);
        span.record("peak_memory", run.memory.peak() as u64);
        span.record("scratch_bytes", run.disk.bytes_used());
        span.in_scope(|| tracing::info!("run finished"));
        Ok(outcome)
    }

    fn run_context(
        &self,
        plugin: &LoadedPlugin,
        limits: RunLimits,
        cancel: CancellationToken,
    ) -> Arc<RunContext> {
        Arc::new(RunContext {
            engine: self.engine.clone(),
            programs: self.programs.clone(),
            tools: plugin.tools.clone(),
            settings: plugin.settings.clone(),
            scratch: self.scratch.next_run_dir(),
            mounts: plugin.mounts.clone(),
            output: OutputCapture::new(self.limits.output_bytes),
            memory: MemoryBudget::with_parent(
                limits.memory_bytes,
                Some(self.admission.memory().clone()),
            ),
            disk: DiskBudget::new(self.limits.scratch_bytes, self.limits.scratch_files),
            deadline: Instant::now() + limits.timeout,
            cancel,
            new_programs: Default::default(),
        })
    }

    /// Calls the plugin in a fresh sandbox on a thread of its own, holding `slot` until
    /// that thread is done. Answers by the deadline (plus a backstop for a thread stuck
    /// in a syscall) or shortly after `cancel`, whatever the thread is doing.
    async fn call_in_sandbox(
        &self,
        plugin: &Arc<LoadedPlugin>,
        limits: RunLimits,
        call: PluginCall,
        cancel: CancellationToken,
        slot: OwnedSemaphorePermit,
    ) -> Result<(Ended, Arc<RunContext>), RunError> {
        let run = self.run_context(plugin, limits, cancel.clone());
        let thread = {
            let (plugin, run) = (plugin.clone(), run.clone());
            run_thread::on_own_thread(move || async move {
                let _slot = slot;
                let _dir = RunDir::create(&run.scratch).map_err(|e| {
                    RunError::Host(format!("cannot create a scratch directory: {e}"))
                })?;
                // The epoch callback stops running guests at the deadline; this also
                // ends runs waiting in the host (a sleep, a blocked read) shortly after.
                let deadline = tokio::time::Instant::from_std(run.deadline);
                let ended = tokio::select! {
                    r = call_plugin(&plugin, &run, call) => Ended::Returned(r),
                    _ = tokio::time::sleep_until(deadline + Duration::from_millis(20)) => Ended::Deadline,
                    _ = run.cancel.cancelled() => Ended::Cancelled,
                };
                Ok::<Ended, RunError>(ended)
            })
        };
        tokio::pin!(thread);
        let backstop = tokio::time::Instant::from_std(run.deadline) + DEADLINE_BACKSTOP;
        let joined = tokio::select! {
            joined = &mut thread => Some(joined),
            _ = tokio::time::sleep_until(backstop) => None,
            _ = cancel.cancelled() => tokio::time::timeout(CANCEL_GRACE, &mut thread).await.ok(),
        };
        let ended = match joined {
            Some(Ok(ended)) => ended?,
            Some(Err(e)) => return Err(RunError::Host(format!("the run's thread failed: {e}"))),
            // The thread is stuck in a syscall; it ends (and frees its slot) on its own.
            None if cancel.is_cancelled() => Ended::Cancelled,
            None => Ended::Deadline,
        };
        Ok((ended, run))
    }
}

/// Prepares the runtimes, in plugins.toml order.
struct Preparer {
    slots: Vec<Arc<PluginSlot>>,
    /// The index of the slot being prepared, for [`Preparer::observer`].
    current: Arc<std::sync::atomic::AtomicUsize>,
    cache: Cache,
    engine: SandboxEngine,
    plugin_linker: wasmtime::component::Linker<StoreState>,
    tool_linker: wasmtime::component::Linker<StoreState>,
}

impl Preparer {
    /// Tells the slot being prepared what its preparation is doing.
    fn observer(&self) -> crate::artifact::Observer {
        let (slots, current) = (self.slots.clone(), self.current.clone());
        Arc::new(move |step: &str| {
            if let Some(slot) = slots.get(current.load(std::sync::atomic::Ordering::SeqCst)) {
                slot.doing(step);
            }
        })
    }

    /// Prepares every runtime. With `stop_at_error`, returns the first failure (nothing
    /// after it is prepared); otherwise a failed runtime is marked and the rest go on.
    fn prepare_all(&self, progress: &Progress, stop_at_error: bool) -> Result<(), PluginError> {
        for (i, slot) in self.slots.iter().enumerate() {
            self.current.store(i, std::sync::atomic::Ordering::SeqCst);
            slot.doing("loading it from the cache");
            let loaded = load_plugin(
                &slot.spec,
                &self.cache,
                &self.engine,
                &self.plugin_linker,
                &self.tool_linker,
                progress,
            );
            match loaded {
                Ok(plugin) => slot.finish(Preparation::Ready(Arc::new(plugin))),
                Err(e) => {
                    slot.finish(Preparation::Failed(e.to_string()));
                    if stop_at_error {
                        return Err(e);
                    }
                    tracing::error!("runtime `{}` could not be prepared: {e}", slot.spec.name);
                    eprintln!(
                        "runbox: runtime `{}` could not be prepared: {e}",
                        slot.spec.name
                    );
                }
            }
        }
        Ok(())
    }
}

/// One run's limits, resolved against the server's.
#[derive(Debug, Clone, Copy)]
struct RunLimits {
    timeout: Duration,
    memory_bytes: usize,
}

/// The plugin link and tool world for programs: the tool linker on the program engine.
fn tool_linker_for_programs(
    engine: &SandboxEngine,
) -> Result<wasmtime::component::Linker<StoreState>, StartError> {
    tool_linker(engine.programs()).map_err(|e| StartError::Linker(e.into()))
}

/// What the host asks of a plugin.
enum PluginCall {
    Describe,
    Run(runtime::RunRequest),
}

/// What the plugin answered.
enum PluginReturn {
    Info(runtime::Info),
    Exit(Result<i32, String>),
}

/// A fresh instance of the plugin's component in its own store of the run, called once.
async fn call_plugin(
    plugin: &LoadedPlugin,
    run: &Arc<RunContext>,
    call: PluginCall,
) -> wasmtime::Result<PluginReturn> {
    let io = ProgramIo {
        argv: vec![plugin.spec.name.clone()],
        ..ProgramIo::default()
    };
    let mut store = new_store(run, io, run.engine.engine())?;
    let instance = plugin.adapter.instantiate_async(&mut store).await?;
    let runtime = instance.runbox_plugin_runtime();
    Ok(match call {
        PluginCall::Describe => PluginReturn::Info(runtime.call_describe(&mut store).await?),
        PluginCall::Run(request) => {
            PluginReturn::Exit(runtime.call_run(&mut store, &request).await?)
        }
    })
}

/// How the plugin call ended, before it is classified.
enum Ended {
    Returned(wasmtime::Result<PluginReturn>),
    Deadline,
    Cancelled,
}

fn cancelled_before_start() -> RunOutcome {
    RunOutcome {
        status: RunStatus::Terminated,
        exit_code: None,
        stdout: String::new(),
        stderr: String::new(),
        tty: String::new(),
        error: Some("cancelled by the client before it started".into()),
        truncated: false,
        duration: Duration::ZERO,
        raw: Default::default(),
    }
}

/// Turns how a run ended into its status, exit code and error, per docs/mcp.md.
fn classify(ended: Ended, run: &RunContext, timeout: Duration, duration: Duration) -> RunOutcome {
    let (status, exit_code, error) = match ended {
        Ended::Returned(Ok(PluginReturn::Exit(Ok(code)))) => {
            (RunStatus::Completed, Some(code), None)
        }
        Ended::Returned(Ok(PluginReturn::Exit(Err(message)))) => (
            RunStatus::Crashed,
            None,
            Some(format!("the runtime could not run the program: {message}")),
        ),
        Ended::Returned(Ok(PluginReturn::Info(_))) => (RunStatus::Completed, Some(0), None),
        Ended::Returned(Err(trap)) => classify_trap(&trap, run, timeout),
        Ended::Deadline => (RunStatus::Timeout, None, Some(timeout_note(timeout))),
        Ended::Cancelled => (
            RunStatus::Terminated,
            None,
            Some("cancelled by the client".into()),
        ),
    };
    let out = run.output.take();
    RunOutcome {
        status,
        exit_code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        tty: String::from_utf8_lossy(&out.tty).into_owned(),
        error,
        truncated: out.truncated,
        duration,
        raw: out,
    }
}

fn timeout_note(timeout: Duration) -> String {
    format!(
        "time limit reached: the run was stopped after {:.1} s",
        timeout.as_secs_f64()
    )
}

/// A trap's status and error. A refused allocation explains the traps it leads to
/// (`unreachable` from an abort, an out-of-bounds access through a failed allocation);
/// any other trap is the program's own crash, even after a refusal (of memory or disk)
/// earlier in the run, which its error then mentions.
fn classify_trap(
    trap: &wasmtime::Error,
    run: &RunContext,
    timeout: Duration,
) -> (RunStatus, Option<i32>, Option<String>) {
    let terminated = |why: String| (RunStatus::Terminated, None, Some(why));
    if let Some(e) = trap
        .chain()
        .find_map(|c| c.downcast_ref::<OutputLimitExceeded>())
    {
        return terminated(e.to_string());
    }
    if let Some(e) = trap
        .chain()
        .find_map(|c| c.downcast_ref::<CompileLimitExceeded>())
    {
        return terminated(e.to_string());
    }
    let kind = trap.downcast_ref::<wasmtime::Trap>().copied();
    if kind == Some(wasmtime::Trap::Interrupt) {
        return if run.cancel.is_cancelled() {
            terminated("cancelled by the client".into())
        } else {
            (RunStatus::Timeout, None, Some(timeout_note(timeout)))
        };
    }
    let memory_note = format!(
        "memory limit reached: the run may use at most {} MiB",
        run.memory.cap() >> 20
    );
    let server_note =
        "memory limit reached: the server's memory budget for all runs is in use".to_string();
    let disk_note = format!(
        "disk limit reached: the run may keep at most {} MiB in at most {} files and \
         directories in its scratch directory",
        run.disk.byte_cap() >> 20,
        run.disk.entry_cap()
    );
    // A refused allocation explains the abort or the bad access it leads to. A full
    // disk never explains a trap: programs see it as an error (ENOSPC) from the write.
    let after_memory_refusal = matches!(
        kind,
        Some(wasmtime::Trap::UnreachableCodeReached) | Some(wasmtime::Trap::MemoryOutOfBounds)
    );
    if after_memory_refusal && run.memory.was_exceeded() {
        return terminated(memory_note);
    }
    if after_memory_refusal && run.memory.parent_was_exceeded() {
        return terminated(server_note);
    }
    let earlier: Vec<String> = [
        (run.memory.was_exceeded(), memory_note),
        (run.memory.parent_was_exceeded(), server_note),
        (run.disk.was_exceeded(), disk_note),
    ]
    .into_iter()
    .filter(|(refused, _)| *refused)
    .map(|(_, note)| note)
    .collect();
    let mut error = describe_trap(trap);
    if !earlier.is_empty() {
        error = format!("{error} (earlier in the run: {})", earlier.join("; "));
    }
    (RunStatus::Crashed, None, Some(error))
}

/// A one-line description of a trap, e.g. `wasm trap: call stack exhausted`.
fn describe_trap(trap: &wasmtime::Error) -> String {
    match trap.downcast_ref::<wasmtime::Trap>() {
        Some(t) => format!("the program crashed: {t}"),
        None => format!("the program crashed: {}", trap.root_cause()),
    }
}
