//! The files a run created or changed, collected from its scratch directory when it
//! ends (symbolic links not followed), read back within the caps or into a budget for
//! keeping.

use std::collections::HashMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use super::input::InputDigest;
use super::mime::{is_text_mime, mime_type};
use super::own::OwnFiles;
use crate::budget::memory::{Held, MemoryBudget};

/// An output file larger than this is listed but not returned.
pub const MAX_RETURNED_FILE_BYTES: u64 = 8 << 20;
/// Output files past this many bytes returned in total are listed but not returned.
pub const MAX_RETURNED_TOTAL_BYTES: u64 = 16 << 20;
/// A file the run created or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// Relative to the working directory, `/`-separated.
    pub path: String,
    pub size: u64,
    pub mime_type: String,
    /// The bytes, when they were read (within the caps).
    pub contents: Option<Vec<u8>>,
    /// The memory the bytes are charged to, when they were read for keeping
    /// ([`ReturnCaps::keep`]).
    pub held: Held,
}

impl OutputFile {
    /// Whether the bytes are text a client can show as they are.
    pub fn is_text(&self) -> bool {
        is_text_mime(&self.mime_type)
    }

    /// Whether a client should show the file as an image.
    pub fn is_image(&self) -> bool {
        matches!(
            self.mime_type.as_str(),
            "image/png" | "image/jpeg" | "image/gif" | "image/webp"
        )
    }
}

/// Which output files are read back after a run (the rest are only listed).
#[derive(Debug, Clone)]
pub struct ReturnCaps {
    /// A larger file is not read (unless it can be kept, below).
    pub file_bytes: u64,
    /// Past this many bytes read in total, files are not read (unless kept).
    pub total_bytes: u64,
    /// A budget to read files into for keeping (an MCP server's retained results): a
    /// file whose size it grants is read whatever its size, and its reservation travels
    /// with the bytes ([`OutputFile::held`]).
    pub keep: Option<MemoryBudget>,
}

impl Default for ReturnCaps {
    /// 8 MiB per file, 16 MiB in total, nothing kept.
    fn default() -> Self {
        ReturnCaps {
            file_bytes: MAX_RETURNED_FILE_BYTES,
            total_bytes: MAX_RETURNED_TOTAL_BYTES,
            keep: None,
        }
    }
}

impl ReturnCaps {
    /// Every file, whatever its size (a terminal has no message size to protect).
    pub fn everything() -> ReturnCaps {
        ReturnCaps {
            file_bytes: u64::MAX,
            total_bytes: u64::MAX,
            keep: None,
        }
    }
}

/// When a file last changed, as far as telling a call's changes apart needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

/// The regular files of a scratch directory before a call (a session's: earlier calls
/// left them), so that only what the call created or changed is listed after it.
#[derive(Debug, Clone, Default)]
pub struct Baseline(HashMap<String, FileStamp>);

impl Baseline {
    /// The files under `root` now (the runtime's own excluded), at most `max_entries`
    /// directory entries looked at.
    pub fn of(root: &Path, own: &OwnFiles, max_entries: usize) -> std::io::Result<Baseline> {
        Ok(Baseline(
            regular_files(root, own, max_entries)?.into_iter().collect(),
        ))
    }
}

