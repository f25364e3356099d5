//! A stored session's bytes: what it is (id, runtime, the plugin it ran on), its working
//! directory, the journal of the calls that made its interpreter's state and, for a
//! snapshot runtime, that state's image; and the directory snapshots it is made of.
//!
//! On disk an entry is `MAGIC`, the BLAKE3 hash of its record, the record's length (8
//! bytes, little-endian), the record (the entry in `postcard`), then, from the next
//! multiple of [`PAYLOAD_ALIGN`] bytes (zeros between), its image's pages' bytes (the
//! payload), so that pages kept as they are can be mapped from the file. The record names each page by the BLAKE3 hash of its contents,
//! so the checksum covers the pages too, checked page by page as they are decompressed
//! (`state/stored.rs`) rather than in a pass of their own. Reading one checks the magic,
//! the checksum and every path before anything is used: an entry is data from a shared
//! directory, never trusted and never code for the host.

use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sandbox::journal::Draws;
use crate::state::{PayloadFile, StoredImage};

/// The first bytes of every entry; the last byte is the format's version.
const MAGIC: &[u8; 8] = b"RBXSESS\x04";

/// Where an image's payload starts in an entry's file: a multiple of this (a host page).
pub const PAYLOAD_ALIGN: usize = 4096;

/// Why an entry cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EntryError {
    #[error("it is not a runbox session entry of this version")]
    NotAnEntry,
    #[error("its checksum does not match its contents (damaged or changed on disk)")]
    Checksum,
    #[error("it cannot be read: {0}")]
    Malformed(String),
    #[error("it holds an unsafe path `{0}`")]
    UnsafePath(String),
}

/// One session, stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSession {
    pub id: String,
    pub runtime: String,
    /// The identity of the plugin it ran on (its component, tools and settings): a
    /// replay is exact only on the very same code.
    pub plugin: String,
    /// Milliseconds since the Unix epoch.
    pub created_ms: u64,
    pub stored_ms: u64,
    /// The process that stored it (see `directory.rs`, leases).
    pub stored_by: String,
    /// The working directory when the journal starts: empty for a new session, the
    /// files kept when a call reset the interpreter.
    pub base: Vec<StoredFile>,
    /// The calls since then that completed, in order.
    pub calls: Vec<LoggedCall>,
    /// The working directory when stored.
    pub files: Vec<StoredFile>,
    /// Why `base` and `calls` are empty although its runtime keeps state: its interpreter
    /// state could not be kept, and resuming it says so.
    pub lost: Option<String>,
    /// Its interpreter's state itself, for a runtime whose sessions are snapshots: what
    /// resuming writes into a fresh instance instead of running `calls` again (which
    /// stay, for a session stopped mid-call to be rebuilt from).
    pub image: Option<StoredImage>,
}

/// A file or directory of a working directory, by its `/`-separated relative path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredFile {
    pub path: String,
    /// `None` for a directory.
    #[serde(with = "serde_bytes")]
    pub contents: Option<Vec<u8>>,
}

/// One completed call of a session, with what it drew from outside the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoggedCall {
    pub code: String,
    pub args: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    pub files: Vec<(String, Vec<u8>)>,
    pub draws: Draws,
    pub exit_code: i32,
    /// SHA-256 of its standard output and error: the replay must print the same.
    pub output_digest: [u8; 32],
    pub duration_ms: u64,
}

impl LoggedCall {
    /// What the call's record holds: its request and its draws.
    pub fn bytes(&self) -> u64 {
        (self.code.len()
            + self.args.iter().map(String::len).sum::<usize>()
            + self.stdin.as_ref().map_or(0, Vec::len)
            + self
                .files
                .iter()
                .map(|(p, b)| p.len() + b.len())
                .sum::<usize>()
            + self.draws.bytes()) as u64
    }
}

impl StoredSession {
    /// The entry's bytes on disk.
    pub fn encode(&self) -> Vec<u8> {
        let record = postcard::to_stdvec(self).expect("a session serializes");
        let payload = self.image.as_ref().map_or(0, |i| i.stored_bytes() as usize);
        let mut out = Vec::with_capacity(MAGIC.len() + 40 + record.len() + payload);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(checksum(&record).as_bytes());
        out.extend_from_slice(&(record.len() as u64).to_le_bytes());
        out.extend_from_slice(&record);
        if payload > 0 {
            out.resize(out.len().next_multiple_of(PAYLOAD_ALIGN), 0);
        }
        for page in self.image.iter().flat_map(StoredImage::payload) {
            out.extend_from_slice(page);
        }
        out
    }

    /// An entry read back, checked (its pages are checked when decompressed).
    pub fn decode(bytes: &[u8]) -> Result<StoredSession, EntryError> {
        Self::decode_shared(Bytes::copy_from_slice(bytes), None)
    }

