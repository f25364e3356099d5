//! What a caller asks for, and why a call could not be run.

use std::sync::{Arc, OnceLock};

use super::limits::LimitOverrides;
use crate::budget::output::OutputCapture;
use crate::files::ReturnCaps;

/// One program to run, as a client asks for it.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// A runtime name from plugins.toml, e.g. `python`. In a session, empty means the
    /// session's own runtime.
    pub runtime: String,
    pub code: String,
    /// `None`: the program sees end of input at once.
    pub stdin: Option<Vec<u8>>,
    pub args: Vec<String>,
    /// Per-run limits; `None` fields take the server's defaults.
    pub limits: LimitOverrides,
    /// Input files (path as given, bytes), placed in the working directory first.
    pub files: Vec<(String, Vec<u8>)>,
    /// How much of the output files comes back with the outcome.
    pub return_caps: ReturnCaps,
    /// Memory the caller needs to present the outcome (an MCP result, rendered and
    /// serialized): reserved with the call at admission and held by the outcome
    /// ([`super::outcome::RunOutcome::held`]) until it is dropped.
    pub presentation_bytes: usize,
    /// Run inside this session (see `session/`).
    pub session_id: Option<String>,
    /// Lets the caller look at the call while it runs (its output so far).
    pub watch: Option<Arc<RunWatch>>,
    /// In a session with a history (`--session-store`, or `runbox repl`): when the
    /// caller stops the call, rebuild the interpreter from the calls before it instead
    /// of losing its state (`runbox repl`'s Ctrl-C).
    pub keep_state_when_stopped: bool,
}

/// A window on a call under way: what it has written so far, for progress notes and a
/// task's status. Empty until the call's sandbox exists.
#[derive(Debug, Default)]
pub struct RunWatch {
    output: OnceLock<OutputCapture>,
}

impl RunWatch {
    /// Called once the call has its sandbox.
    pub fn attach(&self, output: &OutputCapture) {
        let _ = self.output.set(output.clone());
    }

    /// Bytes written so far and the last line written, once the call runs.
    pub fn output_so_far(&self) -> Option<(usize, String)> {
        self.output.get().map(OutputCapture::so_far)
    }
}

impl RunRequest {
    /// The bytes the request holds in memory while it waits and runs.
    pub fn payload_bytes(&self) -> usize {
        self.code.len()
            + self.stdin.as_ref().map_or(0, Vec::len)
            + self.args.iter().map(String::len).sum::<usize>()
            + self
                .files
                .iter()
                .map(|(p, b)| p.len() + b.len())
                .sum::<usize>()
    }
}
