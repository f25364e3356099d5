//! Files in and out of a run: the input files a request brings (checked here, written
//! into the working directory by the plugin, `run-request.files` in the WIT) and the
//! files a run created or changed, collected from its scratch directory when it ends.
//!
//! The caps and messages are the contract's (docs/mcp.md, "Files"): [`input`] checks
//! what comes in, [`output`] collects what goes out, [`mime`] names it. How a file's bytes
//! travel in a message (base64) is [`wire`]'s.

mod input;
mod mime;
mod output;
pub mod wire;

pub use input::*;
pub use mime::*;
pub use output::*;

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
