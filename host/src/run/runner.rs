//! The [`Runner`]: what every sandbox is made from and every call goes through (admission,
//! a run slot, the call on a thread of its own, its outcome), for one-off runs and the
//! calls of sessions.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::error::RunError;
use super::request::{RunRequest, RunWatch};

use super::admission::{Admission, Ticket};
use super::call::{run_call, CallSetup, Collect};
use super::classify::{cancelled_before_start, classify, Budgets, Ended};
use super::instance::{keeps_sessions, PluginCall, PluginInstance, PluginReturn};
use super::limits::{LimitSettings, RunLimits};
use super::outcome::{RunOutcome, RunStatus};
use super::prestart::{Prestarts, Warm};
use super::scratch::{remove_after_answer, RunDir, ScratchRoot};
use crate::budget::disk::DiskBudget;
use crate::budget::memory::MemoryBudget;
use crate::engine::SandboxEngine;
use crate::files::{self, InputFile, OwnFiles};
use crate::manifest::PluginSpec;
use crate::metrics::RunMetrics;
use crate::plugin::LoadedPlugin;
use crate::sandbox::clock::{self, CallClock};
use crate::sandbox::reaper::put_away;
use crate::sandbox::ProgramCompiles;
use crate::sandbox::{Sandbox, SandboxConfig};
use crate::wit::exports::runbox::plugin::runtime;
use tokio::sync::OwnedSemaphorePermit;

/// Room a run needs on the scratch volume besides its program and input files: what a
/// runtime writes to start (a prelude, a driver's files).
const RUN_START_ROOM: u64 = 256 << 10;

/// How long the server must be without calls before a warm instance is started.
const QUIET_FOR: std::time::Duration = std::time::Duration::from_millis(20);

/// What every sandbox is made from, and what every call goes through.
pub struct Runner {
    pub engine: SandboxEngine,
    pub programs: Arc<ProgramCompiles>,
    pub admission: Admission,
    pub scratch: Arc<ScratchRoot>,
    pub limits: LimitSettings,
    /// Resources each store may hold (see `service.rs`).
    pub resources_per_store: usize,
    /// Interpreters started ahead of time (see `prestart.rs`).
    pub prestarts: Prestarts,
    /// The runs finished, for /metrics.
    pub metrics: RunMetrics,
    /// Code mode: the upstream servers' tools, when the server has a tools config.
    pub gateway: Option<Arc<crate::upstream::Gateway>>,
    /// Network egress by policy (`--net-config`).
    pub net: Option<Arc<crate::net::Net>>,
    /// The runtimes a run may start as commands (the shell's `python`), if any.
    pub commands: Option<Arc<super::commands::RuntimeCommands>>,
}

impl Runner {
    /// A sandbox for `plugin` with its scratch directory at `scratch` (not created here).
    pub fn new_sandbox(
        &self,
        plugin: &LoadedPlugin,
        memory_bytes: usize,
        scratch: PathBuf,
        journal: Option<crate::sandbox::journal::Journal>,
    ) -> Arc<Sandbox> {
        Sandbox::new(SandboxConfig {
            engine: self.engine.clone(),
            programs: self.programs.clone(),
            tools: plugin.tools.clone(),
            settings: plugin.settings.clone(),
            scratch,
            mounts: plugin.mounts.clone(),
            output_bytes: self.limits.output_bytes,
            memory: MemoryBudget::with_parent(memory_bytes, Some(self.admission.memory().clone())),
            disk: DiskBudget::on_volume(
                self.limits.scratch_bytes,
                self.limits.scratch_files,
                Some(self.scratch.volume().clone()),
            ),
            resources_per_store: self.resources_per_store,
            journal,
            tool_calls: self.gateway.clone().map(crate::upstream::ToolCalls::new),
            net_calls: self.net.clone().map(crate::net::NetCalls::new),
            empty_tools_dir: Some(self.scratch.empty_dir()),
            commands: self
                .commands
                .clone()
                .map(|c| c as Arc<dyn crate::sandbox::CommandHost>),
        })
    }

    /// Starts a new warm instance of `plugin` in the background, unless enough are
    /// ready or one is being started.
    fn refill_prestarts(self: &Arc<Self>, plugin: &Arc<LoadedPlugin>) {
        let name = plugin.spec.name.clone();
        if !self.prestarts.claim_start(&name) {
            return;
        }
        let (runner, plugin) = (self.clone(), plugin.clone());
        tokio::spawn(async move {
            runner.until_quiet().await;
            let started = Instant::now();
            // A call that comes while it starts takes the cores first.
            let warm = super::thread::on_idle_thread({
                let runner = runner.clone();
                move || async move { start_warm(&runner, &plugin).await }
            })
            .await;
            let warm = match warm {
                Ok(Ok(warm)) => {
                    tracing::debug!(runtime = %name, ms = started.elapsed().as_millis() as u64, "pre-started");
                    Some(warm)
                }
                Ok(Err(e)) => {
                    tracing::warn!("cannot pre-start `{name}`: {e:#}");
                    None
                }
                Err(e) => {
                    tracing::warn!("cannot pre-start `{name}`: {e}");
                    None
                }
            };
            runner.prestarts.started(&name, warm);
        });
    }

