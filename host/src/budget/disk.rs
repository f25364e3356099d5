//! The scratch-space cap of one run, shared by the plugin and every program it spawns:
//! at most so many bytes (file data, symlink targets, directories) and so many names
//! (files, directories, symlinks, hard links) in the run's scratch directory.
//!
//! The budget is enforced by the `wasi:filesystem` wrapper in `sandbox/filesystem/`; this module
//! only keeps the books. A refused growth or creation is remembered, so that a run which
//! then traps is reported as stopped by the disk cap (like the memory cap).
//!
//! # How bytes are counted
//!
//! Every regular file the run opens gets a ledger entry keyed by its identity (device and
//! inode, as hashed by wasmtime-wasi's `metadata-hash`). The entry holds the file's
//! *high-water mark*: the largest logical size any write, `set-size` or append could have
//! given it. A write of `[offset, offset + len)` costs `max(0, offset + len - high)`, so
//! rewriting bytes a file already had is free, and a write far past the end pays for the
//! hole too (sparse files are counted at their logical size). The high-water mark is an
//! upper bound on the file's real size at all times, even with writes still in flight on
//! the blocking pool, so the sum of all entries bounds what the run holds on disk.
//!
//! Bytes come back when a file shrinks (`set-size`, open with `truncate`) — but only when
//! no stream write to it is in flight, as one could land past the new size afterwards —
//! and when a file's last link is removed (`unlink-file-at`, `rename-at` over it) and no
//! descriptor or stream of the run still has it open; otherwise when the last of those
//! closes. A file's bytes are never returned while the run can still reach its data.
//!
//! Symlinks and directories are charged their size as `lstat` reports it on ext4 (the
//! scratch root's usual filesystem): a symlink the byte length of its target (ext4 keeps
//! a target of up to 59 bytes in the inode and a longer one in a block of its own), a
//! directory [`DIRECTORY_BYTES`], its first block. The charge is taken before the name is
//! created, refunded if the creation fails, and otherwise kept in a second ledger keyed
//! by the new object's identity, whence it comes back when the object is removed: a
//! directory by `remove-directory-at` or `rename-at` over it, a symlink with its last link
//! (a symlink can be hard-linked). A key is refunded at most once, and an object the books
//! never charged (made by the host, or before the run) refunds nothing.
//!
//! What this leaves uncharged is bounded by the entry cap instead: the inode of every
//! name, the block ext4 gives a short file or a long symlink past its logical size, and a
//! directory's growth past its first block as it fills — at most a block or so per name,
//! about 40 MiB at the default 10,000 names.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::volume::ScratchVolume;

/// Bytes (file data, symlink targets, directories) one run may hold in its scratch
/// directory, by default.
pub const DEFAULT_SCRATCH_BYTES: u64 = 256 << 20;
/// Files, directories and links one run may create in its scratch directory, by default.
pub const DEFAULT_SCRATCH_FILES: u64 = 10_000;
/// Bytes charged for a directory: the one 4 KiB block ext4 gives a new directory (and
/// reports as its size).
pub const DIRECTORY_BYTES: u64 = 4096;

/// The identity of a file: wasmtime-wasi's `metadata-hash` of its device and inode, which
/// is the same whether taken from an open descriptor or from a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileKey {
    pub lower: u64,
    pub upper: u64,
}

impl FileKey {
    /// The key wasmtime-wasi's `metadata-hash` gives the object `meta` describes: its
    /// device and inode through std's `DefaultHasher`, the upper half the lower xor'ed
    /// with wasmtime-wasi's constant. For what the host itself removes from a run's
    /// scratch directory ([`DiskBudget::remove_tree`]); the tests hold it to wasmtime-wasi's.
    pub fn of(meta: &std::fs::Metadata) -> FileKey {
        use std::hash::{Hash, Hasher};
        #[allow(deprecated)] // wasmtime-wasi's choice, which the key must match
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (meta.dev(), meta.ino()).hash(&mut hasher);
        let lower = hasher.finish();
        FileKey {
            lower,
            upper: lower ^ 4614256656552045848u64,
        }
    }
}

/// A write, growth or creation the run's scratch budget does not allow.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("no space left in the run's scratch directory")]
pub struct DiskFull;

#[derive(Debug)]
struct FileEntry {
    /// Upper bound of the file's logical size.
    high: u64,
    /// What the run paid for this file; `high - paid` existed before the run saw it.
    paid: u64,
    /// Descriptors and streams of the run that have the file open.
    open: usize,
    /// The last link is gone; the bytes come back when the file is closed.
    unlinked: bool,
}

