//! runbox's own exit statuses, and how a bad command line ends.

/// Exit status of `runbox run` when the program hit the deadline.
pub const EXIT_TIMEOUT: u8 = 124;

/// Exit status of `runbox run` when runbox itself failed (bad arguments, plugins, fetch).
pub const EXIT_RUNBOX_ERROR: u8 = 125;

/// Exit status of `runbox run` when the program crashed (a trap) or its runtime failed.
pub const EXIT_CRASHED: u8 = 126;

/// Exit status of `runbox run` when the program was stopped by the output or memory cap.
pub const EXIT_TERMINATED: u8 = 127;

/// Prints what clap says about the command line (help, version, or a bad argument) and
/// returns the exit status: 0 for help and version, [`EXIT_RUNBOX_ERROR`] for a bad
/// argument (clap's own is 2), as docs/cli.md and `--help` say.
pub fn exit_on_bad_arguments(e: &clap::Error) -> u8 {
    // Printing fails only when stdout or stderr is closed: nothing left to tell.
    let _ = e.print();
    if e.use_stderr() {
        EXIT_RUNBOX_ERROR
    } else {
        0
    }
}
