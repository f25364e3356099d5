//! The cache of precompiled components: native code runbox loads and runs, so only
//! runbox may be able to write it, or replace it.
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
//!
//! # Trust
//!
//! [`CompiledCache::open`] resolves symlinks in the path it is given and checks, as
//! OpenSSH checks the files it trusts:
//!
//! - `compiled/` itself: a directory (not a symlink) owned by the user runbox runs as
//!   (its effective uid), not writable by group or others;
//! - the cache directory holding it, and every directory above that up to `/`: owned by
//!   root or by that user, and not writable by group or others. Further up than the
//!   cache directory, a directory others may write is accepted when it is sticky (such
//!   as `/tmp`, mode 1777): there only an entry's owner may rename or remove it, and the
//!   entry below it on the way to the cache is checked to be owned by root or this user.
//!
//! So nobody else can rename `compiled/` or a directory above it away and put one of
//! their own in its place. On top of that the cache keeps the checked directory open and
//! opens, creates and renames compiled files relative to that descriptor (`openat`,
//! `renameat`, never following a symlink), so even a substitution after the check would
//! not change which files are loaded; each opened file is checked (`fstat`) to be a
//! regular file of this user that group and others cannot write.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, OFlags};
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
    #[error("cannot check the compiled-code cache directory {path}: {source}")]
    Inspect {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "refusing the compiled-code cache {path}: it is {problem}, and runbox runs the native \
         code it finds there; make it yours alone (`chmod 700 {path}`) or pick another \
         directory with --cache-dir"
    )]
    Untrusted { path: PathBuf, problem: String },
    /// The cache directory or a directory above it lets someone else replace the cache.
    #[error(
        "refusing the compiled-code cache {cache}: {path}, {role}, is {problem}, so someone \
         else could put a directory of their own in the cache's place and runbox would run \
         the native code in it; {fix}"
    )]
    UntrustedAncestor {
        cache: PathBuf,
        path: PathBuf,
        role: &'static str,
        problem: String,
        fix: String,
    },
}

/// The directory of compiled components, checked (with every directory above it) so that
/// only this user can write or replace it, and kept open: compiled files are opened and
/// written relative to that descriptor.
#[derive(Debug, Clone)]
pub struct CompiledCache {
    root: PathBuf,
    /// The checked directory (`O_DIRECTORY | O_NOFOLLOW`).
    dir: Arc<File>,
}

