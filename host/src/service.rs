//! The facade the CLI and the MCP server use: load the plugins once, then run requests.
//!
//! A request flows: [`Runbox::run`] → a fresh scratch directory and [`RunContext`] →
//! the plugin's `run` export in its own store → the plugin's `process.spawn` calls
//! (`sandbox/process.rs`) → [`classify`] turns how it ended into a [`RunOutcome`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use wasmtime::component::Linker;

use crate::artifact::{Cache, Progress};
use crate::engine::SandboxEngine;
use crate::manifest::Manifest;
use crate::outcome::{RunOutcome, RunStatus};
use crate::plugin::{load_plugin, LoadedPlugin, PluginError};
use crate::sandbox::bindings::exports::runbox::plugin::runtime;
use crate::sandbox::bindings::Plugin;
use crate::sandbox::disk::{DiskBudget, DEFAULT_SCRATCH_BYTES, DEFAULT_SCRATCH_FILES};
use crate::sandbox::linker::sandbox_linker;
use crate::sandbox::memory::MemoryBudget;
use crate::sandbox::output::{OutputCapture, OutputLimitExceeded};
use crate::sandbox::store::{new_store, ProgramIo, StoreState};
use crate::sandbox::RunContext;

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
}

/// How to start a [`Runbox`].
#[derive(Debug, Clone)]
pub struct RunboxOptions {
    pub limits: LimitSettings,
    /// Runs at once; more wait for a slot.
    pub max_concurrent: usize,
    /// Only these runtimes (all when empty).
    pub only: Vec<String>,
}

