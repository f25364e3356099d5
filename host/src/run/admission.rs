//! What bounds the server as a whole, beyond each run's own limits: how many calls may
//! wait, how much memory all of them together may hold, and how many descriptors.
//!
//! A call is *admitted* before it waits for a run slot: it reserves its payload (code,
//! stdin, files) and its output buffers in the server's [`MemoryBudget`], and takes a
//! place in the queue. Every store of every run also draws its linear memory and tables
//! from that budget (see `budget/memory.rs`). A call that does not fit, or finds the
//! queue full, is refused at once with [`Busy`]: never an unbounded wait or an OOM kill.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;

use crate::budget::memory::{Held, MemoryBudget, Reservation};

/// Calls that may wait for a run slot, by default.
pub const DEFAULT_MAX_QUEUED: usize = 64;
/// The server's memory budget when the machine's memory is unknown.
const FALLBACK_SERVER_MEMORY: u64 = 8 << 30;

/// The server is too busy to take the call now.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "runbox is busy: {running} runs under way and {waiting} waiting ({why}); try again shortly"
)]
pub struct Busy {
    pub running: usize,
    pub waiting: usize,
    pub why: String,
}

/// The queue and the server-wide memory budget.
pub struct Admission {
    slots: Arc<Semaphore>,
    max_concurrent: usize,
    max_queued: usize,
    waiting: Arc<AtomicUsize>,
    memory: MemoryBudget,
}

/// An admitted call: its reservation and its place in the queue, until dropped.
pub struct Ticket {
    _reservation: Reservation,
    waiting: Option<WaitingGuard>,
}

struct WaitingGuard(Arc<AtomicUsize>);

impl Drop for WaitingGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Ticket {
    /// The call's reservation alone, for what outlives the call (its outcome).
    pub fn into_held(self) -> Held {
        Held::new(self._reservation)
    }
}

impl Admission {
    pub fn new(max_concurrent: usize, max_queued: usize, memory_bytes: u64) -> Admission {
        let max_concurrent = max_concurrent.max(1);
        Admission {
            slots: Arc::new(Semaphore::new(max_concurrent)),
            max_concurrent,
            max_queued,
            waiting: Arc::default(),
            memory: MemoryBudget::new(usize::try_from(memory_bytes).unwrap_or(usize::MAX)),
        }
    }

    /// The server-wide budget every run's memory budget draws from.
    pub fn memory(&self) -> &MemoryBudget {
        &self.memory
    }

    /// Runs under way now.
    pub fn running(&self) -> usize {
        self.max_concurrent - self.slots.available_permits()
    }

    /// Calls waiting for a run slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Admits a call holding `bytes` (its payload and output buffers), or says why not.
    pub fn admit(&self, bytes: usize) -> Result<Ticket, Busy> {
        let busy = |why: String| Busy {
            running: self.running(),
            waiting: self.waiting.load(Ordering::SeqCst),
            why,
        };
        let queued = self
            .waiting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < self.max_queued).then_some(n + 1)
            });
        if queued.is_err() {
            return Err(busy(format!(
                "the queue holds at most {} calls",
                self.max_queued
            )));
        }
        let waiting = WaitingGuard(self.waiting.clone());
        let Some(reservation) = self.memory.reserve(bytes) else {
            drop(waiting);
            return Err(busy(format!(
                "the server's memory budget of {} MiB is in use",
                self.memory.cap() >> 20
            )));
        };
        Ok(Ticket {
            _reservation: reservation,
            waiting: Some(waiting),
        })
    }

    /// Waits for a run slot; `None` if `cancel` fires first. The ticket leaves the queue.
    pub async fn slot(
        &self,
        ticket: &mut Ticket,
        cancel: &CancellationToken,
    ) -> Option<OwnedSemaphorePermit> {
        let permit = tokio::select! {
            permit = self.slots.clone().acquire_owned() => permit.ok(),
            _ = cancel.cancelled() => None,
        };
        ticket.waiting = None;
        permit
    }
}

/// The default server-wide memory budget: three quarters of the machine's memory.
pub fn default_server_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024 / 4 * 3)
        })
        .unwrap_or(FALLBACK_SERVER_MEMORY)
}

/// Raises the soft limit on open descriptors to the hard limit, and returns it. Runs
/// hold descriptors for scratch, mounts and what programs open; each store is capped at
/// `MAX_RESOURCES_PER_STORE`, so the server needs at most a known number of them.
pub fn raise_descriptor_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    // `None` is RLIM_INFINITY.
    let max = limit.maximum.unwrap_or(u64::MAX);
    let current = limit.current.unwrap_or(u64::MAX);
    if current < max
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: limit.maximum,
                ..limit
            },
        )
        .is_ok()
    {
        return max;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_or_budget_refuses_at_once() {
        let admission = Admission::new(1, 2, 1000);
        let cancel = CancellationToken::new();
        let mut first = admission.admit(100).unwrap();
        let _running = admission.slot(&mut first, &cancel).await.unwrap();
        let _a = admission.admit(100).unwrap();
        let _b = admission.admit(100).unwrap();
        let e = admission.admit(100).err().unwrap();
        assert_eq!((e.running, e.waiting), (1, 2));
        assert!(e.to_string().contains("queue holds at most 2"), "{e}");
        drop(_b);
        let e = admission.admit(801).err().unwrap();
        assert!(e.to_string().contains("memory budget"), "{e}");
        let _c = admission.admit(700).unwrap();
    }

    #[tokio::test]
    async fn a_cancelled_wait_leaves_the_queue() {
        let admission = Admission::new(1, 1, 1000);
        let cancel = CancellationToken::new();
        let mut first = admission.admit(1).unwrap();
        let _slot = admission.slot(&mut first, &cancel).await.unwrap();
        let mut second = admission.admit(1).unwrap();
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        assert!(admission.slot(&mut second, &cancelled).await.is_none());
        // Its place in the queue is free again.
        let _third = admission.admit(1).unwrap();
    }

    #[test]
    fn the_descriptor_limit_is_raised_to_the_hard_limit() {
        let soft = raise_descriptor_limit();
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        assert_eq!(soft, limit.maximum.unwrap_or(u64::MAX));
        assert!(default_server_memory() > 0);
    }
}
