//! The filesystem every run's scratch directory is on, shared by all runs and sessions
//! (and anything else the operator keeps there): a run's own cap (`disk.rs`) can be far
//! larger than what the volume has free (a 64 MiB tmpfs under 256 MiB caps).
//!
//! So that one run or session cannot take all of it and leave every other run unable to
//! write even its program, a run may grow into the last [`ScratchVolume::reserve`] bytes
//! of the volume only for its first [`RUN_FLOOR`] bytes: what a new run writes to start
//! (its program, small inputs) always finds room while others have filled the rest. And
//! a run that would not find even that room is refused before it starts, in plain words
//! ([`NoRoom`]), rather than failing to write its program.

use std::path::{Path, PathBuf};

/// What any run may use of the reserve: its program, a few small input files.
pub const RUN_FLOOR: u64 = 4 << 20;
/// The reserve on a large volume; on a small one, a quarter of it.
pub const MAX_RESERVE: u64 = 64 << 20;

/// How much room a volume has, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    pub free: u64,
    pub total: u64,
}

/// Where the room of a volume is read from: the filesystem itself, or (in tests) a
/// value set by hand.
#[derive(Debug)]
enum Source {
    Path(PathBuf),
    #[cfg(test)]
    Fixed(std::sync::Mutex<Room>),
}

/// The volume of the scratch directories.
#[derive(Debug)]
pub struct ScratchVolume {
    source: Source,
    reserve: u64,
}

/// A run that cannot start: the volume has not the room it needs.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "the server's scratch disk is full ({free} of {total} free; a run needs {needed} to \
     start): other runs and sessions hold it. Close a session you no longer need \
     (close_session), or try again when runs end; the operator can give runbox more room \
     (--scratch-dir)",
    free = mib(self.room.free),
    total = mib(self.room.total),
    needed = mib(self.needed)
)]
pub struct NoRoom {
    pub room: Room,
    pub needed: u64,
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
}

impl ScratchVolume {
    /// The volume `dir` is on; its reserve follows its size.
    pub fn at(dir: &Path) -> ScratchVolume {
        let mut volume = ScratchVolume {
            source: Source::Path(dir.to_path_buf()),
            reserve: 0,
        };
        volume.reserve = volume.room().map_or(0, |r| reserve_for(r.total));
        volume
    }

    /// The bytes kept for runs that start: what no run grows into past its first
    /// [`RUN_FLOOR`].
    pub fn reserve(&self) -> u64 {
        self.reserve
    }

    /// The room now, if the filesystem says.
    pub fn room(&self) -> Option<Room> {
        match &self.source {
            Source::Path(dir) => {
                let stat = rustix::fs::statvfs(dir).ok()?;
                let block = stat.f_frsize.max(1);
                Some(Room {
                    free: stat.f_bavail.saturating_mul(block),
                    total: stat.f_blocks.saturating_mul(block),
                })
            }
            #[cfg(test)]
            Source::Fixed(room) => Some(*room.lock().unwrap()),
        }
    }

    /// Whether a run that holds `held` bytes may grow by `more`: into the reserve only
    /// while it holds less than [`RUN_FLOOR`]. When the filesystem cannot say, yes (the
    /// write itself then fails if there is no room).
    pub fn allows(&self, held: u64, more: u64) -> bool {
        let Some(room) = self.room() else {
            return true;
        };
        let after = held.saturating_add(more);
        let kept = if after <= RUN_FLOOR { 0 } else { self.reserve };
        room.free >= more.saturating_add(kept)
    }

    /// Refuses a run that needs `needed` bytes to start when the volume has less free.
    pub fn check_room(&self, needed: u64) -> Result<(), NoRoom> {
        match self.room() {
            Some(room) if room.free < needed => Err(NoRoom { room, needed }),
            _ => Ok(()),
        }
    }
}

/// The reserve of a volume of `total` bytes: a quarter of it, at most [`MAX_RESERVE`].
fn reserve_for(total: u64) -> u64 {
    (total / 4).min(MAX_RESERVE)
}

#[cfg(test)]
impl ScratchVolume {
    /// A volume whose room is set by hand.
    pub fn fixed(room: Room) -> (std::sync::Arc<ScratchVolume>, impl Fn(u64)) {
        let volume = std::sync::Arc::new(ScratchVolume {
            reserve: reserve_for(room.total),
            source: Source::Fixed(std::sync::Mutex::new(room)),
        });
        let handle = volume.clone();
        let set_free = move |free: u64| {
            if let Source::Fixed(room) = &handle.source {
                room.lock().unwrap().free = free;
            }
        };
        (volume, set_free)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn a_run_grows_into_the_reserve_only_for_its_first_bytes() {
        let (volume, set_free) = ScratchVolume::fixed(Room {
            free: 64 * MIB,
            total: 64 * MIB,
        });
        assert_eq!(volume.reserve(), 16 * MIB, "a quarter of a small volume");
        assert!(volume.allows(0, 48 * MIB));
        assert!(!volume.allows(0, 49 * MIB), "the reserve stays free");
        set_free(16 * MIB);
        assert!(
            !volume.allows(48 * MIB, 1),
            "a session that filled the rest stops"
        );
        assert!(
            volume.allows(0, RUN_FLOOR),
            "a new run still writes its program"
        );
        assert!(!volume.allows(RUN_FLOOR, 1));
        set_free(MIB);
        assert!(
            !volume.allows(0, 2 * MIB),
            "nothing past what is really free"
        );
        let no_room = volume.check_room(2 * MIB).unwrap_err().to_string();
        assert!(
            no_room.contains("scratch disk is full (1.0 MiB of 64.0 MiB free"),
            "{no_room}"
        );
        volume.check_room(MIB).unwrap();
    }

    #[test]
    fn a_real_volume_says_its_room() {
        let dir = tempfile::tempdir().unwrap();
        let volume = ScratchVolume::at(dir.path());
        let room = volume.room().expect("statvfs of a temporary directory");
        assert!(room.total >= room.free && room.total > 0, "{room:?}");
        assert!(volume.reserve() <= MAX_RESERVE);
    }
}
