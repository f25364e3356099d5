//! The memory cap of one run, shared by the plugin and every program it spawns, and the
//! server's budget that every run draws from too.
//!
//! Each store gets a [`StoreMemoryLimiter`] drawing from the run's [`MemoryBudget`], which
//! draws from the server's (when there is one). Linear memories and tables both count: a
//! table element costs [`TABLE_ELEMENT_BYTES`]. A growth past either budget is refused (the
//! guest sees an allocation failure and can report it, like Python's `MemoryError`); the
//! refusal is remembered so that a run which then traps on it is reported as stopped by
//! the memory cap.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use wasmtime::ResourceLimiter;

/// Table elements any one table may hold; tables are small in practice.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// What one table element is charged: wasmtime stores a pointer per element.
pub const TABLE_ELEMENT_BYTES: usize = 8;
/// Instances, tables and memories any one store may create.
const MAX_INSTANCES: usize = 1_000;
const MAX_TABLES: usize = 1_000;
const MAX_MEMORIES: usize = 100;

#[derive(Debug)]
struct Budget {
    cap: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    refused: AtomicBool,
    /// Whether the parent refused a growth this budget asked for (the parent's own flag
    /// is the whole server's, so it cannot tell which run was refused).
    parent_refused: AtomicBool,
    /// The budget this one also draws from (the server's, for a run).
    parent: Option<MemoryBudget>,
    /// Bytes already taken from `parent` on this budget's behalf ([`MemoryBudget::prepay`]):
    /// growths draw on them before asking the parent.
    prepaid: AtomicUsize,
}

/// Bytes of memory a whole run (or the whole server) may hold at once.
#[derive(Debug, Clone)]
pub struct MemoryBudget(Arc<Budget>);

impl MemoryBudget {
    pub fn new(cap: usize) -> MemoryBudget {
        MemoryBudget::with_parent(cap, None)
    }

    /// A budget of `cap` bytes that also takes everything it grants from `parent`.
    pub fn with_parent(cap: usize, parent: Option<MemoryBudget>) -> MemoryBudget {
        MemoryBudget(Arc::new(Budget {
            cap,
            used: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
            parent_refused: AtomicBool::new(false),
            parent,
            prepaid: AtomicUsize::new(0),
        }))
    }

    pub fn cap(&self) -> usize {
        self.0.cap
    }

