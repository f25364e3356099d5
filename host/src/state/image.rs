//! What an instance changed: per memory its size and the runs of bytes that differ from a
//! fresh instance's, and every mutable global.

use serde::{Deserialize, Serialize};

use super::tail::{FrozenTail, TailFile};
use std::sync::{Arc, Mutex};

/// One linear memory, as far as it differs from a fresh instance's after start-up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryImage {
    /// Its size, in 64 KiB pages.
    pub pages: u32,
    /// Runs of changed bytes, `(offset, length)`, in order and apart.
    pub runs: Vec<(u32, u32)>,
    /// The runs' bytes, one after another.
    pub bytes: Vec<u8>,
    /// What the memory's tail is mapped from before the runs are written over it (the
    /// runs then hold only what is not in it). Never stored: a stored image holds every
    /// changed byte in its runs.
    #[serde(skip)]
    pub tail: Option<ImageTail>,
}

/// The tail of a memory image, past its start-up size.
#[derive(Debug, Clone)]
pub enum ImageTail {
    /// A fork's: the source's tail, frozen, which each copy maps privately.
    Frozen(FrozenTail),
    /// A stored image's, decompressed into a file of its own, which the one instance
    /// restored from the image maps and writes through (taken by the first restore).
    Filled(Arc<Mutex<Option<TailFile>>>),
}

impl PartialEq for ImageTail {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (ImageTail::Frozen(a), ImageTail::Frozen(b)) => a == b,
            (ImageTail::Filled(a), ImageTail::Filled(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for ImageTail {}

/// What an instance is right after its start-up (for a session: its instance made and
/// the session opened): its memories' sizes in pages, and how many host resources its
/// guest holds. Start-up is deterministic, so every fresh instance of the same component
/// starts the same; an image is written only into one that did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Startup {
    pub pages: Vec<u32>,
    pub resources: usize,
}

/// A component instance's state: the start-up it was taken against, its memories, and
/// its mutable globals' values (each as its bits), in the order of the accessors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceImage {
    pub startup: Startup,
    pub memories: Vec<MemoryImage>,
    pub globals: Vec<u64>,
}

/// A session's state: its plugin's instance, and each resident program the plugin
/// keeps (a reactor tool run in turns), in the order it started them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionImage {
    pub plugin: InstanceImage,
    pub residents: Vec<InstanceImage>,
}

impl SessionImage {
    /// What the instances restored from it hold in their memories, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.plugin.memory_bytes()
            + self
                .residents
                .iter()
                .map(InstanceImage::memory_bytes)
                .sum::<u64>()
    }

    /// The changed bytes it holds.
    pub fn changed_bytes(&self) -> u64 {
        self.plugin.changed_bytes()
            + self
                .residents
                .iter()
                .map(InstanceImage::changed_bytes)
                .sum::<u64>()
    }
}

impl InstanceImage {
    /// The changed bytes it holds (past any shared tail).
    pub fn changed_bytes(&self) -> u64 {
        self.memories.iter().map(|m| m.bytes.len() as u64).sum()
    }

    /// Whether it shares a tail with the instance it was taken of (so it cannot be
    /// stored).
    pub fn shares_a_tail(&self) -> bool {
        self.memories.iter().any(|m| m.tail.is_some())
    }

    /// What an instance restored from it holds in its memories, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.memories.iter().map(|m| u64::from(m.pages) << 16).sum()
    }
}

impl MemoryImage {
    /// Adds `bytes` at `offset`, joining the run before when it ends there.
    pub(crate) fn push(&mut self, offset: usize, bytes: &[u8]) {
        let (offset, len) = (offset as u32, bytes.len() as u32);
        match self.runs.last_mut() {
            Some((start, run)) if *start + *run == offset => *run += len,
            _ => self.runs.push((offset, len)),
        }
        self.bytes.extend_from_slice(bytes);
    }

    /// Each run with its bytes.
    pub fn each_run(&self) -> impl Iterator<Item = (u32, &[u8])> {
        let mut at = 0usize;
        self.runs.iter().map(move |&(offset, len)| {
            let bytes = &self.bytes[at..at + len as usize];
            at += len as usize;
            (offset, bytes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjacent_pieces_join_into_one_run() {
        let mut m = MemoryImage::default();
        m.push(0, b"ab");
        m.push(2, b"cd");
        m.push(10, b"x");
        assert_eq!(m.runs, [(0, 4), (10, 1)]);
        let runs: Vec<_> = m.each_run().collect();
        assert_eq!(runs, [(0, &b"abcd"[..]), (10, &b"x"[..])]);
    }
}
