//! runbox: run untrusted code in WebAssembly sandboxes, one component plugin per language.
//!
//! Reading order for one request: [`mcp::server`] (the tools) → [`service`] (the facade)
//! → [`run`] (one call: admission, a sandbox on its own thread, the plugin instance,
//! how it ended) or [`session`] (calls that share state) → [`sandbox::store`] (a
//! program's WASI context) → [`sandbox`]'s `process` host (spawning tools) →
//! [`plugin`] (how plugins are fetched, componentized, compiled, prepared).

pub mod adapters;
pub mod budget;
pub mod componentize;
pub mod conformance;
pub mod engine;
pub mod files;
pub mod limits;
pub mod manifest;
pub mod mcp;
pub mod metrics;
pub mod outcome;
pub mod plugin;
pub mod replica;
pub mod run;
pub mod run_thread;
pub mod sandbox;
pub mod scratch;
pub mod service;
pub mod session;
pub mod sweeper;
pub mod upstream;
pub mod wit;
