//! Unpacking a [`StoredImage`]'s memories: every page decompressed (or, kept as it is,
//! read where the entry holds it) straight into its place, and checked against its name
//! there. A memory's runs before its tail go into the image's bytes; those in its tail
//! into a tail file, or, for pages kept as they are in an entry's file, into overlays
//! mapped from that file (`tail.rs`).

use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::image::{ImageTail, MemoryImage};
use super::stored::{ImageError, StoredImage, StoredMemory, PAGE};
use super::tail::{Overlay, TailFile};
use super::written::page_size;

/// Past this many overlays a memory's stored pages are copied rather than mapped: each
/// overlay is a mapping of its own, and a process has a bounded number (65,530 by
/// default) that every session's memories share, so a session that stored its pages
/// scattered must not take many. (A DataFrame's pages lie in a handful of runs.)
const MAX_OVERLAYS: usize = 64;

/// Where a piece of a memory's packed run bytes goes: at `at` in the image's bytes, or
/// (`tail`) in its tail file.
struct Place {
    packed: usize,
    len: usize,
    tail: bool,
    at: usize,
}

/// The two places a memory's pages are written to at once, from many threads: the image's
/// bytes and its tail's window, both alive until every page is placed. Each page is
/// written to the pieces of runs its packed bytes cover, and no two pages cover the same.
struct Targets {
    low: *mut u8,
    tail: *mut u8,
}

// SAFETY: see above: writers write apart.
unsafe impl Sync for Targets {}

impl StoredImage {
    /// `memory` (shape checked) with its pages decompressed, each straight into its
    /// place and checked against its name there: the runs before `from` into the image's
    /// bytes, those past it into a tail file.
    pub(super) fn unpack(
        &self,
        memory: &StoredMemory,
        from: Option<usize>,
    ) -> Result<MemoryImage, ImageError> {
        let size = memory.pages as usize * PAGE;
        let tail_runs = from.filter(|&from| {
            memory
                .runs
                .iter()
                .any(|&(offset, len)| offset as usize + len as usize > from)
        });
        let tail = tail_runs.and_then(|from| {
            let file = TailFile::new(from).ok()?;
            let window = file.window(size - from).ok()?;
            Some((from, file, window))
        });
        let split = tail.as_ref().map_or(usize::MAX, |(from, ..)| *from);
        // The runs, cut at the tail, each with where its bytes go.
        let mut runs = Vec::new();
        let mut low_len = 0usize;
        let mut places = Vec::new(); // (place in the packed bytes, length, low or tail, at)
        let mut packed = 0usize;
        for &(offset, len) in &memory.runs {
            let (offset, len) = (offset as usize, len as usize);
            let low = len.min(split.saturating_sub(offset));
            if low > 0 {
                runs.push((offset as u32, low as u32));
                places.push(Place {
                    packed,
                    len: low,
                    tail: false,
                    at: low_len,
                });
                low_len += low;
            }
            if low < len {
                let start = offset + low;
                places.push(Place {
                    packed: packed + low,
                    len: len - low,
                    tail: true,
                    at: start - split,
                });
            }
            packed += len;
        }
        let mut bytes = vec![0u8; low_len];
        let targets = Targets {
            low: bytes.as_mut_ptr(),
            tail: tail
                .as_ref()
                .map_or(std::ptr::null_mut(), |(_, _, w)| w.as_mut_ptr()),
        };
        let offsets: Vec<usize> = memory
            .contents
            .iter()
            .scan(0usize, |at, &n| {
                let here = *at;
                *at += self.pages[n as usize].len as usize;
                Some(here)
            })
            .collect();
        let pieces_of = |start: usize, len: usize| {
            let first = places.partition_point(|p| p.packed + p.len <= start);
            let last = first + places[first..].partition_point(|p| p.packed < start + len);
            &places[first..last]
        };
        // Which pieces are mapped from the entry's file rather than copied: planned from
        // the record alone, before any page is read.
        let mut overlays = Vec::new();
        for (&n, &start) in memory.contents.iter().zip(&offsets) {
            let len = self.pages[n as usize].len as usize;
            for piece in pieces_of(start, len) {
                if let Some(overlay) = self.overlay(n as usize, start, piece) {
                    match overlays.last_mut() {
                        Some(Overlay {
                            offset, at, len, ..
                        }) if *at + *len == overlay.at
                            && *offset + *len as u64 == overlay.offset =>
                        {
                            *len += overlay.len
                        }
                        _ => overlays.push(overlay),
                    }
                }
            }
        }
        overlays.sort_by_key(|o| o.at);
        let mapping = tail.is_some() && overlays.len() <= MAX_OVERLAYS;
        tracing::debug!(
            overlays = overlays.len(),
            mapping,
            "a stored memory's tail unpacked"
        );
        memory
            .contents
            .par_iter()
            .zip(offsets.par_iter())
            .try_for_each_init(Vec::new, |scratch, (&n, &start)| {
                let len = self.pages[n as usize].len as usize;
                let pieces = pieces_of(start, len);
                self.place_page(n as usize, start, pieces, &targets, scratch, mapping)
            })?;
        Ok(MemoryImage {
            pages: memory.pages,
            runs,
            bytes,
            tail: tail.map(|(_, mut file, window)| {
                drop(window);
                if mapping {
                    file.set_overlays(overlays);
                }
                ImageTail::Filled(Arc::new(Mutex::new(Some(file))))
            }),
        })
    }

