//! Durable sessions: what a session keeps so that it can be stored and rebuilt in a
//! fresh instance, here or on another replica (docs/mcp.md, "Durable sessions").
//!
//! wasmtime 48 gives a host no way into a component instance's core memories and
//! globals (short of `guest_debug`, which instruments every instruction), and a
//! session's interpreter is often a command suspended mid-call in a read of its input,
//! whose native stack no memory copy carries. So runbox keeps a session's state as what
//! made it instead: the working directory when its interpreter started, and each
//! completed call with everything it learned from outside the sandbox (its request, and
//! the random bytes and clock readings it drew, see `journal.rs`). WebAssembly is
//! deterministic given its imports, so running those calls again, in a fresh instance of
//! the same compiled plugin, rebuilds the same interpreter state, in every runtime, with
//! nothing compiled and nothing trusted but runbox's own code. Each replayed call must
//! print what it printed and draw what it drew; if one does not, the session still
//! resumes, with its files as stored, and its next result says the state may differ.

use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::directory::now_ms;
use super::entry::{self, content_bytes, output_digest, LoggedCall, StoredFile, StoredSession};
use super::history::{History, MAX_HISTORY_BYTES};
use super::session::Session;
use crate::plugin::LoadedPlugin;
use crate::run::limits::RunLimits;
use crate::run::outcome::RunStatus;
use crate::run::thread::off_the_workers;
use crate::run::{RunError, RunRequest, Runner};
use crate::state::StoredImage;

