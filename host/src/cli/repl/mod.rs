//! `runbox repl RUNTIME`: a session at a terminal ([`command`]), its blocks cut by the
//! runtime's statements ([`input`]), Tab answered from the interpreter or the words typed
//! ([`complete`]).

mod command;
mod complete;
mod input;

pub use command::{command, ReplArgs};
