//! The part of a linear memory past its start-up size, kept on a memory file (memfd) of
//! its own, so that copies of an instance share its pages rather than copy them.
//!
//! An instance's memory is what wasmtime mapped (its compiled image, copy-on-write) up to
//! the size it had once started; everything it grows into after is its session's own data
//! (for python, every array and frame made in a call). runbox maps a memory file over that
//! tail, shared, as soon as the instance has started: the guest's writes land in the file.
//! Forking freezes the file: the source's tail is mapped again privately (same pages, its
//! next writes copied on write), and each copy maps the same file privately too. So a fork
//! costs a few `mmap` calls whatever the session holds; only the pages a source wrote
//! since its tail was frozen are copied into its forks.
//!
//! This writes under wasmtime's feet, which holds because of how runbox configures it
//! (`engine::base_config`): each 32-bit memory has the whole 4 GiB reserved and never
//! moves, and growing it only changes the protection of pages already reserved (`mprotect`),
//! which applies to whatever is mapped there. Dropping the instance unmaps the
//! reservation, the tail with it; the file lives as long as a mapping or a [`Tail`]
//! holds it.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{memfd_create, MemfdFlags, SeekFrom};
use rustix::mm::{mmap, mprotect, MapFlags, MprotectFlags, ProtFlags};

use super::written::{page_size, written_pages};

/// What the engine reserves for each 32-bit memory: all it can address.
pub const SPAN: usize = 1 << 32;

/// A memory's tail: the file it is on, and whether that file is frozen (mapped
/// privately, by this instance and any copies) or still written through.
#[derive(Debug)]
pub struct Tail {
    file: Arc<OwnedFd>,
    frozen: bool,
}

/// Where a memory lies: the host address of its byte 0, the size it had once started
/// (where its tail begins) and its size now, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Placement {
    pub base: usize,
    pub from: usize,
    pub size: usize,
}

impl Placement {
    /// Whether a tail can go there: on host page boundaries, inside the reservation.
    fn fits(&self) -> bool {
        let page = page_size();
        self.base != 0
            && self.base.is_multiple_of(page)
            && self.from.is_multiple_of(page)
            && self.from <= self.size
            && self.size <= SPAN
    }
}

/// A tail frozen for copies: its file, to be mapped privately over theirs.
#[derive(Debug, Clone)]
pub struct FrozenTail(Arc<OwnedFd>);

impl PartialEq for FrozenTail {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for FrozenTail {}

impl Tail {
    /// A new, empty file over the tail of the memory at `at`, written through.
    pub fn attach(at: Placement) -> io::Result<Tail> {
        if !at.fits() || at.size != at.from {
            return Err(io::Error::other("the memory is not where a tail can go"));
        }
        let file = memfd_create("runbox-memory-tail", MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&file, (SPAN - at.from) as u64)?;
        map(&file, at, MapFlags::SHARED)?;
        Ok(Tail {
            file: Arc::new(file),
            frozen: false,
        })
    }

    /// A tail of `frozen`'s file for the memory at `at` (a fresh instance's, grown to
    /// the source's size), mapped privately: it reads the source's pages until it writes.
    pub fn copy_of(frozen: &FrozenTail, at: Placement) -> io::Result<Tail> {
        if !at.fits() {
            return Err(io::Error::other("the memory is not where a tail can go"));
        }
        map(&frozen.0, at, MapFlags::PRIVATE)?;
        Ok(Tail {
            file: frozen.0.clone(),
            frozen: true,
        })
    }

    /// A new file holding `runs` (offsets in the memory, at or past its tail, with their
    /// bytes), written through by the memory at `at`: a stored tail brought back.
    pub fn filled<'a>(
        at: Placement,
        runs: impl Iterator<Item = (usize, &'a [u8])>,
    ) -> io::Result<Tail> {
        if !at.fits() {
            return Err(io::Error::other("the memory is not where a tail can go"));
        }
        let file = memfd_create("runbox-memory-tail", MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&file, (SPAN - at.from) as u64)?;
        for (offset, bytes) in runs {
            let at_file = offset
                .checked_sub(at.from)
                .ok_or_else(|| io::Error::other("a run lies before the tail"))?;
            let mut done = 0;
            while done < bytes.len() {
                done += rustix::io::pwrite(&file, &bytes[done..], (at_file + done) as u64)?;
            }
        }
        map(&file, at, MapFlags::SHARED)?;
        Ok(Tail {
            file: Arc::new(file),
            frozen: false,
        })
    }

    /// Freezes the file (the memory at `at` maps it privately from now on) and gives it
    /// for copies. The memory's contents do not change.
    pub fn freeze(&mut self, at: Placement) -> io::Result<FrozenTail> {
        if !self.frozen {
            map(&self.file, at, MapFlags::PRIVATE)?;
            self.frozen = true;
        }
        Ok(FrozenTail(self.file.clone()))
    }

    /// The host pages of `tail` (the memory from its tail on, as this instance sees it)
    /// that the file does not hold as they are: those written since it was frozen. All
    /// `false` while it is written through.
    pub fn written_since_frozen(&self, tail: &[u8]) -> Vec<bool> {
        if !self.frozen {
            return vec![false; tail.len().div_ceil(page_size())];
        }
        written_pages(tail)
    }

