//! The facade the CLI and the MCP server use: start the plugins, then run requests, one
//! at a time or in sessions.
//!
//! A call flows: [`Runbox::run`] → the runtime's plugin (waiting while it is prepared,
//! `preparation.rs`) → [`Runner::run_once`] (`run/`), or, with a session id,
//! [`Session::run`] (`session/`) → a sandbox and a plugin instance on a thread of its own
//! → the plugin's `process` calls (`sandbox/process.rs`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indexmap::IndexMap;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use crate::engine::quiet_error_backtraces;
pub use crate::manifest::SessionMode;
use crate::plugin::preparation::{NotReady, PluginSlot, Preparation, Preparer, Waiting};
use crate::plugin::{LoadedPlugin, PluginError};
use crate::run::admission::{default_server_memory, raise_descriptor_limit, Admission};
use crate::run::classify::cancelled_before_start;
use crate::run::commands::RuntimeCommands;
pub use crate::run::limits::{LimitOverrides, LimitSettings};
use crate::run::scratch::{ScratchError, ScratchRoot};
use crate::run::Runner;
pub use crate::run::{RunError, RunRequest};
use crate::sandbox::linker::{plugin_linker, tool_linker};
use crate::sandbox::store::MAX_RESOURCES_PER_STORE;
use crate::sandbox::ProgramCompiles;
use crate::session::directory::SessionStore;
use crate::session::{Durability, Session, SessionError, Sessions};
use crate::wit::exports::runbox::plugin::runtime;

// What the faces above the service (the MCP server, the conformance suite, the command
// line) use of the layers below: they name it through the service alone.
pub use crate::budget::memory::{Held, MemoryBudget, Reservation};
pub use crate::budget::output::{CapturedOutput, Channel};
pub use crate::engine::{ProgramCompiler, SandboxEngine};
pub use crate::files::wire;
pub use crate::files::{
    escaped_name, has_control_characters, normalize_path, FileError, OutputFile, ReturnCaps,
    MAX_INPUT_BYTES, MAX_INPUT_FILES,
};
pub use crate::manifest::{Manifest, PluginSpec, SampleSpec};
pub use crate::metrics::Exposition;
pub use crate::net::{Net, NetConfig};
pub use crate::plugin::artifact::{Cache, Progress};
pub use crate::plugin::cache_state;
pub use crate::plugin::packages::parse_requirements;
pub use crate::replica::{self, OtherReplica, Replica};
pub use crate::run::admission::DEFAULT_MAX_QUEUED;
pub use crate::run::outcome::{RunOutcome, RunStatus, StateAfter};
pub use crate::run::RunWatch;
pub use crate::sandbox::program::compile_program_child;
pub use crate::session::directory::{
    StoreSettings, DEFAULT_MAX_ENTRY_BYTES, DEFAULT_MAX_STORED, DEFAULT_STORED_TTL,
};
pub use crate::upstream::catalog::{tool_line, Catalog, ServerView};
pub use crate::upstream::config::ToolsConfig;
pub use crate::upstream::gateway::{
    DEFAULT_MAX_ANSWER_BYTES, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_TOOL_CALLS,
};
pub use crate::upstream::{Gateway, GatewaySettings};

/// Why a call found no runtime or session to run in, or was not run (a tool error to MCP
/// clients).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("unknown runtime `{name}`; valid runtimes: {}", valid.join(", "))]
    UnknownRuntime { name: String, valid: Vec<String> },
    /// The runtime is still being prepared, or could not be.
    #[error(transparent)]
    NotReady(#[from] NotReady),
    /// A session that does not exist (any more), or is full, or of another runtime.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The call was found its runtime but not run.
    #[error(transparent)]
    Run(#[from] RunError),
}

impl From<crate::run::limits::ZeroTimeout> for CallError {
    fn from(e: crate::run::limits::ZeroTimeout) -> Self {
        CallError::Run(e.into())
    }
}

impl From<crate::files::FileError> for CallError {
    fn from(e: crate::files::FileError) -> Self {
        CallError::Run(e.into())
    }
}

/// The most sessions one fork makes.
pub const MAX_FORKS: usize = 16;

/// Sessions open at once, by default.
pub const DEFAULT_MAX_SESSIONS: usize = 16;
/// How long a session lives without calls, by default.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(600);

/// A runtime, as listed to users.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RuntimeInfo {
    pub name: String,
    pub language: String,
    pub version: String,
    pub extension: String,
    /// A short sample program (the manifest's first sample).
    pub sample: Option<String>,
    /// Whether a session keeps the interpreter's state between calls.
    pub session_state: bool,
    /// How that state is kept (stored, resumed, forked), when it is.
    pub session_mode: Option<SessionMode>,
    /// What a model should know about it (plugins.toml's `note`).
    pub note: Option<String>,
    /// The pure-Python packages added to it (`NAME==VERSION`, or a wheel's file name).
    pub packages: Vec<String>,
    /// While it is not ready (the first start prepares each runtime once): what its
    /// preparation is doing and for how long, or why it failed.
    pub preparation: Option<String>,
}

