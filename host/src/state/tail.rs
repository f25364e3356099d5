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
//! A session resumed from the store also maps, over its tail file, the stored pages that
//! were kept as they are, privately from the entry's own file ([`Overlay`]s): nothing is
//! copied or allocated for them, and a page is read from the file only when touched.
//! Overlays are frozen from the start (the entry's file never changes), and go with the
//! tail into its forks.
//!
//! This writes under wasmtime's feet, which holds because of how runbox configures it
//! (`engine::base_config`): each 32-bit memory has the whole 4 GiB reserved and never
//! moves, and growing it only changes the protection of pages already reserved (`mprotect`),
//! which applies to whatever is mapped there. Dropping the instance unmaps the
//! reservation, the tail with it; a file lives as long as a mapping or a [`Tail`] holds it.

use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{memfd_create, MemfdFlags, SeekFrom};
use rustix::mm::{mmap, mprotect, MapFlags, MprotectFlags, ProtFlags};

use super::written::{page_size, written_pages};

/// What the engine reserves for each 32-bit memory: all it can address.
pub const SPAN: usize = 1 << 32;

/// A memory's tail: the file it is on, whether that file is frozen (mapped privately, by
/// this instance and any copies) or still written through, and the overlays over it.
#[derive(Debug)]
pub struct Tail {
    file: Arc<OwnedFd>,
    frozen: bool,
    overlays: Arc<[Overlay]>,
}

/// Part of a tail mapped privately from another file (a stored entry's): `len` bytes at
/// `at` (from the tail's start) are the file's bytes from `offset`. All page-aligned.
#[derive(Debug, Clone)]
pub struct Overlay {
    pub file: Arc<File>,
    pub offset: u64,
    pub at: usize,
    pub len: usize,
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

    /// The tail's length.
    fn span(&self) -> usize {
        SPAN - self.from
    }
}

/// A memory file made for one memory's tail starting at byte `from`, filled by the host
/// (and given overlays) before any instance maps it ([`Tail::adopt`]).
#[derive(Debug)]
pub struct TailFile {
    fd: OwnedFd,
    from: usize,
    overlays: Vec<Overlay>,
}

impl TailFile {
    /// An empty one (zeros), for a memory whose tail starts at `from`.
    pub fn new(from: usize) -> io::Result<TailFile> {
        if from > SPAN {
            return Err(io::Error::other("a tail past the memory's reservation"));
        }
        Ok(TailFile {
            fd: memory_file(from)?,
            from,
            overlays: Vec::new(),
        })
    }

    /// Its first `len` bytes (memory bytes `from..from + len`), mapped into the host to be
    /// filled.
    pub fn window(&self, len: usize) -> io::Result<Window> {
        if len == 0 || len > SPAN - self.from {
            return Err(io::Error::other("no such window on a tail"));
        }
        // SAFETY: a new shared mapping of a file only the host has mapped so far.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &self.fd,
                0,
            )?
        };
        Ok(Window {
            ptr: ptr.cast(),
            len,
        })
    }

    /// How many overlays it has.
    pub fn overlay_count(&self) -> usize {
        self.overlays.len()
    }

    /// Maps `overlays` over the file wherever the tail is mapped (apart, in order, inside
    /// the tail, page-aligned: checked when adopted).
    pub fn set_overlays(&mut self, overlays: Vec<Overlay>) {
        self.overlays = overlays;
    }
}

/// Part of a [`TailFile`] mapped into the host, unmapped when dropped.
#[derive(Debug)]
pub struct Window {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a plain mapping the window owns; writers take disjoint parts of it.
unsafe impl Send for Window {}
unsafe impl Sync for Window {}

impl Window {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Its start, for writers that fill disjoint parts of it at once.
    pub fn as_mut_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `TailFile::window`, used by no one after this.
        let _ = unsafe { rustix::mm::munmap(self.ptr.cast(), self.len) };
    }
}

/// A tail frozen for copies: its file and overlays, to be mapped privately over theirs.
#[derive(Debug, Clone)]
pub struct FrozenTail {
    file: Arc<OwnedFd>,
    overlays: Arc<[Overlay]>,
}

impl PartialEq for FrozenTail {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.file, &other.file)
    }
}

impl Eq for FrozenTail {}

impl Tail {
    /// A new, empty file over the tail of the memory at `at`, written through.
    pub fn attach(at: Placement) -> io::Result<Tail> {
        if !at.fits() || at.size != at.from {
            return Err(io::Error::other("the memory is not where a tail can go"));
        }
        let file = memory_file(at.from)?;
        map(&file, at, 0..at.span(), MapFlags::SHARED)?;
        Ok(Tail {
            file: Arc::new(file),
            frozen: false,
            overlays: Arc::from([]),
        })
    }

