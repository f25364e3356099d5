//! runbox: run untrusted code in WebAssembly sandboxes, one component plugin per language.
//!
//! The modules form layers (docs/layout.md; tests/all/layers.rs holds them to it): each
//! imports only its own layer and those below. Reading order for one request, from the
//! top: [`mcp`] (the handler, the transports, the intake) → [`service`] (the facade) →
//! [`run`] (one call: admission, a sandbox on its own thread, the plugin instance, how
//! it ended) or [`session`] (calls that share state) → [`plugin`] (how plugins are
//! fetched, componentized, prepared) → [`sandbox`] (a run's stores and the host
//! interfaces they call) → [`componentize`] and [`engine`] (modules made components,
//! snapshots, compiling) → the budgets, files, manifest and plain types beneath.

pub mod adapters;
pub mod budget;
pub mod componentize;
pub mod conformance;
pub mod engine;
pub mod files;
pub mod manifest;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod plugin;
pub mod replica;
pub mod run;
pub mod sandbox;
pub mod service;
pub mod session;
pub mod state;
pub mod sweeper;
pub mod tls;
pub mod upstream;
pub mod wheel;
pub mod wit;