    /// The host pages of `tail` that may hold data: those the file holds, and those
    /// written since it was frozen. The others are zeros.
    pub fn holding_data(&self, tail: &[u8]) -> Vec<bool> {
        let page = page_size();
        let mut data = self.written_since_frozen(tail);
        let end = tail.len() as u64;
        let mut at = 0u64;
        while at < end {
            let Ok(start) = rustix::fs::seek(self.file.as_fd(), SeekFrom::Data(at)) else {
                break; // no data past `at`
            };
            let stop = rustix::fs::seek(self.file.as_fd(), SeekFrom::Hole(start))
                .unwrap_or(end)
                .min(end);
            for p in (start as usize / page)..(stop as usize).div_ceil(page) {
                if let Some(d) = data.get_mut(p) {
                    *d = true;
                }
            }
            at = stop.max(start + 1);
        }
        data
    }
}

/// Maps `file` over the tail of the memory at `at`: readable and writable up to its size,
/// inaccessible past it (as wasmtime had it, which makes more accessible as it grows).
fn map(file: &OwnedFd, at: Placement, sharing: MapFlags) -> io::Result<()> {
    let start = (at.base + at.from) as *mut std::ffi::c_void;
    // SAFETY: the range is the memory's own reservation past its start-up size, which
    // only this memory uses; its instance is at rest (no guest code runs), and what it
    // reads there afterwards is what it held before (or, for a fresh instance, what the
    // copy it becomes holds).
    unsafe {
        mmap(
            start,
            SPAN - at.from,
            ProtFlags::empty(),
            sharing | MapFlags::FIXED | MapFlags::NORESERVE,
            file,
            0,
        )?;
        if at.size > at.from {
            mprotect(
                start,
                at.size - at.from,
                MprotectFlags::READ | MprotectFlags::WRITE,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::mm::{mmap_anonymous, munmap};

    /// A reservation as wasmtime makes one: `SPAN` bytes, `size` of them accessible.
    struct Reserved(*mut u8);

    impl Reserved {
        fn new(size: usize) -> Reserved {
            let base = unsafe {
                mmap_anonymous(
                    std::ptr::null_mut(),
                    SPAN,
                    ProtFlags::empty(),
                    MapFlags::PRIVATE | MapFlags::NORESERVE,
                )
            }
            .unwrap()
            .cast::<u8>();
            unsafe {
                mprotect(
                    base.cast(),
                    size,
                    MprotectFlags::READ | MprotectFlags::WRITE,
                )
            }
            .unwrap();
            Reserved(base)
        }

        fn at(&self, from: usize, size: usize) -> Placement {
            Placement {
                base: self.0 as usize,
                from,
                size,
            }
        }

        /// Grows the accessible part as wasmtime does.
        fn grow(&self, from: usize, to: usize) {
            unsafe {
                mprotect(
                    self.0.add(from).cast(),
                    to - from,
                    MprotectFlags::READ | MprotectFlags::WRITE,
                )
            }
            .unwrap();
        }

        #[allow(clippy::mut_from_ref)] // the test's stand-in for a guest's memory
        fn bytes(&self, len: usize) -> &mut [u8] {
            unsafe { std::slice::from_raw_parts_mut(self.0, len) }
        }
    }

    impl Drop for Reserved {
        fn drop(&mut self) {
            unsafe { munmap(self.0.cast(), SPAN) }.unwrap();
        }
    }

    #[test]
    fn copies_share_the_frozen_tail_and_then_live_apart() {
        let page = page_size();
        let from = 4 * page;
        let source = Reserved::new(from);
        let mut tail = Tail::attach(source.at(from, from)).unwrap();
        source.grow(from, from + 8 * page);
        source.bytes(from + 8 * page)[from + page] = 1;
        assert!(tail
            .written_since_frozen(&source.bytes(from + 8 * page)[from..])
            .iter()
            .all(|w| !w));
        let frozen = tail.freeze(source.at(from, from + 8 * page)).unwrap();
        assert_eq!(
            source.bytes(from + 8 * page)[from + page],
            1,
            "kept over the freeze"
        );

        let copy = Reserved::new(from);
        copy.grow(from, from + 8 * page);
        let copied = Tail::copy_of(&frozen, copy.at(from, from + 8 * page)).unwrap();
        assert_eq!(
            copy.bytes(from + 8 * page)[from + page],
            1,
            "the copy reads the source's page"
        );

        // Each writes its own.
        source.bytes(from + 8 * page)[from + page] = 2;
        copy.bytes(from + 8 * page)[from + 2 * page] = 3;
        assert_eq!(copy.bytes(from + 8 * page)[from + page], 1);
        assert_eq!(source.bytes(from + 8 * page)[from + 2 * page], 0);
        let written = tail.written_since_frozen(&source.bytes(from + 8 * page)[from..]);
        assert!(written[1] && !written[2], "{written:?}");
        let holding = copied.holding_data(&copy.bytes(from + 8 * page)[from..]);
        assert!(holding[1] && holding[2] && !holding[5], "{holding:?}");
    }

    #[test]
    fn a_filled_tail_holds_its_runs_and_is_written_through() {
        let page = page_size();
        let from = 2 * page;
        let memory = Reserved::new(from);
        memory.grow(from, from + 4 * page);
        let runs = [(from + page, &[5u8; 10][..])];
        let tail = Tail::filled(memory.at(from, from + 4 * page), runs.into_iter()).unwrap();
        let bytes = memory.bytes(from + 4 * page);
        assert_eq!(
            &bytes[from + page..from + page + 11],
            &[5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0]
        );
        let holding = tail.holding_data(&bytes[from..]);
        assert_eq!(holding, [false, true, false, false]);
    }

    #[test]
    fn a_misplaced_memory_gets_no_tail() {
        let at = Placement {
            base: 12,
            from: 0,
            size: 0,
        };
        assert!(Tail::attach(at).is_err());
    }
}