    /// Bytes currently held.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::SeqCst)
    }

    /// The most ever held at once.
    pub fn peak(&self) -> usize {
        self.0.peak.load(Ordering::SeqCst)
    }

    /// Bytes not yet held.
    pub fn remaining(&self) -> usize {
        self.cap().saturating_sub(self.used())
    }

    /// Whether any growth was refused by this budget's own cap.
    pub fn was_exceeded(&self) -> bool {
        self.0.refused.load(Ordering::SeqCst)
    }

    /// Whether a growth was refused because the parent (the server) had no room left.
    pub fn parent_was_exceeded(&self) -> bool {
        self.0.parent_refused.load(Ordering::SeqCst)
    }

    /// Forgets earlier refusals and starts the peak from what is held now: a session's
    /// next call starts with a clean record, while the memory its interpreter holds stays
    /// charged.
    pub fn begin_call(&self) {
        self.0.refused.store(false, Ordering::SeqCst);
        self.0.parent_refused.store(false, Ordering::SeqCst);
        self.0.peak.store(self.used(), Ordering::SeqCst);
    }

    /// A limiter for one new store.
    pub fn limiter(&self) -> StoreMemoryLimiter {
        StoreMemoryLimiter {
            budget: self.clone(),
            held: 0,
        }
    }

    /// Takes `bytes` from this budget and its parent, or nothing.
    pub fn try_take(&self, bytes: usize) -> bool {
        let b = &self.0;
        let mut used = b.used.load(Ordering::SeqCst);
        loop {
            let Some(next) = used.checked_add(bytes).filter(|n| *n <= b.cap) else {
                b.refused.store(true, Ordering::SeqCst);
                return false;
            };
            match b
                .used
                .compare_exchange(used, next, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    if let Some(parent) = &b.parent {
                        let prepaid = take_up_to(&b.prepaid, bytes);
                        if !parent.try_take(bytes - prepaid) {
                            b.prepaid.fetch_add(prepaid, Ordering::SeqCst);
                            b.parent_refused.store(true, Ordering::SeqCst);
                            b.used.fetch_sub(bytes, Ordering::SeqCst);
                            return false;
                        }
                    }
                    b.peak.fetch_max(next, Ordering::SeqCst);
                    return true;
                }
                Err(actual) => used = actual,
            }
        }
    }

    /// Returns `bytes` taken earlier, to this budget and its parent.
    pub fn give_back(&self, bytes: usize) {
        self.0.used.fetch_sub(bytes, Ordering::SeqCst);
        if let Some(parent) = &self.0.parent {
            parent.give_back(bytes);
        }
    }

    /// The budget this one also draws from, if any.
    pub fn parent(&self) -> Option<&MemoryBudget> {
        self.0.parent.as_ref()
    }

    /// Takes `bytes` until the returned guard is dropped, or `None` when they don't fit.
    pub fn reserve(&self, bytes: usize) -> Option<Reservation> {
        self.try_take(bytes).then(|| Reservation {
            budget: self.clone(),
            bytes,
        })
    }

    /// Takes `bytes` from the parent now, waiting up to `wait` for them, for this
    /// budget's growths to come: what a restored instance maps is then sure of its room
    /// however many others draw from the parent meanwhile. `None` when they did not come.
    pub async fn prepay(&self, bytes: usize, wait: std::time::Duration) -> Option<Prepaid> {
        if let Some(parent) = &self.0.parent {
            // Taken into the prepaid counter, not kept as a reservation.
            std::mem::forget(parent.reserve_waiting(bytes, wait).await?);
            self.0.prepaid.fetch_add(bytes, Ordering::SeqCst);
        }
        Some(Prepaid {
            budget: self.clone(),
        })
    }

    /// [`MemoryBudget::reserve`], waiting up to `wait` for others to give the bytes back
    /// (reservations are short: a resume's, a store's). `None` when they can never fit
    /// or `wait` passed.
    pub async fn reserve_waiting(
        &self,
        bytes: usize,
        wait: std::time::Duration,
    ) -> Option<Reservation> {
        let started = std::time::Instant::now();
        loop {
            if let Some(reservation) = self.reserve(bytes) {
                return Some(reservation);
            }
            if bytes > self.cap() || started.elapsed() >= wait {
                return None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// Takes what it can of `bytes` out of `counter`: how much it took.
fn take_up_to(counter: &AtomicUsize, bytes: usize) -> usize {
    let mut have = counter.load(Ordering::SeqCst);
    loop {
        let take = have.min(bytes);
        match counter.compare_exchange(have, have - take, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => return take,
            Err(actual) => have = actual,
        }
    }
}

/// Bytes a budget's parent set aside for it ([`MemoryBudget::prepay`]); what its growths
/// did not use goes back to the parent when dropped.
#[derive(Debug)]
pub struct Prepaid {
    budget: MemoryBudget,
}

impl Drop for Prepaid {
    fn drop(&mut self) {
        let left = self.budget.0.prepaid.swap(0, Ordering::SeqCst);
        if let Some(parent) = &self.budget.0.parent {
            parent.give_back(left);
        }
    }
}

/// Bytes held in a [`MemoryBudget`] until dropped.
#[derive(Debug)]
pub struct Reservation {
    budget: MemoryBudget,
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.give_back(self.bytes);
    }
}

impl Reservation {
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Takes `bytes` more, or nothing (what it pays for grew).
    pub fn grow(&mut self, bytes: usize) -> bool {
        let taken = self.budget.try_take(bytes);
        if taken {
            self.bytes += bytes;
        }
        taken
    }

    /// Gives back what is held past `bytes` (what it paid for got smaller).
    pub fn shrink_to(&mut self, bytes: usize) {
        if bytes < self.bytes {
            self.budget.give_back(self.bytes - bytes);
            self.bytes = bytes;
        }
    }
}

/// A reservation shared by what it pays for (a file's bytes read for a result, a call's
/// payload and output until its result is rendered): the memory goes back when the last
/// holder is dropped. `Held::default()` holds nothing.
#[derive(Clone, Default)]
pub struct Held(Option<Arc<Reservation>>);

impl Held {
    pub fn new(reservation: Reservation) -> Held {
        Held(Some(Arc::new(reservation)))
    }

    /// Whether it holds a reservation.
    pub fn is_held(&self) -> bool {
        self.0.is_some()
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(r) => write!(f, "Held({} bytes)", r.bytes),
            None => f.write_str("Held(nothing)"),
        }
    }
}

/// What is held does not make two values different.
impl PartialEq for Held {
    fn eq(&self, _: &Held) -> bool {
        true
    }
}

impl Eq for Held {}

/// One store's share of the run's budget; returns what it holds when the store is dropped.
#[derive(Debug)]
pub struct StoreMemoryLimiter {
    budget: MemoryBudget,
    held: usize,
}

impl StoreMemoryLimiter {
    fn grow(&mut self, bytes: usize) -> bool {
        if self.budget.try_take(bytes) {
            self.held += bytes;
            true
        } else {
            false
        }
    }
}

impl Drop for StoreMemoryLimiter {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

impl ResourceLimiter for StoreMemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(self.grow(desired.saturating_sub(current)))
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > MAX_TABLE_ELEMENTS {
            return Ok(false);
        }
        let elements = desired.saturating_sub(current);
        Ok(self.grow(elements.saturating_mul(TABLE_ELEMENT_BYTES)))
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_shared_between_stores_and_returned_on_drop() {
        let budget = MemoryBudget::new(100);
        let mut a = budget.limiter();
        let mut b = budget.limiter();
        assert!(a.memory_growing(0, 60, None).unwrap());
        assert!(!b.memory_growing(0, 60, None).unwrap());
        assert!(budget.was_exceeded());
        assert!(b.memory_growing(0, 40, None).unwrap());
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        assert!(b.memory_growing(40, 90, None).unwrap());
        drop(b);
        assert_eq!(budget.used(), 0);
        assert_eq!(budget.peak(), 100);
    }

    /// What a parent set aside for a child is the child's: another draw on the parent
    /// cannot take it, and what the child did not use goes back.
    #[tokio::test]
    async fn a_prepaid_child_grows_into_what_was_set_aside() {
        let server = MemoryBudget::new(100);
        let child = MemoryBudget::with_parent(100, Some(server.clone()));
        let prepaid = child.prepay(70, std::time::Duration::ZERO).await.unwrap();
        assert_eq!(server.used(), 70);
        // Another run takes the rest of the server.
        let other = server.reserve(30).unwrap();
        assert!(server.reserve(1).is_none());
        let mut limiter = child.limiter();
        assert!(limiter.memory_growing(0, 50, None).unwrap());
        assert_eq!(
            server.used(),
            100,
            "the growth came out of what was set aside"
        );
        drop(prepaid);
        assert_eq!(server.used(), 80, "the unused 20 went back");
        assert!(
            !limiter.memory_growing(50, 80, None).unwrap(),
            "nothing is set aside now"
        );
        drop(other);
        drop(limiter);
        assert_eq!(server.used(), 0);
        assert!(child.prepay(101, std::time::Duration::ZERO).await.is_none());
        assert_eq!(server.used(), 0);
    }

    #[test]
    fn tables_are_charged_to_the_budget() {
        let budget = MemoryBudget::new(1 << 20);
        let mut a = budget.limiter();
        // 2^16 elements of 8 bytes: half the budget.
        assert!(a.table_growing(0, 1 << 16, None).unwrap());
        assert_eq!(budget.used(), (1 << 16) * TABLE_ELEMENT_BYTES);
        assert!(!a.table_growing(1 << 16, 1 << 18, None).unwrap());
        assert!(budget.was_exceeded());
        // Beyond the per-table element cap, whatever the budget.
        let big = MemoryBudget::new(usize::MAX);
        assert!(!big.limiter().table_growing(0, (1 << 20) + 1, None).unwrap());
    }

    #[test]
    fn a_run_draws_from_the_server_too() {
        let server = MemoryBudget::new(100);
        let run_a = MemoryBudget::with_parent(80, Some(server.clone()));
        let run_b = MemoryBudget::with_parent(80, Some(server.clone()));
        let mut a = run_a.limiter();
        let mut b = run_b.limiter();
        assert!(a.memory_growing(0, 70, None).unwrap());
        // run_b is within its own cap, but the server has only 30 left.
        assert!(!b.memory_growing(0, 40, None).unwrap());
        assert!(!run_b.was_exceeded() && run_b.parent_was_exceeded());
        // The server's refusal is run_b's alone: run_a was not refused.
        assert!(!run_a.parent_was_exceeded());
        assert_eq!(run_b.used(), 0, "a refused growth takes nothing");
        assert!(b.memory_growing(0, 30, None).unwrap());
        drop(a);
        assert_eq!(server.used(), 30);
        let held = server.reserve(70).unwrap();
        assert!(server.reserve(1).is_none());
        drop(held);
        drop(b);
        assert_eq!(server.used(), 0);
    }

    /// A session's next call starts with a clean record; what it holds stays charged.
    #[test]
    fn a_new_call_forgets_refusals_but_not_what_is_held() {
        let budget = MemoryBudget::new(100);
        let mut l = budget.limiter();
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(!l.memory_growing(60, 200, None).unwrap());
        assert!(budget.was_exceeded());
        budget.begin_call();
        assert!(!budget.was_exceeded());
        assert_eq!((budget.used(), budget.peak()), (60, 60));
    }
}
