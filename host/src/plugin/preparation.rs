//! Runtimes prepared in the background: fetched, componentized and compiled once, while
//! the server already answers.
//!
//! `runbox mcp` answers `initialize` at once; the first start on a machine can take
//! minutes (fetching artifacts, compiling ~100 MB of WebAssembly). Each runtime has a
//! [`PluginSlot`] whose state moves from preparing (with what is being done) to ready or
//! failed. A call for a runtime still being prepared waits for it within its own time
//! limit, and past that gets a tool error saying what is being prepared and for how long.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::manifest::PluginSpec;
use crate::plugin::artifact::{Cache, Progress};
use crate::plugin::engine::SandboxEngine;
use crate::plugin::{load_plugin, LoadedPlugin, PluginError};
use crate::sandbox::store::StoreState;

/// Where a runtime's preparation stands.
#[derive(Clone)]
pub enum Preparation {
    /// Waiting for its turn, or being fetched and compiled.
    Preparing,
    Ready(Arc<LoadedPlugin>),
    /// It could not be prepared; the message says why.
    Failed(String),
}

/// One runtime: its entry and its preparation.
pub struct PluginSlot {
    pub spec: PluginSpec,
    state: watch::Sender<Preparation>,
    /// What its preparation is doing now, and since when.
    doing: Mutex<Option<(String, Instant)>>,
    queued_at: Instant,
}

/// Why a call could not have its runtime.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error(
        "runtime `{name}` is still being prepared (the first start fetches and compiles \
         each runtime once): {doing}; asked {waited:.0} s ago. Try again shortly."
    )]
    Preparing {
        name: String,
        doing: String,
        waited: f64,
    },
    #[error("runtime `{name}` could not be prepared: {why}")]
    Failed { name: String, why: String },
}

impl PluginSlot {
    pub fn new(spec: PluginSpec) -> PluginSlot {
        PluginSlot {
            spec,
            state: watch::Sender::new(Preparation::Preparing),
            doing: Mutex::new(None),
            queued_at: Instant::now(),
        }
    }

    /// Records the step the preparation has started (for messages).
    pub fn doing(&self, step: &str) {
        *self.doing.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((step.to_string(), Instant::now()));
    }

    pub fn finish(&self, result: Preparation) {
        self.state.send_replace(result);
    }

    /// The plugin if it is ready now.
    pub fn ready(&self) -> Option<Arc<LoadedPlugin>> {
        match &*self.state.borrow() {
            Preparation::Ready(p) => Some(p.clone()),
            _ => None,
        }
    }

    pub fn state(&self) -> Preparation {
        self.state.borrow().clone()
    }

    /// Waits for the plugin until `wait` has passed.
    pub async fn wait_ready(&self, wait: Duration) -> Result<Arc<LoadedPlugin>, NotReady> {
        let started = Instant::now();
        let mut rx = self.state.subscribe();
        let until = tokio::time::Instant::now() + wait;
        loop {
            match &*rx.borrow_and_update() {
                Preparation::Ready(p) => return Ok(p.clone()),
                Preparation::Failed(why) => {
                    return Err(NotReady::Failed {
                        name: self.spec.name.clone(),
                        why: why.clone(),
                    })
                }
                Preparation::Preparing => {}
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Err(self.not_ready(started));
                    }
                }
                _ = tokio::time::sleep_until(until) => return Err(self.not_ready(started)),
            }
        }
    }

    fn not_ready(&self, asked: Instant) -> NotReady {
        let doing = match &*self.doing.lock().unwrap_or_else(|e| e.into_inner()) {
            Some((step, since)) => format!(
                "{} (for {:.0} s)",
                step.trim_end_matches(['…', ' ', '.']),
                since.elapsed().as_secs_f64()
            ),
            None => format!(
                "waiting for the runtimes listed before it (for {:.0} s)",
                self.queued_at.elapsed().as_secs_f64()
            ),
        };
        NotReady::Preparing {
            name: self.spec.name.clone(),
            doing,
            waited: asked.elapsed().as_secs_f64(),
        }
    }
}

/// Prepares the runtimes, in plugins.toml order.
pub struct Preparer {
    pub slots: Vec<Arc<PluginSlot>>,
    /// The index of the slot being prepared, for [`Preparer::observer`].
    pub current: Arc<std::sync::atomic::AtomicUsize>,
    pub cache: Cache,
    pub engine: SandboxEngine,
    pub plugin_linker: wasmtime::component::Linker<StoreState>,
    pub tool_linker: wasmtime::component::Linker<StoreState>,
}

impl Preparer {
    /// Tells the slot being prepared what its preparation is doing.
    pub fn observer(&self) -> crate::plugin::artifact::Observer {
        let (slots, current) = (self.slots.clone(), self.current.clone());
        Arc::new(move |step: &str| {
            if let Some(slot) = slots.get(current.load(std::sync::atomic::Ordering::SeqCst)) {
                slot.doing(step);
            }
        })
    }

    /// Prepares every runtime. With `stop_at_error`, returns the first failure (nothing
    /// after it is prepared); otherwise a failed runtime is marked and the rest go on.
    pub fn prepare_all(&self, progress: &Progress, stop_at_error: bool) -> Result<(), PluginError> {
        for (i, slot) in self.slots.iter().enumerate() {
            self.current.store(i, std::sync::atomic::Ordering::SeqCst);
            slot.doing("loading it from the cache");
            let loaded = load_plugin(
                &slot.spec,
                &self.cache,
                &self.engine,
                &self.plugin_linker,
                &self.tool_linker,
                progress,
            );
            match loaded {
                Ok(plugin) => slot.finish(Preparation::Ready(Arc::new(plugin))),
                Err(e) => {
                    slot.finish(Preparation::Failed(e.to_string()));
                    if stop_at_error {
                        return Err(e);
                    }
                    tracing::error!("runtime `{}` could not be prepared: {e}", slot.spec.name);
                    eprintln!(
                        "runbox: runtime `{}` could not be prepared: {e}",
                        slot.spec.name
                    );
                }
            }
        }
        Ok(())
    }
}
