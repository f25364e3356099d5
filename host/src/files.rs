//! Files in and out of a run: the input files a request brings (checked here, written
//! into the working directory by the plugin, `run-request.files` in the WIT) and the
//! files a run created or changed, collected from its scratch directory when it ends.
//!
//! The caps and messages are the contract's (docs/mcp.md, "Files").

use std::collections::HashMap;
use std::path::Path;

use base64::Engine as _;
use sha2::{Digest, Sha256};

use crate::sandbox::memory::{Held, MemoryBudget};

/// Input files one run may bring.
pub const MAX_INPUT_FILES: usize = 100;
/// Decoded bytes of all input files of one run together.
pub const MAX_INPUT_BYTES: usize = 32 << 20;
/// An output file larger than this is listed but not returned.
pub const MAX_RETURNED_FILE_BYTES: u64 = 8 << 20;
/// Output files past this many bytes returned in total are listed but not returned.
pub const MAX_RETURNED_TOTAL_BYTES: u64 = 16 << 20;
/// The longest path accepted, in bytes.
const MAX_PATH_BYTES: usize = 1024;
/// The longest part of a path, in bytes (what file systems allow).
const MAX_NAME_BYTES: usize = 255;

/// An input file, checked: a normalized relative path and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    pub path: String,
    pub contents: Vec<u8>,
}

impl InputFile {
    /// What output collection needs to tell whether the run changed this file.
    pub fn digest(&self) -> InputDigest {
        InputDigest {
            path: self.path.clone(),
            len: self.contents.len() as u64,
            sha256: Sha256::digest(&self.contents).into(),
        }
    }
}

/// An input file's path, length and SHA-256: enough to see it unchanged after the run
/// without keeping its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputDigest {
    pub path: String,
    pub len: u64,
    pub sha256: [u8; 32],
}

/// How an input file's `content` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Base64,
}

impl Encoding {
    /// The encoding named `name` (`utf-8`, or `base64`); the message names both.
    pub fn parse(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Some(Encoding::Utf8),
            "base64" => Some(Encoding::Base64),
            _ => None,
        }
    }
}

/// Why input files were refused. Every message names the file and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    #[error("file `{path}`: {rule}")]
    BadPath { path: String, rule: &'static str },
    #[error("file `{path}`: encoding `{encoding}` is not supported; use \"utf-8\" (the default) or \"base64\"")]
    BadEncoding { path: String, encoding: String },
    #[error("file `{path}`: content is not valid base64 ({detail})")]
    BadBase64 { path: String, detail: String },
    #[error("{count} input files given; at most {MAX_INPUT_FILES} are allowed")]
    TooMany { count: usize },
    #[error(
        "input files hold more than 32 MiB ({MAX_INPUT_BYTES} bytes) decoded in total; \
         the cap was passed at file `{path}`"
    )]
    TooLarge { path: String },
    #[error("file `{path}` is given twice")]
    Duplicate { path: String },
    #[error("file `{path}`: {conflict}")]
    Conflict { path: String, conflict: String },
    #[error("file `{path}` is a file the runtime writes for its own use (its program source or working files); choose another name")]
    Reserved { path: String },
}

/// `path` made relative and checked: `/`-separated, a leading `/` dropped, no `..`, `.`
/// or empty parts, no NUL or backslash, not too long.
pub fn normalize_path(path: &str) -> Result<String, &'static str> {
    let relative = path.strip_prefix('/').unwrap_or(path);
    if relative.is_empty() {
        return Err("the path is empty");
    }
    if relative.len() > MAX_PATH_BYTES {
        return Err("the path is longer than 1024 bytes");
    }
    if relative.contains('\0') {
        return Err("the path holds a NUL character");
    }
    if relative.contains('\\') {
        return Err("the path holds a backslash; separate directories with `/`");
    }
    for part in relative.split('/') {
        match part {
            "" => return Err("the path has an empty part (`//` or a trailing `/`)"),
            "." | ".." => {
                return Err(
                    "the path has a `.` or `..` part; paths stay inside the working directory",
                )
            }
            _ if part.len() > MAX_NAME_BYTES => {
                return Err("a part of the path is longer than 255 bytes")
            }
            _ => {}
        }
    }
    Ok(relative.to_string())
}

