//! One call in a sandbox, on a thread of its own (`thread.rs`), answered by its
//! deadline whatever the thread is doing.
//!
//! The thread starts the call's clock, calls the plugin (what is called is the caller's:
//! a fresh instance's `run` or `describe`, or a session's `run`), stops it at the
//! deadline or on cancellation, and then lists the files the call created or changed
//! while nothing runs in the sandbox. The caller's task waits for the thread until the
//! deadline plus [`DEADLINE_BACKSTOP`], so a thread stuck in a slow syscall cannot hold
//! the answer back; it frees its run slot when it ends on its own.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::classify::Ended;
use super::error::RunError;
use super::instance::PluginReturn;
use super::scratch::{remove_after_answer, RunDir};
use super::thread;
use crate::files::{self, Baseline, InputDigest, OutputFile, OwnFiles, ReturnCaps};
use crate::sandbox::clock::{self, CallClock};
use crate::sandbox::Sandbox;

/// How long after a call's deadline the server stops waiting for its thread (stuck in a
/// slow syscall) and answers with what it has.
pub const DEADLINE_BACKSTOP: Duration = Duration::from_secs(1);
/// How long a cancelled call's thread gets to wind down before the server answers.
const CANCEL_GRACE: Duration = Duration::from_millis(200);

/// Everything one call needs besides what it calls.
pub struct CallSetup {
    pub sandbox: Arc<Sandbox>,
    pub timeout: Duration,
    /// What the call's build steps (compiling, linking) may take, apart from `timeout`.
    pub build_budget: Duration,
    pub cancel: CancellationToken,
    /// Held until the thread ends.
    pub slot: OwnedSemaphorePermit,
    /// Which output files to list, if any.
    pub collect: Option<Collect>,
    /// A fresh scratch directory to create before the call and remove after it (a
    /// one-off run); `None` when it outlives the call (a session's).
    pub fresh_scratch: Option<PathBuf>,
}

/// How a call ended, and the files it left.
pub struct CallEnd {
    pub ended: Ended,
    pub files: Vec<OutputFile>,
    /// Whether the call was cancelled (a trap from its clock is then a cancellation, not
    /// a timeout).
    pub cancelled: bool,
    /// The build budget, when a build step ran past it (the timeout was the build's).
    pub build_overran: Option<Duration>,
    /// What the build steps took.
    pub build_time: Duration,
}

/// Runs `work(sandbox, state)` on a thread of its own as `setup` says. `work` hands
/// `state` back when it returns; `finish` gets it then (or `None` when the call was
/// stopped first), on the thread, after the output files were listed: a session puts
/// its interpreter back there, and releases the session for its next call.
pub async fn run_call<S, W, Fut, F>(
    setup: CallSetup,
    state: S,
    work: W,
    finish: F,
) -> Result<CallEnd, RunError>
where
    S: Send + 'static,
    W: FnOnce(Arc<Sandbox>, S) -> Fut + Send + 'static,
    Fut: Future<Output = (wasmtime::Result<PluginReturn>, S)>,
    F: FnOnce(Option<S>) + Send + 'static,
{
    let CallSetup {
        sandbox,
        timeout,
        build_budget,
        cancel,
        slot,
        collect,
        fresh_scratch,
    } = setup;
    let deadline = Instant::now() + timeout;
    sandbox.begin_call();
    // The call's deadline and cancellation travel with its task: every store it polls
    // reads them there (see `sandbox/clock.rs`).
    let call_clock = CallClock::with_build_budget(deadline, build_budget, cancel.clone());
    let thread = {
        let sandbox = sandbox.clone();
        let cancel = cancel.clone();
        let call_clock = call_clock.clone();
        thread::on_own_thread(move || async move {
            let _slot = slot;
            let dir = match &fresh_scratch {
                Some(path) => Some(RunDir::create(path).map_err(|e| {
                    RunError::Host(format!("cannot create a scratch directory: {e}"))
                })?),
                None => None,
            };
            let before = match &collect {
                Some(c) if fresh_scratch.is_none() => c.baseline(&sandbox),
                _ => Baseline::default(),
            };
            // The epoch callback stops running guests at the deadline; this also ends
            // calls waiting in the host (a sleep, a blocked read) shortly after.
            let past_deadline = async {
                call_clock.reached().await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            let (ended, state) = clock::timed(call_clock.clone(), async {
                tokio::select! {
                    (r, s) = work(sandbox.clone(), state) => (Ended::Returned(r), Some(s)),
                    _ = past_deadline => (Ended::Deadline, None),
                    _ = cancel.cancelled() => (Ended::Cancelled, None),
                }
            })
            .await;
            // The guest is stopped (its future was dropped or returned), so the scratch
            // directory holds still while it is read.
            let files = match &collect {
                Some(c) => c.outputs(&sandbox, &before),
                None => Vec::new(),
            };
            finish(state);
            // A directory holding more than a little goes before the answer: the next
            // run's room on the volume is checked against what is left there.
            remove_after_answer(dir, &sandbox.disk);
            let cancelled = cancel.is_cancelled();
            Ok::<_, RunError>(CallEnd {
                ended,
                files,
                cancelled,
                build_overran: call_clock.build_overran(),
                build_time: call_clock.build_time(),
            })
        })
    };
    tokio::pin!(thread);
    let backstop = async {
        call_clock.reached().await;
        tokio::time::sleep(DEADLINE_BACKSTOP).await;
    };
    let call_cancel = &cancel;
    let joined = tokio::select! {
        joined = &mut thread => Some(joined),
        _ = backstop => None,
        _ = call_cancel.cancelled() => tokio::time::timeout(CANCEL_GRACE, &mut thread).await.ok(),
    };
    match joined {
        Some(Ok(end)) => end,
        Some(Err(e)) => Err(RunError::Host(format!("the run's thread failed: {e}"))),
        // The thread is stuck in a syscall; it ends (and frees its slot) on its own.
        None if call_cancel.is_cancelled() => Ok(CallEnd {
            ended: Ended::Cancelled,
            files: Vec::new(),
            cancelled: true,
            build_overran: None,
            build_time: call_clock.build_time(),
        }),
        None => Ok(CallEnd {
            ended: Ended::Deadline,
            files: Vec::new(),
            cancelled: false,
            build_overran: call_clock.build_overran(),
            build_time: call_clock.build_time(),
        }),
    }
}

/// What output collection needs: which files were inputs, which are the runtime's own,
/// and how much to return.
pub struct Collect {
    pub inputs: Vec<InputDigest>,
    pub own: OwnFiles,
    pub caps: ReturnCaps,
}

impl Collect {
    fn max_entries(sandbox: &Sandbox) -> usize {
        usize::try_from(sandbox.disk.entry_cap().saturating_add(64)).unwrap_or(usize::MAX)
    }

    /// The files before the call, in a sandbox that outlives calls.
    fn baseline(&self, sandbox: &Sandbox) -> Baseline {
        Baseline::of(&sandbox.scratch, &self.own, Self::max_entries(sandbox)).unwrap_or_else(|e| {
            tracing::warn!("cannot list the session's files: {e}");
            Baseline::default()
        })
    }

    /// The call's output files; a scratch directory that cannot be read yields none (and
    /// a warning), never a failed run.
    fn outputs(&self, sandbox: &Sandbox, before: &Baseline) -> Vec<OutputFile> {
        files::collect_outputs(
            &sandbox.scratch,
            before,
            &self.inputs,
            &self.own,
            &self.caps,
            Self::max_entries(sandbox),
        )
        .unwrap_or_else(|e| {
            tracing::warn!("cannot list the run's output files: {e}");
            Vec::new()
        })
    }
}