    /// A tail of `frozen`'s file for the memory at `at` (a fresh instance's, grown to
    /// the source's size), mapped privately: it reads the source's pages until it writes.
    pub fn copy_of(frozen: &FrozenTail, at: Placement) -> io::Result<Tail> {
        if !at.fits() {
            return Err(io::Error::other("the memory is not where a tail can go"));
        }
        map(&frozen.file, at, 0..at.span(), MapFlags::PRIVATE)?;
        map_overlays(&frozen.overlays, at)?;
        Ok(Tail {
            file: frozen.file.clone(),
            frozen: true,
            overlays: frozen.overlays.clone(),
        })
    }

    /// The memory at `at` written through onto `file` (a [`TailFile`] filled for it, which
    /// no other memory maps), its overlays mapped over it: a stored tail brought back.
    pub fn adopt(file: TailFile, at: Placement) -> io::Result<Tail> {
        let page = page_size();
        let overlays_fit = file.overlays.iter().all(|o| {
            o.at.is_multiple_of(page)
                && o.len.is_multiple_of(page)
                && o.offset.is_multiple_of(page as u64)
                && o.at + o.len <= at.size - at.from
        }) && file
            .overlays
            .windows(2)
            .all(|w| w[0].at + w[0].len <= w[1].at);
        if !at.fits() || file.from != at.from || !overlays_fit {
            return Err(io::Error::other("the memory is not where its tail goes"));
        }
        map(&file.fd, at, 0..at.span(), MapFlags::SHARED)?;
        map_overlays(&file.overlays, at)?;
        Ok(Tail {
            file: Arc::new(file.fd),
            frozen: false,
            overlays: file.overlays.into(),
        })
    }

    /// Freezes the file (the memory at `at` maps it privately from now on, but for its
    /// overlays, which stay) and gives it for copies. The memory's contents do not change.
    pub fn freeze(&mut self, at: Placement) -> io::Result<FrozenTail> {
        if !self.frozen {
            let mut start = 0;
            for overlay in self.overlays.iter() {
                map(&self.file, at, start..overlay.at, MapFlags::PRIVATE)?;
                start = overlay.at + overlay.len;
            }
            map(&self.file, at, start..at.span(), MapFlags::PRIVATE)?;
            self.frozen = true;
        }
        Ok(FrozenTail {
            file: self.file.clone(),
            overlays: self.overlays.clone(),
        })
    }

    /// The host pages of `tail` (the memory from its tail on, as this instance sees it)
    /// that neither its file nor its overlays hold as they are: those written since it
    /// was frozen or over an overlay.
    pub fn written_since_frozen(&self, tail: &[u8]) -> Vec<bool> {
        written_pages(tail)
    }

    /// The host pages of `tail` that may hold data: those its file or overlays hold, and
    /// those written over them. The others are zeros.
    pub fn holding_data(&self, tail: &[u8]) -> Vec<bool> {
        let page = page_size();
        let mut data = self.written_since_frozen(tail);
        let mut mark = |range: Range<usize>| {
            for p in (range.start / page)..range.end.div_ceil(page) {
                if let Some(d) = data.get_mut(p) {
                    *d = true;
                }
            }
        };
        for overlay in self.overlays.iter() {
            mark(overlay.at..overlay.at + overlay.len);
        }
        let end = tail.len() as u64;
        let mut at = 0u64;
        while at < end {
            let Ok(start) = rustix::fs::seek(self.file.as_fd(), SeekFrom::Data(at)) else {
                break; // no data past `at`
            };
            let stop = rustix::fs::seek(self.file.as_fd(), SeekFrom::Hole(start))
                .unwrap_or(end)
                .min(end);
            mark(start as usize..stop as usize);
            at = stop.max(start + 1);
        }
        data
    }
}

/// A new memory file as long as a tail from `from`.
fn memory_file(from: usize) -> io::Result<OwnedFd> {
    let file = memfd_create("runbox-memory-tail", MemfdFlags::CLOEXEC)?;
    rustix::fs::ftruncate(&file, (SPAN - from) as u64)?;
    Ok(file)
}

/// Maps `range` of `file` over the same range of the tail of the memory at `at`:
/// readable and writable below the memory's size, inaccessible past it (as wasmtime had
/// it, which makes more accessible as it grows).
fn map(file: &OwnedFd, at: Placement, range: Range<usize>, sharing: MapFlags) -> io::Result<()> {
    if range.is_empty() {
        return Ok(());
    }
    let start = (at.base + at.from + range.start) as *mut std::ffi::c_void;
    let accessible = (at.size - at.from).clamp(range.start, range.end) - range.start;
    // SAFETY: the range is the memory's own reservation past its start-up size, which
    // only this memory uses; its instance is at rest (no guest code runs), and what it
    // reads there afterwards is what it held before (or, for a fresh instance, what the
    // copy it becomes holds).
    unsafe {
        mmap(
            start,
            range.len(),
            ProtFlags::empty(),
            sharing | MapFlags::FIXED | MapFlags::NORESERVE,
            file,
            range.start as u64,
        )?;
        if accessible > 0 {
            mprotect(
                start,
                accessible,
                MprotectFlags::READ | MprotectFlags::WRITE,
            )?;
        }
    }
    Ok(())
}

