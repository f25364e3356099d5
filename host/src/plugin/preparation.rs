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

use super::error::PluginError;
use super::load::{load_plugin_telling, Hooks, LoadedPlugin};
use crate::engine::SandboxEngine;
use crate::manifest::PluginSpec;
use crate::plugin::artifact::{Cache, Progress};
use crate::sandbox::StoreState;

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
    /// A call asked for it (and may still wait): it is prepared next.
    demanded: std::sync::atomic::AtomicBool,
    /// Why its snapshot could not be taken, when a stand-in serves it for good.
    snapshot_failed: Mutex<Option<String>>,
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
            demanded: Default::default(),
            snapshot_failed: Mutex::new(None),
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

    /// Whether a call has waited for it.
    pub fn is_demanded(&self) -> bool {
        self.demanded.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether a call waits for it: asked for and not served yet. (A call that gave up
    /// still counts: it is likely to be asked again.)
    pub fn is_waited(&self) -> bool {
        self.is_demanded() && matches!(self.state(), Preparation::Preparing)
    }

    /// Whether it is still being prepared, served by a stand-in or not (`/readyz`).
    pub fn is_preparing(&self) -> bool {
        match &*self.state.borrow() {
            Preparation::Preparing => true,
            Preparation::Ready(p) => p.provisional && self.snapshot_failure().is_none(),
            Preparation::Failed(_) => false,
        }
    }

    fn snapshot_failure(&self) -> Option<String> {
        self.snapshot_failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Waits for the plugin until `wait` has passed; its preparation goes first from now.
    pub async fn wait_ready(&self, wait: Duration) -> Result<Arc<LoadedPlugin>, NotReady> {
        self.demanded
            .store(true, std::sync::atomic::Ordering::SeqCst);
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

    /// Where its preparation stands, for `list_runtimes`: `None` once ready, and not
    /// served by a stand-in.
    pub fn progress(&self) -> Option<String> {
        match self.state() {
            Preparation::Ready(p) if p.provisional => Some(match self.snapshot_failure() {
                Some(why) => format!(
                    "ready, each run starting up first: its snapshot could not be taken: {why}"
                ),
                None => format!(
                    "ready, each run starting up first while its snapshot is prepared: {}",
                    self.doing_now()
                ),
            }),
            Preparation::Ready(_) => None,
            Preparation::Failed(why) => Some(format!("failed: {why}")),
            Preparation::Preparing => Some(format!("preparing: {}", self.doing_now())),
        }
    }

    /// The step its preparation is in and for how long, or how long it has waited.
    fn doing_now(&self) -> String {
        match &*self.doing.lock().unwrap_or_else(|e| e.into_inner()) {
            Some((step, since)) => format!(
                "{} (for {:.0} s)",
                step.trim_end_matches(['…', ' ', '.']),
                since.elapsed().as_secs_f64()
            ),
            // Its place in the queue is the preparer's to decide, as calls come: only what
            // holds for sure is said.
            None if self.is_demanded() => format!(
                "waiting for its turn behind the runtimes being prepared (for {:.0} s; a call \
                 asked for it, so it goes before those no call asked for)",
                self.queued_at.elapsed().as_secs_f64()
            ),
            None => format!(
                "waiting for its turn behind the runtimes being prepared (for {:.0} s)",
                self.queued_at.elapsed().as_secs_f64()
            ),
        }
    }

    fn not_ready(&self, asked: Instant) -> NotReady {
        NotReady::Preparing {
            name: self.spec.name.clone(),
            doing: self.doing_now(),
            waited: asked.elapsed().as_secs_f64(),
        }
    }
}

/// How many runtimes are prepared at once: a small one is not held behind a big one
/// (compiling one already uses every core, so more would not go faster).
pub const PREPARATION_WORKERS: usize = 2;

/// Prepares the runtimes, the ones a call waits for first, then the cheap ones (no tools
/// of their own: the built-in interpreters), then in plugins.toml order, clang's family
/// (the largest: LLVM, and the files derived from it) last; [`PREPARATION_WORKERS`] at a
/// time, never two that share an artifact (they would fetch and compile it twice).
pub struct Preparer {
    pub slots: Vec<Arc<PluginSlot>>,
    pub cache: Cache,
    pub engine: SandboxEngine,
    pub plugin_linker: wasmtime::component::Linker<StoreState>,
    pub tool_linker: wasmtime::component::Linker<StoreState>,
}

std::thread_local! {
    /// The slot this preparation thread is preparing, for [`Preparer::observer`].
    static CURRENT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// Who waits for the runtimes being prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// The caller, for all of them (`runbox run`, `runbox plugins fetch`): every compile
    /// is waited for.
    ForAll,
    /// Calls, each for its runtime, while the server already answers: a compile no call
    /// waits for gives way (see `engine::compile_pool`).
    ByCall,
    /// Calls, as [`Waiting::ByCall`], but only what a call asked for is prepared (`runbox
    /// run`: its runtime, and those its program runs as commands).
    OnDemand,
}

/// Which slots are started, and the first failure.
#[derive(Default)]
struct Queue {
    started: Vec<bool>,
    running: Vec<usize>,
    /// The adapters (see [`adapter`]) already in the compiled cache.
    compiled_adapters: Vec<String>,
    failure: Option<PluginError>,
}

impl Preparer {
    /// Tells the slot being prepared on the calling thread what its preparation is doing.
    pub fn observer(&self) -> crate::plugin::artifact::Observer {
        let slots = self.slots.clone();
        Arc::new(move |step: &str| {
            if let Some(slot) = CURRENT.with(|c| c.get()).and_then(|i| slots.get(i)) {
                slot.doing(step);
            }
        })
    }

    /// Prepares every runtime. With `stop_at_error`, returns the first failure (nothing
    /// is started after it); otherwise a failed runtime is marked and the rest go on.
    pub fn prepare_all(
        &self,
        progress: &Progress,
        stop_at_error: bool,
        waiting: Waiting,
    ) -> Result<(), PluginError> {
        let queue = Mutex::new(Queue {
            started: vec![false; self.slots.len()],
            ..Queue::default()
        });
        let finished = std::sync::Condvar::new();
        let workers = PREPARATION_WORKERS.min(self.slots.len()).max(1);
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| self.work(&queue, &finished, progress, stop_at_error, waiting));
            }
        });
        let failure = queue
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .failure;
        match failure {
            Some(e) if stop_at_error => Err(e),
            _ => Ok(()),
        }
    }

    /// One worker: takes the next slot until none is left.
    fn work(
        &self,
        queue: &Mutex<Queue>,
        finished: &std::sync::Condvar,
        progress: &Progress,
        stop_at_error: bool,
        waiting: Waiting,
    ) {
        loop {
            let next = {
                let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                loop {
                    if q.failure.is_some() && stop_at_error {
                        return;
                    }
                    if q.started.iter().all(|s| *s) {
                        return;
                    }
                    let picked = match waiting {
                        Waiting::OnDemand => pick_demanded(&self.slots, &q),
                        _ => pick(&self.slots, &q),
                    };
                    match picked {
                        Some(i) => {
                            q.started[i] = true;
                            q.running.push(i);
                            break i;
                        }
                        // What is left shares an artifact with what runs, or (on
                        // demand) no call asked for it yet: wait.
                        None => {
                            // On demand, a call's demand is seen within this.
                            let poll = match waiting {
                                Waiting::OnDemand => Duration::from_millis(10),
                                _ => Duration::from_millis(200),
                            };
                            q = finished
                                .wait_timeout(q, poll)
                                .unwrap_or_else(|e| e.into_inner())
                                .0
                        }
                    }
                }
            };
            let adapter_compiled = || {
                let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                q.compiled_adapters.push(adapter(&self.slots[next].spec));
                finished.notify_all();
            };
            let failure = self.prepare(next, progress, &adapter_compiled, waiting);
            let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
            q.running.retain(|i| *i != next);
            if let Some(e) = failure {
                q.failure.get_or_insert(e);
            }
            finished.notify_all();
        }
    }

    /// Loads slot `i`: its failure, if it failed.
    fn prepare(
        &self,
        i: usize,
        progress: &Progress,
        adapter_compiled: &dyn Fn(),
        waiting: Waiting,
    ) -> Option<PluginError> {
        let slot = &self.slots[i];
        CURRENT.with(|c| c.set(Some(i)));
        slot.doing("loading it from the cache");
        let provisional = |plugin: LoadedPlugin| {
            tracing::info!(runtime = %slot.spec.name, "served before its snapshot is taken");
            slot.finish(Preparation::Ready(Arc::new(plugin)));
        };
        let hooks = Hooks {
            adapter_compiled,
            serve_early: waiting != Waiting::ForAll,
            provisional: &provisional,
        };
        use crate::engine::compile_pool::Urgency;
        let slot_waited: crate::engine::compile_pool::Waited = match waiting {
            Waiting::ForAll => Arc::new(|| Urgency::Waited),
            Waiting::ByCall | Waiting::OnDemand => {
                let slot = slot.clone();
                Arc::new(move || match (slot.is_waited(), slot.is_demanded()) {
                    (true, _) => Urgency::Waited,
                    (false, true) => Urgency::Asked,
                    (false, false) => Urgency::Background,
                })
            }
        };
        let loaded = crate::engine::compile_pool::with_waited(slot_waited, || {
            load_plugin_telling(
                &slot.spec,
                &self.cache,
                &self.engine,
                (&self.plugin_linker, &self.tool_linker),
                progress,
                &hooks,
            )
        });
        CURRENT.with(|c| c.set(None));
        match loaded {
            Ok(plugin) => {
                slot.finish(Preparation::Ready(Arc::new(plugin)));
                None
            }
            // Its stand-in keeps answering (each run starting up): what failed is what
            // would have made runs faster, or a program every run fails on anyway.
            Err(e) if slot.ready().is_some() => {
                tracing::error!("runtime `{}`: no snapshot: {e}", slot.spec.name);
                eprintln!(
                    "runbox: runtime `{}` keeps starting up at each run: its snapshot could not be taken: {e}",
                    slot.spec.name
                );
                *slot
                    .snapshot_failed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
                None
            }
            Err(e) => {
                slot.finish(Preparation::Failed(e.to_string()));
                tracing::error!("runtime `{}` could not be prepared: {e}", slot.spec.name);
                eprintln!(
                    "runbox: runtime `{}` could not be prepared: {e}",
                    slot.spec.name
                );
                Some(e)
            }
        }
    }
}