impl Session {
    pub(super) fn lock_history<'a>(
        &self,
        history: &'a std::sync::Mutex<History>,
    ) -> MutexGuard<'a, History> {
        history.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The session as the store keeps it, its files as they are now (at most `max_bytes`
    /// of file contents in all). Called with no call under way.
    /// What storing the session holds in memory at most: its history and its files
    /// (as the scratch books count them), copied into the entry and encoded.
    pub(super) fn storing_bytes(&self) -> u64 {
        let history = self
            .history
            .as_ref()
            .map_or(0, |h| self.lock_history(h).bytes);
        history
            .saturating_add(self.sandbox.disk.bytes_used())
            .saturating_mul(3)
    }

    pub(super) fn stored(
        &self,
        stored_by: &str,
        plugin: &str,
        max_bytes: u64,
        image: Option<StoredImage>,
    ) -> Result<StoredSession, entry::SnapshotError> {
        let history = self.history.as_ref().map(|h| self.lock_history(h));
        let (created_ms, base, calls, lost) = match &history {
            Some(h) => (
                h.created_ms,
                h.base.clone(),
                h.calls.clone(),
                h.broken.clone(),
            ),
            None => (now_ms(), Vec::new(), Vec::new(), None),
        };
        let mut used = record_bytes(&base, &calls);
        let files = entry::snapshot_dir(&self.sandbox.scratch, max_bytes, &mut used)?;
        Ok(StoredSession {
            id: self.id.clone(),
            runtime: self.runtime.clone(),
            plugin: plugin.to_string(),
            created_ms,
            stored_ms: now_ms(),
            stored_by: stored_by.to_string(),
            base,
            calls,
            files,
            lost,
            image,
        })
    }

    /// Marks the session as gone from this process: a call still holding it looks it
    /// up again.
    pub(super) fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
    }

    pub(super) fn unretire(&self) {
        self.retired.store(false, Ordering::SeqCst);
    }

    /// Adds to what the next result says.
    pub(super) fn add_notice(&self, notice: String) {
        let mut slot = self.notice.lock().unwrap_or_else(|e| e.into_inner());
        *slot = Some(match slot.take() {
            Some(before) => format!("{before} {notice}"),
            None => notice,
        });
    }

    /// Runs `calls` again in this session's interpreter (fresh: none kept yet), on top of
    /// `base` in its (empty) working directory, with the draws they had; then puts
    /// `files` in place of what the replay left, unless it left exactly them (which, unless
    /// `files_may_differ`, it must). Returns the call (counting from 1) that did not do
    /// what it did the first time, if one did not.
    async fn replay_onto(
        self: &Arc<Self>,
        runner: &Runner,
        base: &[StoredFile],
        calls: &[LoggedCall],
        files: &[StoredFile],
        files_may_differ: bool,
    ) -> Result<Option<usize>, RunError> {
        let host = |e: std::io::Error| RunError::Host(format!("cannot restore the session: {e}"));
        let scratch = &self.sandbox.scratch;
        self.sandbox.disk.forget_all();
        charge_restored(self, base)?;
        off_the_workers(|| entry::restore_dir(scratch, base)).map_err(host)?;
        let limits = replay_limits(runner);
        let mut diverged = None;
        for (n, call) in calls.iter().enumerate() {
            let request = RunRequest {
                runtime: self.runtime.clone(),
                code: call.code.clone(),
                stdin: call.stdin.clone(),
                args: call.args.clone(),
                files: call.files.clone(),
                session_id: Some(self.id.clone()),
                ..RunRequest::default()
            };
            let outcome = self
                .run_call(
                    runner,
                    request,
                    limits,
                    CancellationToken::new(),
                    Some(call.draws.clone()),
                )
                .await?;
            let same_path = !self
                .sandbox
                .journal
                .as_ref()
                .is_some_and(|j| j.finish_replay());
            let same = outcome.status == RunStatus::Completed
                && outcome.exit_code == Some(call.exit_code)
                && output_digest(&outcome.output.stdout, &outcome.output.stderr)
                    == call.output_digest
                && same_path;
            if !same {
                diverged = Some(n + 1);
                break;
            }
        }
        // An exact replay left exactly `files` (and files its interpreter holds open stay
        // the ones it opened); anything else is replaced.
        let mut used = 0;
        let replayed = off_the_workers(|| entry::snapshot_dir(scratch, u64::MAX, &mut used));
        if replayed.ok().as_deref() != Some(files) {
            if diverged.is_none() && !calls.is_empty() && !files_may_differ {
                diverged = Some(calls.len());
            }
            off_the_workers(|| entry::clear_dir(scratch)).map_err(host)?;
            self.sandbox.disk.forget_all();
            charge_restored(self, files)?;
            off_the_workers(|| entry::restore_dir(scratch, files)).map_err(host)?;
        }
        Ok(diverged)
    }

    /// Rebuilds the interpreter a stopped call dropped, from the history (the session's
    /// files stay as they are now): what `runbox repl` does on Ctrl-C. Says whether the
    /// state came back exactly.
    pub(super) async fn rebuild(self: &Arc<Self>, runner: &Runner) -> Result<bool, RunError> {
        let host = |e: std::io::Error| RunError::Host(format!("cannot rebuild the session: {e}"));
        let Some(history) = &self.history else {
            return Ok(false);
        };
        let (base, calls, broken) = {
            let h = self.lock_history(history);
            (h.base.clone(), h.calls.clone(), h.broken.is_some())
        };
        if broken {
            return Ok(false);
        }
        let mut used = 0;
        let scratch = &self.sandbox.scratch;
        let now =
            off_the_workers(|| entry::snapshot_dir(scratch, MAX_HISTORY_BYTES * 16, &mut used))
                .map_err(|e| RunError::Host(format!("cannot rebuild the session: {e}")))?;
        off_the_workers(|| entry::clear_dir(scratch)).map_err(host)?;
        // The stopped call may have changed the files: they are kept as it left them.
        let diverged = self.replay_onto(runner, &base, &calls, &now, true).await?;
        Ok(diverged.is_none())
    }

    /// Rebuilds `entry` in a fresh instance of `plugin`: its files as the journal
    /// started, each call again, then its files as stored. What could not be rebuilt
    /// exactly goes into the next result's notice.
    pub(super) async fn resume(
        entry: StoredSession,
        runner: &Runner,
        plugin: Arc<LoadedPlugin>,
    ) -> Result<Arc<Session>, RunError> {
        let host = |e: std::io::Error| RunError::Host(format!("cannot restore the session: {e}"));
        let session = Arc::new(Session::new(entry.id.clone(), runner, plugin, true).map_err(host)?);
        let total = entry.calls.len();
        // A snapshot runtime's state is written back, not computed again.
        let image = entry.image.as_ref().filter(|_| session.copies_state());
        let restored = image.is_some();
        let diverged = match image {
            Some(image) => {
                session.restore_state(runner, image, &entry.files).await?;
                None
            }
            None => {
                session
                    .replay_onto(runner, &entry.base, &entry.calls, &entry.files, false)
                    .await?
            }
        };
        {
            let mut history = session.lock_history(session.history.as_ref().expect("durable"));
            history.created_ms = entry.created_ms;
            history.bytes = record_bytes(&entry.base, &entry.calls);
            history.base = entry.base;
            history.calls = entry.calls;
            if entry.lost.is_some() && !restored {
                // A fresh interpreter, beside the files as stored.
                history.base = entry.files.clone();
                history.bytes = content_bytes(&history.base);
            } else if restored {
                // The record could not be kept, the state was: the next store takes the
                // state again, and the record stays broken.
                history.broken = entry.lost.clone();
            }
        }
        if let (Some(why), false) = (&entry.lost, restored) {
            session.add_notice(format!(
                "This session was resumed from the session store without its interpreter \
                 state, which could not be kept ({why}): its files are as they were, its \
                 variables are gone."
            ));
        }
        if let Some(n) = diverged {
            tracing::warn!(session = %session.id, call = n, of = total, "a replayed call took another path");
            session.add_notice(format!(
                "The session was resumed from the session store, but its interpreter state \
                 could not be rebuilt exactly: call {n} of {total} did not do what it did \
                 the first time (it depends on something outside the sandbox, such as the \
                 order of a directory listing). Its files are as they were; check the \
                 variables you rely on."
            ));
            // The history no longer describes the interpreter: start it over from here.
            let mut history = session.lock_history(session.history.as_ref().expect("durable"));
            history.calls.clear();
            history.base = entry.files;
        }
        Ok(session)
    }
}