#[derive(Debug, Default)]
struct Ledger {
    /// Everything charged: file bytes paid, symlinks and directories, pending charges.
    used: u64,
    files: HashMap<FileKey, FileEntry>,
    /// What each symlink and directory the run created was charged.
    objects: HashMap<FileKey, u64>,
}

impl Ledger {
    /// Forgets a file whose last link is gone and which nothing has open.
    fn forget(&mut self, key: FileKey) {
        if let Some(entry) = self.files.remove(&key) {
            self.used = self.used.saturating_sub(entry.paid);
        }
    }

    /// Forgets a symlink or directory that is gone, refunding its charge.
    fn forget_object(&mut self, key: FileKey) {
        if let Some(bytes) = self.objects.remove(&key) {
            self.used = self.used.saturating_sub(bytes);
        }
    }
}

#[derive(Debug)]
struct Budget {
    byte_cap: u64,
    entry_cap: u64,
    entries: AtomicU64,
    refused: AtomicBool,
    /// The volume the scratch directory is on, which every run shares.
    volume: Option<Arc<ScratchVolume>>,
    /// A refusal was the volume's (nearly full), not the cap's.
    volume_refused: AtomicBool,
    ledger: Mutex<Ledger>,
}

/// The scratch space a whole run may use: bytes of file data and entries (names).
#[derive(Debug, Clone)]
pub struct DiskBudget(Arc<Budget>);

impl DiskBudget {
    pub fn new(byte_cap: u64, entry_cap: u64) -> DiskBudget {
        DiskBudget::on_volume(byte_cap, entry_cap, None)
    }

    /// A budget whose growth also leaves `volume` the room other runs need to start
    /// (see `volume.rs`).
    pub fn on_volume(
        byte_cap: u64,
        entry_cap: u64,
        volume: Option<Arc<ScratchVolume>>,
    ) -> DiskBudget {
        DiskBudget(Arc::new(Budget {
            byte_cap,
            entry_cap,
            entries: AtomicU64::new(0),
            refused: AtomicBool::new(false),
            volume,
            volume_refused: AtomicBool::new(false),
            ledger: Mutex::new(Ledger::default()),
        }))
    }

    /// Whether the run, holding `held` bytes, may take `more`: within its cap, and as
    /// the volume allows.
    fn fits(&self, held: u64, more: u64) -> Option<u64> {
        let after = held.checked_add(more).filter(|n| *n <= self.0.byte_cap)?;
        if more > 0 {
            if let Some(volume) = &self.0.volume {
                if !volume.allows(held, more) {
                    self.0.volume_refused.store(true, Ordering::SeqCst);
                    return None;
                }
            }
        }
        Some(after)
    }

    /// Whether a refusal during the run was the volume's: the server's scratch disk,
    /// shared by every run, was (nearly) full.
    pub fn volume_was_full(&self) -> bool {
        self.0.volume_refused.load(Ordering::SeqCst)
    }

    pub fn byte_cap(&self) -> u64 {
        self.0.byte_cap
    }

    pub fn entry_cap(&self) -> u64 {
        self.0.entry_cap
    }

    /// Bytes the run is charged for now: file data, symlink targets, directories.
    pub fn bytes_used(&self) -> u64 {
        self.ledger().used
    }

    /// Files, directories and links the run has created and not removed.
    pub fn entries(&self) -> u64 {
        self.0.entries.load(Ordering::SeqCst)
    }

    /// Whether any write or creation was refused during the run (or, in a session,
    /// during the current call).
    pub fn was_exceeded(&self) -> bool {
        self.0.refused.load(Ordering::SeqCst)
    }

    /// Forgets earlier refusals: a session's next call starts with a clean record, while
    /// the bytes and entries it holds stay charged.
    pub fn begin_call(&self) {
        self.0.refused.store(false, Ordering::SeqCst);
        self.0.volume_refused.store(false, Ordering::SeqCst);
    }

    /// Takes one entry for a name about to be created.
    pub fn take_entry(&self) -> Result<(), DiskFull> {
        if self.try_take_entry() {
            Ok(())
        } else {
            Err(self.refuse())
        }
    }

