//! Which host pages of a memory an instance wrote since its memory was mapped.
//!
//! wasmtime maps a fresh instance's memory copy-on-write from its compiled image (or, past
//! the image, from nothing), so a page still backed by the image's file, or never touched,
//! holds what every fresh instance holds; a page the instance wrote became its own. The
//! kernel says which in `/proc/self/pagemap`: a page that is present and not backed by a
//! file or shared memory, or that was swapped out, was written. Where the page map cannot
//! be read, every page counts as written (larger images, the same result).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;

/// A page-map entry's bits (Documentation/admin-guide/mm/pagemap.rst).
const PRESENT: u64 = 1 << 63;
const SWAPPED: u64 = 1 << 62;
const FILE_OR_SHARED: u64 = 1 << 61;

/// Entries read at a time.
const BATCH: usize = 8192;

/// The size of a host page.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

fn pagemap() -> Option<&'static File> {
    static PAGEMAP: OnceLock<Option<File>> = OnceLock::new();
    PAGEMAP
        .get_or_init(|| match File::open("/proc/self/pagemap") {
            Ok(file) => Some(file),
            Err(e) => {
                tracing::warn!(
                    "cannot read /proc/self/pagemap ({e}): session snapshots copy every page"
                );
                None
            }
        })
        .as_ref()
}

/// For each host page of `memory` (which starts on a page boundary), whether it was
/// written.
pub fn written_pages(memory: &[u8]) -> Vec<bool> {
    let count = memory.len().div_ceil(page_size());
    match page_uses(memory.as_ptr() as usize, memory.len()) {
        Some(uses) => uses.into_iter().map(|u| u == PageUse::Own).collect(),
        None => vec![true; count],
    }
}

/// What the kernel holds for one host page of an instance's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageUse {
    /// Not mapped yet: its first touch will fault.
    Untouched,
    /// Mapped from a file or shared memory (read from the image, or a memory file's page).
    Mapped,
    /// The instance's own page (written over the image, or swapped out).
    Own,
}

/// For each host page from `start` (a page boundary) for `len` bytes, what the kernel
/// holds for it; `None` where the page map cannot be read.
pub fn page_uses(start: usize, len: usize) -> Option<Vec<PageUse>> {
    let page = page_size();
    let count = len.div_ceil(page);
    let map = pagemap().filter(|_| start.is_multiple_of(page))?;
    let mut uses = Vec::with_capacity(count);
    let mut entries = vec![0u8; BATCH * 8];
    let first = start / page;
    while uses.len() < count {
        let n = (count - uses.len()).min(BATCH);
        let buf = &mut entries[..n * 8];
        let offset = ((first + uses.len()) * 8) as u64;
        map.read_exact_at(buf, offset).ok()?;
        uses.extend(buf.chunks_exact(8).map(|entry| {
            let bits = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
            if bits & SWAPPED != 0 || (bits & PRESENT != 0 && bits & FILE_OR_SHARED == 0) {
                PageUse::Own
            } else if bits & PRESENT != 0 {
                PageUse::Mapped
            } else {
                PageUse::Untouched
            }
        }));
    }
    Some(uses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_page_is_seen_and_an_untouched_one_is_not() {
        if pagemap().is_none() {
            return;
        }
        use rustix::mm::{mmap_anonymous, munmap, MapFlags, ProtFlags};
        let page = page_size();
        let len = page * 4;
        let memory = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .unwrap()
        .cast::<u8>();
        unsafe { *memory.add(page * 2) = 1 };
        // Read, not written: the shared zero page, which counts as written (it is not a
        // file's) only until compared; the untouched page is absent.
        let _ = unsafe { std::ptr::read_volatile(memory.add(page)) };
        let written = written_pages(unsafe { std::slice::from_raw_parts(memory, len) });
        unsafe { munmap(memory.cast(), len) }.unwrap();
        assert_eq!(written.len(), 4);
        assert!(written[2], "{written:?}");
        assert!(!written[0] && !written[3], "{written:?}");
    }
}
