//! Where runs keep their scratch directories.
//!
//! `--scratch-dir` (default: `scratch/` under the cache directory, on disk, rather than
//! `$TMPDIR`, which may be RAM) holds one directory per server process, locked while the
//! process lives (`runbox-scratch-PID-*`). A process that was killed leaves its directory
//! unlocked: the next server to start removes it, and every `runbox-run-*` left inside.
//! Nothing else in the scratch directory is touched: it may be a directory the user
//! shares with other programs.

use std::fs::{self, File};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::budget::disk::DiskBudget;
use crate::budget::volume::ScratchVolume;
use crate::sandbox::reaper::put_away;

/// Name of the lock file inside each process's directory.
const LOCK_FILE: &str = ".lock";
/// How every process's directory name starts.
const PROCESS_DIR_PREFIX: &str = "runbox-scratch-";
/// A process's directory while it is being made, before its lock is held: never taken
/// for a dead process's (removed only when it is old debris of a killed start).
const STAGING_PREFIX: &str = "runbox-starting-";
/// A finished run's directory holding at most this much is removed after the answer.
const SMALL_DIR_BYTES: u64 = 1 << 20;
/// ... and at most this many files and directories.
const SMALL_DIR_ENTRIES: u64 = 64;

#[derive(Debug, thiserror::Error)]
#[error("cannot use the scratch directory {path}: {source}")]
pub struct ScratchError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// This process's directory of run scratch directories; removed when dropped.
#[derive(Debug)]
pub struct ScratchRoot {
    dir: PathBuf,
    _lock: File,
    /// The filesystem it is on, which every run shares.
    volume: Arc<ScratchVolume>,
}

impl ScratchRoot {
    /// Makes this process's directory under `base` (created 0700), after removing the
    /// directories of processes that are gone.
    pub fn open(base: &Path) -> Result<ScratchRoot, ScratchError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| ScratchError { path, source }
        };
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(base)
            .map_err(err(base))?;
        remove_stale(base);
        // Made under a staging name, locked, then renamed: a directory with the process
        // prefix is locked from the moment it has that name, so another server starting
        // at the same time never takes it for a dead one (the lock, on the file, survives
        // the rename).
        let pid = std::process::id();
        let staging = tempfile::Builder::new()
            .prefix(&format!("{STAGING_PREFIX}{pid}-"))
            .tempdir_in(base)
            .map_err(err(base))?
            .keep();
        let lock = File::create(staging.join(LOCK_FILE)).map_err(err(&staging))?;
        lock.try_lock().map_err(|e| ScratchError {
            path: staging.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let unique = staging
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix(STAGING_PREFIX))
            .unwrap_or_default()
            .to_string();
        let dir = base.join(format!("{PROCESS_DIR_PREFIX}{unique}"));
        fs::rename(&staging, &dir).map_err(err(&dir))?;
        let volume = Arc::new(ScratchVolume::at(&dir));
        let root = ScratchRoot {
            dir,
            _lock: lock,
            volume,
        };
        let empty = root.empty_dir();
        fs::DirBuilder::new()
            .mode(0o500)
            .create(&empty)
            .map_err(err(&empty))?;
        Ok(root)
    }

    /// The filesystem the scratch directories are on.
    pub fn volume(&self) -> &Arc<ScratchVolume> {
        &self.volume
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// An empty directory, shown read-only at `/tools` to runs of a server without
    /// upstream tools: every run has the same preopened directories, so that a snapshot
    /// taken once (which keeps the list it saw) fits every run.
    pub fn empty_dir(&self) -> PathBuf {
        self.dir.join("empty")
    }

    /// The path of a new run's scratch directory (not created yet: see [`RunDir`]).
    pub fn next_run_dir(&self) -> PathBuf {
        self.dir.join(format!("runbox-run-{}", next_number()))
    }

    /// The path of a new session's scratch directory (not created yet).
    pub fn next_session_dir(&self) -> PathBuf {
        self.dir.join(format!("runbox-session-{}", next_number()))
    }
}

fn next_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One run's scratch directory: created empty (0700), removed with its contents when
/// dropped. Created and removed on the run's own thread, since removing 10,000 files
/// takes a while.
#[derive(Debug)]
pub struct RunDir(PathBuf);

impl RunDir {
    pub fn create(path: &Path) -> std::io::Result<RunDir> {
        fs::DirBuilder::new().mode(0o700).create(path)?;
        Ok(RunDir(path.to_path_buf()))
    }
}

/// Drops `holder` (a finished run's [`RunDir`], or what holds one) after the answer, on the
/// reaper's thread, when the run (charged to `disk`) left little in its directory:
/// removing even a hello's few entries took 0.25–1.2 ms of its answer on ext4. A
/// directory holding more goes before the answer, as the room the next run finds on the
/// scratch volume must not wait on a backlog: what can wait is a few small directories
/// (the reaper's queue holds 16 leftovers).
pub fn remove_after_answer<T: Send + 'static>(holder: T, disk: &DiskBudget) {
    if disk.bytes_used() <= SMALL_DIR_BYTES && disk.entries() <= SMALL_DIR_ENTRIES {
        put_away(holder, 0);
    } else {
        drop(holder);
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        match fs::remove_dir_all(&self.0) {
            // Already gone with its server's directory (a warm instance kept to the end).
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(
                "cannot remove the scratch directory {}: {e}",
                self.0.display()
            ),
            Ok(()) => {}
        }
    }
}