/// The bytes of an input file's `content` in `encoding` (`utf-8` when absent).
pub fn decode(path: &str, content: String, encoding: Option<&str>) -> Result<Vec<u8>, FileError> {
    let encoding = match encoding {
        None => Encoding::Utf8,
        Some(name) => Encoding::parse(name).ok_or_else(|| FileError::BadEncoding {
            path: path.to_string(),
            encoding: name.to_string(),
        })?,
    };
    match encoding {
        Encoding::Utf8 => Ok(content.into_bytes()),
        Encoding::Base64 => decode_base64(&content).map_err(|detail| FileError::BadBase64 {
            path: path.to_string(),
            detail,
        }),
    }
}

/// Checks the input files of one run (as given path, bytes) against the caps, against
/// each other and against the files the runtime writes for itself (`own`).
pub fn check_inputs(
    files: Vec<(String, Vec<u8>)>,
    own: &OwnFiles,
) -> Result<Vec<InputFile>, FileError> {
    if files.len() > MAX_INPUT_FILES {
        return Err(FileError::TooMany { count: files.len() });
    }
    let mut total = 0usize;
    let mut checked: Vec<InputFile> = Vec::with_capacity(files.len());
    for (path, contents) in files {
        let normalized = normalize_path(&path).map_err(|rule| FileError::BadPath {
            path: path.clone(),
            rule,
        })?;
        total = total.saturating_add(contents.len());
        if total > MAX_INPUT_BYTES {
            return Err(FileError::TooLarge { path });
        }
        if own.covers(&normalized) {
            return Err(FileError::Reserved { path });
        }
        for earlier in &checked {
            if earlier.path == normalized {
                return Err(FileError::Duplicate { path });
            }
            // `a` as a file and `a/b` inside it cannot both exist.
            let (short, long) = if earlier.path.len() < normalized.len() {
                (&earlier.path, &normalized)
            } else {
                (&normalized, &earlier.path)
            };
            if long.starts_with(short.as_str()) && long.as_bytes()[short.len()] == b'/' {
                return Err(FileError::Conflict {
                    path,
                    conflict: format!("`{short}` is a file, so `{long}` cannot be inside it"),
                });
            }
        }
        checked.push(InputFile {
            path: normalized,
            contents,
        });
    }
    Ok(checked)
}

/// Standard base64, with or without padding; whitespace (line breaks) is ignored.
fn decode_base64(content: &str) -> Result<Vec<u8>, String> {
    let compact: String = content
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    engine.decode(compact).map_err(|e| e.to_string())
}

/// Standard base64 with padding, for returned files.
pub fn encode_base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The files a runtime writes for its own use (its program source, objects, preludes),
/// from plugins.toml's `own-files`: exact paths, or directories ending in `/`. They are
/// never returned, and input files may not take their names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnFiles(Vec<String>);

impl OwnFiles {
    pub fn new(entries: impl IntoIterator<Item = String>) -> Self {
        OwnFiles(
            entries
                .into_iter()
                .map(|e| e.trim_start_matches('/').to_string())
                .collect(),
        )
    }

    /// Whether `path` (relative) is one of them or inside one of their directories.
    pub fn covers(&self, path: &str) -> bool {
        self.0.iter().any(|own| match own.strip_suffix('/') {
            Some(dir) => path.starts_with(own.as_str()) || path == dir,
            None => path == own,
        })
    }
}

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