    /// The overlay that maps `piece` of page `n` (the packed bytes from `start`) from the
    /// entry's file: only for a page kept as it is, in a memory's tail, page-aligned in the
    /// file and in memory.
    fn overlay(&self, n: usize, start: usize, piece: &Place) -> Option<Overlay> {
        let page = &self.pages[n];
        let file = self.file.as_ref()?;
        if !page.raw || !piece.tail {
            return None;
        }
        let lo = piece.packed.max(start);
        let hi = (piece.packed + piece.len).min(start + page.len as usize);
        let at = piece.at + (lo - piece.packed);
        let offset = file.offset + page.stored.at + (lo - start) as u64;
        let host = page_size();
        (at.is_multiple_of(host)
            && (hi - lo).is_multiple_of(host)
            && offset.is_multiple_of(host as u64))
        .then(|| Overlay {
            file: file.file.clone(),
            offset,
            at,
            len: hi - lo,
        })
    }

    /// Decompresses page `n` (the packed bytes from `start`) into the `pieces` it lies
    /// over, checking it against its name. A page that lies over one piece goes straight
    /// into it; one over several goes through `scratch`. With `mapping`, the pieces
    /// [`StoredImage::overlay`] maps are only checked, not copied.
    fn place_page(
        &self,
        n: usize,
        start: usize,
        pieces: &[Place],
        targets: &Targets,
        scratch: &mut Vec<u8>,
        mapping: bool,
    ) -> Result<(), ImageError> {
        let page = &self.pages[n];
        let len = page.len as usize;
        let at = |piece: &Place, lo: usize| {
            let base = if piece.tail {
                targets.tail
            } else {
                targets.low
            };
            // SAFETY: see `Targets`: a part of one of them no other page covers.
            unsafe { base.add(piece.at + (lo - piece.packed)) }
        };
        let mapped = |piece: &Place| mapping && self.overlay(n, start, piece).is_some();
        let source: &[u8] = if page.raw && pieces.iter().any(mapped) {
            // Read from the entry where it lies (and mapped from there after).
            if page.stored.bytes.len() != len {
                return Err(ImageError::Decompress(
                    n,
                    "it is not its stated length".into(),
                ));
            }
            if *blake3::hash(&page.stored.bytes).as_bytes() != page.blake3 {
                return Err(ImageError::Tampered(n));
            }
            &page.stored.bytes
        } else {
            if let [piece] = pieces {
                if piece.packed <= start && start + len <= piece.packed + piece.len {
                    // SAFETY: as above; the page's bytes lie inside the piece.
                    let place = unsafe { std::slice::from_raw_parts_mut(at(piece, start), len) };
                    return self.unpack_page(n, place);
                }
            }
            scratch.resize(len, 0);
            self.unpack_page(n, scratch)?;
            scratch
        };
        for piece in pieces.iter().filter(|p| !mapped(p)) {
            let lo = piece.packed.max(start);
            let hi = (piece.packed + piece.len).min(start + len);
            // SAFETY: as above.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    source.as_ptr().add(lo - start),
                    at(piece, lo),
                    hi - lo,
                )
            };
        }
        Ok(())
    }

    /// Page `n`'s bytes into `place` (its length), checked against its name.
    fn unpack_page(&self, n: usize, place: &mut [u8]) -> Result<(), ImageError> {
        let page = &self.pages[n];
        let stated = |ok: bool| {
            ok.then_some(())
                .ok_or_else(|| ImageError::Decompress(n, "it is not its stated length".into()))
        };
        if page.raw {
            stated(page.stored.bytes.len() == place.len())?;
            place.copy_from_slice(&page.stored.bytes);
        } else {
            let written = zstd::bulk::decompress_to_buffer(&page.stored.bytes, place)
                .map_err(|e| ImageError::Decompress(n, e.to_string()))?;
            stated(written == place.len())?;
        }
        if *blake3::hash(place).as_bytes() != page.blake3 {
            return Err(ImageError::Tampered(n));
        }
        Ok(())
    }
}
