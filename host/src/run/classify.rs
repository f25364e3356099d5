//! How a call ended, turned into its status, exit code and error (docs/mcp.md, "`run_code`").
//!
//! `completed`: the program ran to its end, whatever its exit code. `crashed`: a trap,
//! or a runtime that could not run the program. `timeout`: the deadline passed.
//! `terminated`: anything else that stopped it (the output cap, the memory cap where it
//! surfaced as a trap, a compile limit, cancellation), with `error` saying why.

use std::time::Duration;

use super::instance::PluginReturn;
use super::outcome::{RunOutcome, RunStatus, StateAfter};
use crate::budget::output::{CapturedOutput, OutputLimitExceeded};
use crate::sandbox::program::CompileLimitExceeded;
use crate::sandbox::Sandbox;

/// The time limits a call ran under, for the error that names the one it reached.
pub struct Budgets {
    /// The program's time limit.
    pub timeout: Duration,
    /// The build budget, when a build step ran past it.
    pub build_overran: Option<Duration>,
}

impl Budgets {
    fn timeout_note(&self) -> String {
        match self.build_overran {
            Some(budget) => format!(
                "compiling took longer than {:.1} s, the compile's own time limit (apart from \
                 the program's {:.1} s): the program did not run",
                budget.as_secs_f64(),
                self.timeout.as_secs_f64()
            ),
            None => format!(
                "time limit reached: the run was stopped after {:.1} s",
                self.timeout.as_secs_f64()
            ),
        }
    }
}

/// How the plugin call ended, before it is classified.
pub enum Ended {
    Returned(wasmtime::Result<PluginReturn>),
    Deadline,
    Cancelled,
}

pub fn cancelled_before_start() -> RunOutcome {
    RunOutcome {
        status: RunStatus::Terminated,
        exit_code: None,
        error: Some("cancelled by the client before it started".into()),
        truncated: false,
        state_after: Some(StateAfter::Untouched),
        ..RunOutcome::default()
    }
}

/// Turns how a run ended into its status, exit code and error, per docs/mcp.md
/// ("`run_code`", "Result"), with what it wrote (`output`); `cancelled` says whether the
/// call was cancelled (so a trap that stopped it is not a timeout). `run`'s budgets tell
/// whether a limit explains a trap.
pub fn classify(
    ended: Ended,
    output: CapturedOutput,
    run: &Sandbox,
    budgets: Budgets,
    duration: Duration,
    cancelled: bool,
) -> RunOutcome {
    let (status, exit_code, error) = match ended {
        Ended::Returned(Ok(PluginReturn::Exit(Ok(code)))) => {
            (RunStatus::Completed, Some(code), None)
        }
        Ended::Returned(Ok(PluginReturn::Exit(Err(message)))) => (
            RunStatus::Crashed,
            None,
            Some(format!("the runtime could not run the program: {message}")),
        ),
        Ended::Returned(Ok(PluginReturn::Info(_))) => (RunStatus::Completed, Some(0), None),
        Ended::Returned(Err(trap)) => classify_trap(&trap, run, &budgets, cancelled),
        Ended::Deadline => (RunStatus::Timeout, None, Some(budgets.timeout_note())),
        Ended::Cancelled => (
            RunStatus::Terminated,
            None,
            Some("cancelled by the client".into()),
        ),
    };
    let memory_refused = run.memory.was_exceeded() || run.memory.parent_was_exceeded();
    RunOutcome {
        status,
        exit_code,
        error,
        truncated: output.truncated,
        duration,
        // The caller knows it (the call's clock): see `Runner::call`.
        build_time: Duration::ZERO,
        output,
        files: Vec::new(),
        memory_refused,
        held: Default::default(),
        notice: refused_memory_note(status, exit_code, memory_refused, run),
        state_after: None,
    }
}