impl Default for RunboxOptions {
    fn default() -> Self {
        RunboxOptions {
            limits: LimitSettings::default(),
            max_concurrent: 8,
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
}

/// Loaded plugins, ready to run.
pub struct Runbox {
    engine: SandboxEngine,
    linker: Arc<Linker<StoreState>>,
    plugins: IndexMap<String, Arc<LoadedPlugin>>,
    limits: LimitSettings,
    slots: Arc<Semaphore>,
}

impl Runbox {
    /// Fetches what is missing, compiles what is not cached, and prepares every plugin.
    /// Blocking: call from a blocking context (it can take minutes the first time).
    pub fn load(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: &Progress,
    ) -> Result<Runbox, StartError> {
        let valid: Vec<String> = manifest.plugins.keys().cloned().collect();
        for name in &options.only {
            if !manifest.plugins.contains_key(name) {
                return Err(StartError::UnknownSelection {
                    name: name.clone(),
                    valid: valid.clone(),
                });
            }
        }
        let engine = SandboxEngine::new(&cache.root().join("compiled"))?;
        let linker =
            Arc::new(sandbox_linker(engine.engine()).map_err(|e| StartError::Linker(e.into()))?);
        let mut plugins = IndexMap::new();
        for (name, spec) in &manifest.plugins {
            if !options.only.is_empty() && !options.only.contains(name) {
                continue;
            }
            let plugin = load_plugin(spec, cache, &engine, &linker, progress)?;
            plugins.insert(name.clone(), Arc::new(plugin));
        }
        Ok(Runbox {
            engine,
            linker,
            plugins,
            limits: options.limits,
            slots: Arc::new(Semaphore::new(options.max_concurrent.max(1))),
        })
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

    /// Asks the plugin behind `runtime` to describe itself (`runtime.describe`), in a
    /// fresh sandbox like any run.
    pub async fn describe(&self, runtime: &str) -> Result<runtime::Info, RunError> {
        let plugin = self.plugin_arc(runtime)?;
        let scratch = new_scratch()?;
        let run = self.run_context(
            &plugin,
            scratch.path(),
            Duration::from_secs(10),
            self.limits.memory_bytes,
        );
        let call = async {
            let (mut store, instance) = instantiate_plugin(&plugin, &run).await?;
            instance
                .runbox_plugin_runtime()
                .call_describe(&mut store)
                .await
        };
        call.await
            .map_err(|e| RunError::Host(format!("`{runtime}`: describe failed: {e}")))
    }

    fn plugin_arc(&self, runtime: &str) -> Result<Arc<LoadedPlugin>, RunError> {
        self.plugins
            .get(runtime)
            .cloned()
            .ok_or_else(|| RunError::UnknownRuntime {
                name: runtime.to_string(),
                valid: self.runtime_names(),
            })
    }

    fn run_context(
        &self,
        plugin: &LoadedPlugin,
        scratch: &std::path::Path,
        timeout: Duration,
        memory: u64,
    ) -> Arc<RunContext> {
        Arc::new(RunContext {
            engine: self.engine.clone(),
            linker: self.linker.clone(),
            tools: plugin.tools.clone(),
            settings: plugin.settings.clone(),
            scratch: scratch.to_path_buf(),
            mounts: plugin.mounts.clone(),
            output: OutputCapture::new(self.limits.output_bytes),
            memory: MemoryBudget::new(usize::try_from(memory).unwrap_or(usize::MAX)),
            disk: DiskBudget::new(self.limits.scratch_bytes, self.limits.scratch_files),
            deadline: Instant::now() + timeout,
        })
    }

    /// Runs one program. Waits for a free slot when `max_concurrent` runs are under way.
    /// Cancelling `cancel` ends the run with status `terminated`.
    pub async fn run(
        &self,
        request: RunRequest,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let plugin = self.plugin_arc(&request.runtime)?;
        let timeout = request
            .limits
            .timeout
            .unwrap_or(self.limits.default_timeout);
        if timeout.is_zero() {
            return Err(RunError::InvalidRequest(
                "timeout must be greater than zero".into(),
            ));
        }
        let timeout = timeout.min(self.limits.max_timeout);
        let memory = request
            .limits
            .memory_bytes
            .unwrap_or(self.limits.memory_bytes);
        let _slot = tokio::select! {
            slot = self.slots.clone().acquire_owned() => slot.expect("semaphore never closed"),
            _ = cancel.cancelled() => return Ok(cancelled_before_start()),
        };
        let scratch = new_scratch()?;
        let started = Instant::now();
        let run = self.run_context(&plugin, scratch.path(), timeout, memory);
        let wasm_request = runtime::RunRequest {
            code: request.code,
            args: request.args,
            stdin: request.stdin,
            files: Vec::new(),
        };
        let call = call_plugin(&plugin, &run, wasm_request);
        // The epoch callback stops running guests at the deadline; this backstop also
        // ends runs waiting in the host (a sleep, a blocked read) shortly after it.
        let ended = tokio::select! {
            r = tokio::time::timeout(timeout + Duration::from_millis(20), call) => match r {
                Ok(r) => Ended::Returned(r),
                Err(_) => Ended::Deadline,
            },
            _ = cancel.cancelled() => Ended::Cancelled,
        };
        let duration = started.elapsed();
        let outcome = classify(ended, &run, timeout, duration);
        drop(scratch);
        Ok(outcome)
    }
}

/// A fresh, empty scratch directory; removed when dropped.
fn new_scratch() -> Result<tempfile::TempDir, RunError> {
    tempfile::Builder::new()
        .prefix("runbox-run-")
        .tempdir()
        .map_err(|e| RunError::Host(format!("cannot create a scratch directory: {e}")))
}

/// A fresh instance of the plugin's component in its own store of the run.
async fn instantiate_plugin(
    plugin: &LoadedPlugin,
    run: &Arc<RunContext>,
) -> wasmtime::Result<(wasmtime::Store<StoreState>, Plugin)> {
    let io = ProgramIo {
        argv: vec![plugin.spec.name.clone()],
        ..ProgramIo::default()
    };
    let mut store = new_store(run, io)?;
    let instance = plugin.adapter.instantiate_async(&mut store).await?;
    Ok((store, instance))
}

async fn call_plugin(
    plugin: &LoadedPlugin,
    run: &Arc<RunContext>,
    request: runtime::RunRequest,
) -> wasmtime::Result<Result<i32, String>> {
    let (mut store, instance) = instantiate_plugin(plugin, run).await?;
    instance
        .runbox_plugin_runtime()
        .call_run(&mut store, &request)
        .await
}

/// How the plugin call ended, before it is classified.
enum Ended {
    Returned(wasmtime::Result<Result<i32, String>>),
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

/// Turns how a run ended into its status, exit code and error, per SPEC.md.
fn classify(ended: Ended, run: &RunContext, timeout: Duration, duration: Duration) -> RunOutcome {
    let memory_note = || {
        format!(
            "memory limit reached: the run may use at most {} MiB",
            run.memory.cap() >> 20
        )
    };
    let disk_note = || {
        format!(
            "disk limit reached: the run may keep at most {} MiB in at most {} files and \
             directories in its scratch directory",
            run.disk.byte_cap() >> 20,
            run.disk.entry_cap()
        )
    };
    let timeout_note = || {
        format!(
            "time limit reached: the run was stopped after {:.1} s",
            timeout.as_secs_f64()
        )
    };
    let (status, exit_code, error) = match ended {
        Ended::Returned(Ok(Ok(code))) => (RunStatus::Completed, Some(code), None),
        Ended::Returned(Ok(Err(message))) => (
            RunStatus::Crashed,
            None,
            Some(format!("the runtime could not run the program: {message}")),
        ),
        Ended::Returned(Err(trap)) => {
            if let Some(e) = trap
                .chain()
                .find_map(|c| c.downcast_ref::<OutputLimitExceeded>())
            {
                (RunStatus::Terminated, None, Some(e.to_string()))
            } else if matches!(
                trap.downcast_ref::<wasmtime::Trap>(),
                Some(wasmtime::Trap::Interrupt)
            ) {
                (RunStatus::Timeout, None, Some(timeout_note()))
            } else if run.memory.was_exceeded() {
                (RunStatus::Terminated, None, Some(memory_note()))
            } else if run.disk.was_exceeded() {
                (RunStatus::Terminated, None, Some(disk_note()))
            } else {
                (RunStatus::Crashed, None, Some(describe_trap(&trap)))
            }
        }
        Ended::Deadline => (RunStatus::Timeout, None, Some(timeout_note())),
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

/// A one-line description of a trap, e.g. `wasm trap: call stack exhausted`.
fn describe_trap(trap: &wasmtime::Error) -> String {
    match trap.downcast_ref::<wasmtime::Trap>() {
        Some(t) => format!("the program crashed: {t}"),
        None => format!("the program crashed: {}", trap.root_cause()),
    }
}
