//! A durable session's history: the working directory when its interpreter started, and
//! each completed call since with what it drew from outside the sandbox (`durable.rs`
//! says why this rebuilds the interpreter, and stores and resumes it).

use std::path::Path;

use super::directory::now_ms;
use super::entry::{self, output_digest, LoggedCall, StoredFile};
use crate::run::outcome::{RunOutcome, RunStatus};
use crate::run::RunRequest;
use crate::sandbox::journal::{Journal, MAX_DRAWS_BYTES};

/// What [`History::after_call`] reads of the session: its journal (what the call drew),
/// its working directory, and whether its interpreter keeps state.
pub struct Booked<'a> {
    pub journal: Option<&'a Journal>,
    pub scratch: &'a Path,
    pub keeps_state: bool,
}

/// The most a session's history may hold in memory: its calls' requests, what they drew,
/// and the files when it starts. Past it the session's interpreter state is not kept (it
/// is stored with its files only), until a call resets the interpreter.
pub const MAX_HISTORY_BYTES: u64 = 16 << 20;

/// What rebuilds a session: where its journal starts, and the calls since.
#[derive(Debug)]
pub struct History {
    pub(super) created_ms: u64,
    /// The working directory when the interpreter (re)started.
    pub(super) base: Vec<StoredFile>,
    pub(super) calls: Vec<LoggedCall>,
    /// What `base` and `calls` hold, in bytes.
    pub(super) bytes: u64,
    /// Why the history cannot rebuild the state; the session is then stored with its
    /// files only.
    pub(super) broken: Option<String>,
}

/// A call's request, copied before it is handed to the sandbox.
pub struct PendingCall {
    pub(super) code: String,
    pub(super) args: Vec<String>,
    pub(super) stdin: Option<Vec<u8>>,
    pub(super) files: Vec<(String, Vec<u8>)>,
}

impl PendingCall {
    pub fn of(request: &RunRequest) -> PendingCall {
        PendingCall {
            code: request.code.clone(),
            args: request.args.clone(),
            stdin: request.stdin.clone(),
            files: request.files.clone(),
        }
    }
}

impl History {
    pub fn new() -> History {
        History {
            created_ms: now_ms(),
            base: Vec::new(),
            calls: Vec::new(),
            bytes: 0,
            broken: None,
        }
    }

    /// The history stops describing the interpreter, for `why`.
    pub(super) fn give_up(&mut self, why: String) {
        self.base.clear();
        self.calls.clear();
        self.bytes = 0;
        self.broken = Some(why);
    }

    /// Books a call that ended: a completed one joins the history (in a runtime whose
    /// interpreter keeps state); one that dropped the interpreter (`reset`) starts the
    /// history again from the files as they are now.
    pub fn after_call(
        &mut self,
        call: PendingCall,
        outcome: &RunOutcome,
        reset: bool,
        session: Booked<'_>,
    ) {
        let draws = session.journal.map(|j| j.take()).unwrap_or_default();
        if !session.keeps_state {
            return;
        }
        if outcome.status == RunStatus::Completed {
            if self.broken.is_some() {
                return;
            }
            let Some(draws) = draws else {
                return self.give_up(format!(
                    "a call drew more than {} MiB of random bytes and clock readings",
                    MAX_DRAWS_BYTES >> 20
                ));
            };
            let call = LoggedCall {
                code: call.code,
                args: call.args,
                stdin: call.stdin,
                files: call.files,
                draws,
                exit_code: outcome.exit_code.unwrap_or(0),
                output_digest: output_digest(&outcome.output.stdout, &outcome.output.stderr),
                duration_ms: u64::try_from(outcome.duration.as_millis()).unwrap_or(u64::MAX),
            };
            if self.bytes + call.bytes() > MAX_HISTORY_BYTES {
                return self.give_up(format!(
                    "the record of its calls grew past {} MiB",
                    MAX_HISTORY_BYTES >> 20
                ));
            }
            self.bytes += call.bytes();
            self.calls.push(call);
            return;
        }
        if !reset {
            return;
        }
        // A new interpreter starts from the files as they are now.
        let mut used = 0;
        match entry::snapshot_dir(session.scratch, MAX_HISTORY_BYTES, &mut used) {
            Ok(files) => {
                self.calls.clear();
                self.base = files;
                self.bytes = used;
                self.broken = None;
            }
            Err(e) => self.give_up(format!("when its interpreter was reset, {e}")),
        }
    }
}