/// The slot to prepare next: of those a call waits for, the quickest to answer (shortest
/// job first); else, while no call waits for one being prepared (its compile then has
/// the cores), of all, the cheapest kind in file order. Never one sharing an artifact
/// with a slot being prepared.
fn pick(slots: &[Arc<PluginSlot>], q: &Queue) -> Option<usize> {
    let free = |i: &usize| !q.started[*i] && !q.running.iter().any(|r| conflicts(slots, q, *r, *i));
    let waited = (0..slots.len())
        .filter(free)
        .filter(|i| slots[*i].is_demanded())
        .min_by_key(|i| (answer_rank(slots, *i), *i));
    // A call waits for a runtime being prepared, or for one that cannot start until a
    // runtime being prepared is (an artifact they share).
    let blocks_a_waited = |r: usize| {
        (0..slots.len()).any(|i| !q.started[i] && slots[i].is_waited() && conflicts(slots, q, r, i))
    };
    let someone_waits = q
        .running
        .iter()
        .any(|r| slots[*r].is_waited() || blocks_a_waited(*r));
    waited.or_else(|| {
        (!someone_waits)
            .then(|| {
                (0..slots.len())
                    .filter(free)
                    .min_by_key(|i| (cost_rank(slots, *i), *i))
            })
            .flatten()
    })
}