/// A new session, as its creator is told.
#[derive(Debug, Clone)]
pub struct SessionInfo {
    pub session_id: String,
    pub runtime: String,
    pub idle_timeout: Duration,
    pub keeps_state: bool,
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
    /// Sessions open at once.
    pub max_sessions: usize,
    /// A session ends after this long without calls.
    pub session_idle_timeout: Duration,
    /// Descriptors the transport may hold (HTTP connections), kept out of what runs share.
    pub connections: usize,
    /// This server's name among replicas, which every handle it mints starts with.
    pub replica: Replica,
    /// Where sessions are stored when they hibernate (`None`: they live in memory only).
    pub session_store: Option<StoreSettings>,
    /// An idle session hibernates after this long (with a session store).
    pub session_hibernate_after: Duration,
    /// Code mode: the upstream servers whose tools programs may call (`--tools-config`).
    pub gateway: Option<Arc<crate::upstream::Gateway>>,
    /// Network egress by policy (`--net-config`); `None`: nothing is reachable.
    pub net: Option<Arc<crate::net::Net>>,
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
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE,
            connections: 0,
            replica: Replica::default(),
            session_store: None,
            session_hibernate_after: DEFAULT_HIBERNATE_AFTER,
            gateway: None,
            net: None,
        }
    }
}

/// An idle session hibernates after this long, by default (with a session store).
pub const DEFAULT_HIBERNATE_AFTER: Duration = Duration::from_secs(60);

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
    #[error("cannot open the session store at {dir}: {error}")]
    SessionStore { dir: String, error: std::io::Error },
}

