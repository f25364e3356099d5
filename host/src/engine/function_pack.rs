//! The compiled functions of produced programs, kept from one compile to the next.
//!
//! A C++ program a run produces links in much of libc++ (a `<iostream>` hello is 590 KB
//! of WebAssembly, 2,300 functions), and every program compiled anew paid for all of it:
//! 0.42 s of a 0.76 s hello from new source. Most of those functions are the same from
//! program to program, so the program compiler keeps Cranelift's compiled functions (its
//! incremental cache, keyed by each function's own body and the compiler's settings) in
//! one file beside the compiled programs, which each compiling child reads at its start
//! and writes back after. Measured on three different `<iostream>` programs: 2,000 of
//! their 2,300 functions were found, and a compile took 0.20 s instead of 0.42 s.
//!
//! One file per compiler and wasmtime build (its name says which): read whole, replaced
//! whole by a rename, so a reader never sees half of one and two children writing at once
//! lose only entries (the cache is a cache). Bounded: past [`MAX_PACK_BYTES`] only the
//! functions the last compile used are written back. The file lives in the compiled
//! cache's own directory, which only runbox's user can write, like the compiled programs
//! whose code it holds.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use wasmtime::Engine;

/// What the file starts with: its format (a change to it changes this line).
const MAGIC: &[u8] = b"runbox compiled functions v1\n";
/// The most the file may hold; past it, only what the last compile used is kept.
pub const MAX_PACK_BYTES: u64 = 64 << 20;

/// Compiled functions by Cranelift's cache key, loaded from and saved to one file.
#[derive(Debug)]
pub struct FunctionPack {
    path: PathBuf,
    entries: Mutex<HashMap<Vec<u8>, Vec<u8>>>,
    /// Keys this compile found or added: what is kept when the file is over its cap.
    used: Mutex<HashSet<Vec<u8>>>,
    found: AtomicUsize,
    changed: AtomicBool,
}

impl FunctionPack {
    /// The pack for programs compiled by `engine` with compiler `compiler_name`, in
    /// `dir`: its name holds the engine's compatibility hash, so another wasmtime or
    /// another configuration uses another file.
    pub fn path_in(dir: &Path, compiler_name: &str, engine: &Engine) -> PathBuf {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        dir.join(format!(
            "functions-{compiler_name}-{:016x}.pack",
            hasher.finish()
        ))
    }

    /// The pack at `path`; empty when the file is missing, not a whole pack, or not a
    /// regular file of this user that nobody else can write (its code will run).
    pub fn open(path: PathBuf) -> FunctionPack {
        let entries = read_trusted(&path)
            .and_then(|bytes| decode(&bytes))
            .unwrap_or_default();
        FunctionPack {
            path,
            entries: Mutex::new(entries),
            used: Mutex::new(HashSet::new()),
            found: AtomicUsize::new(0),
            changed: AtomicBool::new(false),
        }
    }

    /// How many compiled functions the pack holds.
    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many functions this compile found in the pack.
    pub fn found(&self) -> usize {
        self.found.load(Ordering::Relaxed)
    }

    /// Writes the pack back if this compile added to it (a temporary file renamed over
    /// it), and removes the packs of other wasmtime builds for the same compiler.
    pub fn save(&self) -> io::Result<()> {
        if !self.changed.load(Ordering::Relaxed) {
            return Ok(());
        }
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let total: u64 = entries
            .iter()
            .map(|(k, v)| (k.len() + v.len() + 8) as u64)
            .sum();
        let keep = |key: &Vec<u8>| total <= MAX_PACK_BYTES || used.contains(key);
        let bytes = encode(entries.iter().filter(|(k, _)| keep(k)));
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let mut tmp = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
        io::Write::write_all(&mut tmp, &bytes)?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
        self.remove_superseded();
        Ok(())
    }

    /// Packs of the same compiler from other wasmtime builds (an upgrade leaves them).
    fn remove_superseded(&self) {
        let (Some(dir), Some(name)) = (self.path.parent(), self.path.file_name()) else {
            return;
        };
        let name = name.to_string_lossy();
        // `functions-COMPILER-` (the hash and `.pack` follow).
        let Some(stem) = name.get(..name.len().saturating_sub(16 + ".pack".len())) else {
            return;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.filter_map(Result::ok) {
            let other = entry.file_name().to_string_lossy().into_owned();
            // `functions-cranelift-` must not take `functions-cranelift-unoptimized-`'s.
            let hash = other
                .strip_prefix(stem)
                .and_then(|rest| rest.strip_suffix(".pack"));
            let same_compiler =
                hash.is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
            if other != name && same_compiler {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    fn mark_used(&self, key: &[u8]) {
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_vec());
    }
}

impl wasmtime::CacheStore for FunctionPack {
    fn get(&self, key: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
        let found = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()?;
        self.found.fetch_add(1, Ordering::Relaxed);
        self.mark_used(key);
        Some(std::borrow::Cow::Owned(found))
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_vec(), value);
        self.mark_used(key);
        self.changed.store(true, Ordering::Relaxed);
        true
    }
}

/// The file at `path` (not followed if a link) when it is a regular file of this user
/// that neither group nor others can write, as the compiled cache asks of its files.
fn read_trusted(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    let ours = super::compiled_cache::not_ours_alone(&meta).is_none();
    if !meta.is_file() || !ours || meta.len() > 2 * MAX_PACK_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    io::Read::read_to_end(&mut file, &mut bytes).ok()?;
    Some(bytes)
}

/// [`MAGIC`], then each entry as its key's length, the key, its value's length and the
/// value (lengths as little-endian u32).
fn encode<'a>(entries: impl Iterator<Item = (&'a Vec<u8>, &'a Vec<u8>)>) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    for (key, value) in entries {
        for part in [key, value] {
            out.extend_from_slice(&(part.len() as u32).to_le_bytes());
            out.extend_from_slice(part);
        }
    }
    out
}

