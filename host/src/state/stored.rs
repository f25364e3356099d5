//! A session image as the session store keeps it: each memory's changed bytes cut into
//! 64 KiB pages, each distinct page kept once, named by its BLAKE3 hash and compressed
//! with zstd (or kept as it is where zstd saves too little to pay for decompressing it:
//! random floats). The pages' stored bytes are the image's [`Payload`], which an entry
//! keeps apart from its record (`session/entry.rs`), so a read entry hands them out
//! without copying. Reading one back checks the shape against the memories it describes
//! and every page against its name: a stored image is data from a shared directory,
//! never trusted. Each memory's tail (past its start-up size) is decompressed straight
//! into a memory file the restored instance then maps, or mapped from the entry's file
//! (`unpack.rs`, `tail.rs`).

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

use bytes::Bytes;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::image::{InstanceImage, SessionImage, Startup};

/// The unit pages are cut, named and compressed in: a WebAssembly page.
pub(super) const PAGE: usize = 64 * 1024;

/// zstd's fast end: an image is stored each time a session hibernates, and much of a
/// numeric session's memory (floats) hardly compresses at any level.
const LEVEL: i32 = -1;

/// A page is kept as it is unless zstd makes it at least this much smaller (in 1/8ths
/// saved): decompressing costs more than reading the bytes saved.
const WORTH_COMPRESSING_EIGHTHS: usize = 1;

/// Why a stored image cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ImageError {
    #[error("page {0} of its memory image does not match its checksum (damaged or changed)")]
    Tampered(usize),
    #[error("page {0} of its memory image cannot be decompressed: {1}")]
    Decompress(usize, String),
    #[error("its memory image is malformed: {0}")]
    Malformed(String),
    #[error("its memory image holds {mib} MiB, more than the {limit_mib} MiB a session may use")]
    TooLarge { mib: u64, limit_mib: u64 },
}

/// A [`SessionImage`], stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredImage {
    /// The distinct pages of every memory: those kept as they are first, so that they lie
    /// page-aligned in an entry's file.
    pub pages: Vec<StoredPage>,
    /// The plugin's instance, then each resident's.
    pub instances: Vec<StoredInstance>,
    /// The file its payload was read from, if it was: pages kept as they are are mapped
    /// from it rather than copied.
    #[serde(skip)]
    pub file: Option<PayloadFile>,
}

/// A file holding an image's payload from `offset` on.
#[derive(Debug, Clone)]
pub struct PayloadFile {
    pub file: Arc<File>,
    pub offset: u64,
}

impl PartialEq for PayloadFile {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.file, &other.file) && self.offset == other.offset
    }
}

impl Eq for PayloadFile {}

/// One distinct page of changed bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPage {
    /// The BLAKE3 hash of its bytes (before compression): its name.
    pub blake3: [u8; 32],
    /// Its length before compression (a memory's last page may be short).
    pub len: u32,
    /// Whether it is kept as it is rather than compressed.
    pub raw: bool,
    /// Its stored bytes (zstd, or as it is).
    pub stored: Payload,
}

/// A page's stored bytes. In an entry's record only their length is written; the bytes
/// follow the record (`StoredImage::payload`, `StoredImage::attach_payload`). Equal when
/// their bytes are, wherever they lie.
#[derive(Debug, Clone, Default)]
pub struct Payload {
    len: u32,
    pub(super) bytes: Bytes,
    /// Where they lie in the image's payload (once attached).
    pub(super) at: u64,
}

impl Payload {
    pub fn new(bytes: impl Into<Bytes>) -> Payload {
        let bytes = bytes.into();
        Payload {
            len: bytes.len() as u32,
            bytes,
            at: 0,
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }

    /// Whether it holds no bytes (by its stated length, once read from a record).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PartialEq for Payload {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.bytes == other.bytes
    }
}

impl Eq for Payload {}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(self.bytes.len() as u32)
    }
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Payload {
            len: u32::deserialize(deserializer)?,
            bytes: Bytes::new(),
            at: 0,
        })
    }
}

/// An [`InstanceImage`] whose memories' bytes are pages of the [`StoredImage`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredInstance {
    pub startup: Startup,
    pub globals: Vec<u64>,
    pub memories: Vec<StoredMemory>,
}

/// A [`MemoryImage`](super::MemoryImage) whose bytes are `contents`, pages by their index, one after another.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredMemory {
    pub pages: u32,
    pub runs: Vec<(u32, u32)>,
    pub contents: Vec<u32>,
}