    /// Takes one entry if the cap allows, without counting a refusal (for a creation that
    /// may turn out not to create anything).
    pub fn try_take_entry(&self) -> bool {
        let b = &self.0;
        b.entries
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                n.checked_add(1).filter(|next| *next <= b.entry_cap)
            })
            .is_ok()
    }

    /// Gives back one entry: a name was removed, or a creation did not happen.
    pub fn give_back_entry(&self) {
        let _ = self
            .0
            .entries
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Forgets everything charged: the directory was emptied behind the books' back (a
    /// resumed session's files put back as stored), and is charged again from here.
    pub fn forget_all(&self) {
        *self.ledger() = Ledger::default();
        self.0.entries.store(0, Ordering::SeqCst);
    }

    /// Registers one open descriptor of the file `key`, whose size is now `size`. The
    /// file stays open in the books until the returned handle is dropped. Also says
    /// whether the books knew the file before.
    pub fn open(&self, key: FileKey, size: u64) -> (OpenFile, bool) {
        let mut ledger = self.ledger();
        let known = ledger.files.contains_key(&key);
        let entry = ledger.files.entry(key).or_insert(FileEntry {
            high: size,
            paid: 0,
            open: 0,
            unlinked: false,
        });
        entry.open += 1;
        let file = OpenFile {
            budget: self.clone(),
            key,
        };
        (file, known)
    }

    /// Charges `bytes` for a symlink or directory about to be created. The charge comes
    /// back when the returned handle is dropped, unless [`ObjectCharge::created`] says
    /// the object now exists.
    pub fn charge_object(&self, bytes: u64) -> Result<ObjectCharge, DiskFull> {
        let mut ledger = self.ledger();
        match self.fits(ledger.used, bytes) {
            Some(used) => {
                ledger.used = used;
                Ok(ObjectCharge {
                    budget: self.clone(),
                    bytes,
                })
            }
            _ => {
                drop(ledger);
                Err(self.refuse())
            }
        }
    }

    /// Removes `path` (a file, a symlink, or a directory with everything in it) on the
    /// host's side, giving back what the books charged for each name and object, as the
    /// run's own removals do. Symlinks are removed, never followed.
    pub fn remove_tree(&self, path: &std::path::Path) -> std::io::Result<()> {
        let meta = std::fs::symlink_metadata(path)?;
        if meta.is_dir() {
            for entry in std::fs::read_dir(path)? {
                self.remove_tree(&entry?.path())?;
            }
            std::fs::remove_dir(path)?;
        } else {
            std::fs::remove_file(path)?;
        }
        self.give_back_entry();
        if meta.is_dir() || meta.nlink() <= 1 {
            self.unlinked(FileKey::of(&meta));
        }
        Ok(())
    }

    /// The last link of the file, symlink or directory `key` was removed (a directory
    /// has only one): a file's bytes come back now if nothing of the run has it open, or
    /// when the last handle closes; a symlink's or directory's come back now.
    pub fn unlinked(&self, key: FileKey) {
        let mut ledger = self.ledger();
        ledger.forget_object(key);
        let Some(entry) = ledger.files.get_mut(&key) else {
            return;
        };
        if entry.open > 0 {
            entry.unlinked = true;
        } else {
            ledger.forget(key);
        }
    }

    fn close(&self, key: FileKey) {
        let mut ledger = self.ledger();
        let Some(entry) = ledger.files.get_mut(&key) else {
            return;
        };
        entry.open = entry.open.saturating_sub(1);
        if entry.open == 0 && entry.unlinked {
            ledger.forget(key);
        }
    }

    /// Records a refusal (also one decided outside the budget) and returns its error.
    pub fn refuse(&self) -> DiskFull {
        self.0.refused.store(true, Ordering::SeqCst);
        DiskFull
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // The books stay consistent under a panic: every update is a few plain stores.
        self.0.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Raises the high-water mark of `key` to `end`, charging the difference.
    fn extend(&self, key: FileKey, end: u64) -> Result<Extension, DiskFull> {
        let mut guard = self.ledger();
        let ledger = &mut *guard;
        let entry = ledger.files.entry(key).or_insert(FileEntry {
            high: 0,
            paid: 0,
            open: 0,
            unlinked: false,
        });
        let before = entry.high;
        let cost = end.saturating_sub(before);
        match self.fits(ledger.used, cost) {
            Some(used) => {
                ledger.used = used;
                entry.paid += cost;
                entry.high = before.max(end);
                Ok(Extension {
                    before,
                    end: entry.high,
                })
            }
            _ => {
                drop(guard);
                Err(self.refuse())
            }
        }
    }
}

/// The charge for a symlink or directory being created; refunded when dropped, unless
/// the object was created.
#[derive(Debug)]
#[must_use]
pub struct ObjectCharge {
    budget: DiskBudget,
    bytes: u64,
}

impl ObjectCharge {
    /// The object was created and has the identity `key` (`None` when it could not be
    /// found again: then the charge stays for the rest of the run, as it can no longer be
    /// told when the object goes).
    pub fn created(mut self, key: Option<FileKey>) {
        let bytes = std::mem::take(&mut self.bytes);
        let Some(key) = key else {
            return;
        };
        let mut ledger = self.budget.ledger();
        // An earlier object of that identity is gone (its identity was reused), though
        // the books did not see it go.
        ledger.forget_object(key);
        ledger.objects.insert(key, bytes);
    }
}

impl Drop for ObjectCharge {
    fn drop(&mut self) {
        if self.bytes > 0 {
            let mut ledger = self.budget.ledger();
            ledger.used = ledger.used.saturating_sub(self.bytes);
        }
    }
}

/// One descriptor or stream of the run holding a file open. Dropping it closes the file
/// in the books.
#[derive(Debug)]
pub struct OpenFile {
    budget: DiskBudget,
    key: FileKey,
}

/// A raise of a file's high-water mark, to settle once the write is done.
#[derive(Debug, Clone, Copy)]
#[must_use]
pub struct Extension {
    before: u64,
    end: u64,
}

impl OpenFile {
    pub fn key(&self) -> FileKey {
        self.key
    }

    /// Charges for the file reaching `end` bytes (a write ending there, or `set-size`).
    pub fn extend_to(&self, end: u64) -> Result<Extension, DiskFull> {
        self.budget.extend(self.key, end)
    }

    /// Charges for appending `len` bytes to the file, now `size` bytes long.
    pub fn extend_append(&self, size: u64, len: u64) -> Result<Extension, DiskFull> {
        self.extend_to(size.saturating_add(len))
    }

    /// Settles an extension once the operation is done: the file really reached
    /// `reached` bytes (0 when it did not grow at all); the rest of the charge comes back.
    pub fn settle(&self, ext: Extension, reached: u64) {
        let mut guard = self.budget.ledger();
        let ledger = &mut *guard;
        let Some(entry) = ledger.files.get_mut(&self.key) else {
            return;
        };
        // Only undo when nothing raised the mark further in between.
        if entry.high != ext.end {
            return;
        }
        let high = ext.before.max(reached).min(ext.end);
        let unused = entry.high - high;
        entry.high = high;
        let unused = unused.min(entry.paid);
        entry.paid -= unused;
        ledger.used = ledger.used.saturating_sub(unused);
    }

    /// The file was set to `size` bytes (`set-size`, or opened with `truncate`).
    pub fn resized(&self, size: u64) {
        let mut guard = self.budget.ledger();
        let ledger = &mut *guard;
        let Some(entry) = ledger.files.get_mut(&self.key) else {
            return;
        };
        if size >= entry.high {
            return;
        }
        let freed = (entry.high - size).min(entry.paid);
        entry.high = size;
        entry.paid -= freed;
        ledger.used = ledger.used.saturating_sub(freed);
    }
}

impl Drop for OpenFile {
    fn drop(&mut self) {
        self.budget.close(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: FileKey = FileKey { lower: 1, upper: 1 };
    const B: FileKey = FileKey { lower: 2, upper: 2 };

    #[test]
    fn entries_are_capped_shared_and_never_negative() {
        let budget = DiskBudget::new(1 << 20, 2);
        let other_store = budget.clone();
        budget.take_entry().unwrap();
        other_store.take_entry().unwrap();
        assert!(budget.take_entry().is_err());
        assert!(budget.was_exceeded());
        assert_eq!(budget.entries(), 2);
        budget.give_back_entry();
        other_store.take_entry().unwrap();
        for _ in 0..5 {
            budget.give_back_entry();
        }
        assert_eq!(budget.entries(), 0);
    }

    #[test]
    fn the_books_know_a_file_until_it_is_deleted() {
        let budget = DiskBudget::new(100, 10);
        let (a, known) = budget.open(A, 0);
        assert!(!known);
        drop(a);
        let (a, known) = budget.open(A, 0);
        assert!(known);
        budget.unlinked(A);
        drop(a);
        let (_a, known) = budget.open(A, 0);
        assert!(
            !known,
            "a deleted file's identity may be reused by a new file"
        );
    }

    #[test]
    fn bytes_are_charged_by_high_water_mark_across_files_and_stores() {
        let budget = DiskBudget::new(100, 10);
        let a = budget.open(A, 0).0;
        let b = budget.clone().open(B, 0).0;
        let _ = a.extend_to(60).unwrap();
        // Rewriting bytes the file already had is free.
        let _ = a.extend_to(30).unwrap();
        let _ = a.extend_to(60).unwrap();
        assert_eq!(budget.bytes_used(), 60);
        assert!(!budget.was_exceeded());
        assert!(b.extend_to(41).is_err());
        assert!(budget.was_exceeded());
        let _ = b.extend_to(40).unwrap();
        assert_eq!(budget.bytes_used(), 100);
        // A write far past the end pays for the hole.
        assert!(a.extend_to(1 << 40).is_err());
        assert_eq!(budget.bytes_used(), 100);
    }

    #[test]
    fn settle_returns_what_a_write_did_not_use() {
        let budget = DiskBudget::new(100, 10);
        let a = budget.open(A, 0).0;
        let _ = a.extend_to(10).unwrap();
        let ext = a.extend_to(50).unwrap();
        a.settle(ext, 30); // a short write
        assert_eq!(budget.bytes_used(), 30);
        let ext = a.extend_to(80).unwrap();
        a.settle(ext, 0); // a failed write
        assert_eq!(budget.bytes_used(), 30);
    }

    #[test]
    fn shrinking_refunds() {
        let budget = DiskBudget::new(100, 10);
        let a = budget.open(A, 0).0;
        let _ = a.extend_to(80).unwrap();
        a.resized(20);
        assert_eq!(budget.bytes_used(), 20);
        // Regrowing pays again.
        let _ = a.extend_to(100).unwrap();
        assert_eq!(budget.bytes_used(), 100);
    }

    #[test]
    fn unlinked_files_refund_when_the_last_handle_closes() {
        let budget = DiskBudget::new(100, 10);
        let a = budget.open(A, 0).0;
        let a2 = budget.open(A, 0).0;
        let _ = a.extend_to(70).unwrap();
        budget.unlinked(A);
        assert_eq!(budget.bytes_used(), 70);
        drop(a);
        assert_eq!(budget.bytes_used(), 70);
        drop(a2);
        assert_eq!(budget.bytes_used(), 0);

        // Closed files refund at once; unknown files change nothing.
        let b = budget.open(B, 0).0;
        let _ = b.extend_to(50).unwrap();
        drop(b);
        assert_eq!(budget.bytes_used(), 50);
        budget.unlinked(A);
        budget.unlinked(B);
        assert_eq!(budget.bytes_used(), 0);
    }

    #[test]
    fn bytes_a_file_had_before_the_run_saw_it_are_not_refunded() {
        let budget = DiskBudget::new(100, 10);
        let b = budget.open(B, 0).0;
        let _ = b.extend_to(40).unwrap();
        let a = budget.open(A, 500).0;
        let _ = a.extend_to(520).unwrap();
        assert_eq!(budget.bytes_used(), 60);
        a.resized(0);
        assert_eq!(budget.bytes_used(), 40);
        let _ = a.extend_to(60).unwrap();
        drop(a);
        budget.unlinked(A);
        assert_eq!(budget.bytes_used(), 40);
    }

    #[test]
    fn symlinks_and_directories_are_charged_until_removed_and_refunded_once() {
        let budget = DiskBudget::new(10_000, 10);
        let b = budget.open(B, 0).0;
        let _ = b.extend_to(3000).unwrap();
        budget.charge_object(4000).unwrap().created(Some(A));
        assert_eq!(budget.bytes_used(), 7000);
        // Past the cap: refused, and nothing stays charged.
        assert!(budget.charge_object(3001).is_err());
        assert!(budget.was_exceeded());
        assert_eq!(budget.bytes_used(), 7000);
        // A creation that failed gives its charge back.
        drop(budget.charge_object(3000).unwrap());
        assert_eq!(budget.bytes_used(), 7000);
        budget.unlinked(A);
        assert_eq!(budget.bytes_used(), 3000);
        // A second removal, or one of something never charged, refunds nothing.
        budget.unlinked(A);
        budget.unlinked(FileKey { lower: 9, upper: 9 });
        assert_eq!(budget.bytes_used(), 3000);
        drop(b);
        budget.unlinked(B);
        assert_eq!(budget.bytes_used(), 0);
    }

    #[test]
    fn an_object_is_charged_once_per_identity_and_kept_when_it_cannot_be_found() {
        let budget = DiskBudget::new(10_000, 10);
        budget.charge_object(100).unwrap().created(Some(A));
        // The identity of an object the books did not see go, reused.
        budget.charge_object(200).unwrap().created(Some(A));
        assert_eq!(budget.bytes_used(), 200);
        budget.unlinked(A);
        assert_eq!(budget.bytes_used(), 0);
        // Created but not found again: it cannot be told when it goes, so it stays.
        budget.charge_object(300).unwrap().created(None);
        budget.unlinked(A);
        assert_eq!(budget.bytes_used(), 300);
    }
}