/// The slot to prepare next on demand: of those a call asked for, the quickest to answer;
/// nothing else.
fn pick_demanded(slots: &[Arc<PluginSlot>], q: &Queue) -> Option<usize> {
    (0..slots.len())
        .filter(|i| !q.started[*i] && slots[*i].is_demanded())
        .filter(|i| !q.running.iter().any(|r| conflicts(slots, q, *r, *i)))
        .min_by_key(|i| (answer_rank(slots, *i), *i))
}

/// How long slot `i` keeps a waiting call, roughly: [`cost_rank`], but a tool taken as a
/// snapshot (python, sqlite: two compiles of 100 MB) after every other of its rank.
fn answer_rank(slots: &[Arc<PluginSlot>], i: usize) -> u8 {
    let rank = cost_rank(slots, i);
    let snapshot = slots[i]
        .spec
        .tools
        .values()
        .any(|t| t.reactor.as_ref().is_some_and(|r| r.snapshot.is_some()));
    match (rank, snapshot) {
        (0, _) => 0,
        (1, false) => 1,
        (1, true) => 2,
        _ => 3,
    }
}

/// What a runtime is made of and compiled once for all who share it: its tools and mounts
/// (by sha256) and its adapter (a built-in one by name: `typescript` is `javascript`'s).
fn artifacts(spec: &PluginSpec) -> Vec<String> {
    let mut all: Vec<String> = spec
        .tools
        .values()
        .map(|t| t.artifact.sha256.clone())
        .collect();
    all.extend(spec.mounts.iter().map(|m| m.artifact().sha256.clone()));
    all.push(adapter(spec));
    all
}

