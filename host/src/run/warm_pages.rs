//! Warm instances with their pages already in place.
//!
//! A fresh instance's first touch of each page of its memory is a page fault: python's
//! hello takes about 600, a third of its time (bench/RESULTS.md). A warm instance
//! (`prestart.rs`) waits for its run anyway, so it takes those faults while it waits:
//! after each pre-started run, the pages it touched are read from the kernel's page map,
//! and the next warm instance asks the kernel to map the same pages ahead
//! (`MADV_POPULATE_WRITE` for those the run wrote, `MADV_POPULATE_READ` for those it only
//! read). Only when pages are mapped changes, never what they hold: a warm instance
//! holds what a fresh one holds, and nothing of one run reaches the next.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use crate::state::{page_size, page_uses, PageUse, Placement, SPAN};

/// How far past a memory's start-up size a run's pages are looked for (a hello's heap
/// grows a little; a run that grows it more is not what a warm instance prepares for).
const LOOK_PAST_STARTUP: usize = 64 << 20;
/// A run that touched more than this is not learned from: its warm successor would hold
/// that much memory while it waits, for runs that mostly touch far less.
const MOST_LEARNED: usize = 48 << 20;

/// The pages one memory's runs touch, as byte ranges from its base.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TouchedPages {
    pub written: Vec<Range<usize>>,
    pub read: Vec<Range<usize>>,
}

impl TouchedPages {
    fn bytes(&self) -> usize {
        self.written.iter().chain(&self.read).map(|r| r.len()).sum()
    }

    /// The pages of the memory at `place` that a run touched, from the page map: a page
    /// the instance owns was written; below the start-up size a page mapped from the
    /// image was only read; past it (the memory's file, shared) a mapped page counts as
    /// written. `None` where the page map cannot be read.
    pub fn of(place: Placement) -> Option<TouchedPages> {
        let page = page_size();
        let len = place.size.saturating_add(LOOK_PAST_STARTUP).min(SPAN);
        let uses = page_uses(place.base, len)?;
        let mut touched = TouchedPages::default();
        for (i, page_use) in uses.into_iter().enumerate() {
            let at = i * page;
            let list = match page_use {
                PageUse::Untouched => continue,
                PageUse::Mapped if at < place.from => &mut touched.read,
                PageUse::Mapped | PageUse::Own => &mut touched.written,
            };
            match list.last_mut() {
                Some(last) if last.end == at => last.end = at + page,
                _ => list.push(at..at + page),
            }
        }
        Some(touched)
    }

    /// Maps these pages of the memory at `place` ahead, as far as it is accessible now.
    pub fn populate(&self, place: Placement) {
        use rustix::mm::{madvise, Advice};
        for (ranges, advice) in [
            (&self.written, Advice::LinuxPopulateWrite),
            (&self.read, Advice::LinuxPopulateRead),
        ] {
            for range in ranges {
                let end = range.end.min(place.size);
                if range.start >= end {
                    continue;
                }
                // SAFETY: the range lies in the memory's accessible part, which the
                // instance (waiting, no guest code running) owns; populating maps pages
                // without changing what they hold.
                let done = unsafe {
                    madvise(
                        (place.base + range.start) as *mut std::ffi::c_void,
                        end - range.start,
                        advice,
                    )
                };
                if let Err(e) = done {
                    // Older kernels (before 5.14) have no populating: faults as before.
                    tracing::debug!("cannot map a warm instance's pages ahead: {e}");
                    return;
                }
            }
        }
    }
}

/// What each runtime's pre-started runs touched, memory by memory (the last run's).
#[derive(Default)]
pub struct WarmPages {
    learned: Mutex<HashMap<String, Arc<Vec<TouchedPages>>>>,
}

impl WarmPages {
    /// Maps ahead, in a warm instance of `runtime` whose memories lie at `places`, the
    /// pages its last run touched.
    pub fn populate(&self, runtime: &str, places: &[Placement]) {
        let learned = self
            .learned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(runtime)
            .cloned();
        if let Some(learned) = learned.filter(|l| l.len() == places.len()) {
            for (touched, place) in learned.iter().zip(places) {
                touched.populate(*place);
            }
        }
    }

    /// Learns what a run of `runtime` touched in the memories at `places` (its instance
    /// still alive).
    pub fn learn(&self, runtime: &str, places: &[Placement]) {
        let Some(touched) = places
            .iter()
            .map(|place| TouchedPages::of(*place))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        if touched.iter().map(TouchedPages::bytes).sum::<usize>() > MOST_LEARNED {
            return;
        }
        self.learned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(runtime.to_string(), Arc::new(touched));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::test_memory::Reserved;

    #[test]
    fn pages_touched_are_learned_and_mapped_ahead_unchanged() {
        let page = page_size();
        if page_uses(0, 0).is_none() {
            return; // no page map here
        }
        let size = 64 * page;
        let source = Reserved::new(size);
        let at = source.at(32 * page, size);
        let bytes = source.bytes(size);
        bytes[3 * page] = 7; // written below the start-up size
        bytes[40 * page] = 1; // past it
        let touched = TouchedPages::of(at).unwrap();
        assert!(
            touched.written.iter().any(|r| r.contains(&(3 * page))),
            "{touched:?}"
        );
        assert!(
            touched.written.iter().any(|r| r.contains(&(40 * page))),
            "{touched:?}"
        );
        let untouched = |p: usize| {
            !touched
                .written
                .iter()
                .chain(&touched.read)
                .any(|r| r.contains(&(p * page)))
        };
        assert!(untouched(10), "{touched:?}");

        // A fresh memory gets the same pages mapped, and still holds only zeros.
        let warm = Reserved::new(size);
        let place = warm.at(32 * page, size);
        let pages = WarmPages::default();
        pages.learn("rt", &[at]);
        pages.populate("rt", &[place]);
        let uses = page_uses(place.base, size).unwrap();
        assert_ne!(uses[3], PageUse::Untouched);
        assert_ne!(uses[40], PageUse::Untouched);
        assert_eq!(uses[10], PageUse::Untouched);
        assert!(warm.bytes(size).iter().all(|b| *b == 0));
        // A runtime with nothing learned is left as it is.
        let cold = Reserved::new(size);
        pages.populate("other", &[cold.at(32 * page, size)]);
        assert_eq!(
            page_uses(cold.at(0, size).base, size).unwrap()[3],
            PageUse::Untouched
        );
    }
}