    /// Waits until no call has run or waited for [`QUIET_FOR`]: a warm instance is
    /// started between calls, not beside one (on a busy server it would only take the
    /// cores from the calls it is meant to speed up; they run the ordinary way). Even on
    /// a thread of the lowest priority (`on_idle_thread`), a start beside back-to-back
    /// python calls made them slower (4.4–4.6 ms through MCP against 3.6–4.0, p95 9 ms
    /// against 5), 2 cores: they share more than the cores.
    async fn until_quiet(&self) {
        let mut quiet_since: Option<Instant> = None;
        loop {
            if self.admission.running() > 0 || self.admission.waiting() > 0 {
                quiet_since = None;
            } else if quiet_since.get_or_insert_with(Instant::now).elapsed() >= QUIET_FOR {
                return;
            }
            tokio::time::sleep(QUIET_FOR / 4).await;
        }
    }

    /// What a call holds in memory besides its payload: its output (each stream once),
    /// and as much again while the output is turned into text and interleaved.
    pub fn output_reservation(&self) -> usize {
        4 * self.limits.output_bytes
    }

    /// Checks `request`'s input files against the runtime's own (`spec`, known before
    /// the runtime is ready) and admits the call: a place in the queue and its memory.
    pub fn admit(&self, spec: &PluginSpec, request: RunRequest) -> Result<Admitted, RunError> {
        let own = OwnFiles::new(spec.own_files.iter().cloned());
        let payload = request.payload_bytes();
        // What the run writes to start (its program, its input files) must find room on
        // the volume every run shares: else it is refused now, saying so, rather than
        // crashing as its program cannot be written.
        self.scratch
            .volume()
            .check_room((payload as u64).saturating_add(RUN_START_ROOM))
            .map_err(RunError::NoRoom)?;
        let inputs = files::check_inputs(request.files, &own)?;
        let collect = Collect {
            inputs: inputs.iter().map(InputFile::digest).collect(),
            own,
            caps: request.return_caps,
        };
        let presentation = request.presentation_bytes;
        let ticket = self
            .admission
            .admit(
                payload
                    .saturating_add(self.output_reservation())
                    .saturating_add(presentation),
            )
            .map_err(RunError::Busy)?;
        let wit = runtime::RunRequest {
            code: request.code,
            args: request.args,
            stdin: request.stdin,
            files: inputs.into_iter().map(into_wit_file).collect(),
        };
        Ok(Admitted {
            request: wit,
            collect,
            ticket,
            watch: request.watch,
        })
    }

    /// Runs an admitted call once, in a fresh sandbox with a fresh instance of `plugin`
    /// (or, for a runtime that is pre-started, one started ahead of time, taken only once
    /// the call has its run slot).
    pub async fn run_once(
        self: &Arc<Self>,
        plugin: Arc<LoadedPlugin>,
        admitted: Admitted,
        limits: RunLimits,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let Admitted {
            request,
            collect,
            mut ticket,
            watch,
        } = admitted;
        let Some(slot) = self.admission.slot(&mut ticket, &cancel).await else {
            return Ok(cancelled_before_start());
        };
        // A warm instance has the default memory cap and no program arguments. A stand-in
        // (served before its snapshot is taken) is not pre-started: its start is the
        // whole start-up (seconds for python), taken from the compile that replaces it.
        let prestarted = plugin.spec.prestart
            && !plugin.provisional
            && keeps_sessions(&plugin)
            && request.args.is_empty()
            && limits.memory_bytes as u64 == self.limits.memory_bytes;
        let warm = if prestarted {
            let warm = self.prestarts.take(&plugin.spec.name);
            self.refill_prestarts(&plugin);
            warm
        } else {
            None
        };
        let site = |sandbox, fresh_scratch| CallSite {
            sandbox,
            fresh_scratch,
            limits,
            cancel,
            slot,
            collect: Some(collect),
            ticket: Some(ticket),
            watch,
            span: run_span(&plugin.spec.name, None),
            counted_as: Some(plugin.spec.name.clone()),
        };
        let called = match warm {
            Some(warm) => {
                let site = site(warm.sandbox.clone(), None);
                self.call(site, warm, warm_call(request), |warm: Option<Warm>| {
                    if let Some(warm) = warm {
                        let disk = warm.sandbox.disk.clone();
                        remove_after_answer(warm, &disk);
                    }
                })
                .await?
            }
            None => {
                let scratch = self.scratch.next_run_dir();
                let sandbox = self.new_sandbox(&plugin, limits.memory_bytes, scratch.clone(), None);
                let call = fresh_instance_call(PluginCall::Run(request));
                self.call(site(sandbox, Some(scratch)), plugin.clone(), call, |_| {})
                    .await?
            }
        };
        Ok(called.outcome)
    }

