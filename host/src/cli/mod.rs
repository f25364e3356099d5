//! The command line, which only the binary has: `runbox run` ([`run`]), `runbox repl`
//! ([`repl`]), `runbox runtimes` and `runbox plugins …` ([`plugins`]), `runbox mcp`
//! ([`mcp`]). The flags that several commands share are [`limits`]; the library never sees
//! clap.

mod command_line;
mod exit;
mod global;
mod limits;
mod mcp;
mod plugins;
mod repl;
mod run;
mod terminal;

pub use command_line::{main, Cli, Command};
pub use exit::{exit_on_bad_arguments, EXIT_RUNBOX_ERROR};