impl CompiledCache {
    /// Opens (creating it 0700 if missing) the compiled cache at `root`, refusing it when
    /// someone else could write or replace it (see the module documentation).
    pub fn open(root: &Path) -> Result<CompiledCache, CacheTrustError> {
        create_private_dir(root)?;
        let inspect = |path: &Path| {
            let path = path.to_path_buf();
            move |source| CacheTrustError::Inspect { path, source }
        };
        // Check where the directory really is, not a symlink to it.
        let real = fs::canonicalize(root).map_err(inspect(root))?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let dir = rustix::fs::open(&real, flags, Mode::empty())
            .map(File::from)
            .map_err(io::Error::from)
            .map_err(inspect(&real))?;
        let meta = dir.metadata().map_err(inspect(&real))?;
        check_private(&meta, &real)?;
        check_ancestors(&real)?;
        // Nobody else can rename anything on the way, so the path still names the
        // directory opened; make sure it did all along.
        let now = fs::symlink_metadata(&real).map_err(inspect(&real))?;
        if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) {
            return Err(CacheTrustError::Untrusted {
                path: real,
                problem: "replaced by another directory while runbox checked it".into(),
            });
        }
        Ok(CompiledCache {
            root: root.to_path_buf(),
            dir: Arc::new(dir),
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
        let path = self.dir(kind);
        self.kind_dir(kind, true).map_err(|e| match e {
            KindDirError::Io(source) => CacheTrustError::Create {
                path: path.clone(),
                source,
            },
            KindDirError::Untrusted(problem) => CacheTrustError::Untrusted {
                path: path.clone(),
                problem,
            },
        })?;
        Ok(path)
    }

    /// Opens the compiled file at `path` (a path [`CompiledCache::path`] gave for `kind`)
    /// through the checked directory's descriptor, never following a symlink, and checks
    /// it is a regular file of this user that group and others cannot write.
    pub fn open_compiled(&self, kind: CompiledKind, path: &Path) -> io::Result<File> {
        let name = self.file_name(kind, path)?;
        let dir = self
            .kind_dir(kind, false)
            .map_err(|e| e.into_io(&self.dir(kind)))?;
        let file = openat(&dir, name, OFlags::RDONLY | OFlags::NOFOLLOW, 0)?;
        let meta = file.metadata()?;
        let problem = if !meta.file_type().is_file() {
            Some("not a regular file".to_string())
        } else {
            not_ours_alone(&meta)
        };
        match problem {
            Some(problem) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "refusing the compiled file {}: it is {problem}",
                    path.display()
                ),
            )),
            None => Ok(file),
        }
    }

    /// True when a usable compiled file is at `path` (see [`CompiledCache::open_compiled`]).
    pub fn contains(&self, kind: CompiledKind, path: &Path) -> bool {
        self.open_compiled(kind, path).is_ok()
    }

    /// Writes `bytes` as the compiled file at `path` (a path [`CompiledCache::path`] gave
    /// for `kind`): into a new temporary file (mode 0600) in the checked directory, then
    /// renamed over the final name within that directory, so the name only ever holds
    /// complete content.
    pub fn write(&self, kind: CompiledKind, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let name = self.file_name(kind, path)?;
        let dir = self
            .kind_dir(kind, true)
            .map_err(|e| e.into_io(&self.dir(kind)))?;
        let (tmp, mut file) = loop {
            let mut random = [0u8; 8];
            getrandom::getrandom(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
            let tmp = format!(".tmp-{}", hex::encode(random));
            let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
            match openat(&dir, OsStr::new(&tmp), flags, 0o600) {
                Ok(file) => break (tmp, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        let written = io::Write::write_all(&mut file, bytes)
            .and_then(|()| renameat(&dir, OsStr::new(&tmp), name));
        if written.is_err() {
            let _ = unlinkat(&dir, OsStr::new(&tmp));
        }
        written
    }

    /// The file name of `path`, which must be in the directory of `kind`.
    fn file_name<'a>(&self, kind: CompiledKind, path: &'a Path) -> io::Result<&'a OsStr> {
        match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) if parent == self.dir(kind) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a file of the compiled cache's {}",
                    path.display(),
                    self.dir(kind).display()
                ),
            )),
        }
    }

    /// The directory of `kind`, opened relative to the checked directory (created first
    /// when `create`), and checked like it.
    fn kind_dir(&self, kind: CompiledKind, create: bool) -> Result<File, KindDirError> {
        let name = OsStr::new(kind.dir());
        if create {
            match mkdirat(&self.dir, name, 0o700) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e.into()),
                _ => {}
            }
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
        let dir = openat(&self.dir, name, flags, 0)?;
        let meta = dir.metadata()?;
        if let Some(problem) = private_dir_problem(&meta) {
            return Err(KindDirError::Untrusted(problem));
        }
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

/// The effective uid: the user whose files runbox trusts besides root's.
fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Why a directory of the cache itself is not private: not a directory, someone else's,
/// or writable by group or others.
fn private_dir_problem(meta: &fs::Metadata) -> Option<String> {
    if !meta.is_dir() {
        Some("not a directory (a symlink?)".into())
    } else {
        not_ours_alone(meta)
    }
}

/// Why an entry of the cache is not this user's alone: someone else's, or writable by
/// group or others.
pub(super) fn not_ours_alone(meta: &fs::Metadata) -> Option<String> {
    let me = euid();
    if meta.uid() != me {
        Some(format!(
            "owned by user {} (runbox runs as user {me})",
            meta.uid()
        ))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!(
            "writable by group or others (mode {:o})",
            meta.mode() & 0o7777
        ))
    } else {
        None
    }
}

