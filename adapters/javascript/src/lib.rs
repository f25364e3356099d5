//! The `javascript` runtime: the Boa JavaScript engine (`boa_engine`), compiled into this
//! component, so a run spawns no tool.
//!
//! - `runtime.run` evaluates the program as a script in a fresh interpreter;
//! - a `session` keeps one interpreter for all its calls, so `var`s, functions and
//!   globals carry over from one call to the next.
//!
//! Besides the language (ES2023 and more, without `Intl` and `Temporal`), a program has
//! `console` (formatted like Node.js's), `readStdin()`, `exit(code)`, `process` (`argv`,
//! `exit`, `exitCode`, `stdin`, `stdout`, `stderr`), `require()` for `fs`, `readline`,
//! `util` and `events`, `Buffer`, timers, `TextEncoder`/`TextDecoder`, `structuredClone`,
//! `atob`/`btoa`, QuickJS's `std.in.readAsString()`/`std.exit()`, and the module
//! `runbox:tools` (the tools of code mode, through the device `/tools/call`), and `fetch`
//! with `Headers` and `Response` (the network the host reaches for a program under its
//! network policy, through the device `/net/fetch`; [`net`]). They are
//! written in JavaScript: `src/prelude.js` in every interpreter, `src/inspect.js`,
//! `src/node.js`, `src/tools.js` and `src/fetch.js` loaded when a program first uses them (Boa parses slowly; a run should not pay for
//! what it does not use). A program that is not a script but a module (`import`,
//! `export`, top-level `await`) runs as a module.
//!
//! It is also the shell's `node` and `tsx` (`runbox:plugin/command`; [`command`] reads
//! their command lines).
//!
//! [`engine`] is the interpreter ([`event_loop`] its host side, [`natives`] its primitives,
//! [`output`] where it writes), plain Rust tested natively with
//! `cargo test --manifest-path adapters/Cargo.toml -p runbox-adapter-javascript --target x86_64-unknown-linux-gnu`;
//! `guest` is the WIT glue, compiled only for WebAssembly.

// Outside WebAssembly only the tests use the engine.
#![cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]

mod command;
mod engine;
mod event_loop;
mod modules;
mod natives;
mod net;
mod output;
mod typescript;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod typescript_tests;

#[cfg(test)]
mod tools_tests;

#[cfg(test)]
mod fetch_tests;

#[cfg(target_arch = "wasm32")]
mod guest;

#[cfg(target_arch = "wasm32")]
mod out_of_memory;
