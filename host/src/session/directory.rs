//! `--session-store DIR`: where sessions go when they hibernate, and where any replica
//! sharing the directory finds them again.
//!
//! Each session is one file, `ID.session` (see `entry.rs` for its bytes), replaced
//! atomically: written to a temporary file in the same directory, synced, renamed over
//! the old one, and the directory synced; a crash mid-write leaves the previous entry.
//! Bounded: at most `max_entries` entries of at most `max_entry_bytes` each, each kept
//! for `ttl` after it was stored (SECURITY.md).
//!
//! A lease, `ID.lease`, says which process resumed an entry and has not stored it back
//! since; that process rewrites it every [`LEASE_REFRESH`] while it holds the session,
//! and storing removes it. A fresh lease of another process means the session lives
//! there: it is not resumed twice. A stale one means that process stopped without
//! storing the session (`kill -9`, a crash): the session resumes as last stored, what it
//! did there is lost, and its next result says so. A lease records its process's host
//! (host name and boot): on the same host, a lease whose process is gone is stale at
//! once, so a server restarted after a crash resumes its sessions at their first call;
//! another host's lease is judged by its age.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::entry::{EntryError, StoredSession};

/// Entries kept at once, by default.
pub const DEFAULT_MAX_STORED: usize = 1000;
/// How long an entry is kept after it was stored, by default.
pub const DEFAULT_STORED_TTL: Duration = Duration::from_secs(24 * 3600);
/// The largest entry, by default: a session's files (at most twice the scratch cap,
/// the files when its journal starts and now) and its journal.
pub const DEFAULT_MAX_ENTRY_BYTES: u64 = 1 << 30;

/// How often a process rewrites the leases it holds.
pub const LEASE_REFRESH: Duration = Duration::from_secs(5);
/// A lease rewritten this recently belongs to a live process.
pub const LEASE_FRESH: Duration = Duration::from_secs(15);

const ENTRY_SUFFIX: &str = ".session";
const LEASE_SUFFIX: &str = ".lease";
const TEMP_PREFIX: &str = ".tmp-";

/// Why the store could not keep or give back a session.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    #[error("the stored session `{id}` was refused: {why}; call create_session to make a new one")]
    Refused { id: String, why: EntryError },
    #[error("the stored session `{id}` is not the session asked for: {why}")]
    Foreign { id: String, why: String },
    #[error("the session store holds {max} sessions, the most it may (--max-stored-sessions)")]
    Full { max: usize },
    #[error("the session is larger than the {max} bytes a stored session may hold")]
    TooLarge { max: u64 },
    #[error("session `{id}` is in use by `{by}`, which resumed it from the session store: its calls go there (a client whose connection is held by another replica must reconnect through the balancer); it can move again once `{by}` stores it")]
    Held { id: String, by: String },
    #[error("the session store at {dir} failed: {message}")]
    Io { dir: String, message: String },
}

/// Where and how much.
#[derive(Debug, Clone)]
pub struct StoreSettings {
    pub dir: PathBuf,
    pub max_entries: usize,
    pub ttl: Duration,
    pub max_entry_bytes: u64,
}

/// The session store of this process.
#[derive(Debug)]
pub struct SessionStore {
    settings: StoreSettings,
    /// Who this process is, in leases: unique per process start.
    incarnation: String,
}

/// What became of a session between its last store and now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Taken {
    /// It was stored by the last process that had it: nothing was lost.
    Clean,
    /// A process resumed it and stopped without storing it again.
    Abandoned { by: String },
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The parts of an incarnation, `REPLICA/PID/NONCE/HOST` (read from the right: a replica's
/// name may hold a `/`). A lease written before hosts were recorded has no host.
struct Incarnation<'a> {
    replica: &'a str,
    pid: &'a str,
    host: Option<&'a str>,
}

impl<'a> Incarnation<'a> {
    fn parse(incarnation: &'a str) -> Option<Incarnation<'a>> {
        let parts: Vec<&str> = incarnation.rsplitn(4, '/').collect();
        match parts[..] {
            [host, _nonce, pid, replica] if pid.parse::<u32>().is_ok() => Some(Incarnation {
                replica,
                pid,
                host: Some(host),
            }),
            [_nonce, pid, replica] if pid.parse::<u32>().is_ok() => Some(Incarnation {
                replica,
                pid,
                host: None,
            }),
            _ => None,
        }
    }
}

/// Who a lease names, as a person reads it: the replica (or `runbox`) and its process.
fn holder(incarnation: &str) -> String {
    match Incarnation::parse(incarnation) {
        Some(i) => format!("{} (process {})", i.replica, i.pid),
        None => incarnation.chars().take(80).collect(),
    }
}

/// This machine, as leases name it: its host name and the boot it is in (a process of an
/// earlier boot is gone, whatever its pid).
fn this_host() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().replace('/', "_"))
            .unwrap_or_default()
    };
    format!(
        "{}:{}",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id")
    )
}