/// What a program that failed after the memory limit refused it is told: some runtimes
/// report running out of memory as an ordinary failure (Trealla's endless recursion ends
/// "goal failed"), so the result says what the host saw, for every runtime alike.
fn refused_memory_note(
    status: RunStatus,
    exit_code: Option<i32>,
    refused: bool,
    run: &Sandbox,
) -> Option<String> {
    (refused && status == RunStatus::Completed && exit_code != Some(0)).then(|| {
        let whose = if run.memory.was_exceeded() {
            format!("the run's memory limit ({} MiB)", run.memory.cap() >> 20)
        } else {
            "the server's memory budget".to_string()
        };
        format!(
            "{whose} refused an allocation during the run: the program ran out of memory \
             (an endless recursion, or data too big), which is likely why it failed"
        )
    })
}

/// A trap's status and error. A refused allocation explains the traps it leads to
/// (`unreachable` from an abort, an out-of-bounds access through a failed allocation);
/// any other trap is the program's own crash, even after a refusal (of memory or disk)
/// earlier in the run, which its error then mentions.
fn classify_trap(
    trap: &wasmtime::Error,
    run: &Sandbox,
    budgets: &Budgets,
    cancelled: bool,
) -> (RunStatus, Option<i32>, Option<String>) {
    let terminated = |why: String| (RunStatus::Terminated, None, Some(why));
    if let Some(e) = trap
        .chain()
        .find_map(|c| c.downcast_ref::<OutputLimitExceeded>())
    {
        return terminated(e.to_string());
    }
    if let Some(e) = trap
        .chain()
        .find_map(|c| c.downcast_ref::<CompileLimitExceeded>())
    {
        return terminated(e.to_string());
    }
    let kind = trap.downcast_ref::<wasmtime::Trap>().copied();
    if kind == Some(wasmtime::Trap::Interrupt) {
        return if cancelled {
            terminated("cancelled by the client".into())
        } else {
            (RunStatus::Timeout, None, Some(budgets.timeout_note()))
        };
    }
    let memory_note = format!(
        "memory limit reached: the run may use at most {} MiB",
        run.memory.cap() >> 20
    );
    let server_note =
        "memory limit reached: the server's memory budget for all runs is in use".to_string();
    let disk_note = if run.disk.volume_was_full() {
        "the server's scratch disk was nearly full: what other runs and sessions hold left \
         this run no room to write more"
            .to_string()
    } else {
        format!(
            "disk limit reached: the run may keep at most {} MiB in at most {} files and \
             directories in its scratch directory",
            run.disk.byte_cap() >> 20,
            run.disk.entry_cap()
        )
    };
    // A refused allocation explains the abort or the bad access it leads to. A full
    // disk never explains a trap: programs see it as an error (ENOSPC) from the write.
    let after_memory_refusal = matches!(
        kind,
        Some(wasmtime::Trap::UnreachableCodeReached) | Some(wasmtime::Trap::MemoryOutOfBounds)
    );
    if after_memory_refusal && run.memory.was_exceeded() {
        return terminated(memory_note);
    }
    if after_memory_refusal && run.memory.parent_was_exceeded() {
        return terminated(server_note);
    }
    let earlier: Vec<String> = [
        (run.memory.was_exceeded(), memory_note),
        (run.memory.parent_was_exceeded(), server_note),
        (run.disk.was_exceeded(), disk_note),
    ]
    .into_iter()
    .filter(|(refused, _)| *refused)
    .map(|(_, note)| note)
    .collect();
    let mut error = describe_trap(trap);
    if !earlier.is_empty() {
        error = format!("{error} (earlier in the run: {})", earlier.join("; "));
    }
    (RunStatus::Crashed, None, Some(error))
}

/// A one-line description of a trap, e.g. `wasm trap: call stack exhausted`.
fn describe_trap(trap: &wasmtime::Error) -> String {
    match trap.downcast_ref::<wasmtime::Trap>() {
        Some(t) => format!("the program crashed: {t}"),
        None => format!("the program crashed: {}", trap.root_cause()),
    }
}
