//! The run lifecycle: from a checked request to a [`RunOutcome`].
//!
//! One call, in order: admission (a place in the queue and the payload's memory,
//! `admission.rs`) → a run slot → a [`Sandbox`] (fresh, or a session's) →
//! [`call::run_call`] on a thread of its own → the plugin instance's call
//! ([`instance`]) → its `process.spawn` calls (`sandbox/process.rs`) →
//! [`classify::classify`] turns how it ended into the outcome.

pub mod admission;
pub mod call;
pub mod classify;
pub mod commands;
mod error;
pub mod instance;
pub mod limits;
pub mod outcome;
pub mod prestart;
mod request;
mod runner;
pub mod scratch;
pub mod thread;
pub mod warm_pages;

pub use error::RunError;
pub use request::{RunRequest, RunWatch};
pub use runner::{into_wit_file, record, run_span, Admitted, CallSite, Called, Runner};
