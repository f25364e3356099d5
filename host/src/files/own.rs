//! The files a runtime keeps for itself, which no run returns and no input may replace.

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