    /// [`StoredSession::decode`], its image's pages handed out of `bytes` without a copy;
    /// `bytes` are those of `file` if given (from which pages may then be mapped).
    pub fn decode_shared(
        bytes: Bytes,
        file: Option<Arc<File>>,
    ) -> Result<StoredSession, EntryError> {
        let rest = bytes.strip_prefix(MAGIC).ok_or(EntryError::NotAnEntry)?;
        if rest.len() < 40 {
            return Err(EntryError::NotAnEntry);
        }
        let (digest, rest) = rest.split_at(32);
        let (len, rest) = rest.split_at(8);
        let len = u64::from_le_bytes(len.try_into().expect("8 bytes"));
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= rest.len())
            .ok_or(EntryError::Checksum)?;
        let (record, _) = rest.split_at(len);
        if checksum(record).as_bytes().as_slice() != digest {
            return Err(EntryError::Checksum);
        }
        let mut entry: StoredSession =
            postcard::from_bytes(record).map_err(|e| EntryError::Malformed(e.to_string()))?;
        let record_end = bytes.len() - rest.len() + len;
        let payload_at = match &entry.image {
            Some(image) if image.pages.iter().any(|p| !p.stored.is_empty()) => {
                record_end.next_multiple_of(PAYLOAD_ALIGN)
            }
            _ => record_end,
        };
        if payload_at > bytes.len() {
            return Err(EntryError::Malformed("its pages are missing".into()));
        }
        match &mut entry.image {
            Some(image) => {
                let file = file.map(|file| PayloadFile {
                    file,
                    offset: payload_at as u64,
                });
                image
                    .attach_payload(bytes.slice(payload_at..), file)
                    .map_err(|e| EntryError::Malformed(e.to_string()))?
            }
            None if record_end != bytes.len() => {
                return Err(EntryError::Malformed(
                    "it holds bytes past its record".into(),
                ))
            }
            None => {}
        }
        for file in entry.base.iter().chain(&entry.files) {
            safe_path(&file.path)?;
        }
        for call in &entry.calls {
            for (path, _) in &call.files {
                safe_path(path)?;
            }
        }
        Ok(entry)
    }
}

/// The checksum of an entry's record: its length, then its bytes.
fn checksum(record: &[u8]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(record.len() as u64).to_le_bytes());
    hasher.update(record);
    hasher.finalize()
}

/// The digest a call's output is compared by.
pub fn output_digest(stdout: &[u8], stderr: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((stdout.len() as u64).to_le_bytes());
    h.update(stdout);
    h.update(stderr);
    h.finalize().into()
}

/// `path` as a relative path with only normal components.
fn safe_path(path: &str) -> Result<PathBuf, EntryError> {
    let p = Path::new(path);
    let ok = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(n) if n.to_str().is_some()));
    if ok {
        Ok(p.to_path_buf())
    } else {
        Err(EntryError::UnsafePath(path.chars().take(200).collect()))
    }
}

/// Too much to store: the working directory is larger than `max` bytes.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("its files are larger than the {max} bytes a stored session may hold")]
    TooLarge { max: u64 },
    #[error("cannot read its files: {0}")]
    Io(#[from] std::io::Error),
}

/// The files and directories under `root` (symbolic links are not kept), in path order;
/// at most `max` bytes of file contents, counting `used` already spent.
pub fn snapshot_dir(
    root: &Path,
    max: u64,
    used: &mut u64,
) -> Result<Vec<StoredFile>, SnapshotError> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(&rel))?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let path = rel.join(&name);
            let text = path.to_string_lossy().replace('\\', "/");
            let kind = entry.file_type()?;
            if kind.is_dir() {
                out.push(StoredFile {
                    path: text,
                    contents: None,
                });
                pending.push(path);
            } else if kind.is_file() {
                let len = entry.metadata()?.len();
                *used = used.saturating_add(len);
                if *used > max {
                    return Err(SnapshotError::TooLarge { max });
                }
                out.push(StoredFile {
                    path: text,
                    contents: Some(std::fs::read(entry.path())?),
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Writes `files` under `root` (which exists), replacing what is there by those names.
pub fn restore_dir(root: &Path, files: &[StoredFile]) -> std::io::Result<()> {
    for file in files {
        let rel = safe_path(&file.path)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))?;
        let path = root.join(rel);
        match &file.contents {
            None => std::fs::create_dir_all(&path)?,
            Some(bytes) => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, bytes)?;
            }
        }
    }
    Ok(())
}

/// Empties `root` (keeping it).
pub fn clear_dir(root: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(entry.path())?;
        } else {
            std::fs::remove_file(entry.path())?;
        }
    }
    Ok(())
}