impl Drop for ScratchRoot {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Removes every process directory under `base` whose lock nobody holds; leaves
/// everything not named as one alone.
fn remove_stale(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let dir = entry.path();
        let name = entry.file_name();
        let name = name.to_str().unwrap_or_default();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if name.starts_with(STAGING_PREFIX) {
            // A start under way, or one killed before its directory got its name.
            if !is_recent(&dir) {
                let _ = fs::remove_dir_all(&dir);
            }
            continue;
        }
        if !name.starts_with(PROCESS_DIR_PREFIX) {
            continue;
        }
        let alive = match File::open(dir.join(LOCK_FILE)) {
            // A live process holds it; `try_lock` fails then.
            Ok(lock) => lock.try_lock().is_err(),
            // Without a lock file, it is being created right now, or is debris.
            Err(_) => is_recent(&dir),
        };
        if !alive {
            tracing::info!("removing stale scratch directory {}", dir.display());
            let _ = fs::remove_dir_all(&dir);
        }
    }
}

/// True for a directory modified within the last minute.
fn is_recent(dir: &Path) -> bool {
    fs::metadata(dir)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age.as_secs() < 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A little left in a finished run's directory goes after the answer; more, before.
    #[test]
    fn small_run_dirs_are_removed_after_the_answer_big_ones_before() {
        let base = tempfile::tempdir().unwrap();
        let small = base.path().join("runbox-run-small");
        let disk = DiskBudget::new(u64::MAX, u64::MAX);
        let dir = RunDir::create(&small).unwrap();
        fs::write(small.join("main.py"), "print(1)").unwrap();
        disk.charge_object(8).unwrap().created(None);
        remove_after_answer(dir, &disk);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while small.exists() {
            assert!(std::time::Instant::now() < until, "never removed");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }

        let big = base.path().join("runbox-run-big");
        let dir = RunDir::create(&big).unwrap();
        fs::write(big.join("data"), vec![0u8; 4096]).unwrap();
        disk.charge_object(SMALL_DIR_BYTES).unwrap().created(None);
        remove_after_answer(dir, &disk);
        assert!(!big.exists(), "removed before it returned");

        let many = base.path().join("runbox-run-many");
        let dir = RunDir::create(&many).unwrap();
        let files = DiskBudget::new(u64::MAX, u64::MAX);
        for _ in 0..=SMALL_DIR_ENTRIES {
            files.take_entry().unwrap();
        }
        remove_after_answer(dir, &files);
        assert!(!many.exists(), "removed before it returned");
    }

    #[test]
    fn a_killed_servers_scratch_is_removed_and_a_live_ones_kept() {
        let base = tempfile::tempdir().unwrap();
        // A server that was killed: its directory is unlocked, with a run inside.
        let dead = base.path().join(format!("{PROCESS_DIR_PREFIX}12345-dead"));
        fs::create_dir_all(dead.join("runbox-run-x/sub")).unwrap();
        fs::write(dead.join(LOCK_FILE), "").unwrap();
        fs::write(dead.join("runbox-run-x/sub/file"), "data").unwrap();
        let live = ScratchRoot::open(base.path()).unwrap();
        assert!(!dead.exists(), "the stale directory is removed");
        let run_path = live.next_run_dir();
        assert!(run_path.starts_with(live.path()));
        assert_ne!(run_path, live.next_run_dir());
        let run = RunDir::create(&run_path).unwrap();
        fs::write(run_path.join("x"), "data").unwrap();
        // A second server leaves the first one's directory alone.
        let other = ScratchRoot::open(base.path()).unwrap();
        assert!(live.path().exists() && run_path.exists());
        drop(run);
        assert!(!run_path.exists(), "a run's directory goes with its files");
        let live_dir = live.path().to_path_buf();
        drop(live);
        assert!(!live_dir.exists(), "a clean stop removes its directory");
        assert!(other.path().exists());
    }

    #[test]
    fn servers_starting_at_once_never_take_each_other_for_dead() {
        let base = tempfile::tempdir().unwrap();
        // Threads lock like processes (a lock belongs to an open file, not a process).
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let base = base.path().to_path_buf();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let root = ScratchRoot::open(&base).expect("open while others do");
                        assert!(root.path().join(LOCK_FILE).exists());
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn what_is_not_a_process_directory_is_left_alone() {
        let base = tempfile::tempdir().unwrap();
        // A user's own directories beside runbox's: old, unlocked, one even named like a
        // run of an older layout.
        let mine = base.path().join("photos");
        let run_like = base.path().join("runbox-run-7");
        let locked_like = base.path().join("12345-dead");
        for dir in [&mine, &run_like, &locked_like] {
            fs::create_dir_all(dir).unwrap();
            fs::write(dir.join("keep"), "data").unwrap();
            let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
            File::open(dir).unwrap().set_modified(an_hour_ago).unwrap();
        }
        fs::write(locked_like.join(LOCK_FILE), "").unwrap();
        let _root = ScratchRoot::open(base.path()).unwrap();
        for dir in [&mine, &run_like, &locked_like] {
            assert!(dir.join("keep").exists(), "{} was removed", dir.display());
        }
    }
}