/// The runtimes and everything their runs share.
pub struct Runbox {
    plugins: IndexMap<String, Arc<PluginSlot>>,
    runner: Arc<Runner>,
    sessions: Sessions,
    replica: Replica,
}

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
        Runbox::prepared(manifest, cache, options, progress, true)
    }

    /// Like [`Runbox::load`], but a runtime that cannot be prepared is marked as failed
    /// (see [`Runbox::preparation_failure`]) and the others are still prepared.
    pub fn load_each(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: &Progress,
    ) -> Result<Runbox, StartError> {
        Runbox::prepared(manifest, cache, options, progress, false)
    }

    /// Every runtime prepared before returning; see `Preparer::prepare_all`.
    fn prepared(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: &Progress,
        stop_at_error: bool,
    ) -> Result<Runbox, StartError> {
        let (runbox, preparer) = Runbox::unprepared(manifest, cache, options)?;
        preparer.prepare_all(progress, stop_at_error, Waiting::ForAll)?;
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
        Runbox::started(manifest, cache, options, progress, Waiting::ByCall)
    }

    /// Like [`Runbox::start`], but a runtime is prepared only once a call asks for it
    /// (`runbox run`: the program's runtime, and those it runs as commands).
    pub fn start_on_demand(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: Progress,
    ) -> Result<Runbox, StartError> {
        Runbox::started(manifest, cache, options, progress, Waiting::OnDemand)
    }

    fn started(
        manifest: &Manifest,
        cache: &Cache,
        options: RunboxOptions,
        progress: Progress,
        waiting: Waiting,
    ) -> Result<Runbox, StartError> {
        let (runbox, preparer) = Runbox::unprepared(manifest, cache, options)?;
        let progress = progress.observed(preparer.observer());
        std::thread::Builder::new()
            .name("runbox-prepare".into())
            .spawn(move || {
                let _ = preparer.prepare_all(&progress, false, waiting);
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
        let resources_per_store = resources_per_store(
            raise_descriptor_limit().saturating_sub(options.connections as u64),
            options.max_concurrent + options.max_sessions,
        );
        let engine = SandboxEngine::new(&cache.root().join("compiled"), options.program_compiler)?;
        let linker_err = |e: wasmtime::Error| StartError::Linker(e.into());
        let plugins_linker = plugin_linker(engine.engine()).map_err(linker_err)?;
        let tools_linker = tool_linker(engine.engine()).map_err(linker_err)?;
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
            linker: tool_linker(engine.programs()).map_err(linker_err)?,
            slots: Arc::new(Semaphore::new(options.max_compiles.max(1))),
            compiler_exe,
        });
        let scratch_dir = options
            .scratch_dir
            .unwrap_or_else(|| cache.root().join("scratch"));
        let preparer = Preparer {
            slots: plugins.values().cloned().collect(),
            cache: cache.clone(),
            engine: engine.clone(),
            plugin_linker: plugins_linker,
            tool_linker: tools_linker,
        };
        let runner = Runner {
            engine,
            programs,
            admission: Admission::new(
                options.max_concurrent,
                options.max_queued,
                options.server_memory_bytes,
            ),
            scratch: Arc::new(ScratchRoot::open(&scratch_dir)?),
            limits: options.limits,
            resources_per_store,
            prestarts: Default::default(),
            metrics: Default::default(),
            gateway: options.gateway.clone(),
            net: options.net.clone(),
            commands: Some(Arc::new(RuntimeCommands::new(plugins.values())))
                .filter(|c| !c.is_empty()),
        };
        let durability = match options.session_store {
            Some(settings) => {
                let dir = settings.dir.display().to_string();
                let max_entry_bytes = settings.max_entry_bytes;
                let store = SessionStore::open(settings, &options.replica.describe())
                    .map_err(|error| StartError::SessionStore { dir, error })?;
                Some(Durability {
                    store: Arc::new(store),
                    memory: runner.admission.memory().clone(),
                    hibernate_after: options.session_hibernate_after,
                    max_entry_bytes,
                })
            }
            None => None,
        };
        let runbox = Runbox {
            plugins,
            runner: Arc::new(runner),
            sessions: Sessions::new(
                options.max_sessions,
                options.session_idle_timeout,
                options.replica.clone(),
                durability,
            ),
            replica: options.replica,
        };
        Ok((runbox, preparer))
    }

    /// Whether every runtime is prepared (or failed): nothing is left to wait for.
    pub fn all_prepared(&self) -> bool {
        self.plugins.values().all(|p| !p.is_preparing())
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
                session_state: p.spec.session_state,
                session_mode: p.spec.session_mode(),
                note: p.spec.note.clone(),
                packages: p.spec.packages.iter().map(|p| p.describe()).collect(),
                preparation: p.progress(),
            })
            .collect()
    }

    /// Interpreters of `runtime` started ahead of time and waiting for a run (see
    /// `run/prestart.rs`).
    pub fn prestarted(&self, runtime: &str) -> usize {
        self.runner.prestarts.ready_count(runtime)
    }

    /// Interpreters started ahead of time so far, all runtimes together.
    pub fn prestarts_begun(&self) -> usize {
        self.runner.prestarts.begun()
    }

    /// The runtimes still being prepared.
    pub fn preparing(&self) -> Vec<String> {
        self.plugins
            .values()
            .filter(|p| p.is_preparing())
            .map(|p| p.spec.name.clone())
            .collect()
    }

    /// Runs under way and calls waiting for a run slot, now.
    pub fn runs_and_waiting(&self) -> (usize, usize) {
        let admission = &self.runner.admission;
        (admission.running(), admission.waiting())
    }

    /// The runs finished, for /metrics.
    pub fn run_metrics(&self) -> &crate::metrics::RunMetrics {
        &self.runner.metrics
    }

    /// Code mode's upstream servers, when `--tools-config` named any.
    pub fn gateway(&self) -> Option<&Arc<crate::upstream::Gateway>> {
        self.runner.gateway.as_ref()
    }

    /// The network policy, when `--net-config` named one.
    pub fn net(&self) -> Option<&Arc<crate::net::Net>> {
        self.runner.net.as_ref()
    }

    /// Why `runtime` could not be prepared, if that is what became of it.
    pub fn preparation_failure(&self, runtime: &str) -> Option<String> {
        match self.plugins.get(runtime)?.state() {
            Preparation::Failed(why) => Some(why),
            _ => None,
        }
    }

    pub fn runtime_names(&self) -> Vec<String> {
        self.plugins.keys().cloned().collect()
    }

    pub fn limits(&self) -> &LimitSettings {
        &self.runner.limits
    }

    /// Where this server keeps its runs' scratch directories.
    pub fn scratch_root(&self) -> &std::path::Path {
        self.runner.scratch.path()
    }

    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// This server's name among replicas.
    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    /// The memory budget every run, waiting call and kept result draws from.
    pub fn server_memory(&self) -> crate::budget::memory::MemoryBudget {
        self.runner.admission.memory().clone()
    }

    /// Asks the plugin behind `runtime` to describe itself (`runtime.describe`), in a
    /// fresh sandbox like any run: in a run slot, under the default deadline.
    pub async fn describe(&self, runtime: &str) -> Result<runtime::Info, CallError> {
        let limits = self.runner.limits.resolve(&LimitOverrides::default())?;
        let plugin = self.plugin(runtime, limits.timeout).await?;
        Ok(self.runner.describe_once(plugin, limits).await?)
    }

    /// Runs one program: on its own, or in `request.session_id`'s session. Waits for a
    /// free slot when `max_concurrent` runs are under way; refused at once as busy when
    /// the queue or the server's memory is full. Cancelling `cancel` ends the run with
    /// status `terminated`.
    pub async fn run(
        &self,
        request: RunRequest,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, CallError> {
        let limits = self.runner.limits.resolve(&request.limits)?;
        if let Some(id) = request.session_id.clone() {
            // A session stored while the call waited for it is looked up again, once
            // (only a durable session is ever stored: only then is the request copied).
            let session = self.session_for(&id, &request.runtime).await?;
            let again = self.sessions.is_durable().then(|| request.clone());
            let first = session
                .run(&self.runner, request, limits, cancel.clone())
                .await;
            return match (first, again) {
                (Err(RunError::SessionMoved), Some(request)) => {
                    let session = self.session_for(&id, &request.runtime).await?;
                    Ok(session.run(&self.runner, request, limits, cancel).await?)
                }
                (done, _) => Ok(done?),
            };
        }
        let slot = self.slot(&request.runtime)?;
        // Admitted first (a queue place, its memory), then waiting for a runtime still
        // being prepared, within the call's own time limit.
        let admitted = self.runner.admit(&slot.spec, request)?;
        let plugin = match slot.ready() {
            Some(plugin) => plugin,
            None => tokio::select! {
                ready = slot.wait_ready(limits.timeout) => ready?,
                _ = cancel.cancelled() => return Ok(cancelled_before_start()),
            },
        };
        Ok(self
            .runner
            .run_once(plugin, admitted, limits, cancel)
            .await?)
    }

    /// A new session of `runtime`, waiting up to the default timeout while the runtime
    /// is prepared.
    pub async fn create_session(&self, runtime: &str) -> Result<SessionInfo, CallError> {
        if self.sessions.is_draining() {
            // Said at once rather than after waiting for the runtime's preparation.
            let here = self.replica.describe();
            return Err(SessionError::Draining { here }.into());
        }
        let plugin = self
            .plugin(runtime, self.runner.limits.default_timeout)
            .await?;
        let session = self.sessions.create(&self.runner, plugin).await?;
        Ok(SessionInfo {
            session_id: session.id.clone(),
            runtime: session.runtime.clone(),
            idle_timeout: self.sessions.idle_timeout(),
            keeps_state: session.keeps_state(),
        })
    }

    /// `count` new sessions, each with session `id`'s state and files as they are now
    /// (after its call under way); each then lives on its own. Refused whole when they
    /// do not all fit.
    pub async fn fork_session(
        &self,
        id: &str,
        count: usize,
    ) -> Result<Vec<SessionInfo>, CallError> {
        if !(1..=MAX_FORKS).contains(&count) {
            return Err(SessionError::Fork {
                id: id.to_string(),
                why: format!("`count` must be from 1 to {MAX_FORKS}, not {count}"),
            }
            .into());
        }
        let source = self.session_for(id, "").await?;
        let children = self.sessions.fork(&self.runner, &source, count).await?;
        Ok(children
            .iter()
            .map(|session| SessionInfo {
                session_id: session.id.clone(),
                runtime: session.runtime.clone(),
                idle_timeout: self.sessions.idle_timeout(),
                keeps_state: session.keeps_state(),
            })
            .collect())
    }

    /// Ends session `id` and removes its files.
    pub fn close_session(&self, id: &str) -> Result<(), SessionError> {
        self.sessions.close(id)
    }

    /// Ends every session (the server is stopping).
    pub fn close_all_sessions(&self) {
        self.sessions.close_all();
    }

    /// The session `id`, checked against the `runtime` a call names (empty: any);
    /// resumed from the session store when it is there.
    async fn session_for(&self, id: &str, runtime: &str) -> Result<Arc<Session>, CallError> {
        let session = match self.sessions.get(id) {
            Ok(session) => session,
            Err(not_open) => match self.sessions.stored_entry(id).await? {
                None => return Err(not_open.into()),
                Some(resumable) => {
                    let runtime = &resumable.entry.runtime;
                    let plugin = match self.plugins.contains_key(runtime) {
                        true => {
                            self.plugin(runtime, self.runner.limits.default_timeout)
                                .await?
                        }
                        false => {
                            return Err(SessionError::NoRuntime {
                                id: id.to_string(),
                                runtime: runtime.clone(),
                            }
                            .into())
                        }
                    };
                    self.sessions
                        .resume(resumable, &self.runner, plugin)
                        .await?
                }
            },
        };
        if !runtime.is_empty() && runtime != session.runtime {
            return Err(SessionError::WrongRuntime {
                id: id.to_string(),
                runtime: session.runtime.clone(),
                asked: runtime.to_string(),
            }
            .into());
        }
        Ok(session)
    }

    /// The slot of `runtime`, ready or not.
    fn slot(&self, runtime: &str) -> Result<&Arc<PluginSlot>, CallError> {
        self.plugins
            .get(runtime)
            .ok_or_else(|| CallError::UnknownRuntime {
                name: runtime.to_string(),
                valid: self.runtime_names(),
            })
    }

    /// Waits, however long it takes, until `runtime` answers calls (ready, or served by a
    /// stand-in while its snapshot is taken): what `runbox run` waits for first.
    pub async fn runtime_answers(&self, runtime: &str) -> Result<(), CallError> {
        const FOREVER: Duration = Duration::from_secs(365 * 24 * 3600);
        self.plugin(runtime, FOREVER).await.map(|_| ())
    }

    /// Whether `runtime` is still being prepared, a stand-in serving it or not.
    pub fn is_preparing(&self, runtime: &str) -> bool {
        self.plugins.get(runtime).is_some_and(|p| p.is_preparing())
    }

    /// The plugin behind `runtime`, waiting up to `wait` while it is being prepared.
    async fn plugin(&self, runtime: &str, wait: Duration) -> Result<Arc<LoadedPlugin>, CallError> {
        let slot = self.slot(runtime)?;
        if let Some(plugin) = slot.ready() {
            return Ok(plugin);
        }
        Ok(slot.wait_ready(wait).await?)
    }
}

