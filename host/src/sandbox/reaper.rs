//! What a finished run leaves behind, put away after its answer rather than before it.
//!
//! Dropping a run's instance unmaps every page its memories touched (for python, about a
//! tenth of a hello's time: `munmap` and its TLB shootdowns), which does not change the
//! answer: a one-off run hands its instance to one background thread. So does its
//! scratch directory when it holds little (`run/scratch.rs`, `remove_after_answer`); a
//! bigger one is removed before the answer, since the room the next run finds on the
//! scratch volume must not depend on a backlog. What waits here is bounded by the
//! memory it holds: past [`BACKLOG_BYTES`] the run's own thread drops its instance
//! itself, as before, so a burst of big runs cannot pile up memory. That memory stays
//! charged to the server's budget until it is really freed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, OnceLock};

/// Memory the leftovers waiting to be put away may hold, all runs together.
pub const BACKLOG_BYTES: usize = 256 << 20;
/// Leftovers waiting at most, whatever they hold.
const BACKLOG_RUNS: usize = 16;

/// Something a run left behind, and the memory it holds.
struct Leftover {
    item: Box<dyn Send>,
    bytes: usize,
}

struct Reaper {
    queue: SyncSender<Leftover>,
    /// Bytes held by the leftovers in `queue`.
    waiting: Arc<AtomicUsize>,
}

fn reaper() -> Option<&'static Reaper> {
    static REAPER: OnceLock<Option<Reaper>> = OnceLock::new();
    REAPER
        .get_or_init(|| {
            let (queue, leftovers) = sync_channel::<Leftover>(BACKLOG_RUNS);
            let waiting = Arc::new(AtomicUsize::new(0));
            let counted = waiting.clone();
            std::thread::Builder::new()
                .name("runbox-reaper".into())
                .spawn(move || {
                    for Leftover { item, bytes } in leftovers {
                        drop(item);
                        counted.fetch_sub(bytes, Ordering::SeqCst);
                    }
                })
                .map_err(|e| tracing::warn!("no reaper thread, runs put away their own: {e}"))
                .ok()?;
            Some(Reaper { queue, waiting })
        })
        .as_ref()
}

/// Drops `item` (holding `bytes` of memory) on the reaper's thread, or here when the
/// backlog is full.
pub fn put_away<T: Send + 'static>(item: T, bytes: usize) {
    let Some(reaper) = reaper() else {
        return drop(item);
    };
    let before = reaper.waiting.fetch_add(bytes, Ordering::SeqCst);
    if before.saturating_add(bytes) > BACKLOG_BYTES {
        reaper.waiting.fetch_sub(bytes, Ordering::SeqCst);
        return drop(item);
    }
    let leftover = Leftover {
        item: Box::new(item),
        bytes,
    };
    if let Err(e) = reaper.queue.try_send(leftover) {
        let leftover = match e {
            std::sync::mpsc::TrySendError::Full(l)
            | std::sync::mpsc::TrySendError::Disconnected(l) => l,
        };
        reaper.waiting.fetch_sub(bytes, Ordering::SeqCst);
        drop(leftover);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    fn wait_for(flag: &AtomicBool) {
        let until = Instant::now() + Duration::from_secs(5);
        while !flag.load(Ordering::SeqCst) {
            assert!(Instant::now() < until, "never put away");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn leftovers_are_dropped_on_the_reaper_or_here_when_too_big() {
        let small = Arc::new(AtomicBool::new(false));
        put_away(Flag(small.clone()), 1 << 20);
        wait_for(&small);
        // More than the backlog may hold is dropped before put_away returns.
        let big = Arc::new(AtomicBool::new(false));
        put_away(Flag(big.clone()), BACKLOG_BYTES + 1);
        assert!(big.load(Ordering::SeqCst));
    }
}
