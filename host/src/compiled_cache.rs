//! The cache of precompiled components: native code runbox loads with
//! `Component::deserialize_file`, so only runbox may be able to write it.
//!
//! Layout, under the cache root's `compiled/` directory (created 0700):
//!
//! ```text
//! plugins/<name>-<key>.cwasm    plugin components (built-in adapters, third-party plugins)
//! tools/<name>-<key>.cwasm      componentized preview1 tools (python, clang, …)
//! programs/program-<key>.cwasm  programs a plugin produced in a run (compiled C and C++)
//! ```
//!
//! One directory per kind, so a plugin that happens to be named `program` can never
//! collide with, or be pruned as, a produced program. A key is the sha256 of everything
//! that decides the compiled bytes: the input's own hash, the code that transforms it
//! (see [`crate::componentize::transform_fingerprint`]) and the engine's compatibility
//! hash.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;

/// What a compiled file is: each kind lives in its own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompiledKind {
    Plugin,
    Tool,
    Program,
    /// A pre-initialised snapshot of a tool (an interpreter with its imports done).
    Snapshot,
}

impl CompiledKind {
    fn dir(self) -> &'static str {
        match self {
            CompiledKind::Plugin => "plugins",
            CompiledKind::Tool => "tools",
            CompiledKind::Program => "programs",
            CompiledKind::Snapshot => "snapshots",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CacheTrustError {
    #[error("cannot create the compiled-code cache {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing the compiled-code cache {path}: it is {problem}, and runbox runs the native \
         code it finds there; make it yours alone (`chmod 700 {path}`) or pick another \
         directory with --cache-dir"
    )]
    Untrusted { path: PathBuf, problem: String },
}

/// The directory of compiled components, checked to be writable by this user only.
#[derive(Debug, Clone)]
pub struct CompiledCache {
    root: PathBuf,
}

impl CompiledCache {
    /// Opens (creating it 0700 if missing) the compiled cache at `root`, refusing a
    /// directory another user owns or that group or others may write.
    pub fn open(root: &Path) -> Result<CompiledCache, CacheTrustError> {
        create_private_dir(root)?;
        check_private_dir(root)?;
        Ok(CompiledCache {
            root: root.to_path_buf(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory files of `kind` live in (created 0700 on first use).
    pub fn dir(&self, kind: CompiledKind) -> PathBuf {
        self.root.join(kind.dir())
    }

    /// Where the compiled form of `input_key` lives. `name` only makes the file name
    /// readable; `input_key` must identify the input bytes and how they were turned into
    /// a component, and the engine's compatibility hash is added here.
    pub fn path(
        &self,
        kind: CompiledKind,
        name: &str,
        input_key: &str,
        engine: &Engine,
    ) -> PathBuf {
        let mut h = Sha256::new();
        h.update(input_key.as_bytes());
        let mut hasher = DigestHasher(&mut h);
        std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
        let digest = hex::encode(h.finalize());
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.dir(kind)
            .join(format!("{safe}-{}.cwasm", &digest[..32]))
    }

    /// Makes sure the directory of `kind` exists, private.
    pub fn ensure_dir(&self, kind: CompiledKind) -> Result<PathBuf, CacheTrustError> {
        let dir = self.dir(kind);
        create_private_dir(&dir)?;
        check_private_dir(&dir)?;
        Ok(dir)
    }

    /// Deletes the oldest files of `kind` until at most `max_files` remain and they hold
    /// at most `max_bytes` together, so caches of ever-new inputs stay bounded.
    pub fn prune(&self, kind: CompiledKind, max_files: usize, max_bytes: u64) {
        let Ok(entries) = fs::read_dir(self.dir(kind)) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".cwasm"))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((meta.modified().ok()?, meta.len(), e.path()))
            })
            .collect();
        // Newest first: keep from the front while within both caps.
        files.sort_by_key(|f| std::cmp::Reverse(f.0));
        let mut kept_bytes = 0u64;
        for (i, (_, len, path)) in files.iter().enumerate() {
            kept_bytes = kept_bytes.saturating_add(*len);
            if i >= max_files || kept_bytes > max_bytes {
                // Another process may have removed it first; nothing to do then.
                let _ = fs::remove_file(path);
            }
        }
    }
    /// Deletes older compiled forms of the same name as `newest` (made by earlier
    /// versions of runbox or of its inputs), keeping the `keep` most recent, so a cache
    /// that lives across upgrades holds a few hundred MB, not one copy per upgrade.
    pub fn prune_superseded(&self, newest: &Path, keep: usize) {
        let (Some(dir), Some(file)) = (newest.parent(), newest.file_name()) else {
            return;
        };
        let Some(name) = file.to_str().and_then(compiled_name) else {
            return;
        };
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        let mut same_name: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_str().and_then(compiled_name) == Some(name))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        same_name.sort_by_key(|f| std::cmp::Reverse(f.0));
        for (_, path) in same_name.iter().skip(keep) {
            if path != newest {
                // Another process may have removed it first, or still map it (Linux
                // keeps an unlinked file's pages for whoever has them).
                let _ = fs::remove_file(path);
            }
        }
    }
}