/// The regular files under `root` that are new or changed against `before` and
/// `inputs`, in path order, except the runtime's own; returned (read) within the caps.
/// Symbolic links are not followed. At most `max_entries` directory entries are looked
/// at (the run's own entry cap bounds them anyway).
pub fn collect_outputs(
    root: &Path,
    before: &Baseline,
    inputs: &[InputDigest],
    own: &OwnFiles,
    caps: &ReturnCaps,
    max_entries: usize,
) -> std::io::Result<Vec<OutputFile>> {
    let inputs: HashMap<&str, &InputDigest> = inputs.iter().map(|f| (f.path.as_str(), f)).collect();
    let mut found: Vec<(String, u64)> = regular_files(root, own, max_entries)?
        .into_iter()
        .filter(|(path, stamp)| before.0.get(path) != Some(stamp))
        .map(|(path, stamp)| (path, stamp.len))
        .collect();
    found.sort();
    let mut returned_total = 0u64;
    let mut outputs = Vec::new();
    for (path, size) in found {
        let full = root.join(&path);
        if let Some(input) = inputs.get(path.as_str()) {
            let unchanged = input.len == size
                && read_capped(&full, size)
                    .is_some_and(|bytes| <[u8; 32]>::from(Sha256::digest(&bytes)) == input.sha256);
            if unchanged {
                continue; // an input left as it was
            }
        }
        let kept = caps.keep.as_ref().and_then(|budget| {
            budget
                .reserve(usize::try_from(size).unwrap_or(usize::MAX))
                .map(Held::new)
        });
        let fits =
            size <= caps.file_bytes && returned_total.saturating_add(size) <= caps.total_bytes;
        let contents = if kept.is_some() || fits {
            read_capped(&full, size)
        } else {
            None
        };
        if let (Some(bytes), true, None) = (&contents, fits, &kept) {
            returned_total += bytes.len() as u64;
        }
        let size = contents.as_ref().map_or(size, |b| b.len() as u64);
        let mime_type = mime_type(&path, contents.as_deref());
        outputs.push(OutputFile {
            path,
            size,
            mime_type,
            held: match (&contents, kept) {
                (Some(_), Some(held)) => held,
                _ => Held::default(),
            },
            contents,
        });
    }
    Ok(outputs)
}

/// Every regular file under `root` but the runtime's own, with its stamp. Symbolic links
/// are not followed; names that are not UTF-8 are skipped (no client could be given
/// them).
fn regular_files(
    root: &Path,
    own: &OwnFiles,
    max_entries: usize,
) -> std::io::Result<Vec<(String, FileStamp)>> {
    use std::os::unix::fs::MetadataExt;
    let mut found = Vec::new();
    let mut pending = vec![String::new()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let entries = match std::fs::read_dir(root.join(&dir)) {
            Ok(entries) => entries,
            // The root itself must be readable; a subdirectory the program made
            // unreadable is skipped.
            Err(e) if dir.is_empty() => return Err(e),
            Err(_) => continue,
        };
        for entry in entries {
            seen += 1;
            if seen > max_entries {
                break;
            }
            let Ok(entry) = entry else { continue };
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            let path = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if !own.covers(&path) {
                    pending.push(path);
                }
            } else if kind.is_file() && !own.covers(&path) {
                let Ok(meta) = entry.metadata() else { continue };
                found.push((
                    path,
                    FileStamp {
                        len: meta.len(),
                        modified: meta.modified().ok(),
                        inode: meta.ino(),
                    },
                ));
            }
        }
    }
    Ok(found)
}

/// The file's bytes, if it still has at most `size` of them (it cannot grow: the run is
/// over, but a file is never read past what was listed).
fn read_capped(path: &Path, size: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(size.saturating_add(1))
        .read_to_end(&mut bytes)
        .ok()?;
    (bytes.len() as u64 <= size).then_some(bytes)
}

