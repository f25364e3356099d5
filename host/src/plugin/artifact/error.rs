//! [`ArtifactError`]: every failure says which plugins entry it concerns and what to do.

use std::path::PathBuf;

/// Why an artifact could not be fetched, verified or unpacked.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error(
        "cannot find a cache directory for downloaded artifacts; \
         set RUNBOX_CACHE_DIR to a writable directory"
    )]
    NoCacheDir,

    /// A file system operation in the cache failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },

    /// A `path = "..."` artifact cannot be read.
    #[error(
        "cannot read local artifact {}: {source}; check `path` in the plugins file \
         (relative paths are resolved against the plugins file's directory)",
        path.display()
    )]
    LocalFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// `npm` or `pip` is not installed.
    #[error(
        "cannot fetch {artifact}: `{tool}` was not found. Install {install}, or download \
         the file yourself and point the plugins entry at it with `path = \"...\"` and its `sha256`"
    )]
    ToolMissing {
        artifact: String,
        tool: &'static str,
        install: &'static str,
    },

    /// `npm pack` or `pip download` exited with an error.
    #[error(
        "cannot fetch {artifact}: `{command}` failed ({status}):\n{output}\n\
         Check the package name and version in the plugins file and {tool}'s own settings \
         (network, registry, proxy), or point the entry at a local file with `path = \"...\"` \
         and its `sha256`"
    )]
    ToolFailed {
        artifact: String,
        tool: &'static str,
        command: String,
        status: String,
        /// The last lines of the tool's standard error.
        output: String,
    },

    /// The tool succeeded but produced no package file.
    #[error("cannot fetch {artifact}: `{command}` succeeded but left no package file in {}", dir.display())]
    NoPackageFile {
        artifact: String,
        command: String,
        dir: PathBuf,
    },

    /// The `file` named by the entry is not in the package.
    #[error(
        "cannot fetch {artifact}: `{file}` is not in {package}; {}; fix `file` in the plugins file",
        describe_candidates(.candidates)
    )]
    FileNotInPackage {
        artifact: String,
        package: String,
        file: String,
        /// Some files the package does contain (`.wasm`, `.tar*`, `.zip` first).
        candidates: Vec<String>,
    },

    /// The file's sha256 is not the one the plugins file pins. Nothing was cached.
    #[error(
        "sha256 mismatch for {artifact}: expected {expected}, got {actual}; the file was not \
         used or cached. If the file changed on purpose, check it and update `sha256` in the \
         plugins file"
    )]
    Sha256Mismatch {
        artifact: String,
        expected: String,
        actual: String,
    },

    /// A package or archive is corrupt or cannot be decoded.
    #[error(
        "cannot fetch {artifact}: no base64 WebAssembly module in the file has the sha256 \
         of the plugins file; {}",
        if found.is_empty() { "it holds none (fix `file` or leave `embedded` out)".to_string() }
        else { format!("it holds modules with sha256 {}", found.join(", ")) }
    )]
    NoEmbeddedModule {
        artifact: String,
        found: Vec<String>,
    },

    #[error("cannot read archive {artifact}: {message}")]
    BadArchive { artifact: String, message: String },

    /// A mount archive is neither tar, gzip-compressed tar nor zip.
    #[error(
        "{artifact} is not a .tar, .tar.gz/.tgz or .zip archive (its first bytes match none); \
         mounts need one of these formats"
    )]
    UnknownArchiveFormat { artifact: String },

    /// An archive entry would land outside the extraction directory.
    #[error(
        "refusing to unpack {artifact}: entry `{entry}` has an absolute path or `..`, \
         so it would land outside the mount directory"
    )]
    UnsafeArchiveEntry { artifact: String, entry: String },
}

impl ArtifactError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> ArtifactError {
        ArtifactError::Io {
            context: context.into(),
            source,
        }
    }
}

/// How many candidate names an error lists at most.
const MAX_CANDIDATES: usize = 10;

fn describe_candidates(candidates: &[String]) -> String {
    if candidates.is_empty() {
        return "the package contains no files".to_string();
    }
    let shown: Vec<&str> = candidates
        .iter()
        .take(MAX_CANDIDATES)
        .map(String::as_str)
        .collect();
    let more = candidates.len().saturating_sub(MAX_CANDIDATES);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    format!("it contains {}{tail}", shown.join(", "))
}
