//! Every run on a thread of its own.
//!
//! A run's file operations happen inline on the thread that runs its guest
//! (`allow_blocking_current_thread`, for clang's thousands of tiny syscalls), so a run
//! stuck in a slow syscall (an `fsync` of a big file) would stall whatever else shares
//! its thread. Each run therefore gets a blocking-pool thread with a small single-threaded
//! tokio runtime of its own: a slow run stalls only itself, while the server's async
//! workers keep answering clients and the deadline backstop keeps ticking.

use std::cell::RefCell;
use std::future::Future;

thread_local! {
    /// The current-thread runtime of this blocking-pool thread, reused by later runs on it.
    static RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

/// Runs the future `make()` returns to completion on a thread of its own.
pub async fn on_own_thread<F, Fut, R>(make: F) -> Result<R, tokio::task::JoinError>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = R>,
    R: Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        RUNTIME.with(|cell| {
            let mut slot = cell.borrow_mut();
            let runtime = slot.get_or_insert_with(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a current-thread tokio runtime")
            });
            runtime.block_on(make())
        })
    })
    .await
}

/// Runs the future `make()` returns to completion on a new thread the kernel schedules
/// only when a core would otherwise idle (`SCHED_IDLE`): work done ahead of a call (a
/// pre-started interpreter) that must never take a core from a call. Where the policy
/// cannot be set, the thread runs at the lowest niceness instead.
pub async fn on_idle_thread<F, Fut, R>(make: F) -> Result<R, String>
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = R>,
    R: Send + 'static,
{
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("runbox-ahead".into())
        .spawn(move || {
            yield_to_everything();
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => return drop(done.send(Err(e.to_string()))),
            };
            let _ = done.send(Ok(runtime.block_on(make())));
        })
        .map_err(|e| e.to_string())?;
    result
        .await
        .map_err(|_| "the thread ended without an answer".to_string())?
}

/// Puts the calling thread below every other: `SCHED_IDLE`, or else nice 19.
fn yield_to_everything() {
    // SAFETY: plain syscalls on the calling thread (pid 0), with a zeroed parameter
    // (priority 0, as SCHED_IDLE requires; musl's has more fields than glibc's).
    let idle = unsafe {
        let param: libc::sched_param = std::mem::zeroed();
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0
    };
    if !idle {
        // SAFETY: as above; on Linux `PRIO_PROCESS` with 0 is the calling thread.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    }
}

/// Runs `work`, file-system work whose size a session decides (writing back hundreds of
/// MiB of stored files), without holding up an async worker: on the server's
/// multi-threaded runtime the worker hands its other tasks on first; elsewhere (a run's
/// own thread, a current-thread runtime) it runs inline.
pub fn off_the_workers<R>(work: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A run blocked in a syscall does not delay the async workers.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_blocked_run_does_not_stall_the_executor() {
        let blocked = tokio::spawn(on_own_thread(|| async {
            std::thread::sleep(Duration::from_millis(500));
        }));
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let quick = on_own_thread(|| async { 1 + 1 }).await.unwrap();
        assert_eq!(quick, 2);
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        blocked.await.unwrap().unwrap();
    }

    /// Slow file-system work of one task does not delay another on the only worker.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn slow_file_work_does_not_stall_the_executor() {
        let slow = tokio::spawn(async {
            off_the_workers(|| std::thread::sleep(Duration::from_millis(500)));
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        let started = Instant::now();
        let quick = tokio::spawn(async { 1 + 1 }).await.unwrap();
        assert_eq!(quick, 2);
        assert!(
            started.elapsed() < Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        slow.await.unwrap();
    }

    /// Work ahead runs on a thread of its own, below every other.
    #[tokio::test]
    async fn work_ahead_runs_below_everything() {
        let policy = on_idle_thread(|| async {
            // SAFETY: reads the calling thread's policy.
            unsafe { libc::sched_getscheduler(0) }
        })
        .await
        .unwrap();
        assert_eq!(policy, libc::SCHED_IDLE);
        // SAFETY: as above, for this (ordinary) thread.
        assert_ne!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_IDLE);
    }

    /// Inline where there is no multi-threaded runtime to hand work to.
    #[test]
    fn off_the_workers_runs_inline_without_a_runtime() {
        assert_eq!(off_the_workers(|| 7), 7);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(async { off_the_workers(|| 8) }), 8);
    }
}