/// The bytes of file contents in `files`.
pub fn content_bytes(files: &[StoredFile]) -> u64 {
    files
        .iter()
        .map(|f| f.contents.as_ref().map_or(0, |c| c.len() as u64))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> StoredSession {
        StoredSession {
            id: "r1.00ff".into(),
            runtime: "python".into(),
            plugin: "abc".into(),
            created_ms: 1,
            stored_ms: 2,
            stored_by: "r1/1".into(),
            base: vec![],
            calls: vec![LoggedCall {
                code: "x = 1".into(),
                args: vec![],
                stdin: None,
                files: vec![("in.txt".into(), b"hi".to_vec())],
                draws: Draws {
                    random: vec![1, 2, 3],
                    wall: vec![4],
                    monotonic: vec![5],
                    tools: vec![crate::sandbox::journal::ToolDraw {
                        request: b"{}".to_vec(),
                        answer: b"{\"ok\":true}".to_vec(),
                    }],
                },
                exit_code: 0,
                output_digest: output_digest(b"", b""),
                duration_ms: 3,
            }],
            files: vec![
                StoredFile {
                    path: "d".into(),
                    contents: None,
                },
                StoredFile {
                    path: "d/f.txt".into(),
                    contents: Some(b"data".to_vec()),
                },
            ],
            lost: None,
            image: Some(StoredImage::default()),
        }
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let e = entry();
        assert_eq!(StoredSession::decode(&e.encode()).unwrap(), e);
    }

    #[test]
    fn an_entry_with_pages_reads_back_and_a_changed_page_is_refused_when_decoded() {
        use crate::state::{MemoryImage, SessionImage, Startup};
        let mut memory = MemoryImage {
            pages: 1,
            ..MemoryImage::default()
        };
        memory.push(0, &[3u8; 4096]);
        memory.push(8192, b"state");
        let image = SessionImage {
            plugin: crate::state::InstanceImage {
                startup: Startup {
                    pages: vec![1],
                    resources: 0,
                },
                memories: vec![memory],
                globals: vec![9],
            },
            residents: vec![],
        };
        let mut e = entry();
        e.image = Some(StoredImage::encode(&image));
        let bytes = e.encode();
        let read = StoredSession::decode(&bytes).unwrap();
        assert_eq!(read, e);
        assert_eq!(read.image.unwrap().decode(u64::MAX).unwrap(), image);
        // The pages follow the record: a byte changed there passes the record's checksum
        // and is caught when its page is decompressed.
        let mut changed = bytes.clone();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        let read = StoredSession::decode(&changed).unwrap();
        assert!(read.image.unwrap().decode(u64::MAX).is_err());
        let mut longer = bytes;
        longer.push(0);
        assert!(matches!(
            StoredSession::decode(&longer),
            Err(EntryError::Malformed(_))
        ));
    }

    #[test]
    fn a_damaged_or_foreign_entry_is_refused() {
        let bytes = entry().encode();
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert!(matches!(
            StoredSession::decode(&flipped),
            Err(EntryError::Checksum)
        ));
        assert!(matches!(
            StoredSession::decode(&bytes[..bytes.len() - 5]),
            Err(EntryError::Checksum)
        ));
        assert!(matches!(
            StoredSession::decode(b"#!/bin/sh\nrm -rf /"),
            Err(EntryError::NotAnEntry)
        ));
        // A well-formed entry (the checksum is only a checksum) with a path that climbs out.
        let mut evil = entry();
        evil.files[1].path = "../../etc/passwd".into();
        assert!(matches!(
            StoredSession::decode(&evil.encode()),
            Err(EntryError::UnsafePath(_))
        ));
        evil.files[1].path = "/etc/passwd".into();
        assert!(matches!(
            StoredSession::decode(&evil.encode()),
            Err(EntryError::UnsafePath(_))
        ));
    }

    #[test]
    fn a_directory_snapshot_restores_its_files_and_is_bounded() {
        let from = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(from.path().join("a/b")).unwrap();
        std::fs::write(from.path().join("a/b/c.txt"), b"abc").unwrap();
        std::fs::write(from.path().join("top.bin"), [0u8, 255]).unwrap();
        let mut used = 0;
        let files = snapshot_dir(from.path(), 1 << 20, &mut used).unwrap();
        assert_eq!(used, 5);
        let paths: Vec<_> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["a", "a/b", "a/b/c.txt", "top.bin"]);
        let to = tempfile::tempdir().unwrap();
        restore_dir(to.path(), &files).unwrap();
        assert_eq!(std::fs::read(to.path().join("a/b/c.txt")).unwrap(), b"abc");
        assert_eq!(std::fs::read(to.path().join("top.bin")).unwrap(), [0, 255]);
        let mut used = 0;
        assert!(matches!(
            snapshot_dir(from.path(), 4, &mut used),
            Err(SnapshotError::TooLarge { max: 4 })
        ));
        clear_dir(to.path()).unwrap();
        assert_eq!(std::fs::read_dir(to.path()).unwrap().count(), 0);
    }
}
