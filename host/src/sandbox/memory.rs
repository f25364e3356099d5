//! The memory cap of one run, shared by the plugin and every program it spawns.
//!
//! Each store gets a [`StoreMemoryLimiter`] drawing from the run's [`MemoryBudget`]. A
//! growth past the budget is refused (the guest sees an allocation failure and can
//! report it, like Python's `MemoryError`); the refusal is remembered so that a run which
//! then traps is reported as stopped by the memory cap.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use wasmtime::ResourceLimiter;

/// Table elements any one table may hold; tables are small in practice.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Instances, tables and memories any one store may create.
const MAX_INSTANCES: usize = 1_000;
const MAX_TABLES: usize = 1_000;
const MAX_MEMORIES: usize = 100;

#[derive(Debug)]
struct Budget {
    cap: usize,
    used: AtomicUsize,
    refused: AtomicBool,
}

/// The bytes of linear memory a whole run may hold at once.
#[derive(Debug, Clone)]
pub struct MemoryBudget(Arc<Budget>);

impl MemoryBudget {
    pub fn new(cap: usize) -> MemoryBudget {
        MemoryBudget(Arc::new(Budget {
            cap,
            used: AtomicUsize::new(0),
            refused: AtomicBool::new(false),
        }))
    }

    pub fn cap(&self) -> usize {
        self.0.cap
    }

    /// Bytes currently held by live stores of this run.
    pub fn used(&self) -> usize {
        self.0.used.load(Ordering::SeqCst)
    }

    /// Whether any growth was refused during the run.
    pub fn was_exceeded(&self) -> bool {
        self.0.refused.load(Ordering::SeqCst)
    }

    /// A limiter for one new store.
    pub fn limiter(&self) -> StoreMemoryLimiter {
        StoreMemoryLimiter {
            budget: self.clone(),
            held: 0,
        }
    }

    fn try_take(&self, bytes: usize) -> bool {
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
                Ok(_) => return true,
                Err(actual) => used = actual,
            }
        }
    }

    fn give_back(&self, bytes: usize) {
        self.0.used.fetch_sub(bytes, Ordering::SeqCst);
    }
}

/// One store's share of the run's budget; returns what it holds when the store is dropped.
#[derive(Debug)]
pub struct StoreMemoryLimiter {
    budget: MemoryBudget,
    held: usize,
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
        let delta = desired.saturating_sub(current);
        if self.budget.try_take(delta) {
            self.held += delta;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
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
    }
}
