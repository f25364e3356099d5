//! Pre-started runs: an interpreter started ahead of time, then used for exactly one
//! ordinary run, so that its start (most of a ruby run) is not on that run's clock.
//!
//! For a runtime whose plugins.toml entry says `prestart = true` (and whose plugin keeps
//! sessions), the server keeps [`PER_RUNTIME`] [`Warm`] instances ready: a sandbox with
//! its own fresh scratch directory, and the plugin's session opened in it (its driver
//! started and waiting). A run takes one (`session.run-once`) and a new one is started
//! in the background once the server is quiet (`Runner::refill_prestarts`: between
//! calls, never beside one), with the pages the last run touched
//! already mapped (`warm_pages.rs`). Each is used once, its memory counts against the
//! server's budget while it waits, and a run that finds none ready runs the ordinary way.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::instance::PluginInstance;
use super::scratch::RunDir;
use super::warm_pages::WarmPages;
use crate::sandbox::Sandbox;

/// Instances kept ready per runtime.
pub const PER_RUNTIME: usize = 1;

/// An interpreter started and waiting for its one run.
pub struct Warm {
    pub sandbox: Arc<Sandbox>,
    /// Taken by its run.
    pub instance: Option<PluginInstance>,
    /// Removed with the warm instance, after its run.
    pub dir: RunDir,
}

/// The warm instances, per runtime.
#[derive(Default)]
pub struct Prestarts {
    ready: Mutex<HashMap<String, Vec<Warm>>>,
    /// Runtimes with a start under way.
    starting: Mutex<HashSet<String>>,
    /// Starts begun since the server started (what they cost shows in tests).
    begun: std::sync::atomic::AtomicUsize,
    /// The pages their runs touch, mapped ahead in the next warm instances.
    pub pages: Arc<WarmPages>,
}

impl Prestarts {
    /// A warm instance of `runtime`, if one is ready.
    pub fn take(&self, runtime: &str) -> Option<Warm> {
        self.ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(runtime)?
            .pop()
    }

    /// How many starts have begun, all runtimes together.
    pub fn begun(&self) -> usize {
        self.begun.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// How many warm instances of `runtime` are ready.
    pub fn ready_count(&self, runtime: &str) -> usize {
        self.ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(runtime)
            .map_or(0, Vec::len)
    }

    /// Claims the start of a new warm instance of `runtime`: false when enough are
    /// ready or one is being started. A claim is ended by [`Prestarts::started`].
    pub fn claim_start(&self, runtime: &str) -> bool {
        if self.ready_count(runtime) >= PER_RUNTIME {
            return false;
        }
        if !self
            .starting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(runtime.to_string())
        {
            return false;
        }
        self.begun.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        true
    }

    /// Ends a claimed start: its instance, when it started, is ready for a run.
    pub fn started(&self, runtime: &str, warm: Option<Warm>) {
        self.starting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(runtime);
        if let Some(warm) = warm {
            self.ready
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(runtime.to_string())
                .or_default()
                .push(warm);
        }
    }
}
