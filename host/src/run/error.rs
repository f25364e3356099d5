//! Why an admitted call was not run (a tool error to MCP clients), as opposed to a program
//! that ran and failed (a `RunOutcome`).

use super::admission::Busy;
use super::limits::ZeroTimeout;
use crate::files::FileError;

/// Why an admitted call was not run (a tool error to MCP clients), as opposed to a
/// program that ran and failed (a [`super::outcome::RunOutcome`]). Finding the call's
/// runtime or session fails with a `service::CallError` instead.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    InvalidRequest(String),
    /// The host could not set the run up (disk full, broken plugin); not the caller's fault.
    #[error("runbox could not run the program: {0}")]
    Host(String),
    /// The queue or the server's memory is full; the call was not started.
    #[error(transparent)]
    Busy(Busy),
    /// An input file breaks a rule (its path, its encoding, a cap).
    #[error(transparent)]
    Files(#[from] FileError),
    /// The scratch volume has not the room the run needs to start.
    #[error(transparent)]
    NoRoom(#[from] crate::budget::volume::NoRoom),
    /// The session was stored (it hibernated) while the call waited for it: the caller
    /// looks it up again and runs the call there.
    #[error("the session was stored while the call waited; call again")]
    SessionMoved,
}

impl From<ZeroTimeout> for RunError {
    fn from(e: ZeroTimeout) -> Self {
        RunError::InvalidRequest(e.to_string())
    }
}