/// Maps each overlay privately from its file over the tail of the memory at `at` (they
/// lie below its size, checked by whoever made them).
fn map_overlays(overlays: &[Overlay], at: Placement) -> io::Result<()> {
    for overlay in overlays {
        let start = (at.base + at.from + overlay.at) as *mut std::ffi::c_void;
        // SAFETY: as in `map`; the overlay lies inside the tail's accessible part.
        unsafe {
            mmap(
                start,
                overlay.len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::FIXED | MapFlags::NORESERVE,
                &*overlay.file,
                overlay.offset,
            )?;
        }
    }
    Ok(())
}

/// A stand-in for a guest's memory in tests: a reservation made as wasmtime makes one.
#[cfg(test)]
pub mod test_memory {
    use super::{Placement, SPAN};
    use rustix::mm::{mmap_anonymous, mprotect, munmap, MapFlags, MprotectFlags, ProtFlags};

    /// A reservation as wasmtime makes one: `SPAN` bytes, `size` of them accessible.
    pub struct Reserved(*mut u8);

    impl Reserved {
        pub fn new(size: usize) -> Reserved {
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

        pub fn at(&self, from: usize, size: usize) -> Placement {
            Placement {
                base: self.0 as usize,
                from,
                size,
            }
        }

        /// Grows the accessible part as wasmtime does.
        pub fn grow(&self, from: usize, to: usize) {
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
        pub fn bytes(&self, len: usize) -> &mut [u8] {
            unsafe { std::slice::from_raw_parts_mut(self.0, len) }
        }
    }

    impl Drop for Reserved {
        fn drop(&mut self) {
            unsafe { munmap(self.0.cast(), SPAN) }.unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_memory::Reserved;
    use super::*;

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
    fn an_adopted_file_holds_what_was_written_into_it_and_is_written_through() {
        let page = page_size();
        let from = 2 * page;
        let memory = Reserved::new(from);
        memory.grow(from, from + 4 * page);
        let file = TailFile::new(from).unwrap();
        {
            let window = file.window(4 * page).unwrap();
            unsafe { std::ptr::write_bytes(window.as_mut_ptr().add(page), 5, 10) };
        }
        let tail = Tail::adopt(file, memory.at(from, from + 4 * page)).unwrap();
        let bytes = memory.bytes(from + 4 * page);
        assert_eq!(
            &bytes[from + page..from + page + 11],
            &[5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 0]
        );
        let holding = tail.holding_data(&bytes[from..]);
        assert_eq!(holding, [false, true, false, false]);
        assert!(TailFile::new(from).unwrap().window(0).is_err());
    }

    #[test]
    fn overlays_stay_over_a_frozen_tail_and_go_with_its_copies() {
        let page = page_size();
        let from = 2 * page;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        std::fs::write(&path, [vec![0u8; page], vec![9u8; 2 * page]].concat()).unwrap();
        let entry = Arc::new(File::open(&path).unwrap());
        let source = Reserved::new(from);
        source.grow(from, from + 4 * page);
        let mut file = TailFile::new(from).unwrap();
        file.set_overlays(vec![Overlay {
            file: entry,
            offset: page as u64,
            at: page,
            len: 2 * page,
        }]);
        let mut tail = Tail::adopt(file, source.at(from, from + 4 * page)).unwrap();
        let bytes = source.bytes(from + 4 * page);
        assert_eq!(bytes[from + page], 9);
        bytes[from] = 1; // onto the tail file
        bytes[from + 2 * page] = 2; // over the overlay, privately
        let written = tail.written_since_frozen(&bytes[from..]);
        assert_eq!(&written[..4], [false, false, true, false]);
        let frozen = tail.freeze(source.at(from, from + 4 * page)).unwrap();
        assert_eq!(
            (bytes[from], bytes[from + page], bytes[from + 2 * page]),
            (1, 9, 2)
        );
        let copy = Reserved::new(from);
        copy.grow(from, from + 4 * page);
        Tail::copy_of(&frozen, copy.at(from, from + 4 * page)).unwrap();
        let copied = copy.bytes(from + 4 * page);
        // The file's byte and the overlay's; what the source wrote over the overlay is
        // copied by whoever forks (it is in `written_since_frozen`).
        assert_eq!(
            (copied[from], copied[from + page], copied[from + 2 * page]),
            (1, 9, 9)
        );
        assert_eq!(
            std::fs::read(&path).unwrap()[2 * page],
            9,
            "the entry is never written"
        );
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
