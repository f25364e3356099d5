//! The `shell` runtime: bashkit, a bash interpreter written in Rust whose commands are its
//! own built-ins (`ls cat head tail wc sort uniq grep sed awk cut tr find xargs jq` and
//! many more), compiled into this component, so a run spawns no tool.
//!
//! - `runtime.run` runs the script in a fresh shell;
//! - a `session` keeps one shell for all its calls, so variables, functions and the
//!   working directory carry over from one call to the next.
//!
//! Its files are the real ones of the run's scratch directory (`files`), shown at `/`,
//! which is also the working directory.
//!
//! Besides bashkit's commands it has `tool` ([`tools`]), which calls a tool of code mode
//! through the device `/tools/call`; `curl` and `wget` ([`curl`], [`wget`]), whose requests
//! the host makes through the device `/net/fetch` ([`net`]); `pip` ([`pip`]), which installs
//! pure-Python packages through the same device; and the other runtimes as
//! commands ([`commands`]: `python`, `node`, `sqlite3`, `cc`, … as the host offers them).
//!
//! [`shell`] is the interpreter, plain Rust tested natively with
//! `cargo test --manifest-path adapters/Cargo.toml -p runbox-adapter-shell --target x86_64-unknown-linux-gnu`;
//! `guest` is the WIT glue, compiled only for WebAssembly.

// Outside WebAssembly only the tests use the interpreter.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod args;
mod bc;
mod commands;
mod curl;
mod files;
mod net;
mod pip;
mod shell;
mod tools;
mod wget;

#[cfg(test)]
mod gnu_tests;
#[cfg(test)]
mod tests;

#[cfg(target_arch = "wasm32")]
mod guest;
