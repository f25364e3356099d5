//! Compiles run on threads of their own, at a priority set by who waits for them.
//!
//! wasmtime compiles a module's functions in parallel on rayon's pool. With one global
//! pool, two runtimes prepared at once do not share the cores: rayon takes the second
//! compile's work only when the first one's is done, so on the first start a small
//! runtime (10 s of compiling alone) waited about a minute behind python's 99 MB. Here each
//! compile gets a pool of its own whose threads have a `nice` value: a compile a call
//! waits for goes first, the smaller the sooner (shortest job first); then one for a
//! runtime calls asked for that already answers them (python's snapshot, taken while a
//! stand-in answers: see `plugin/provisional.rs`); one nobody asked for runs at the lowest
//! priority, so it never slows a run or a compile somebody waits for.
//! A thread cannot raise its priority again without privileges, hence fresh threads.

use std::cell::RefCell;
use std::sync::Arc;

/// Who waits for what is compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// A call waits for it (or the caller waits for everything: `runbox run`).
    Waited,
    /// Calls asked for its runtime, which answers them meanwhile, more slowly.
    Asked,
    /// Nobody asked for it yet.
    Background,
}

/// How urgent what the current thread compiles is, asked when a compile starts.
pub type Waited = Arc<dyn Fn() -> Urgency + Send + Sync>;

std::thread_local! {
    static WAITED: RefCell<Option<Waited>> = const { RefCell::new(None) };
}

/// The `nice` of a compile nobody asked for.
pub const BACKGROUND_NICE: i32 = 19;
/// The `nice` of a compile for a runtime that answers meanwhile.
pub const ASKED_NICE: i32 = 15;
/// Bytes of WebAssembly per step of `nice` for a waited-for compile, up to [`MAX_WAITED_NICE`].
const BYTES_PER_NICE: usize = 12 << 20;
const MAX_WAITED_NICE: i32 = 9;
const _: () = assert!(MAX_WAITED_NICE < ASKED_NICE && ASKED_NICE < BACKGROUND_NICE);

/// Runs `f` with `waited` telling the compiles it starts (on this thread) how urgent they
/// are. Without it, a compile counts as waited for.
pub fn with_waited<T>(waited: Waited, f: impl FnOnce() -> T) -> T {
    let before = WAITED.with(|w| w.replace(Some(waited)));
    struct Restore(Option<Waited>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            WAITED.with(|w| *w.borrow_mut() = before);
        }
    }
    let _restore = Restore(before);
    f()
}

/// What [`with_waited`] set on this thread, to carry it to another one.
pub fn current() -> Option<Waited> {
    WAITED.with(|w| w.borrow().clone())
}

/// The `nice` a compile of `wasm_bytes` gets: by size when a call waits for it.
pub fn nice_for(wasm_bytes: usize, urgency: Urgency) -> i32 {
    match urgency {
        Urgency::Waited => ((wasm_bytes / BYTES_PER_NICE) as i32).min(MAX_WAITED_NICE),
        Urgency::Asked => ASKED_NICE,
        Urgency::Background => BACKGROUND_NICE,
    }
}

/// Runs `compile` (which compiles `wasm_bytes` of WebAssembly) on a pool of its own, one
/// thread per core, at the priority [`nice_for`] gives. If the pool cannot be made, it
/// runs on rayon's global pool as before.
pub fn compile<T: Send>(wasm_bytes: usize, compile: impl FnOnce() -> T + Send) -> T {
    let urgency = WAITED.with(|w| w.borrow().as_ref().map_or(Urgency::Waited, |f| f()));
    let nice = nice_for(wasm_bytes, urgency);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("runbox-compile-{i}"))
        .start_handler(move |_| lower_priority(nice))
        .build();
    match pool {
        Ok(pool) => {
            tracing::debug!(wasm_bytes, nice, "compiling");
            pool.install(compile)
        }
        Err(e) => {
            tracing::warn!("compiling on the shared pool: no pool of its own: {e}");
            compile()
        }
    }
}

/// Sets the calling thread's `nice` (per thread on Linux; elsewhere it would be the
/// whole process's, so nothing is done there). Failing leaves it as it was.
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice != 0 {
        let tid = rustix::thread::gettid();
        if let Err(e) = rustix::process::setpriority_process(Some(tid), nice) {
            tracing::debug!("cannot lower a compile thread's priority: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waited_compiles_go_by_size_and_the_rest_last() {
        use Urgency::*;
        assert_eq!(nice_for(1 << 20, Waited), 0);
        assert_eq!(nice_for(26 << 20, Waited), 2);
        assert_eq!(nice_for(99 << 20, Waited), 8);
        assert_eq!(nice_for(400 << 20, Waited), MAX_WAITED_NICE);
        assert_eq!(nice_for(400 << 20, Asked), ASKED_NICE);
        assert_eq!(nice_for(1 << 20, Background), BACKGROUND_NICE);
    }

    /// The nice of the calling thread, from /proc (field 19 of its stat).
    #[cfg(target_os = "linux")]
    fn own_nice() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_compile_runs_on_threads_at_its_priority_and_leaves_the_caller_as_it_was() {
        let before = own_nice();
        let nice = with_waited(Arc::new(|| Urgency::Background), || {
            compile(10, || {
                use rayon::prelude::*;
                (0..4).into_par_iter().map(|_| own_nice()).min().unwrap()
            })
        });
        assert_eq!(nice, BACKGROUND_NICE);
        assert_eq!(own_nice(), before);
        // Waited for and small: the default priority.
        let nice = compile(10, || rayon::current_thread_index().map(|_| own_nice()));
        assert_eq!(nice, Some(before));
    }
}
