//! What a run produced: the `run_code` result shape from SPEC.md.

use std::time::Duration;

use serde::Serialize;

use crate::sandbox::output::CapturedOutput;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The program ran to its end; `exit_code` says how (non-zero is still `completed`).
    Completed,
    /// A trap (out-of-bounds, stack overflow, unreachable) or a runtime that failed to start.
    Crashed,
    /// Ended for another reason: output cap, cancellation, memory cap.
    Terminated,
    /// The deadline passed.
    Timeout,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Crashed => "crashed",
            RunStatus::Terminated => "terminated",
            RunStatus::Timeout => "timeout",
        }
    }
}

/// The result of one run.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub status: RunStatus,
    /// Set when `status` is `Completed`.
    pub exit_code: Option<i32>,
    /// Standard output, invalid UTF-8 replaced.
    pub stdout: String,
    /// Standard error, invalid UTF-8 replaced.
    pub stderr: String,
    /// Standard output and error interleaved in the order written.
    pub tty: String,
    /// What went wrong, for every status but `Completed`.
    pub error: Option<String>,
    /// An output cap cut the output.
    pub truncated: bool,
    pub duration: Duration,
    /// The output as written, bytes unchanged, with the order of streams (for a terminal).
    pub raw: CapturedOutput,
}
