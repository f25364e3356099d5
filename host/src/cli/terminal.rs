//! A run's output as a terminal shows it.

use std::io::Write;

use runbox::service::Channel;
use runbox::service::RunOutcome;

/// Replays a run's output as a terminal would have shown it, each piece on its own
/// stream and in the order it was written.
pub fn replay_as_terminal(outcome: &RunOutcome) -> std::io::Result<()> {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    for (channel, bytes) in outcome.output.tty_segments() {
        match channel {
            Channel::Stdout => out.write_all(bytes)?,
            Channel::Stderr => {
                out.flush()?;
                err.write_all(bytes)?;
            }
        }
    }
    out.flush()
}