/// Refuses the compiled directory itself unless it is a directory of this user that
/// group and others cannot write.
fn check_private(meta: &fs::Metadata, dir: &Path) -> Result<(), CacheTrustError> {
    match private_dir_problem(meta) {
        Some(problem) => Err(CacheTrustError::Untrusted {
            path: dir.to_path_buf(),
            problem,
        }),
        None => Ok(()),
    }
}

/// The sticky bit: in such a directory only an entry's owner (or the directory's, or
/// root) may rename or remove the entry.
const STICKY: u32 = 0o1000;

/// Refuses the compiled directory `cache` (a path without symlinks) when a directory
/// above it, up to `/`, lets someone other than root and this user replace it: one owned
/// by someone else, or one group or others may write. Above the cache directory (the
/// one holding `compiled/`), a sticky directory others may write is accepted.
fn check_ancestors(cache: &Path) -> Result<(), CacheTrustError> {
    let me = euid();
    let elsewhere = "or pick another directory with --cache-dir, one only you can write with \
                     every directory above it owned by root or by you";
    for (depth, dir) in cache.ancestors().skip(1).enumerate() {
        let meta = fs::symlink_metadata(dir).map_err(|source| CacheTrustError::Inspect {
            path: dir.to_path_buf(),
            source,
        })?;
        let refuse = |problem: String, fix: String| {
            Err(CacheTrustError::UntrustedAncestor {
                cache: cache.to_path_buf(),
                path: dir.to_path_buf(),
                role: if depth == 0 {
                    "the cache directory"
                } else {
                    "a directory above the cache directory"
                },
                problem,
                fix,
            })
        };
        if !meta.is_dir() {
            // Only a race can get here: `cache` has no symlinks.
            return refuse(
                "not a directory (a symlink?)".into(),
                elsewhere.trim_start_matches("or ").into(),
            );
        }
        if meta.uid() != 0 && meta.uid() != me {
            return refuse(
                format!(
                    "owned by user {} (neither root nor user {me}, whom runbox runs as)",
                    meta.uid()
                ),
                elsewhere.trim_start_matches("or ").into(),
            );
        }
        let mode = meta.mode() & 0o7777;
        let sticky = mode & STICKY != 0;
        if mode & 0o022 != 0 && !(sticky && depth > 0) {
            let problem = format!("writable by group or others (mode {mode:o})");
            let fix = if sticky {
                // A shared directory such as /tmp: others may add entries to it, so
                // the cache must be a directory of its own inside it.
                format!(
                    "make a directory of your own inside it (`mkdir -m 700 {}/NAME`) and \
                     pass that with --cache-dir",
                    dir.display()
                )
            } else {
                format!("`chmod go-w {}`, {elsewhere}", dir.display())
            };
            return refuse(problem, fix);
        }
    }
    Ok(())
}

/// Why the directory of a kind cannot be used.
enum KindDirError {
    Io(io::Error),
    Untrusted(String),
}

impl From<io::Error> for KindDirError {
    fn from(e: io::Error) -> Self {
        KindDirError::Io(e)
    }
}

