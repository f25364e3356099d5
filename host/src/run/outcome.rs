//! What a run produced: the `run_code` result shape (docs/mcp.md, "`run_code`").

use std::borrow::Cow;
use std::time::Duration;

use serde::Serialize;

use crate::budget::memory::Held;
use crate::budget::output::CapturedOutput;
use crate::files::OutputFile;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// The program ran to its end; `exit_code` says how (non-zero is still `completed`).
    #[default]
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
#[derive(Clone, Default)]
pub struct RunOutcome {
    pub status: RunStatus,
    /// Set when `status` is `Completed`.
    pub exit_code: Option<i32>,
    /// What went wrong, for every status but `Completed`.
    pub error: Option<String>,
    /// An output cap cut the output.
    pub truncated: bool,
    pub duration: Duration,
    /// What of `duration` build steps took (compiling, linking: see
    /// `process.spawn-build`), which the program's time limit does not count.
    pub build_time: Duration,
    /// The output as written, bytes unchanged, with the order of the writes. Kept once:
    /// the text views below are made from it when asked for.
    pub output: CapturedOutput,
    /// The files the run created or changed in its working directory, in path order.
    pub files: Vec<OutputFile>,
    /// The memory cap (the run's, or the server's) refused an allocation during the run.
    pub memory_refused: bool,
    /// The call's reservation in the server's budget (its payload, its output, what it
    /// takes to present it), held until the outcome is dropped.
    pub held: Held,
    /// What a resumed session lost (see `session/durable.rs`), said once.
    pub notice: Option<String>,
    /// In a session, what a call that did not complete left of its interpreter; `None`
    /// for a completed call or one outside a session.
    pub state_after: Option<StateAfter>,
}

/// What a session's call that did not complete left of the session's interpreter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateAfter {
    /// The call never started: the interpreter is as it was.
    Untouched,
    /// The interpreter was rebuilt from the calls before it (see `session/durable.rs`):
    /// `exactly` as it was, or not quite.
    Rebuilt { exactly: bool },
    /// The interpreter is gone: the session's next call starts a new one.
    Lost,
}

impl RunOutcome {
    /// Standard output, invalid UTF-8 replaced.
    pub fn stdout(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.output.stdout)
    }

    /// Standard error, invalid UTF-8 replaced.
    pub fn stderr(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(&self.output.stderr)
    }

    /// Standard output and error interleaved in the order written, invalid UTF-8 replaced.
    pub fn tty(&self) -> String {
        String::from_utf8_lossy(&self.output.tty()).into_owned()
    }
}

/// Output can be megabytes: `Debug` shows the start of each stream and the sizes.
impl std::fmt::Debug for RunOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn preview(s: &str) -> String {
            const SHOWN: usize = 300;
            match s.char_indices().nth(SHOWN) {
                Some((cut, _)) => format!("{:?}… ({} bytes)", &s[..cut], s.len()),
                None => format!("{s:?}"),
            }
        }
        f.debug_struct("RunOutcome")
            .field("status", &self.status)
            .field("exit_code", &self.exit_code)
            .field("error", &self.error)
            .field("truncated", &self.truncated)
            .field("duration", &self.duration)
            .field("build_time", &self.build_time)
            .field("stdout", &format_args!("{}", preview(&self.stdout())))
            .field("stderr", &format_args!("{}", preview(&self.stderr())))
            .field("tty", &format_args!("{}", preview(&self.tty())))
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_is_bounded() {
        let out = RunOutcome {
            status: RunStatus::Terminated,
            exit_code: None,
            error: Some("output limit".into()),
            truncated: true,
            duration: Duration::from_millis(5),
            build_time: Duration::ZERO,
            output: CapturedOutput {
                stdout: vec![b'x'; 1 << 20],
                segments: vec![(crate::budget::output::Channel::Stdout, 1 << 20)],
                ..CapturedOutput::default()
            },
            files: Vec::new(),
            memory_refused: false,
            held: Held::default(),
            notice: None,
            state_after: None,
        };
        let text = format!("{out:?}");
        assert!(text.len() < 2000, "{}", text.len());
        assert!(text.contains("1048576 bytes") && text.contains("output limit"));
    }
}