/// The name part of a compiled file's name, `NAME-<32 hex>.cwasm`.
fn compiled_name(file: &str) -> Option<&str> {
    let stem = file.strip_suffix(".cwasm")?;
    let (name, key) = stem.rsplit_once('-')?;
    (key.len() == 32 && key.bytes().all(|b| b.is_ascii_hexdigit())).then_some(name)
}

fn create_private_dir(dir: &Path) -> Result<(), CacheTrustError> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| CacheTrustError::Create {
            path: dir.to_path_buf(),
            source,
        })
}

/// Refuses a directory someone else owns, or that group or others may write.
fn check_private_dir(dir: &Path) -> Result<(), CacheTrustError> {
    let meta = fs::symlink_metadata(dir).map_err(|source| CacheTrustError::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    let untrusted = |problem: String| CacheTrustError::Untrusted {
        path: dir.to_path_buf(),
        problem,
    };
    if !meta.is_dir() {
        return Err(untrusted("not a directory (a symlink?)".into()));
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(untrusted(format!(
            "owned by user {} (runbox runs as user {me})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(untrusted(format!(
            "writable by group or others (mode {mode:o})"
        )));
    }
    Ok(())
}

/// Feeds `std::hash::Hash` output into a sha256.
struct DigestHasher<'a>(&'a mut Sha256);

impl std::hash::Hasher for DigestHasher<'_> {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    #[test]
    fn a_new_cache_is_private_and_a_shared_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("compiled");
        CompiledCache::open(&root).unwrap();
        let mode = fs::metadata(&root).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        fs::set_permissions(&root, fs::Permissions::from_mode(0o777)).unwrap();
        let e = CompiledCache::open(&root).unwrap_err().to_string();
        assert!(e.contains("writable by group or others"), "{e}");
        assert!(e.contains("chmod 700"), "{e}");
    }

    #[test]
    fn kinds_never_share_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompiledCache::open(dir.path()).unwrap();
        let engine = Engine::default();
        let plugin = cache.path(CompiledKind::Plugin, "program", "k", &engine);
        let program = cache.path(CompiledKind::Program, "program", "k", &engine);
        assert_ne!(plugin.parent(), program.parent());
        // Pruning programs leaves a plugin named `program` alone.
        for p in [&plugin, &program] {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, b"x").unwrap();
        }
        cache.prune(CompiledKind::Program, 0, 0);
        assert!(plugin.exists() && !program.exists());
    }

    #[test]
    fn superseded_forms_of_a_name_go_and_other_names_stay() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompiledCache::open(dir.path()).unwrap();
        let tools = cache.ensure_dir(CompiledKind::Tool).unwrap();
        let key = |n: u8| format!("{:032x}", n);
        let mut made = vec![];
        for n in 0..4u8 {
            let path = tools.join(format!("python.wasm-{}.cwasm", key(n)));
            fs::write(&path, b"x").unwrap();
            let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(n as u64);
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
            made.push(path);
        }
        // A name that begins like the other, and a file that is not a compiled form.
        let other = tools.join(format!("python-3.12.0.wasm-{}.cwasm", key(9)));
        let stray = tools.join("python.wasm-notes.txt");
        fs::write(&other, b"x").unwrap();
        fs::write(&stray, b"x").unwrap();
        cache.prune_superseded(&made[3], 2);
        let left: Vec<bool> = made.iter().map(|p| p.exists()).collect();
        assert_eq!(left, [false, false, true, true]);
        assert!(other.exists() && stray.exists());
    }

    #[test]
    fn prune_keeps_the_newest_within_count_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompiledCache::open(dir.path()).unwrap();
        let programs = cache.ensure_dir(CompiledKind::Program).unwrap();
        for i in 0..5u64 {
            let path = programs.join(format!("program-{i}.cwasm"));
            fs::write(&path, vec![0u8; 100]).unwrap();
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1000 + i);
            fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        let left = |cache: &CompiledCache| {
            let mut v: Vec<String> = fs::read_dir(cache.dir(CompiledKind::Program))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        cache.prune(CompiledKind::Program, 3, u64::MAX);
        assert_eq!(
            left(&cache),
            ["program-2.cwasm", "program-3.cwasm", "program-4.cwasm"]
        );
        // 250 bytes hold two files of 100.
        cache.prune(CompiledKind::Program, 10, 250);
        assert_eq!(left(&cache), ["program-3.cwasm", "program-4.cwasm"]);
    }
}