impl KindDirError {
    fn into_io(self, path: &Path) -> io::Error {
        match self {
            KindDirError::Io(e) => e,
            KindDirError::Untrusted(problem) => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "refusing the compiled-code directory {}: it is {problem}",
                    path.display()
                ),
            ),
        }
    }
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`.
fn openat(dir: &File, name: &OsStr, flags: OFlags, mode: u32) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        flags | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?;
    Ok(File::from(fd))
}

/// `mkdirat(dir, name, mode)`.
fn mkdirat(dir: &File, name: &OsStr, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode))?)
}

/// `renameat(dir, from, dir, to)`.
fn renameat(dir: &File, from: &OsStr, to: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::renameat(dir, from, dir, to)?)
}

/// `unlinkat(dir, name, 0)`.
fn unlinkat(dir: &File, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?)
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
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, SystemTime};

    fn chmod(path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// `base/NAME`, created with `mode`.
    fn mkdir(base: &Path, name: &str, mode: u32) -> PathBuf {
        let dir = base.join(name);
        fs::create_dir_all(&dir).unwrap();
        chmod(&dir, mode);
        dir
    }

    fn read(file: File) -> Vec<u8> {
        let mut bytes = vec![];
        (&file).read_to_end(&mut bytes).unwrap();
        bytes
    }

    #[test]
    fn a_new_cache_is_private_and_a_shared_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cache").join("compiled");
        CompiledCache::open(&root).unwrap();
        for made in [root.as_path(), root.parent().unwrap()] {
            let mode = fs::metadata(made).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", made.display());
        }
        chmod(&root, 0o777);
        let e = CompiledCache::open(&root).unwrap_err().to_string();
        assert!(e.contains("writable by group or others"), "{e}");
        assert!(e.contains("chmod 700"), "{e}");
    }

    /// `--cache-dir D` with D mode 0777: `compiled/` inside is private, D is not.
    #[test]
    fn a_cache_directory_others_may_write_is_refused() {
        let base = tempfile::tempdir().unwrap();
        let cache = mkdir(base.path(), "cache", 0o777);
        let root = cache.join("compiled");
        let e = CompiledCache::open(&root).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{}, the cache directory, is writable by group or others (mode 777)",
                cache.display()
            )),
            "{e}"
        );
        assert!(
            e.contains(&format!("`chmod go-w {}`", cache.display())),
            "{e}"
        );
        assert!(e.contains("--cache-dir"), "{e}");
        chmod(&cache, 0o755);
        CompiledCache::open(&root).unwrap();
        // Group-writable is refused too.
        chmod(&cache, 0o770);
        assert!(CompiledCache::open(&root).is_err());
    }

    #[test]
    fn a_writable_ancestor_is_refused_unless_sticky() {
        let base = tempfile::tempdir().unwrap();
        let shared = mkdir(base.path(), "shared", 0o777);
        let cache = mkdir(&shared, "cache", 0o700);
        let root = cache.join("compiled");
        let e = CompiledCache::open(&root).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "{}, a directory above the cache directory, is writable by group or others \
                 (mode 777)",
                shared.display()
            )),
            "{e}"
        );
        assert!(
            e.contains(&format!("`chmod go-w {}`", shared.display())),
            "{e}"
        );
        // Sticky like /tmp: others cannot rename `cache`, which is ours.
        chmod(&shared, 0o1777);
        CompiledCache::open(&root).unwrap();
    }

    #[test]
    fn a_sticky_directory_is_no_cache_directory() {
        let base = tempfile::tempdir().unwrap();
        let shared = mkdir(base.path(), "shared", 0o1777);
        let e = CompiledCache::open(&shared.join("compiled"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!(
                "{}, the cache directory, is writable by group or others (mode 1777)",
                shared.display()
            )),
            "{e}"
        );
        assert!(e.contains("make a directory of your own inside it"), "{e}");
    }

    /// The system's temporary directory (root's, sticky) is fine above a cache.
    #[test]
    fn a_cache_in_the_system_temp_dir_is_accepted() {
        let base = tempfile::tempdir().unwrap();
        let tmp = fs::canonicalize(std::env::temp_dir()).unwrap();
        assert_eq!(fs::canonicalize(base.path()).unwrap().parent(), Some(&*tmp));
        let mode = fs::metadata(&tmp).unwrap().mode();
        assert!(mode & 0o002 == 0 || mode & STICKY != 0, "{mode:o}");
        CompiledCache::open(&base.path().join("compiled")).unwrap();
    }

    #[test]
    fn a_symlinked_cache_is_checked_where_it_really_is() {
        let base = tempfile::tempdir().unwrap();
        let open = mkdir(base.path(), "open", 0o777);
        let real = mkdir(&open, "real", 0o700);
        let link = base.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let e = CompiledCache::open(&link.join("compiled"))
            .unwrap_err()
            .to_string();
        let open = fs::canonicalize(&open).unwrap();
        assert!(
            e.contains(&format!(
                "{}, a directory above the cache directory",
                open.display()
            )),
            "{e}"
        );
    }

    /// Someone renames the cache away after the check and puts a directory of their own
    /// in its place: what runbox opens and writes is still in the directory it checked.
    #[test]
    fn a_substituted_directory_is_not_what_gets_loaded() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("cache").join("compiled");
        let cache = CompiledCache::open(&root).unwrap();
        let engine = Engine::default();
        let ours = cache.path(CompiledKind::Plugin, "p", "ours", &engine);
        let later = cache.path(CompiledKind::Plugin, "p", "later", &engine);
        cache.write(CompiledKind::Plugin, &ours, b"ours").unwrap();

        fs::rename(base.path().join("cache"), base.path().join("moved")).unwrap();
        let planted = mkdir(&root, "plugins", 0o700);
        fs::write(planted.join(ours.file_name().unwrap()), b"theirs").unwrap();
        fs::write(planted.join(later.file_name().unwrap()), b"theirs").unwrap();

        let file = cache.open_compiled(CompiledKind::Plugin, &ours).unwrap();
        assert_eq!(read(file), b"ours");
        assert!(!cache.contains(CompiledKind::Plugin, &later));
        // New files go to the checked directory too.
        cache.write(CompiledKind::Plugin, &later, b"new").unwrap();
        let moved = base.path().join("moved/compiled/plugins");
        assert_eq!(
            fs::read(moved.join(later.file_name().unwrap())).unwrap(),
            b"new"
        );
        assert_eq!(
            fs::read(planted.join(later.file_name().unwrap())).unwrap(),
            b"theirs"
        );
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(&moved).unwrap().count(), 2);
    }

    #[test]
    fn only_private_regular_files_of_the_cache_are_opened() {
        let base = tempfile::tempdir().unwrap();
        let cache = CompiledCache::open(&base.path().join("compiled")).unwrap();
        let engine = Engine::default();
        let path = cache.path(CompiledKind::Tool, "t", "k", &engine);
        cache.write(CompiledKind::Tool, &path, b"x").unwrap();
        let mode = fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(cache.contains(CompiledKind::Tool, &path));

        chmod(&path, 0o666);
        let e = cache.open_compiled(CompiledKind::Tool, &path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        assert!(e.to_string().contains("writable by group or others"), "{e}");

        // A symlink is not followed, even to a file of the cache.
        let other = cache.path(CompiledKind::Tool, "t", "other", &engine);
        cache.write(CompiledKind::Tool, &other, b"x").unwrap();
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&other, &path).unwrap();
        assert!(cache.open_compiled(CompiledKind::Tool, &path).is_err());

        // Only files of the kind's own directory.
        let wrong_kind = cache
            .open_compiled(CompiledKind::Plugin, &other)
            .unwrap_err();
        assert_eq!(wrong_kind.kind(), io::ErrorKind::InvalidInput);
        let outside = base.path().join("elsewhere.cwasm");
        fs::write(&outside, b"x").unwrap();
        assert!(cache.open_compiled(CompiledKind::Tool, &outside).is_err());

        // A kind directory others may write is refused as well.
        chmod(&cache.dir(CompiledKind::Tool), 0o777);
        let e = cache.open_compiled(CompiledKind::Tool, &other).unwrap_err();
        assert!(e.to_string().contains("writable by group or others"), "{e}");
        assert!(cache.ensure_dir(CompiledKind::Tool).is_err());
    }

    #[test]
    fn kinds_never_share_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompiledCache::open(&dir.path().join("compiled")).unwrap();
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
        let cache = CompiledCache::open(&dir.path().join("compiled")).unwrap();
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
        let cache = CompiledCache::open(&dir.path().join("compiled")).unwrap();
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