/// Descriptors kept for the server itself (sockets, the cache, logs).
const RESERVED_DESCRIPTORS: u64 = 256;
/// The fewest resources a store can work with (the preview1 bridge alone holds ~128
/// descriptors).
const MIN_RESOURCES_PER_STORE: usize = 256;

/// Resources (descriptors, streams, …) each store may hold so that `holders` runs and
/// sessions, with two stores each (a plugin and one child), stay within `descriptors`
/// open files: the server-wide bound on descriptors.
fn resources_per_store(descriptors: u64, holders: usize) -> usize {
    let stores = (holders.max(1) as u64) * 2;
    let each = descriptors.saturating_sub(RESERVED_DESCRIPTORS) / stores;
    if each < MIN_RESOURCES_PER_STORE as u64 {
        tracing::warn!(
            "the open-file limit ({descriptors}) is low for {holders} concurrent runs and \
             sessions; each program gets {MIN_RESOURCES_PER_STORE} descriptors anyway"
        );
    }
    usize::try_from(each)
        .unwrap_or(usize::MAX)
        .clamp(MIN_RESOURCES_PER_STORE, MAX_RESOURCES_PER_STORE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_are_shared_among_all_stores() {
        // 8 runs and 16 sessions under 20,000 descriptors: 24 × 2 stores of 411.
        assert_eq!(resources_per_store(20_000, 24), 411);
        assert_eq!(resources_per_store(1 << 20, 24), MAX_RESOURCES_PER_STORE);
        assert_eq!(resources_per_store(1024, 100), MIN_RESOURCES_PER_STORE);
    }
}