/// The MIME type of an output file, from its extension; a file without a known one is
/// `text/plain` when it is UTF-8 and `application/octet-stream` otherwise.
pub fn mime_type(path: &str, contents: Option<&[u8]>) -> String {
    let extension = path
        .rsplit('/')
        .next()
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase());
    let known = match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("svg") => "image/svg+xml",
        Some("bmp") => "image/bmp",
        Some("pdf") => "application/pdf",
        Some("zip") => "application/zip",
        Some("gz") => "application/gzip",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("xml") => "application/xml",
        Some("csv") => "text/csv",
        Some("tsv") => "text/tab-separated-values",
        Some("txt" | "log" | "text") => "text/plain",
        Some("md") => "text/markdown",
        Some("html" | "htm") => "text/html",
        Some("css") => "text/css",
        Some("js" | "mjs") => "text/javascript",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("py") => "text/x-python",
        Some("rb") => "text/x-ruby",
        Some("php") => "application/x-php",
        Some("c" | "h") => "text/x-c",
        Some("cpp" | "cc" | "hpp") => "text/x-c++",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    match contents {
        Some(bytes) if std::str::from_utf8(bytes).is_ok() => "text/plain".into(),
        _ => "application/octet-stream".into(),
    }
}

/// Whether `text` holds a control character other than tab, newline and carriage return
/// (such text goes to clients as base64, never as escaped JSON text).
pub fn has_control_characters(text: &str) -> bool {
    text.chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// Whether a MIME type is text a client can show as it is.
fn is_text_mime(mime: &str) -> bool {
    mime.starts_with("text/")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "image/svg+xml"
                | "application/yaml"
                | "application/toml"
                | "application/x-php"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(files: &[(&str, &str, Option<&str>)]) -> Result<Vec<InputFile>, FileError> {
        let decoded = files
            .iter()
            .map(|(p, c, e)| Ok((p.to_string(), decode(p, c.to_string(), *e)?)))
            .collect::<Result<Vec<_>, FileError>>()?;
        check_inputs(
            decoded,
            &OwnFiles::new(["main.py".to_string(), ".cache/".to_string()]),
        )
    }

    #[test]
    fn paths() {
        assert_eq!(normalize_path("data.csv").unwrap(), "data.csv");
        assert_eq!(normalize_path("/data/in.csv").unwrap(), "data/in.csv");
        for bad in [
            "", "/", "a//b", "a/", "../x", "a/../b", "./a", "a\\b", "a\0b", "//a",
        ] {
            assert!(normalize_path(bad).is_err(), "{bad:?}");
        }
        assert!(normalize_path(&"x".repeat(256)).is_err());
        assert!(normalize_path(&"x/".repeat(600)).is_err());
    }

    #[test]
    fn inputs_are_decoded_and_checked() {
        let ok = inputs(&[
            ("a.txt", "hi", None),
            ("/b/c.bin", "AAEC/w==", Some("base64")),
            ("d.bin", "AAEC/w", Some("base64")),
        ])
        .unwrap();
        assert_eq!(ok[0].contents, b"hi");
        assert_eq!(ok[1].path, "b/c.bin");
        assert_eq!(ok[1].contents, [0, 1, 2, 255]);
        assert_eq!(ok[2].contents, [0, 1, 2, 255]);

        let err = |files: &[(&str, &str, Option<&str>)]| inputs(files).unwrap_err().to_string();
        assert!(err(&[("../x", "", None)]).contains("file `../x`"));
        assert!(err(&[("x", "", Some("latin-1"))]).contains("encoding `latin-1`"));
        assert!(err(&[("x", "%%%", Some("base64"))]).contains("not valid base64"));
        assert!(err(&[("x", "", None), ("/x", "", None)]).contains("given twice"));
        assert!(err(&[("a", "", None), ("a/b", "", None)]).contains("cannot be inside"));
        assert!(err(&[("main.py", "", None)]).contains("its own use"));
        assert!(err(&[(".cache/x", "", None)]).contains("its own use"));
    }

    #[test]
    fn input_caps() {
        let many: Vec<(String, Vec<u8>)> =
            (0..101).map(|i| (format!("f{i}"), Vec::new())).collect();
        let e = check_inputs(many, &OwnFiles::default()).unwrap_err();
        assert!(e.to_string().contains("101 input files"), "{e}");
        let big = vec![b'x'; 17 << 20];
        let two = vec![("a".to_string(), big.clone()), ("b".to_string(), big)];
        let e = check_inputs(two, &OwnFiles::default()).unwrap_err();
        assert_eq!(e, FileError::TooLarge { path: "b".into() });
        assert!(e.to_string().contains("32 MiB"));
    }

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