/// What a history's files and calls hold, in bytes (what [`MAX_HISTORY_BYTES`] bounds).
fn record_bytes(base: &[StoredFile], calls: &[LoggedCall]) -> u64 {
    content_bytes(base) + calls.iter().map(LoggedCall::bytes).sum::<u64>()
}

/// Replays run under the server's longest deadline: they ran within their own before.
fn replay_limits(runner: &Runner) -> RunLimits {
    let mut limits = runner
        .limits
        .resolve(&Default::default())
        .expect("the default limits resolve");
    limits.timeout = runner.limits.max_timeout.max(Duration::from_secs(1));
    limits
}

/// Files the host put back count against the session's scratch caps, as if its programs
/// had written them (for good: the books cannot tell when they go).
pub(super) fn charge_restored(session: &Session, files: &[StoredFile]) -> Result<(), RunError> {
    let disk = &session.sandbox.disk;
    // An entry is checksummed but not signed: one written by hand may hold more than a
    // session could ever have made. Refused before anything is written.
    let over = || {
        RunError::Host(format!(
            "cannot restore the session: its stored files are more than the scratch caps \
             allow ({} MiB in {} files and directories)",
            disk.byte_cap() >> 20,
            disk.entry_cap()
        ))
    };
    for file in files {
        disk.take_entry().map_err(|_| over())?;
        let bytes = file
            .contents
            .as_ref()
            .map_or(crate::budget::disk::DIRECTORY_BYTES, |c| c.len() as u64);
        disk.charge_object(bytes).map_err(|_| over())?.created(None);
    }
    Ok(())
}
