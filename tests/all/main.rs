//! runbox's integration tests, in one binary (each test binary links all of wasmtime):
//! one module per suite, sharing `common` (one artifact cache, one loaded runbox).
//!
//! - [`runtimes`]: every runtime through the library, its limits and pre-started runs.
//! - [`cli`]: the `runbox` binary as a person uses it, and the docs held to `--help`.
//! - [`docs`]: every path and `runbox` flag the docs cite exists; every client config of
//!   docs/clients.md starts a runbox that runs a program.
//! - [`mcp`]: `runbox mcp` driven by real MCP clients (the Python and TypeScript SDKs, the
//!   Inspector, raw JSON-RPC), over stdio and HTTP, and the handler in-process.
//! - [`adversarial`], [`scratch_limits`], [`compile_limits`]: hostile programs and the
//!   limits that hold them.
//! - [`compiled`]: C and C++ compiled inside the sandbox.
//! - [`conformance`], [`custom_plugin`]: the plugin conformance suite, and a third party's
//!   plugin from a local path.
//! - [`adapters`]: the guest adapters' own unit tests, run natively.
//! - [`deploy`]: the release archive, the container and the manifests agree with runbox.
//! - [`scale_out`]: replicas behind HAProxy, through real MCP clients.
//! - [`durable`]: sessions kept in a session store across restarts and replicas.
//! - [`packages`]: pure-Python packages an operator adds to python.
//! - [`languages`]: `typescript`, `shell` and `prolog`.
//! - [`runtime_files`]: the programs shipped with the runtimes (`runtimes/NAME/`) pass
//!   their languages' checks; the sqlite shell's unit tests.
//! - [`code_mode`]: programs calling the tools of upstream MCP servers (docs/tools.md).
//! - [`network`]: programs reaching loopback HTTP(S) servers by policy (docs/network.md).
//! - [`shell_hub`]: the other runtimes as commands of `shell`, in pipes and on its files.
//! - [`snapshots`]: sessions as snapshots: a session's state copied into forks.
//! - [`app`]: the result app (an MCP App) in headless Chromium, fed real results.
//! - [`install`]: the npm packages and the Python wheel, installed as users install them.
//! - [`layers`]: the crate's modules form layers without an import circle.
//!
//! `cargo test --release --test all SUITE::` runs one suite.

mod common;

mod adapters;
mod adversarial;
mod app;
mod cli;
mod code_mode;
mod compile_limits;
mod compiled;
mod conformance;
mod custom_plugin;
mod deploy;
mod docs;
mod durable;
mod install;
mod languages;
mod layers;
mod mcp;
mod network;
mod packages;
mod runtime_files;
mod runtimes;
mod scale_out;
mod scratch_limits;
mod shell_hub;
mod snapshots;
