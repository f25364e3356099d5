//! A session image as the session store keeps it: each memory's changed bytes cut into
//! 64 KiB pages, each distinct page kept once, named by its BLAKE3 hash and compressed
//! with zstd. Reading one back checks the shape against the memories it describes and every
//! page against its name before anything is handed out: a stored image is data from a
//! shared directory, never trusted.

use std::collections::HashMap;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::image::{InstanceImage, MemoryImage, SessionImage, Startup};

/// The unit pages are cut, named and compressed in: a WebAssembly page.
const PAGE: usize = 64 * 1024;

/// zstd's fast end: an image is stored each time a session hibernates, and much of a
/// numeric session's memory (floats) hardly compresses at any level.
const LEVEL: i32 = -1;

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
    /// The distinct pages of every memory.
    pub pages: Vec<StoredPage>,
    /// The plugin's instance, then each resident's.
    pub instances: Vec<StoredInstance>,
}

/// One distinct page of changed bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPage {
    /// The BLAKE3 hash of its bytes (before compression): its name.
    pub blake3: [u8; 32],
    /// Its length before compression (a memory's last page may be short).
    pub len: u32,
    #[serde(with = "serde_bytes")]
    pub zstd: Vec<u8>,
}

/// An [`InstanceImage`] whose memories' bytes are pages of the [`StoredImage`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredInstance {
    pub startup: Startup,
    pub globals: Vec<u64>,
    pub memories: Vec<StoredMemory>,
}

/// A [`MemoryImage`] whose bytes are `contents`, pages by their index, one after another.
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
        let pages = distinct
            .par_iter()
            .map(|(name, page)| StoredPage {
                blake3: *name,
                len: page.len() as u32,
                zstd: zstd::bulk::compress(page, LEVEL).expect("zstd compresses a page in memory"),
            })
            .collect();
        StoredImage { pages, instances }
    }

    /// What instances restored from it hold in their memories, in bytes.
    pub fn memory_bytes(&self) -> u64 {
        self.instances
            .iter()
            .flat_map(|i| &i.memories)
            .map(|m| u64::from(m.pages) << 16)
            .sum()
    }

    /// Its compressed pages, in bytes: what it adds to a stored session.
    pub fn stored_bytes(&self) -> u64 {
        self.pages.iter().map(|p| p.zstd.len() as u64).sum()
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
            for memory in &instance.memories {
                memories.push(MemoryImage {
                    pages: memory.pages,
                    runs: memory.runs.clone(),
                    bytes: self.unpack(&memory.contents)?,
                    tail: None,
                });
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

    /// The bytes of `contents` (pages by index, shape checked), each page decompressed
    /// straight into its place and checked against its name there.
    fn unpack(&self, contents: &[u32]) -> Result<Vec<u8>, ImageError> {
        let len: usize = contents
            .iter()
            .map(|&n| self.pages[n as usize].len as usize)
            .sum();
        let mut bytes = vec![0u8; len];
        bytes
            .par_chunks_mut(PAGE)
            .zip(contents.par_iter())
            .try_for_each(|(place, &n)| {
                let page = &self.pages[n as usize];
                let n = n as usize;
                let written = zstd::bulk::decompress_to_buffer(&page.zstd, place)
                    .map_err(|e| ImageError::Decompress(n, e.to_string()))?;
                if written != place.len() || written != page.len as usize {
                    return Err(ImageError::Decompress(
                        n,
                        "it is not its stated length".into(),
                    ));
                }
                if *blake3::hash(place).as_bytes() != page.blake3 {
                    return Err(ImageError::Tampered(n));
                }
                Ok(())
            })?;
        Ok(bytes)
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
    use super::*;

    fn image() -> SessionImage {
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
                pages: vec![2],
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
        stored.pages[0].zstd = zstd::bulk::compress(&vec![8u8; PAGE], LEVEL).unwrap();
        assert!(matches!(
            stored.decode(u64::MAX),
            Err(ImageError::Tampered(0))
        ));
        let mut stored = StoredImage::encode(&image());
        stored.pages[1].zstd[0] ^= 0xff;
        assert!(stored.decode(u64::MAX).is_err());
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