/// A file name as text shows it (a result's text, the terminal): quoted and escaped when
/// it holds anything but printable characters and spaces, so a name can neither start a
/// line of its own nor carry a terminal's control sequences.
pub fn escaped_name(name: &str) -> String {
    if name.chars().all(|c| !c.is_control()) && !name.contains('"') {
        name.to_string()
    } else {
        format!("\"{}\"", name.escape_debug())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::input::InputFile;

    #[test]
    fn outputs_are_new_or_changed_files_but_not_the_runtimes_own() {
        let root = std::env::temp_dir().join(format!("runbox-files-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("out/deep")).unwrap();
        std::fs::create_dir_all(root.join(".cache")).unwrap();
        std::fs::write(root.join("main.py"), "print(1)").unwrap();
        std::fs::write(root.join(".cache/x"), "cache").unwrap();
        std::fs::write(root.join("same.csv"), "a,b\n").unwrap();
        std::fs::write(root.join("changed.csv"), "a,b,c\n").unwrap();
        std::fs::write(root.join("out/deep/plot.png"), b"\x89PNG....").unwrap();
        std::fs::write(root.join("blob"), [0u8, 159, 146, 150]).unwrap();
        std::fs::write(root.join("big.txt"), vec![b'x'; (8 << 20) + 1]).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        let inputs = [
            InputFile {
                path: "same.csv".into(),
                contents: b"a,b\n".to_vec(),
            }
            .digest(),
            InputFile {
                path: "changed.csv".into(),
                contents: b"a,b\n".to_vec(),
            }
            .digest(),
        ];
        let own = OwnFiles::new(["main.py".to_string(), ".cache/".to_string()]);
        let out = collect_outputs(
            &root,
            &Baseline::default(),
            &inputs,
            &own,
            &ReturnCaps::default(),
            10_000,
        )
        .unwrap();
        let listed: Vec<(&str, u64, &str, bool)> = out
            .iter()
            .map(|f| {
                (
                    f.path.as_str(),
                    f.size,
                    f.mime_type.as_str(),
                    f.contents.is_some(),
                )
            })
            .collect();
        assert_eq!(
            listed,
            [
                ("big.txt", (8 << 20) + 1, "text/plain", false),
                ("blob", 4, "application/octet-stream", true),
                ("changed.csv", 6, "text/csv", true),
                ("out/deep/plot.png", 8, "image/png", true),
            ]
        );
        assert!(out[3].is_image());
        assert!(out[2].is_text());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_total_cap_stops_returning_files() {
        let root = std::env::temp_dir().join(format!("runbox-files-total-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        for name in ["a", "b", "c"] {
            std::fs::write(root.join(name), vec![0u8; 7 << 20]).unwrap();
        }
        let out = collect_outputs(
            &root,
            &Baseline::default(),
            &[],
            &OwnFiles::default(),
            &ReturnCaps::default(),
            100,
        )
        .unwrap();
        let returned: Vec<bool> = out.iter().map(|f| f.contents.is_some()).collect();
        assert_eq!(returned, [true, true, false]);
        // Kept files are read whatever their size, as far as the keeping budget goes,
        // each charged to it until its bytes are dropped.
        let keep = MemoryBudget::new(15 << 20);
        let caps = ReturnCaps {
            file_bytes: 1,
            total_bytes: 1,
            keep: Some(keep.clone()),
        };
        let out = collect_outputs(
            &root,
            &Baseline::default(),
            &[],
            &OwnFiles::default(),
            &caps,
            100,
        )
        .unwrap();
        let kept: Vec<(bool, bool)> = out
            .iter()
            .map(|f| (f.contents.is_some(), f.held.is_held()))
            .collect();
        assert_eq!(kept, [(true, true), (true, true), (false, false)]);
        assert_eq!(keep.used(), 14 << 20);
        drop(out);
        assert_eq!(keep.used(), 0);
        std::fs::remove_dir_all(&root).unwrap();
    }

    /// In a session, files an earlier call left are listed only when this call changed
    /// them.
    #[test]
    fn a_baseline_hides_files_left_as_they_were() {
        let root = std::env::temp_dir().join(format!("runbox-files-base-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("kept.csv"), "1\n").unwrap();
        std::fs::write(root.join("rewritten.csv"), "1\n").unwrap();
        let own = OwnFiles::default();
        let before = Baseline::of(&root, &own, 100).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("rewritten.csv"), "2\n").unwrap();
        std::fs::write(root.join("new.txt"), "x").unwrap();
        let out = collect_outputs(&root, &before, &[], &own, &ReturnCaps::default(), 100).unwrap();
        let paths: Vec<&str> = out.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["new.txt", "rewritten.csv"]);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