impl StoredImage {
    /// `image`, cut into pages, each distinct one compressed.
    pub fn encode(image: &SessionImage) -> StoredImage {
        let mut index: HashMap<[u8; 32], u32> = HashMap::new();
        let mut distinct: Vec<([u8; 32], &[u8])> = Vec::new();
        let mut instances = Vec::new();
        for instance in std::iter::once(&image.plugin).chain(&image.residents) {
            let memories = instance
                .memories
                .iter()
                .map(|memory| StoredMemory {
                    pages: memory.pages,
                    runs: memory.runs.clone(),
                    contents: memory
                        .bytes
                        .chunks(PAGE)
                        .map(|page| {
                            let name: [u8; 32] = *blake3::hash(page).as_bytes();
                            *index.entry(name).or_insert_with(|| {
                                distinct.push((name, page));
                                distinct.len() as u32 - 1
                            })
                        })
                        .collect(),
                })
                .collect();
            instances.push(StoredInstance {
                startup: instance.startup.clone(),
                globals: instance.globals.clone(),
                memories,
            });
        }
        let pages: Vec<StoredPage> = distinct
            .par_iter()
            .map(|(name, page)| {
                let zstd =
                    zstd::bulk::compress(page, LEVEL).expect("zstd compresses a page in memory");
                let raw = zstd.len() * 8 > page.len() * (8 - WORTH_COMPRESSING_EIGHTHS);
                StoredPage {
                    blake3: *name,
                    len: page.len() as u32,
                    raw,
                    stored: Payload::new(if raw { page.to_vec() } else { zstd }),
                }
            })
            .collect();
        // Those kept as they are first (a stable order), and every memory's contents
        // renumbered to match.
        let mut order: Vec<usize> = (0..pages.len()).collect();
        order.sort_by_key(|&n| !pages[n].raw);
        let mut renumbered = vec![0u32; pages.len()];
        for (new, &old) in order.iter().enumerate() {
            renumbered[old] = new as u32;
        }
        for memory in instances.iter_mut().flat_map(|i| &mut i.memories) {
            for n in &mut memory.contents {
                *n = renumbered[*n as usize];
            }
        }
        let mut pages: Vec<Option<StoredPage>> = pages.into_iter().map(Some).collect();
        let pages = order
            .iter()
            .map(|&n| pages[n].take().expect("each once"))
            .collect();
        StoredImage {
            pages,
            instances,
            file: None,
        }
    }

