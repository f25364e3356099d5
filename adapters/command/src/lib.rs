//! The `command` adapter: a runbox runtime for tools that run a program from a file.
//!
//! For each run it writes the request's extra files and then the program text into the
//! scratch directory (the sandbox's `/`), and spawns one tool through
//! `runbox:plugin/process` with a command line built from its settings
//! (`[plugins.NAME.settings]` in `plugins.toml`):
//!
//! - `entry`: the file the program text is written to, relative to the scratch directory,
//!   e.g. `"main.py"`.
//! - `argv`: the tool's name, then its arguments, e.g. `["python", "{entry}", "{args}"]`.
//!   In every item, `{entry}` becomes the entry file's absolute path (`/main.py`) and
//!   `{KEY}` becomes the value of any other single-valued setting (including `name`,
//!   `language`, `version` and `extension`). An item that is exactly `{args}` becomes the
//!   program's own arguments. Any other text, braces included, is passed on as written.
//! - `env` (optional): `"KEY=VALUE"` items, the tool's whole environment.
//! - `stdin-file` (optional): a file in scratch the request's standard input is also
//!   written to (empty without stdin), for tools that cannot read their stdin.
//! - `"file:NAME"` (optional, any number): a file written into scratch before the tool
//!   starts, with the setting's value as contents (a list is joined with newlines).
//!
//! The tool's exit code is the run's exit code.
//!
//! With a `command-argv` setting, the runtime can also be run as a command by another
//! plugin (the shell's `python gen.py | sort`; `runbox:plugin/command`): the tool is
//! spawned with that command line, whose `{command-args}` item becomes the command's
//! arguments (see [`plan::command`]).
//!
//! [`plan`] holds the pure logic, tested natively with
//! `cargo test --manifest-path adapters/Cargo.toml --target x86_64-unknown-linux-gnu`;
//! `guest` is the WIT glue, compiled only for WebAssembly.

// Outside WebAssembly only the tests use `plan`.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod plan;

#[cfg(target_arch = "wasm32")]
mod guest;
