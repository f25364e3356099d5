//! One open [`Session`]: its sandbox, the instance kept between its calls, and how a call
//! runs in it (after the calls before it, one at a time).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::history::Booked;
use crate::plugin::LoadedPlugin;
use crate::run::classify::cancelled_before_start;
use crate::run::instance::{keeps_sessions, PluginCall, PluginInstance, PluginReturn};
use crate::run::limits::RunLimits;
use crate::run::outcome::{RunOutcome, RunStatus, StateAfter};
use crate::run::scratch::RunDir;
use crate::run::{run_span, Admitted, CallSite, RunError, RunRequest, Runner};
use crate::sandbox::journal::Journal;
use crate::sandbox::Sandbox;
use crate::wit::exports::runbox::plugin::runtime;

/// One open session.
pub struct Session {
    pub id: String,
    pub runtime: String,
    pub(super) plugin: Arc<LoadedPlugin>,
    pub(super) sandbox: Arc<Sandbox>,
    /// The instance kept between calls, and the lock that makes calls take turns.
    pub(super) live: Arc<tokio::sync::Mutex<Option<PluginInstance>>>,
    pub(super) last_used: Mutex<Instant>,
    /// Calls under way or waiting (the session does not expire meanwhile).
    pub(super) busy: AtomicUsize,
    /// Set when the session was stored and left this process: a call that still holds
    /// it looks it up again (see [`RunError::SessionMoved`]).
    pub(super) retired: AtomicBool,
    /// What rebuilds it from the store; `None` without a store.
    pub(super) history: Option<Mutex<super::history::History>>,
    /// Resumed from the store: this process holds its lease (see `directory.rs`).
    pub(super) leased: AtomicBool,
    /// Said once, in the next result: what resuming it lost.
    pub(super) notice: Mutex<Option<String>>,
    /// Removed when the session is dropped (after its last call).
    pub(super) _dir: RunDir,
}

impl Session {
    /// A new session; `durable` keeps its history for the session store.
    pub(super) fn new(
        id: String,
        runner: &Runner,
        plugin: Arc<LoadedPlugin>,
        durable: bool,
    ) -> std::io::Result<Session> {
        let path = runner.scratch.next_session_dir();
        let dir = RunDir::create(&path)?;
        let memory = usize::try_from(runner.limits.memory_bytes).unwrap_or(usize::MAX);
        let journal = durable.then(Journal::default);
        let sandbox = runner.new_sandbox(&plugin, memory, path, journal);
        Ok(Session {
            id,
            runtime: plugin.spec.name.clone(),
            plugin,
            sandbox,
            live: Arc::default(),
            last_used: Mutex::new(Instant::now()),
            busy: AtomicUsize::new(0),
            retired: AtomicBool::new(false),
            leased: AtomicBool::new(false),
            history: durable.then(|| Mutex::new(super::history::History::new())),
            notice: Mutex::default(),
            _dir: dir,
        })
    }

    /// Whether the interpreter's state carries over between this session's calls.
    pub fn keeps_state(&self) -> bool {
        self.plugin.spec.session_state && keeps_sessions(&self.plugin)
    }

    /// Whether that state is copied below the language (stored as a snapshot, forked),
    /// rather than rebuilt by replaying the calls.
    pub(super) fn copies_state(&self) -> bool {
        self.keeps_state()
            && self.plugin.spec.session_mode() == Some(crate::manifest::SessionMode::Snapshot)
    }