    /// What instances restored from it hold in their memories, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.instances
            .iter()
            .flat_map(|i| &i.memories)
            .map(|m| u64::from(m.pages) << 16)
            .sum()
    }

    /// Its stored pages, in bytes: what it adds to a stored session.
    pub fn stored_bytes(&self) -> u64 {
        self.pages.iter().map(|p| p.stored.bytes.len() as u64).sum()
    }

    /// Every page's stored bytes, one after another: what an entry writes after its record.
    pub fn payload(&self) -> impl Iterator<Item = &[u8]> {
        self.pages.iter().map(|p| p.stored.as_slice())
    }

    /// Gives each page, read from a record (which holds only their lengths), its bytes out
    /// of `payload`, which must hold exactly them, and was read from `file` if given.
    pub fn attach_payload(
        &mut self,
        payload: Bytes,
        file: Option<PayloadFile>,
    ) -> Result<(), ImageError> {
        let mut at = 0usize;
        for page in &mut self.pages {
            let end = at + page.stored.len as usize;
            if end > payload.len() {
                return Err(ImageError::Malformed("its pages run past the entry".into()));
            }
            page.stored.bytes = payload.slice(at..end);
            page.stored.at = at as u64;
            at = end;
        }
        self.file = file;
        if at != payload.len() {
            return Err(ImageError::Malformed(
                "the entry holds bytes past its pages".into(),
            ));
        }
        Ok(())
    }

    /// The image again, once its shape and every page check out, for instances that may
    /// hold `max_memory_bytes` in all.
    pub fn decode(&self, max_memory_bytes: u64) -> Result<SessionImage, ImageError> {
        let memory = self.memory_bytes();
        if memory > max_memory_bytes {
            return Err(ImageError::TooLarge {
                mib: memory >> 20,
                limit_mib: max_memory_bytes >> 20,
            });
        }
        self.check_shape()?;
        let mut instances = Vec::with_capacity(self.instances.len());
        for instance in &self.instances {
            let mut memories = Vec::with_capacity(instance.memories.len());
            for (m, memory) in instance.memories.iter().enumerate() {
                // Past its start-up size a memory is its session's own: that part goes
                // into a file of its own (where the host can make one).
                let from = instance.startup.pages.get(m).map(|&p| p as usize * PAGE);
                memories.push(self.unpack(memory, from)?);
            }
            instances.push(InstanceImage {
                startup: instance.startup.clone(),
                globals: instance.globals.clone(),
                memories,
            });
        }
        let mut instances = instances.into_iter();
        let plugin = instances
            .next()
            .ok_or_else(|| ImageError::Malformed("it holds no instance".into()))?;
        Ok(SessionImage {
            plugin,
            residents: instances.collect(),
        })
    }

    /// Every memory's runs lie inside it, in order, and are exactly as long as its pages;
    /// every page it names exists and is at most a page long.
    fn check_shape(&self) -> Result<(), ImageError> {
        let bad = |why: String| Err(ImageError::Malformed(why));
        if let Some(n) = self.pages.iter().position(|p| p.len as usize > PAGE) {
            return bad(format!("page {n} is longer than a page"));
        }
        for (i, instance) in self.instances.iter().enumerate() {
            for (m, memory) in instance.memories.iter().enumerate() {
                let size = u64::from(memory.pages) << 16;
                let mut end = 0u64;
                let mut run_bytes = 0u64;
                for &(offset, len) in &memory.runs {
                    let (offset, len) = (u64::from(offset), u64::from(len));
                    if offset < end || offset + len > size {
                        return bad(format!(
                            "a run of memory {m} of instance {i} overlaps another or lies outside it"
                        ));
                    }
                    end = offset + len;
                    run_bytes += len;
                }
                let mut content_bytes = 0u64;
                for (k, &n) in memory.contents.iter().enumerate() {
                    let Some(page) = self.pages.get(n as usize) else {
                        return bad(format!("memory {m} of instance {i} names no page {n}"));
                    };
                    // Only the last page of a memory may be short.
                    if (page.len as usize) < PAGE && k + 1 != memory.contents.len() {
                        return bad(format!(
                            "memory {m} of instance {i} has a short page inside"
                        ));
                    }
                    content_bytes += u64::from(page.len);
                }
                if content_bytes != run_bytes {
                    return bad(format!(
                        "memory {m} of instance {i} has {content_bytes} bytes of pages for {run_bytes} bytes of runs"
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::image::{ImageTail, MemoryImage};
    use super::*;

    /// An image whose memory started at `startup_pages` (its tail past them).
    fn image_from(startup_pages: u32) -> SessionImage {
        let mut memory = MemoryImage {
            pages: 4,
            ..MemoryImage::default()
        };
        // Two equal pages (stored once) and a short tail.
        memory.push(0, &vec![7u8; PAGE]);
        memory.push(PAGE, &vec![7u8; PAGE]);
        memory.push(3 * PAGE, b"tail");
        let instance = InstanceImage {
            startup: Startup {
                pages: vec![startup_pages],
                resources: 3,
            },
            memories: vec![memory],
            globals: vec![1, 2, 3],
        };
        SessionImage {
            plugin: instance.clone(),
            residents: vec![instance],
        }
    }

    /// An image with no tail: it comes back as it was.
    fn image() -> SessionImage {
        image_from(4)
    }

    /// `stored`'s pages given their bytes again through the payload, as an entry does.
    fn through_payload(stored: &StoredImage) -> StoredImage {
        let payload: Vec<u8> = stored.payload().flatten().copied().collect();
        let record = postcard::to_stdvec(stored).unwrap();
        let mut read: StoredImage = postcard::from_bytes(&record).unwrap();
        read.attach_payload(Bytes::from(payload), None).unwrap();
        read
    }

    #[test]
    fn the_payload_goes_apart_from_the_record_and_back_exactly() {
        let stored = StoredImage::encode(&image());
        let read = through_payload(&stored);
        assert_eq!(read, stored);
        let mut short =
            postcard::from_bytes::<StoredImage>(&postcard::to_stdvec(&stored).unwrap()).unwrap();
        let payload: Vec<u8> = stored.payload().flatten().copied().collect();
        assert!(short
            .attach_payload(Bytes::from(payload[1..].to_vec()), None)
            .is_err());
        assert!(short
            .attach_payload(Bytes::from([payload.clone(), vec![0]].concat()), None)
            .is_err());
    }

    #[test]
    fn a_tail_comes_back_in_its_own_file() {
        let image = image_from(2);
        let decoded = StoredImage::encode(&image).decode(u64::MAX).unwrap();
        let memory = &decoded.plugin.memories[0];
        // The two pages before the tail stay in the image; the four bytes past it are
        // in the file, at their place.
        assert_eq!(memory.runs, [(0, 2 * PAGE as u32)]);
        assert_eq!(memory.bytes, vec![7u8; 2 * PAGE]);
        let Some(ImageTail::Filled(file)) = &memory.tail else {
            panic!("no tail file: {:?}", memory.tail);
        };
        let file = file.lock().unwrap().take().unwrap();
        let window = file.window(2 * PAGE).unwrap();
        let tail = unsafe { std::slice::from_raw_parts(window.as_mut_ptr(), 2 * PAGE) };
        assert_eq!(&tail[PAGE..PAGE + 5], b"tail\0");
        assert!(tail[..PAGE].iter().all(|b| *b == 0));
    }

    /// A session whose one instance has `memory`, started at `startup_pages`.
    fn one_memory(memory: MemoryImage, startup_pages: u32) -> SessionImage {
        SessionImage {
            plugin: InstanceImage {
                startup: Startup {
                    pages: vec![startup_pages],
                    resources: 0,
                },
                memories: vec![memory],
                globals: vec![],
            },
            residents: vec![],
        }
    }

    fn noise(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    /// `stored` read back as from an entry's file (`entry` in the directory given back),
    /// its payload from 4096 on.
    fn read_from_a_file(stored: &StoredImage) -> (tempfile::TempDir, StoredImage) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("entry");
        let payload: Vec<u8> = stored.payload().flatten().copied().collect();
        std::fs::write(&path, [vec![0u8; 4096], payload.clone()].concat()).unwrap();
        let record = postcard::to_stdvec(stored).unwrap();
        let mut read: StoredImage = postcard::from_bytes(&record).unwrap();
        let file = PayloadFile {
            file: Arc::new(File::open(&path).unwrap()),
            offset: 4096,
        };
        read.attach_payload(Bytes::from(payload), Some(file))
            .unwrap();
        (dir, read)
    }

    #[test]
    fn scattered_pages_are_copied_into_the_tail_rather_than_mapped_one_by_one() {
        // Past its start, pages of noise between pages of sevens: each noise page would
        // be an overlay of its own.
        let mut memory = MemoryImage {
            pages: 201,
            ..MemoryImage::default()
        };
        for p in 0..100 {
            memory.push((1 + 2 * p) * PAGE, &noise(PAGE, p as u64 + 1));
            memory.push((2 + 2 * p) * PAGE, &vec![7u8; PAGE]);
        }
        let image = one_memory(memory, 1);
        let (_dir, read) = read_from_a_file(&StoredImage::encode(&image));
        let decoded = read.decode(u64::MAX).unwrap();
        let Some(ImageTail::Filled(tail)) = &decoded.plugin.memories[0].tail else {
            panic!("no tail");
        };
        let file = tail.lock().unwrap().take().unwrap();
        assert_eq!(file.overlay_count(), 0, "copied, not mapped");
        let window = file.window(200 * PAGE).unwrap();
        let tail = unsafe { std::slice::from_raw_parts(window.as_mut_ptr(), 200 * PAGE) };
        for p in 0..100 {
            assert_eq!(
                &tail[2 * p * PAGE..(2 * p + 1) * PAGE],
                &noise(PAGE, p as u64 + 1)[..]
            );
            assert!(tail[(2 * p + 1) * PAGE..(2 * p + 2) * PAGE]
                .iter()
                .all(|b| *b == 7));
        }
    }

    #[test]
    fn pages_kept_as_they_are_in_a_tail_are_mapped_from_the_entrys_file() {
        use crate::state::tail::{test_memory::Reserved, Tail};
        // A memory that started at one page and grew to four: two pages of noise (kept
        // as they are) and one of sevens (compressed) past its start.
        let mut memory = MemoryImage {
            pages: 4,
            ..MemoryImage::default()
        };
        let (a, b) = (noise(PAGE, 1), noise(PAGE, 2));
        memory.push(PAGE, &a);
        memory.push(2 * PAGE, &b);
        memory.push(3 * PAGE, &vec![7u8; PAGE]);
        let image = one_memory(memory, 1);
        let stored = StoredImage::encode(&image);
        assert!(stored.pages[0].raw && stored.pages[1].raw && !stored.pages[2].raw);
        let (dir, read) = read_from_a_file(&stored);
        let path = dir.path().join("entry");
        let record = postcard::to_stdvec(&stored).unwrap();
        let decoded = read.decode(u64::MAX).unwrap();
        let Some(ImageTail::Filled(tail)) = &decoded.plugin.memories[0].tail else {
            panic!("no tail");
        };
        let tail = tail.lock().unwrap().take().unwrap();
        assert_eq!(tail.overlay_count(), 1, "the two noise pages, one mapping");
        // Into a memory reserved as wasmtime reserves one.
        let reserved = Reserved::new(4 * PAGE);
        let at = reserved.at(PAGE, 4 * PAGE);
        let adopted = Tail::adopt(tail, at).unwrap();
        let bytes = reserved.bytes(4 * PAGE);
        assert_eq!(&bytes[PAGE..2 * PAGE], &a[..]);
        assert_eq!(&bytes[2 * PAGE..3 * PAGE], &b[..]);
        assert!(bytes[3 * PAGE..].iter().all(|x| *x == 7));
        // Written over, privately: the entry's file keeps its bytes.
        bytes[PAGE] ^= 0xff;
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(&on_disk[4096..4096 + PAGE], &a[..]);
        let holding = adopted.holding_data(&bytes[PAGE..]);
        assert!(
            holding.iter().all(|h| *h),
            "every page past the start holds data"
        );
        drop(reserved);
        // A changed page in the file is refused before anything is mapped.
        let mut changed = on_disk;
        changed[4096 + 10] ^= 1;
        std::fs::write(&path, &changed).unwrap();
        let mut read: StoredImage = postcard::from_bytes(&record).unwrap();
        let file = PayloadFile {
            file: Arc::new(File::open(&path).unwrap()),
            offset: 4096,
        };
        read.attach_payload(Bytes::from(changed[4096..].to_vec()), Some(file))
            .unwrap();
        assert!(matches!(
            read.decode(u64::MAX),
            Err(ImageError::Tampered(0))
        ));
    }

    #[test]
    fn random_bytes_are_kept_as_they_are() {
        let mut memory = MemoryImage {
            pages: 1,
            ..MemoryImage::default()
        };
        let noise = noise(PAGE, 0x9e3779b97f4a7c15);
        memory.push(0, &noise);
        let image = one_memory(memory, 1);
        let stored = StoredImage::encode(&image);
        assert!(stored.pages[0].raw);
        assert_eq!(stored.decode(u64::MAX).unwrap(), image);
        let sevens = StoredImage::encode(&image_from(4));
        assert!(sevens.pages.iter().any(|p| !p.raw), "sevens compress");
    }

    #[test]
    fn an_image_comes_back_whole_with_equal_pages_stored_once() {
        let image = image();
        let stored = StoredImage::encode(&image);
        assert_eq!(
            stored.pages.len(),
            2,
            "two distinct pages across both instances"
        );
        assert!(stored.stored_bytes() < 1024, "{}", stored.stored_bytes());
        assert_eq!(stored.memory_bytes(), 8 * PAGE as u64);
        assert_eq!(stored.decode(u64::MAX).unwrap(), image);
    }

    #[test]
    fn a_changed_page_is_refused() {
        let mut stored = StoredImage::encode(&image());
        // Another page of the same length, compressed: only its name tells.
        let sevens = stored.pages.iter().position(|p| !p.raw).unwrap();
        stored.pages[sevens].stored =
            Payload::new(zstd::bulk::compress(&vec![8u8; PAGE], LEVEL).unwrap());
        assert!(matches!(
            stored.decode(u64::MAX),
            Err(ImageError::Tampered(n)) if n == sevens
        ));
        // A byte changed in a compressed page, and in one kept as it is.
        for n in 0..2 {
            let mut stored = StoredImage::encode(&image());
            let mut changed = stored.pages[n].stored.as_slice().to_vec();
            changed[0] ^= 0xff;
            stored.pages[n].stored = Payload::new(changed);
            assert!(stored.decode(u64::MAX).is_err(), "page {n}");
        }
    }

    #[test]
    fn a_malformed_or_oversized_image_is_refused_before_it_is_decompressed() {
        let stored = StoredImage::encode(&image());
        assert!(matches!(
            stored.decode(PAGE as u64),
            Err(ImageError::TooLarge { .. })
        ));
        let mut outside = stored.clone();
        outside.instances[0].memories[0].runs[0] = (u32::MAX - 4, 8);
        assert!(matches!(
            outside.decode(u64::MAX),
            Err(ImageError::Malformed(_))
        ));
        let mut missing = stored.clone();
        missing.instances[1].memories[0].contents[0] = 99;
        assert!(matches!(
            missing.decode(u64::MAX),
            Err(ImageError::Malformed(_))
        ));
        let mut short = stored.clone();
        short.instances[0].memories[0].runs[1].1 -= 1;
        assert!(matches!(
            short.decode(u64::MAX),
            Err(ImageError::Malformed(_))
        ));
        let mut empty = stored;
        empty.instances.clear();
        assert!(matches!(
            empty.decode(u64::MAX),
            Err(ImageError::Malformed(_))
        ));
    }
}