    /// Asks `plugin` to describe itself in a fresh sandbox like any run (in a run slot,
    /// under `limits`).
    pub async fn describe_once(
        &self,
        plugin: Arc<LoadedPlugin>,
        limits: RunLimits,
    ) -> Result<runtime::Info, RunError> {
        let cancel = CancellationToken::new();
        let mut ticket = self
            .admission
            .admit(self.output_reservation())
            .map_err(RunError::Busy)?;
        let slot = self
            .admission
            .slot(&mut ticket, &cancel)
            .await
            .expect("never cancelled");
        let name = plugin.spec.name.clone();
        let scratch = self.scratch.next_run_dir();
        let site = CallSite {
            sandbox: self.new_sandbox(&plugin, limits.memory_bytes, scratch.clone(), None),
            fresh_scratch: Some(scratch),
            limits,
            cancel,
            slot,
            collect: None,
            ticket: Some(ticket),
            watch: None,
            span: tracing::Span::none(),
            counted_as: None,
        };
        let call = fresh_instance_call(PluginCall::Describe);
        let called = self.call(site, plugin, call, |_| {}).await?;
        called.info.ok_or_else(|| {
            RunError::Host(format!(
                "`{name}`: describe failed: {}",
                called.outcome.error.unwrap_or_else(|| "no answer".into())
            ))
        })
    }

    /// The one pipeline every call goes through once it has its run slot, whatever its
    /// instance: fresh from the plugin, started ahead of time, or kept by a session (the
    /// caller's `state`, the `work` that calls it and what `finish` does with it after;
    /// see [`run_call`]). The call runs on a thread of its own under its own clock; how it
    /// ended is classified, its files listed, its reservation handed to the outcome (to
    /// hold until the outcome is presented), what it compiled forgotten unless it
    /// completed, and the run logged.
    pub async fn call<S, W, Fut, F>(
        &self,
        site: CallSite,
        state: S,
        work: W,
        finish: F,
    ) -> Result<Called, RunError>
    where
        S: Send + 'static,
        W: FnOnce(Arc<Sandbox>, S) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = (wasmtime::Result<PluginReturn>, S)>,
        F: FnOnce(Option<S>) + Send + 'static,
    {
        let CallSite {
            sandbox,
            fresh_scratch,
            limits,
            cancel,
            slot,
            collect,
            ticket,
            watch,
            span,
            counted_as,
        } = site;
        if let Some(watch) = &watch {
            watch.attach(&sandbox.output);
        }
        let started = Instant::now();
        let setup = CallSetup {
            sandbox: sandbox.clone(),
            timeout: limits.timeout,
            build_budget: limits.compile_timeout,
            cancel,
            slot,
            collect,
            fresh_scratch,
        };
        let end = run_call(setup, state, work, finish)
            .instrument(span.clone())
            .await?;
        let info = match &end.ended {
            Ended::Returned(Ok(PluginReturn::Info(info))) => Some(info.clone()),
            _ => None,
        };
        let mut outcome = classify(
            end.ended,
            sandbox.output.take(),
            &sandbox,
            Budgets {
                timeout: limits.timeout,
                build_overran: end.build_overran,
            },
            started.elapsed(),
            end.cancelled,
        );
        outcome.files = end.files;
        outcome.build_time = end.build_time;
        if let Some(ticket) = ticket {
            outcome.held = ticket.into_held();
        }
        if outcome.status != RunStatus::Completed {
            sandbox.forget_new_programs();
        }
        record(&span, &outcome, &sandbox);
        if let Some(runtime) = counted_as {
            self.metrics
                .record(&runtime, outcome.status.as_str(), outcome.duration);
        }
        Ok(Called { outcome, info })
    }
}

/// Where and how an admitted call runs, once it has its run slot.
pub struct CallSite {
    pub sandbox: Arc<Sandbox>,
    /// A scratch directory to make before the call and remove after it (a one-off run);
    /// `None` when it outlives the call (a session's, a warm instance's).
    pub fresh_scratch: Option<PathBuf>,
    pub limits: RunLimits,
    pub cancel: CancellationToken,
    pub slot: OwnedSemaphorePermit,
    /// Which output files to list, if any.
    pub collect: Option<Collect>,
    /// The call's reservation, handed to its outcome.
    pub ticket: Option<Ticket>,
    pub watch: Option<Arc<RunWatch>>,
    pub span: tracing::Span,
    /// The runtime /metrics counts this call as a run of (`None`: a describe, not a run).
    pub counted_as: Option<String>,
}

