//! The `clang` adapter: a runbox runtime for compiled languages (C and C++ with clang).
//!
//! For each run it writes the request's extra files and then the program text into the
//! scratch directory (the sandbox's `/`, also the working directory of every step), and
//! spawns through `runbox:plugin/process`, one after the other:
//!
//! 1. the compiler, with the command line of the `compile` setting;
//! 2. the linker, with the command line of the `link` setting (optional);
//! 3. the program the linker wrote, with the request's arguments and standard input.
//!
//! A step that exits non-zero ends the run with its exit code (a compile error is a
//! completed run with clang's code and diagnostics on stderr); otherwise the run's exit
//! code is the program's. Settings (`[plugins.NAME.settings]` in `plugins.toml`):
//!
//! - `source`: the file the program text is written to, e.g. `"main.c"`.
//! - `object`: the compiler's output file, e.g. `"main.o"`.
//! - `program`: the linked program, e.g. `"main.wasm"`; it is spawned as `/main.wasm`.
//! - `compile`, `link`: a tool's name, then its arguments. In every item `{source}`,
//!   `{object}` and `{program}` become those files' paths *relative* to the scratch
//!   directory (so diagnostics read `main.c:3:5: error: …`), and `{KEY}` the value of any
//!   other single-valued setting. Other text, braces included, is passed on as written.
//! - `tool-env` (optional): `"KEY=VALUE"` items, the compiler's and linker's environment.
//! - `env` (optional): `"KEY=VALUE"` items, the program's whole environment.
//!
//! It is also the shell's `cc`/`c++` (`runbox:plugin/command`): [`cc`] turns a gcc-style
//! command line into the same compile and link steps, writing the program to a file the
//! shell runs by its path.
//!
//! [`plan`] holds the pure logic, tested natively with
//! `cargo test --manifest-path adapters/Cargo.toml --target x86_64-unknown-linux-gnu`;
//! `guest` is the WIT glue, compiled only for WebAssembly.

// Outside WebAssembly only the tests use `plan`.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod cc;
mod plan;

#[cfg(target_arch = "wasm32")]
mod guest;
