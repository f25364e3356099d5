//! Pre-started runs: an interpreter started ahead of time, then used for exactly one
//! ordinary run, so that its start (most of a ruby run) is not on that run's clock.
//!
//! For a runtime whose plugins.toml entry says `prestart = true` (and whose plugin keeps
//! sessions), the server keeps [`PER_RUNTIME`] [`Warm`] instances ready: a sandbox with
//! its own fresh scratch directory, and the plugin's session opened in it (its driver
//! started and waiting). A run takes one (`session.run-once`) and a new one is started
//! in the background. Each is used once, its memory counts against the server's budget
//! while it waits, and a run that finds none ready runs the ordinary way.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::instance::PluginInstance;
use super::Runner;
use crate::plugin::LoadedPlugin;
use crate::run_thread;
use crate::sandbox::clock::{self, CallClock};
use crate::sandbox::Sandbox;
use crate::scratch::RunDir;

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

    /// Starts a new warm instance of `plugin` in the background, unless enough are
    /// ready or one is being started.
    pub fn refill(runner: &Arc<Runner>, plugin: &Arc<LoadedPlugin>) {
        let name = plugin.spec.name.clone();
        let prestarts = &runner.prestarts;
        if prestarts.ready_count(&name) >= PER_RUNTIME {
            return;
        }
        if !prestarts
            .starting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.clone())
        {
            return;
        }
        prestarts
            .begun
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (runner, plugin) = (runner.clone(), plugin.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let warm = run_thread::on_own_thread({
                let runner = runner.clone();
                let plugin = plugin.clone();
                move || async move { start(&runner, &plugin).await }
            })
            .await;
            runner
                .prestarts
                .starting
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&name);
            match warm {
                Ok(Ok(warm)) => {
                    tracing::debug!(runtime = %name, ms = started.elapsed().as_millis() as u64, "pre-started");
                    runner
                        .prestarts
                        .ready
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .entry(name)
                        .or_default()
                        .push(warm);
                }
                Ok(Err(e)) => tracing::warn!("cannot pre-start `{name}`: {e:#}"),
                Err(e) => tracing::warn!("cannot pre-start `{name}`: {e}"),
            }
        });
    }
}

/// A warm instance of `plugin`: its session opened (the driver started), within the
/// server's default time limit.
async fn start(runner: &Runner, plugin: &LoadedPlugin) -> anyhow::Result<Warm> {
    let path = runner.scratch.next_run_dir();
    let dir = RunDir::create(&path)?;
    let memory = usize::try_from(runner.limits.memory_bytes).unwrap_or(usize::MAX);
    let sandbox = runner.new_sandbox(plugin, memory, path, None);
    let deadline = Instant::now() + runner.limits.default_timeout;
    sandbox.begin_call();
    let until = tokio::time::Instant::from_std(deadline);
    let start = PluginInstance::with_session(plugin, &sandbox);
    let clock = CallClock::new(deadline, CancellationToken::new());
    let instance = tokio::time::timeout_at(until, clock::timed(clock, start))
        .await
        .map_err(|_| anyhow::anyhow!("its start took longer than the default time limit"))??;
    // What the start wrote belongs to no run.
    let _ = sandbox.output.take();
    Ok(Warm {
        sandbox,
        instance: Some(instance),
        dir,
    })
}