/// What a call came to: its outcome, and the plugin's self-description when that was
/// what was asked.
pub struct Called {
    pub outcome: RunOutcome,
    pub info: Option<runtime::Info>,
}

/// An admitted call: the request as the WIT carries it, what to collect after it, its
/// ticket (queue place and memory), and who watches it.
pub struct Admitted {
    pub request: runtime::RunRequest,
    pub collect: Collect,
    pub ticket: Ticket,
    pub watch: Option<std::sync::Arc<RunWatch>>,
}

/// What a one-off call hands back to its thread: the plugin's answer, and the plugin.
type OneOff = std::pin::Pin<
    Box<dyn std::future::Future<Output = (wasmtime::Result<PluginReturn>, Arc<LoadedPlugin>)>>,
>;

/// A warm instance of `plugin`: its session opened (the driver started), within the
/// server's default time limit.
async fn start_warm(runner: &Runner, plugin: &LoadedPlugin) -> anyhow::Result<Warm> {
    let path = runner.scratch.next_run_dir();
    let dir = RunDir::create(&path)?;
    let memory = usize::try_from(runner.limits.memory_bytes).unwrap_or(usize::MAX);
    let sandbox = runner.new_sandbox(plugin, memory, path, None);
    let deadline = Instant::now() + runner.limits.default_timeout;
    sandbox.begin_call();
    let until = tokio::time::Instant::from_std(deadline);
    let start = PluginInstance::with_session(plugin, &sandbox);
    let clock = CallClock::new(deadline, CancellationToken::new());
    let mut instance = tokio::time::timeout_at(until, clock::timed(clock, start))
        .await
        .map_err(|_| anyhow::anyhow!("its start took longer than the default time limit"))??;
    // What the start wrote belongs to no run.
    let _ = sandbox.output.take();
    instance.warm_up(&plugin.spec.name, &runner.prestarts.pages);
    Ok(Warm {
        sandbox,
        instance: Some(instance),
        dir,
    })
}

/// A call on a fresh instance of the plugin, made once.
fn fresh_instance_call(
    call: PluginCall,
) -> impl FnOnce(Arc<Sandbox>, Arc<LoadedPlugin>) -> OneOff + Send + 'static {
    move |sandbox, plugin| {
        Box::pin(async move {
            let result = async {
                let mut instance = PluginInstance::new(&plugin, &sandbox).await?;
                let answer = instance.call(call).await;
                put_away(instance, sandbox.memory.used());
                answer
            }
            .await;
            (result, plugin)
        })
    }
}

/// What a pre-started run hands back to its thread: the plugin's answer, and the used
/// warm instance (its scratch directory goes once the files are listed).
type WarmRun =
    std::pin::Pin<Box<dyn std::future::Future<Output = (wasmtime::Result<PluginReturn>, Warm)>>>;

/// The one run of a warm instance.
fn warm_call(
    request: runtime::RunRequest,
) -> impl FnOnce(Arc<Sandbox>, Warm) -> WarmRun + Send + 'static {
    move |sandbox, mut warm| {
        Box::pin(async move {
            let result = match warm.instance.take() {
                Some(mut instance) => {
                    let result = instance.run_once(&request).await;
                    put_away(instance, sandbox.memory.used());
                    result
                }
                None => Err(wasmtime::format_err!("the warm instance was used before")),
            };
            (result, warm)
        })
    }
}

/// A checked input file as the WIT carries it.
pub fn into_wit_file(file: InputFile) -> runtime::File {
    runtime::File {
        path: file.path,
        contents: file.contents,
    }
}

/// The span of one call: runtime and session now, the rest once it ended.
pub fn run_span(runtime: &str, session: Option<&str>) -> tracing::Span {
    tracing::info_span!(
        "run",
        runtime = %runtime,
        session = session.unwrap_or(""),
        status = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
        peak_memory = tracing::field::Empty,
        scratch_bytes = tracing::field::Empty,
    )
}

/// Records how the call ended in its span, and logs it.
pub fn record(span: &tracing::Span, outcome: &RunOutcome, sandbox: &Sandbox) {
    span.record("status", outcome.status.as_str());
    span.record("duration_ms", outcome.duration.as_millis() as u64);
    span.record("peak_memory", sandbox.memory.peak() as u64);
    span.record("scratch_bytes", sandbox.disk.bytes_used());
    span.in_scope(|| tracing::info!("run finished"));
}