    pub(super) fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .elapsed()
    }

    pub(super) fn touch(&self) {
        *self.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    }

    /// Runs `request` in the session, after the calls before it.
    pub async fn run(
        self: &Arc<Self>,
        runner: &Runner,
        request: RunRequest,
        limits: RunLimits,
        cancel: CancellationToken,
    ) -> Result<RunOutcome, RunError> {
        let pending = self
            .history
            .is_some()
            .then(|| super::history::PendingCall::of(&request));
        let keep_state = request.keep_state_when_stopped;
        let stopped = cancel.clone();
        let mut outcome = self.run_call(runner, request, limits, cancel, None).await?;
        if let (Some(history), Some(pending)) = (&self.history, pending) {
            // The interpreter is gone when the call did not complete and none is kept
            // (a call cancelled before it started leaves it).
            let reset = outcome.status != RunStatus::Completed
                && self.live.try_lock().map_or(true, |live| live.is_none());
            let rebuild = reset && keep_state && stopped.is_cancelled();
            self.lock_history(history).after_call(
                pending,
                &outcome,
                reset && !rebuild,
                Booked {
                    journal: self.sandbox.journal.as_ref(),
                    scratch: &self.sandbox.scratch,
                    keeps_state: self.keeps_state(),
                },
            );
            if rebuild {
                let (after, error) = match self.rebuild(runner).await {
                    Ok(true) => (
                        StateAfter::Rebuilt { exactly: true },
                        "interrupted: the block was stopped; the session kept its state (its \
                         interpreter was rebuilt from the blocks before)"
                            .to_string(),
                    ),
                    Ok(false) => (
                        StateAfter::Rebuilt { exactly: false },
                        "interrupted: the block was stopped; the session's interpreter was \
                         rebuilt from the blocks before, but not exactly: check the variables \
                         you rely on"
                            .to_string(),
                    ),
                    Err(e) => (
                        StateAfter::Lost,
                        format!(
                            "interrupted: the block was stopped, and the session's state \
                             could not be rebuilt ({e}): variables from earlier blocks are gone"
                        ),
                    ),
                };
                outcome.state_after = Some(after);
                outcome.error = Some(error);
            }
        }
        if let Some(resumed) = self.notice.lock().unwrap_or_else(|e| e.into_inner()).take() {
            outcome.notice = Some(match outcome.notice.take() {
                Some(own) => format!("{resumed}; {own}"),
                None => resumed,
            });
        }
        Ok(outcome)
    }

    /// Runs `request` after the calls before it: a live call, or (`replay`) one call of
    /// its history again, drawing what it drew then.
    pub(super) async fn run_call(
        self: &Arc<Self>,
        runner: &Runner,
        request: RunRequest,
        limits: RunLimits,
        cancel: CancellationToken,
        replay: Option<crate::sandbox::journal::Draws>,
    ) -> Result<RunOutcome, RunError> {
        let _busy = Busy::new(self);
        if let Some(watch) = &request.watch {
            watch.attach(&self.sandbox.output);
        }
        let Admitted {
            request,
            collect,
            mut ticket,
            ..
        } = runner.admit(&self.plugin.spec, request)?;
        // One call at a time: wait for the one before (its thread releases the lock).
        let mut live = tokio::select! {
            live = self.live.clone().lock_owned() => live,
            _ = cancel.cancelled() => return Ok(cancelled_before_start()),
        };
        if self.retired.load(Ordering::SeqCst) {
            // Stored while this call waited: it runs where the session is now.
            return Err(RunError::SessionMoved);
        }
        let Some(slot) = runner.admission.slot(&mut ticket, &cancel).await else {
            return Ok(cancelled_before_start());
        };
        let replaying = self.sandbox.journal.is_some() && replay.is_some();
        if let Some(journal) = &self.sandbox.journal {
            match replay {
                Some(draws) => journal.replay(draws),
                None => journal.record(),
            }
        }
        let site = CallSite {
            sandbox: self.sandbox.clone(),
            fresh_scratch: None,
            limits,
            cancel,
            slot,
            collect: Some(collect),
            ticket: Some(ticket),
            watch: None,
            span: run_span(&self.runtime, Some(&self.id)),
            // A replay is not a run anyone asked for.
            counted_as: (!replaying).then(|| self.runtime.clone()),
        };
        let plugin = self.plugin.clone();
        let kept = live.take();
        let called = runner
            .call(
                site,
                kept,
                move |sandbox, kept| session_call(plugin, sandbox, kept, request),
                // On the call's thread, once its files are listed: the instance goes back
                // (if the call completed) and the next call may start.
                move |instance| *live = instance.flatten(),
            )
            .await?;
        let mut outcome = called.outcome;
        if outcome.status != RunStatus::Completed && self.keeps_state() {
            let error = outcome.error.take().unwrap_or_default();
            outcome.error = Some(format!(
                "{error} (the session's interpreter was reset: variables, functions and \
                 imports from earlier calls are gone; its files were kept)"
            ));
        }
        self.touch();
        Ok(outcome)
    }
}

/// One call of a session: in the kept instance (made now if there is none), or, for a
/// plugin that keeps no sessions, in a fresh instance. Hands back the instance to keep:
/// only after a call that returned, since a trap leaves an instance unusable.
async fn session_call(
    plugin: Arc<LoadedPlugin>,
    sandbox: Arc<Sandbox>,
    kept: Option<PluginInstance>,
    request: runtime::RunRequest,
) -> (wasmtime::Result<PluginReturn>, Option<PluginInstance>) {
    if !keeps_sessions(&plugin) {
        let result = async {
            let mut instance = PluginInstance::new(&plugin, &sandbox).await?;
            instance.call(PluginCall::Run(request)).await
        }
        .await;
        return (result, None);
    }
    let mut instance = match kept {
        Some(instance) => instance,
        None => match PluginInstance::with_session(&plugin, &sandbox).await {
            Ok(instance) => instance,
            Err(e) => return (Err(e), None),
        },
    };
    let result = instance.run_in_session(&request).await;
    let keep = matches!(result, Ok(PluginReturn::Exit(Ok(_))));
    (result, keep.then_some(instance))
}

/// Marks a session busy while a call is under way or waiting (or it is being forked).
pub(super) struct Busy(Arc<Session>);

impl Busy {
    pub(super) fn new(session: &Arc<Session>) -> Busy {
        session.busy.fetch_add(1, Ordering::SeqCst);
        session.touch();
        Busy(session.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
    }
}
