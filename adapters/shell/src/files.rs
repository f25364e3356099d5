//! The shell's filesystem: the real one, through `std::fs` (in the component, WASI's, whose
//! only preopened directory is the run's scratch directory at `/`), under `root`.
//!
//! bashkit's own `realfs` needs tokio's fs, which WebAssembly lacks. Its paths are
//! absolute and normalized; they are taken as relative to `root` (`/` in the component, a
//! temporary directory in the native tests). Nothing here checks containment: the sandbox
//! has nothing outside the scratch directory to reach.

use std::path::{Path, PathBuf};

use bashkit::{async_trait, DirEntry, FileType, FsBackend, Metadata, Result};
use runbox_adapter_support::write_all_at;

pub struct RealFiles {
    root: PathBuf,
}

impl RealFiles {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        RealFiles { root: root.into() }
    }

    /// Where the shell's `path` is.
    fn real(&self, path: &Path) -> PathBuf {
        let normal = bashkit::normalize_path(path);
        let relative = normal.strip_prefix("/").unwrap_or(&normal);
        if relative.as_os_str().is_empty() {
            self.root.clone()
        } else {
            self.root.join(relative)
        }
    }
}

/// Whether the file at `real` starts with `#!`: a script (or a program `cc` made, see
/// `commands.rs`), which the shell runs by its path.
fn is_script(real: &Path) -> bool {
    let mut start = [0u8; 2];
    std::fs::File::open(real)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut start))
        .is_ok_and(|()| &start == b"#!")
}

fn metadata(m: &std::fs::Metadata, real: &Path) -> Metadata {
    let kind = m.file_type();
    let file_type = if kind.is_symlink() {
        FileType::Symlink
    } else if kind.is_dir() {
        FileType::Directory
    } else {
        FileType::File
    };
    Metadata {
        file_type,
        size: if kind.is_dir() { 0 } else { m.len() },
        // WASI has no permissions: what `ls -l` shows for each kind, a script executable
        // (`chmod +x` changes nothing, so `./run.sh` runs as it would after one).
        mode: if kind.is_dir() || (kind.is_file() && m.len() >= 2 && is_script(real)) {
            0o755
        } else {
            0o644
        },
        modified: m.modified().unwrap_or(std::time::UNIX_EPOCH),
        created: m.created().unwrap_or(std::time::UNIX_EPOCH),
    }
}

#[async_trait]
impl FsBackend for RealFiles {
    async fn read(&self, path: &Path) -> Result<Vec<u8>> {
        Ok(std::fs::read(self.real(path))?)
    }

    // Both through `write_all_at`: a stream write's every failure reads as EIO in WASI,
    // where ENOSPC (the scratch directory is full) is what a script should see.
    async fn write(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let file = std::fs::File::create(self.real(path))?;
        Ok(write_all_at(&file, contents, 0)?)
    }

    async fn append(&self, path: &Path, contents: &[u8]) -> Result<()> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(self.real(path))?;
        let end = file.metadata()?.len();
        Ok(write_all_at(&file, contents, end)?)
    }

    async fn mkdir(&self, path: &Path, recursive: bool) -> Result<()> {
        let path = self.real(path);
        if recursive {
            std::fs::create_dir_all(path)?;
        } else {
            std::fs::create_dir(path)?;
        }
        Ok(())
    }

    async fn remove(&self, path: &Path, recursive: bool) -> Result<()> {
        let path = self.real(path);
        let is_dir = std::fs::symlink_metadata(&path)?.file_type().is_dir();
        match (is_dir, recursive) {
            (true, true) => std::fs::remove_dir_all(&path)?,
            (true, false) => std::fs::remove_dir(&path)?,
            (false, _) => std::fs::remove_file(&path)?,
        }
        Ok(())
    }

    async fn stat(&self, path: &Path) -> Result<Metadata> {
        let real = self.real(path);
        Ok(metadata(&std::fs::symlink_metadata(&real)?, &real))
    }

    async fn read_dir(&self, path: &Path) -> Result<Vec<DirEntry>> {
        let mut entries = Vec::new();
        for entry in std::fs::read_dir(self.real(path))? {
            let entry = entry?;
            entries.push(DirEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                metadata: metadata(&std::fs::symlink_metadata(entry.path())?, &entry.path()),
            });
        }
        Ok(entries)
    }

    async fn exists(&self, path: &Path) -> Result<bool> {
        Ok(std::fs::symlink_metadata(self.real(path)).is_ok())
    }

    async fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        Ok(std::fs::rename(self.real(from), self.real(to))?)
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::copy(self.real(from), self.real(to))?;
        Ok(())
    }

    async fn symlink(&self, _target: &Path, _link: &Path) -> Result<()> {
        // The scratch directory holds regular files and directories only.
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "symbolic links are not supported in the sandbox",
        )
        .into())
    }

    async fn read_link(&self, path: &Path) -> Result<PathBuf> {
        Ok(std::fs::read_link(self.real(path))?)
    }

    async fn chmod(&self, _path: &Path, _mode: u32) -> Result<()> {
        // WASI has no permissions to change.
        Ok(())
    }

    async fn set_modified_time(&self, path: &Path, time: std::time::SystemTime) -> Result<()> {
        Ok(std::fs::OpenOptions::new()
            .write(true)
            .open(self.real(path))?
            .set_modified(time)?)
    }
}