/// The entries of a whole pack; `None` for anything else (another format, a cut file).
fn decode(bytes: &[u8]) -> Option<HashMap<Vec<u8>, Vec<u8>>> {
    let mut rest = bytes.strip_prefix(MAGIC)?;
    let take = |rest: &mut &[u8]| -> Option<Vec<u8>> {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let part = rest.get(4..4 + len)?.to_vec();
        *rest = &rest[4 + len..];
        Some(part)
    };
    let mut entries = HashMap::new();
    while !rest.is_empty() {
        let key = take(&mut rest)?;
        let value = take(&mut rest)?;
        entries.insert(key, value);
    }
    Some(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::CacheStore;

    #[test]
    fn a_saved_pack_is_read_back_and_a_cut_one_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("functions-x-0000000000000000.pack");
        let pack = FunctionPack::open(path.clone());
        assert!(pack.is_empty());
        assert!(pack.insert(b"key one", b"code one".to_vec()));
        assert!(pack.insert(b"key two", vec![7; 1000]));
        pack.save().unwrap();
        let again = FunctionPack::open(path.clone());
        assert_eq!(again.len(), 2);
        assert_eq!(again.get(b"key one").as_deref(), Some(&b"code one"[..]));
        assert_eq!(again.get(b"key two").as_deref(), Some(&[7; 1000][..]));
        assert_eq!(again.get(b"key three"), None);
        // Nothing added: nothing written.
        std::fs::write(&path, b"not a pack").unwrap();
        again.save().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"not a pack");
        assert!(FunctionPack::open(path.clone()).is_empty());
        // A pack cut short is not half read.
        let whole = encode([(&b"k".to_vec(), &b"value".to_vec())].into_iter());
        std::fs::write(&path, &whole[..whole.len() - 2]).unwrap();
        assert!(FunctionPack::open(path).is_empty());
    }

    #[test]
    fn a_pack_others_can_write_or_a_link_is_not_read() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("functions-x-0000000000000000.pack");
        let pack = FunctionPack::open(path.clone());
        pack.insert(b"k", b"v".to_vec());
        pack.save().unwrap();
        assert_eq!(FunctionPack::open(path.clone()).len(), 1);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(
            FunctionPack::open(path.clone()).is_empty(),
            "writable by others"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("functions-x-link.pack");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(FunctionPack::open(link).is_empty(), "a symlink");
    }

    #[test]
    fn an_oversized_pack_keeps_what_the_last_compile_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("functions-x-0000000000000000.pack");
        let big = (MAX_PACK_BYTES / 2) as usize;
        let pack = FunctionPack::open(path.clone());
        pack.insert(b"old", vec![1; big]);
        pack.save().unwrap();
        let pack = FunctionPack::open(path.clone());
        pack.insert(b"new", vec![2; big]);
        pack.insert(b"small", vec![3; 10]);
        pack.save().unwrap();
        let kept = FunctionPack::open(path);
        assert_eq!(kept.len(), 2, "the unused `old` goes");
        assert!(kept.get(b"old").is_none());
        assert!(kept.get(b"new").is_some() && kept.get(b"small").is_some());
    }

    #[test]
    fn another_wasmtime_builds_pack_is_removed_on_save() {
        let dir = tempfile::tempdir().unwrap();
        let stale = dir.path().join("functions-cranelift-00000000000000aa.pack");
        let other_compiler = dir
            .path()
            .join("functions-cranelift-unoptimized-00000000000000aa.pack");
        std::fs::write(&stale, b"x").unwrap();
        std::fs::write(&other_compiler, b"x").unwrap();
        let pack = FunctionPack::open(dir.path().join("functions-cranelift-00000000000000bb.pack"));
        pack.insert(b"k", b"v".to_vec());
        pack.save().unwrap();
        assert!(!stale.exists());
        assert!(other_compiler.exists());
    }

    /// Two programs that share a function: the second compile finds it in the pack the
    /// first one saved, though the function sits at another index.
    #[test]
    fn a_second_program_reuses_the_first_ones_functions() {
        let dir = tempfile::tempdir().unwrap();
        let compiler = crate::engine::ProgramCompiler::Cranelift;
        let shared = "(func $shared (param i32) (result i32) (local.get 0) (i32.const 3) (i32.mul) (i32.const 7) (i32.add))";
        let first = format!(
            "(module {shared} (func (export \"f\") (result i32) (call $shared (i32.const 1))))"
        );
        let second = format!("(module (func $other (result i32) (i32.const 9)) {shared} (func (export \"g\") (result i32) (call $shared (call $other))))");
        let compile = |text: &str| {
            let (engine, pack) =
                crate::engine::program_engine_with_pack(compiler, dir.path()).expect("an engine");
            let pack = pack.expect("Cranelift keeps a pack");
            wasmtime::Module::new(&engine, wat::parse_str(text).unwrap()).unwrap();
            pack.save().unwrap();
            pack.found()
        };
        assert_eq!(compile(&first), 0, "nothing to find at first");
        assert!(compile(&second) >= 1, "`$shared` is found");
        assert!(
            compile(&second) >= 3,
            "all of a program compiled before is found"
        );
        // Winch keeps none (it has no incremental cache).
        let (_, pack) = crate::engine::program_engine_with_pack(
            crate::engine::ProgramCompiler::Winch,
            dir.path(),
        )
        .unwrap();
        assert!(pack.is_none());
    }
}
