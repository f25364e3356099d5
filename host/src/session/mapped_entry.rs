//! A stored entry's file mapped read-only into the host, so that its image's pages are
//! read where the kernel keeps them (each once, as they are decompressed) instead of
//! copied into the heap first.
//!
//! The store only ever replaces an entry by renaming a new file over it and removes one by
//! unlinking it, neither of which changes a file already mapped. (A file cut short by
//! something outside runbox while mapped would fault the reader.)

use std::fs::File;
use std::io;

use bytes::Bytes;
use rustix::mm::{mmap, munmap, MapFlags, ProtFlags};

/// Below this an entry is read into the heap: mapping costs more than copying.
const MAP_FROM_BYTES: u64 = 1 << 20;

/// The bytes of `file`, `len` long: mapped when large.
pub fn read_entry(file: &File, len: u64) -> io::Result<Bytes> {
    if len < MAP_FROM_BYTES {
        let mut bytes = Vec::with_capacity(len as usize);
        io::Read::read_to_end(&mut &*file, &mut bytes)?;
        return Ok(Bytes::from(bytes));
    }
    let len = usize::try_from(len).map_err(io::Error::other)?;
    // SAFETY: a new private read-only mapping of a file the store never changes in place
    // (see above), unmapped only when the last `Bytes` of it is dropped.
    let ptr = unsafe {
        mmap(
            std::ptr::null_mut(),
            len,
            ProtFlags::READ,
            MapFlags::PRIVATE,
            file,
            0,
        )?
    };
    Ok(Bytes::from_owner(Mapped {
        ptr: ptr.cast(),
        len,
    }))
}

/// A read-only mapping, unmapped when dropped.
struct Mapped {
    ptr: *const u8,
    len: usize,
}

// SAFETY: read-only memory, never written after it is mapped.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl AsRef<[u8]> for Mapped {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: the mapping lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `read_entry`, used by no one after this.
        let _ = unsafe { munmap(self.ptr as *mut _, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_files_read_back_the_same() {
        for len in [10usize, (MAP_FROM_BYTES as usize) + 7] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("e");
            let contents: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &contents).unwrap();
            let bytes = read_entry(&File::open(&path).unwrap(), len as u64).unwrap();
            // Gone from the directory, still readable.
            std::fs::remove_file(&path).unwrap();
            assert_eq!(&bytes[..], &contents[..]);
            assert_eq!(&bytes.slice(3..9)[..], &contents[3..9]);
        }
    }
}
