//! The input files a request brings: their paths and caps checked, against each other
//! and against the runtime's own files.

use sha2::{Digest, Sha256};

use super::own::OwnFiles;

/// Input files one run may bring.
pub const MAX_INPUT_FILES: usize = 100;
/// Decoded bytes of all input files of one run together.
pub const MAX_INPUT_BYTES: usize = 32 << 20;
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
        "input files hold more than {mib} MiB ({MAX_INPUT_BYTES} bytes) decoded in total; \
         the cap was passed at file `{path}`",
        mib = MAX_INPUT_BYTES >> 20
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