/// Whether the process that wrote the lease `by` is gone for certain: it ran on this host
/// (in this boot) and its pid is now ours or no process's. Another host's process, or a
/// lease that names no host, is judged by the lease's age alone.
fn holder_is_gone(by: &str, here: &str) -> bool {
    let Some(holder) = Incarnation::parse(by) else {
        return false;
    };
    if holder.host != Some(here) || here.starts_with(':') {
        return false;
    }
    let Ok(pid) = holder.pid.parse::<i32>() else {
        return false;
    };
    if pid as u32 == std::process::id() {
        // A restarted process that got the same pid (PID 1 in a container).
        return true;
    }
    // Signal 0 checks that the process exists; EPERM means it does (another user's).
    // SAFETY: kill with signal 0 sends nothing.
    let alive = unsafe { libc::kill(pid, 0) } == 0
        || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    !alive
}

/// Session ids are header-safe; anything else never names a file.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

impl SessionStore {
    /// Opens (creating it, readable by this user only) the store at `settings.dir`;
    /// temporary files a crash left are removed.
    pub fn open(settings: StoreSettings, replica: &str) -> std::io::Result<SessionStore> {
        std::fs::create_dir_all(&settings.dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&settings.dir, std::fs::Permissions::from_mode(0o700))?;
        }
        let mut nonce = [0u8; 8];
        getrandom::getrandom(&mut nonce).map_err(|e| std::io::Error::other(e.to_string()))?;
        let store = SessionStore {
            incarnation: format!(
                "{replica}/{}/{}/{}",
                std::process::id(),
                hex::encode(nonce),
                this_host()
            ),
            settings,
        };
        for entry in std::fs::read_dir(&store.settings.dir)?.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        store.sweep();
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.settings.dir
    }

    pub fn settings(&self) -> &StoreSettings {
        &self.settings
    }

    /// This process's host, as its leases name it.
    fn host(&self) -> &str {
        Incarnation::parse(&self.incarnation)
            .and_then(|i| i.host)
            .unwrap_or_default()
    }

    /// This process, as leases name it.
    pub fn incarnation(&self) -> &str {
        &self.incarnation
    }

    fn io(&self, e: impl std::fmt::Display) -> StoreError {
        StoreError::Io {
            dir: self.settings.dir.display().to_string(),
            message: e.to_string(),
        }
    }

    fn path(&self, id: &str, suffix: &str) -> Option<PathBuf> {
        valid_id(id).then(|| self.settings.dir.join(format!("{id}{suffix}")))
    }

    /// Whether an entry for `id` exists (it may still be refused when read).
    pub fn contains(&self, id: &str) -> bool {
        self.path(id, ENTRY_SUFFIX).is_some_and(|p| p.is_file())
    }

    /// The size on disk of `id`'s entry, if there is one.
    pub fn entry_len(&self, id: &str) -> Option<u64> {
        let meta = std::fs::metadata(self.path(id, ENTRY_SUFFIX)?).ok()?;
        meta.is_file().then_some(meta.len())
    }

    /// The ids of the entries present.
    fn ids(&self) -> Vec<String> {
        let Ok(dir) = std::fs::read_dir(&self.settings.dir) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(ENTRY_SUFFIX)
                    .filter(|id| valid_id(id))
                    .map(str::to_string)
            })
            .collect()
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.ids().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes the entries stored longer ago than the TTL (by their file's age: reading
    /// every entry to learn its time would be slow, and the file is written when stored).
    pub fn sweep(&self) -> usize {
        let mut removed = 0;
        for id in self.ids() {
            let Some(path) = self.path(&id, ENTRY_SUFFIX) else {
                continue;
            };
            let age = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok());
            if age.is_some_and(|a| a > self.settings.ttl) {
                self.remove(&id);
                removed += 1;
            }
        }
        removed
    }

    /// Stores `entry` in place of the one before (and ends this process's lease on it).
    pub fn write(&self, entry: &StoredSession) -> Result<(), StoreError> {
        let path = self
            .path(&entry.id, ENTRY_SUFFIX)
            .ok_or_else(|| StoreError::Foreign {
                id: entry.id.clone(),
                why: "not a session id".into(),
            })?;
        let bytes = entry.encode();
        if bytes.len() as u64 > self.settings.max_entry_bytes {
            return Err(StoreError::TooLarge {
                max: self.settings.max_entry_bytes,
            });
        }
        if !path.exists() && self.len() >= self.settings.max_entries {
            self.sweep();
            if self.len() >= self.settings.max_entries {
                return Err(StoreError::Full {
                    max: self.settings.max_entries,
                });
            }
        }
        let mut nonce = [0u8; 8];
        getrandom::getrandom(&mut nonce).map_err(|e| self.io(e))?;
        let temp =
            self.settings
                .dir
                .join(format!("{TEMP_PREFIX}{}-{}", entry.id, hex::encode(nonce)));
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, &path)?;
            std::fs::File::open(&self.settings.dir)?.sync_all()
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(self.io(e));
        }
        if let Some(lease) = self.path(&entry.id, LEASE_SUFFIX) {
            let _ = std::fs::remove_file(lease);
        }
        Ok(())
    }

    /// The entry of `id`, checked (`None`: there is none).
    pub fn read(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let Some(path) = self.path(id, ENTRY_SUFFIX) else {
            return Ok(None);
        };
        // Its length from the file opened, which a rename over the path cannot change.
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io(e)),
        };
        let len = file.metadata().map_err(|e| self.io(e))?.len();
        let refused = |why| StoreError::Refused {
            id: id.to_string(),
            why,
        };
        if len > self.settings.max_entry_bytes + 64 {
            return Err(refused(EntryError::Malformed(format!(
                "it is {len} bytes, more than a stored session may hold"
            ))));
        }
        let bytes = super::mapped_entry::read_entry(&file, len).map_err(|e| self.io(e))?;
        let entry = StoredSession::decode_shared(bytes, Some(std::sync::Arc::new(file)))
            .map_err(refused)?;
        if entry.id != id {
            return Err(StoreError::Foreign {
                id: id.to_string(),
                why: format!("it holds session `{}`", entry.id),
            });
        }
        Ok(Some(entry))
    }

    /// Takes the lease on `id` for this process, saying whether a process that took it
    /// before stopped without storing it; refused while another process holds it.
    pub fn take(&self, id: &str) -> Result<Taken, StoreError> {
        let Some(path) = self.path(id, LEASE_SUFFIX) else {
            return Ok(Taken::Clean);
        };
        let before = std::fs::read_to_string(&path).ok();
        let age = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok());
        match (&before, age) {
            (Some(by), Some(age))
                if *by != self.incarnation
                    && age < LEASE_FRESH
                    && !holder_is_gone(by, self.host()) =>
            {
                return Err(StoreError::Held {
                    id: id.to_string(),
                    by: holder(by),
                });
            }
            _ => {}
        }
        std::fs::write(&path, &self.incarnation).map_err(|e| self.io(e))?;
        Ok(match before {
            Some(by) if by != self.incarnation => Taken::Abandoned { by: holder(&by) },
            _ => Taken::Clean,
        })
    }

    /// Rewrites this process's lease on `id` (it still holds the session).
    pub fn refresh(&self, id: &str) {
        if let Some(path) = self.path(id, LEASE_SUFFIX) {
            if std::fs::read_to_string(&path).is_ok_and(|by| by == self.incarnation) {
                let _ = std::fs::write(&path, &self.incarnation);
            }
        }
    }

    /// Gives up this process's lease on `id` (it could not resume the session).
    pub fn release(&self, id: &str) {
        if let Some(path) = self.path(id, LEASE_SUFFIX) {
            if std::fs::read_to_string(&path).is_ok_and(|by| by == self.incarnation) {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Removes `id`'s entry and lease (the session was closed).
    pub fn remove(&self, id: &str) {
        for suffix in [ENTRY_SUFFIX, LEASE_SUFFIX] {
            if let Some(path) = self.path(id, suffix) {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &Path, max_entries: usize) -> SessionStore {
        SessionStore::open(
            StoreSettings {
                dir: dir.to_path_buf(),
                max_entries,
                ttl: Duration::from_secs(3600),
                max_entry_bytes: 1 << 20,
            },
            "r1",
        )
        .unwrap()
    }

    fn entry(id: &str) -> StoredSession {
        StoredSession {
            id: id.into(),
            runtime: "quickjs".into(),
            plugin: "p".into(),
            created_ms: 1,
            stored_ms: 2,
            stored_by: "r1".into(),
            base: vec![],
            calls: vec![],
            files: vec![],
            lost: None,
            image: None,
        }
    }

    #[test]
    fn entries_are_replaced_whole_and_bounded_in_number() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 2);
        s.write(&entry("a")).unwrap();
        let mut newer = entry("a");
        newer.stored_ms = 9;
        s.write(&newer).unwrap();
        assert_eq!(s.read("a").unwrap().unwrap().stored_ms, 9);
        s.write(&entry("b")).unwrap();
        assert!(matches!(
            s.write(&entry("c")),
            Err(StoreError::Full { max: 2 })
        ));
        s.remove("a");
        s.write(&entry("c")).unwrap();
        assert_eq!(s.read("a").unwrap(), None);
        // Nothing but entries is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(names.iter().all(|n| n.ends_with(ENTRY_SUFFIX)), "{names:?}");
    }

    #[test]
    fn a_crash_mid_write_leaves_the_entry_before() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 10);
        s.write(&entry("a")).unwrap();
        // What a crash between the write and the rename leaves.
        std::fs::write(dir.path().join(".tmp-a-0011"), b"half an ent").unwrap();
        let s = store(dir.path(), 10);
        assert_eq!(s.read("a").unwrap().unwrap(), entry("a"));
        assert!(
            !dir.path().join(".tmp-a-0011").exists(),
            "temp files are swept"
        );
    }

    #[test]
    fn damaged_foreign_and_unsafe_entries_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path(), 10);
        s.write(&entry("a")).unwrap();
        let path = dir.path().join("a.session");
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let e = s.read("a").unwrap_err().to_string();
        assert!(
            e.contains("checksum") && e.contains("create_session"),
            "{e}"
        );
        // One session's entry copied over another's name is not that session.
        std::fs::copy(dir.path().join("a.session"), dir.path().join("x.session")).unwrap();
        s.write(&entry("b")).unwrap();
        std::fs::copy(dir.path().join("b.session"), dir.path().join("c.session")).unwrap();
        let e = s.read("c").unwrap_err();
        assert!(matches!(e, StoreError::Foreign { .. }), "{e}");
        // Ids that are not ids never name a file.
        assert_eq!(s.read("../a").unwrap(), None);
        assert!(!s.contains("/etc/passwd"));
    }

    #[test]
    fn a_dead_process_on_this_host_holds_no_lease() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), 10);
        store.write(&entry("a")).unwrap();
        let here = store.host().to_string();
        assert!(!here.is_empty() && !here.starts_with(':'), "{here}");
        // A process that ran here and exited: its fresh lease is taken at once.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        std::fs::write(dir.path().join("a.lease"), format!("r9/{dead}/00/{here}")).unwrap();
        match store.take("a").unwrap() {
            Taken::Abandoned { by } => assert_eq!(by, format!("r9 (process {dead})")),
            other => panic!("{other:?}"),
        }
        // A live process here, another host's process, or a lease naming no host: held
        // while fresh.
        let parent = std::os::unix::process::parent_id();
        for lease in [
            format!("r9/{parent}/00/{here}"),
            format!("r9/{dead}/00/elsewhere:boot"),
            format!("r9/{dead}/00"),
        ] {
            std::fs::write(dir.path().join("a.lease"), &lease).unwrap();
            let e = store.take("a").unwrap_err().to_string();
            assert!(e.contains("is in use by `r9 (process"), "{lease}: {e}");
        }
    }

    #[test]
    fn a_lease_left_behind_tells_of_a_process_that_stopped_without_storing() {
        let dir = tempfile::tempdir().unwrap();
        let first = store(dir.path(), 10);
        first.write(&entry("a")).unwrap();
        assert_eq!(first.take("a").unwrap(), Taken::Clean);
        // `first` is killed here: it never stores `a` again. While its lease is fresh
        // another process does not take the session (it may still be alive). (Both run
        // in this test's process: `first` is made another host's, whose pids cannot be
        // checked.)
        let lease = dir.path().join("a.lease");
        let written = std::fs::read_to_string(&lease).unwrap();
        let (incarnation, _host) = written.rsplit_once('/').unwrap();
        std::fs::write(&lease, format!("{incarnation}/elsewhere:boot")).unwrap();
        let second = store(dir.path(), 10);
        let e = second.take("a").unwrap_err().to_string();
        assert!(e.contains("is in use by `r1 (process"), "{e}");
        let stale = std::time::SystemTime::now() - LEASE_FRESH - Duration::from_secs(1);
        std::fs::File::options()
            .write(true)
            .open(&lease)
            .unwrap()
            .set_modified(stale)
            .unwrap();
        match second.take("a").unwrap() {
            Taken::Abandoned { by } => {
                assert_eq!(by, format!("r1 (process {})", std::process::id()))
            }
            other => panic!("{other:?}"),
        }
        second.write(&entry("a")).unwrap();
        let third = store(dir.path(), 10);
        assert_eq!(
            third.take("a").unwrap(),
            Taken::Clean,
            "stored: nothing lost"
        );
    }
}