fn shares_artifacts(a: &PluginSlot, b: &PluginSlot) -> bool {
    let theirs = artifacts(&b.spec);
    artifacts(&a.spec).iter().any(|x| theirs.contains(x))
}

/// A runtime's adapter as [`artifacts`] names it.
fn adapter(spec: &PluginSpec) -> String {
    match &spec.adapter {
        crate::manifest::AdapterSpec::Artifact(a) => a.sha256.clone(),
        crate::manifest::AdapterSpec::Builtin(name) => format!("builtin:{name}"),
    }
}

/// Whether slot `i` would compile something slot `r` (being prepared) compiles too: an
/// artifact they share, or their adapter while it is not in the compiled cache yet.
fn conflicts(slots: &[Arc<PluginSlot>], q: &Queue, r: usize, i: usize) -> bool {
    let theirs = artifacts(&slots[r].spec);
    artifacts(&slots[i].spec)
        .iter()
        .filter(|x| theirs.contains(x))
        .any(|shared| *shared != adapter(&slots[i].spec) || !q.compiled_adapters.contains(shared))
}

/// How much preparing slot `i` costs, roughly: 0 for a runtime with no tools (a built-in
/// interpreter: one small component), 2 for one with derived files or sharing an artifact
/// with one that has them (clang's family), 1 otherwise.
fn cost_rank(slots: &[Arc<PluginSlot>], i: usize) -> u8 {
    let spec = &slots[i].spec;
    if spec.tools.is_empty() && spec.mounts.is_empty() {
        return 0;
    }
    let derives = |s: &PluginSlot| !s.spec.derived.is_empty();
    if derives(&slots[i])
        || slots
            .iter()
            .any(|s| derives(s) && shares_artifacts(s, &slots[i]))
    {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots() -> Vec<Arc<PluginSlot>> {
        crate::manifest::Manifest::builtin()
            .unwrap()
            .plugins
            .into_values()
            .map(|spec| Arc::new(PluginSlot::new(spec)))
            .collect()
    }

    fn name(slots: &[Arc<PluginSlot>], i: usize) -> &str {
        &slots[i].spec.name
    }

    /// The order an empty cache is prepared in, one at a time.
    fn order(slots: &[Arc<PluginSlot>]) -> Vec<String> {
        let mut q = Queue {
            started: vec![false; slots.len()],
            ..Queue::default()
        };
        let mut order = Vec::new();
        while let Some(i) = pick(slots, &q) {
            q.started[i] = true;
            order.push(name(slots, i).to_string());
        }
        order
    }

    #[test]
    fn the_cheap_runtimes_go_first_and_clang_last() {
        let slots = slots();
        let order = order(&slots);
        let position = |n: &str| order.iter().position(|o| o == n).unwrap();
        for cheap in ["javascript", "typescript", "shell"] {
            assert!(position(cheap) < 3, "{order:?}");
        }
        // typescript is javascript's adapter: not compiled beside it (the second worker
        // takes the shell meanwhile); once javascript is ready, it is free to go.
        let js = slots
            .iter()
            .position(|s| s.spec.name == "javascript")
            .unwrap();
        let mut q = Queue {
            started: slots.iter().map(|s| s.spec.name == "javascript").collect(),
            running: vec![js],
            ..Queue::default()
        };
        assert_eq!(name(&slots, pick(&slots, &q).unwrap()), "shell");
        q.started[slots.iter().position(|s| s.spec.name == "shell").unwrap()] = true;
        q.compiled_adapters.push("builtin:javascript".into());
        assert_eq!(name(&slots, pick(&slots, &q).unwrap()), "typescript");
        // python's adapter, not compiled yet, holds back quickjs; once it is, python's
        // long snapshot does not.
        let python = slots.iter().position(|s| s.spec.name == "python").unwrap();
        let mut q = Queue {
            started: slots
                .iter()
                .map(|s| s.spec.tools.is_empty() || s.spec.name == "python")
                .collect(),
            running: vec![python],
            ..Queue::default()
        };
        assert_ne!(name(&slots, pick(&slots, &q).unwrap()), "quickjs");
        q.compiled_adapters.push("builtin:command".into());
        assert_eq!(name(&slots, pick(&slots, &q).unwrap()), "quickjs");
        // The rest in file order (python, the most used, first among them).
        assert!(position("python") < position("quickjs"), "{order:?}");
        assert!(position("quickjs") < position("sqlite"), "{order:?}");
        for big in ["clang", "clangpp"] {
            assert!(position(big) >= order.len() - 2, "{order:?}");
        }
    }

    #[test]
    fn of_runtimes_calls_wait_for_the_quickest_go_first_and_nothing_else_beside_them() {
        let slots = slots();
        let index = |n: &str| slots.iter().position(|s| s.spec.name == n).unwrap();
        for n in ["python", "sqlite", "quickjs", "shell"] {
            slots[index(n)]
                .demanded
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let mut q = Queue {
            started: vec![false; slots.len()],
            compiled_adapters: vec!["builtin:command".into()],
            ..Queue::default()
        };
        let mut order = Vec::new();
        while let Some(i) = pick(&slots, &q) {
            if !slots[i].is_demanded() {
                break;
            }
            q.started[i] = true;
            order.push(name(&slots, i).to_string());
        }
        // python's and sqlite's snapshots (each of CPython: two big compiles) go after
        // the other two, in file order.
        assert_eq!(order, ["shell", "quickjs", "python", "sqlite"]);
        // While python is prepared for a waiting call, nothing else starts beside it.
        q.running.push(index("python"));
        assert_eq!(pick(&slots, &q), None);
        // Once it is served, the rest go on.
        slots[index("python")].finish(Preparation::Failed("served elsewhere".into()));
        assert!(pick(&slots, &q).is_some());
    }

    #[test]
    fn a_runtime_a_call_waits_for_goes_next_but_never_beside_its_artifacts() {
        let slots = slots();
        let index = |n: &str| slots.iter().position(|s| s.spec.name == n).unwrap();
        slots[index("python")]
            .demanded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut q = Queue {
            started: vec![false; slots.len()],
            ..Queue::default()
        };
        assert_eq!(name(&slots, pick(&slots, &q).unwrap()), "python");
        // Of two runtimes waited for, the cheaper first.
        slots[index("shell")]
            .demanded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(name(&slots, pick(&slots, &q).unwrap()), "shell");
        q.started[index("shell")] = true;
        q.started[index("python")] = true;
        q.started[index("clang")] = true;
        q.running.push(index("clang"));
        slots[index("clangpp")]
            .demanded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // clangpp is asked for while clang (the same LLVM) is being prepared: nothing starts
        // beside clang (its compile keeps the cores), and clangpp goes once it is done.
        assert_eq!(pick(&slots, &q), None);
        q.running.clear();
        assert_eq!(name(&slots, pick(&slots, &q).unwrap()), "clangpp");
    }

    /// On demand (`runbox run`), nothing starts until a call asks, then only what it asked.
    #[test]
    fn on_demand_only_what_calls_asked_for_is_prepared() {
        let slots = slots();
        let index = |n: &str| slots.iter().position(|s| s.spec.name == n).unwrap();
        let mut q = Queue {
            started: vec![false; slots.len()],
            ..Queue::default()
        };
        assert_eq!(pick_demanded(&slots, &q), None);
        for name in ["shell", "python"] {
            slots[index(name)]
                .demanded
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        let first = pick_demanded(&slots, &q).unwrap();
        assert_eq!(name(&slots, first), "shell", "the quicker first");
        q.started[first] = true;
        let second = pick_demanded(&slots, &q).unwrap();
        assert_eq!(name(&slots, second), "python");
        q.started[second] = true;
        assert_eq!(pick_demanded(&slots, &q), None, "nothing no call asked for");
    }

    /// A runtime waiting for its turn is never told it "goes next" (five at once were):
    /// only what holds for sure is said.
    #[test]
    fn a_waiting_runtime_is_told_only_what_holds() {
        let slots = slots();
        let text = slots[0].doing_now();
        assert!(
            text.starts_with("waiting for its turn behind the runtimes being prepared (for "),
            "{text}"
        );
        assert!(!text.contains("next"), "{text}");
        slots[1]
            .demanded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let asked = slots[1].doing_now();
        assert!(asked.contains("a call asked for it"), "{asked}");
    }
}
