//! A store's filesystem as runbox serves it: wasmtime-wasi's view of it, the store's side
//! of the run's disk budget, its open `/tools/call` devices; and the bookkeeping the
//! operations of `host.rs` share (charging names and objects, finding what a removal
//! deletes).

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode, HostDescriptor};
use wasmtime_wasi::p2::{FsError, FsResult, StreamError};

use crate::budget::disk::{DiskBudget, DiskFull, FileKey, ObjectCharge, OpenFile};
use crate::sandbox::tool_device::StoreDevices;

/// One store's side of the run's disk budget: the budget, and the files this store's
/// descriptors have open (by descriptor handle).
pub struct StoreDisk {
    pub(super) budget: DiskBudget,
    pub(super) files: HashMap<u32, Arc<OpenFile>>,
}

impl StoreDisk {
    pub fn new(budget: DiskBudget) -> StoreDisk {
        StoreDisk {
            budget,
            files: HashMap::new(),
        }
    }
}

/// A store whose filesystem is served with the scratch cap.
pub trait WasiQuotaFsView: Send {
    fn quota_fs(&mut self) -> QuotaFsView<'_>;
}

/// The [`HasData`] of the wrapped `wasi:filesystem/types`.
pub struct QuotaFs;

impl HasData for QuotaFs {
    type Data<'a> = QuotaFsView<'a>;
}

/// wasmtime-wasi's filesystem view of a store, plus that store's side of the disk budget
/// and its open `/tools/call` devices (`tool_device.rs`).
pub struct QuotaFsView<'a> {
    pub inner: WasiFilesystemCtxView<'a>,
    pub disk: &'a mut StoreDisk,
    pub devices: &'a mut StoreDevices,
}

/// Adds the wrapped `wasi:filesystem/types` (`preopens` needs no wrapping).
pub fn add_to_linker<T: WasiQuotaFsView + 'static>(l: &mut Linker<T>) -> wasmtime::Result<()> {
    types::add_to_linker::<T, QuotaFs>(l, T::quota_fs)
}

pub(super) fn borrow<T: 'static>(r: &Resource<T>) -> Resource<T> {
    Resource::new_borrow(r.rep())
}

pub(super) fn no_space() -> FsError {
    ErrorCode::InsufficientSpace.into()
}

pub(super) fn stream_no_space() -> StreamError {
    StreamError::LastOperationFailed(DiskFull.into())
}

pub(super) fn key(h: types::MetadataHashValue) -> FileKey {
    FileKey {
        lower: h.lower,
        upper: h.upper,
    }
}

/// Path flags that do not follow a final symlink.
pub(super) fn no_follow() -> types::PathFlags {
    types::PathFlags::empty()
}

impl QuotaFsView<'_> {
    /// The books' handle of a writable file descriptor; `None` for directories and for
    /// files of read-only mounts (which cannot be changed, so cost nothing).
    pub(super) async fn open_file(
        &mut self,
        fd: &Resource<Descriptor>,
    ) -> FsResult<Option<Arc<OpenFile>>> {
        Ok(self.register(fd).await?.map(|(file, _)| file))
    }

    /// [`Self::open_file`], also saying whether the books knew the file before.
    pub(super) async fn register(
        &mut self,
        fd: &Resource<Descriptor>,
    ) -> FsResult<Option<(Arc<OpenFile>, bool)>> {
        if let Some(f) = self.disk.files.get(&fd.rep()) {
            return Ok(Some((f.clone(), true)));
        }
        match self.inner.table.get(fd)? {
            Descriptor::File(f) if !f.perms.write_not_permitted() => {}
            _ => return Ok(None),
        }
        let key = key(self.inner.metadata_hash(borrow(fd)).await?);
        let size = match self.inner.table.get(fd)? {
            // One fstat of an open file: cheap enough to do on this thread.
            Descriptor::File(f) => f.file.metadata().map_err(FsError::from)?.len(),
            Descriptor::Dir(_) => return Ok(None),
        };
        let (file, known) = self.disk.budget.open(key, size);
        let file = Arc::new(file);
        self.disk.files.insert(fd.rep(), file.clone());
        Ok(Some((file, known)))
    }

    /// The handle of a descriptor registered by `open-at`, for the synchronous stream
    /// constructors. A writable file without one would escape the books: that is a bug,
    /// and traps.
    pub(super) fn registered_file(
        &self,
        fd: &Resource<Descriptor>,
    ) -> FsResult<Option<Arc<OpenFile>>> {
        if let Some(f) = self.disk.files.get(&fd.rep()) {
            return Ok(Some(f.clone()));
        }
        match self.inner.table.get(fd)? {
            Descriptor::File(f) if !f.perms.write_not_permitted() => Err(FsError::trap(
                wasmtime::format_err!("runbox: a writable file is missing from the disk budget"),
            )),
            _ => Ok(None),
        }
    }

    /// Whether `path` names something (following symlinks as `path_flags` says).
    pub(super) async fn exists(
        &mut self,
        dir: &Resource<Descriptor>,
        flags: types::PathFlags,
        path: &str,
    ) -> bool {
        self.inner
            .stat_at(borrow(dir), flags, path.to_string())
            .await
            .is_ok()
    }

    /// The identity of the regular file, symlink or directory that removing the name
    /// `path` deletes: a file or symlink whose only link `path` is, or a directory.
    pub(super) async fn last_link(
        &mut self,
        dir: &Resource<Descriptor>,
        path: &str,
    ) -> Option<FileKey> {
        let stat = self
            .inner
            .stat_at(borrow(dir), no_follow(), path.to_string())
            .await
            .ok()?;
        if !deletes(&stat) {
            return None;
        }
        self.identity_at(dir, path).await
    }

    pub(super) async fn identity_at(
        &mut self,
        dir: &Resource<Descriptor>,
        path: &str,
    ) -> Option<FileKey> {
        self.inner
            .metadata_hash_at(borrow(dir), no_follow(), path.to_string())
            .await
            .ok()
            .map(key)
    }

    /// Takes one entry for a name about to be created.
    pub(super) fn take_entry(&self) -> FsResult<()> {
        self.disk.budget.take_entry().map_err(|_| no_space())
    }

    /// Gives the entry taken for a creation back if the creation failed.
    pub(super) fn created<R>(&self, r: FsResult<R>) -> FsResult<R> {
        if r.is_err() {
            self.disk.budget.give_back_entry();
        }
        r
    }

    /// Takes one entry and `bytes` for a symlink or directory about to be created.
    pub(super) fn charge_object(&self, bytes: u64) -> FsResult<ObjectCharge> {
        self.take_entry()?;
        self.disk.budget.charge_object(bytes).map_err(|DiskFull| {
            self.disk.budget.give_back_entry();
            no_space()
        })
    }

    /// Settles the charge of the symlink or directory `path` in `dir` once its creation
    /// is done: both the entry and the bytes come back if it failed; otherwise the bytes
    /// are booked against the new object, to come back when it is removed.
    pub(super) async fn object_created(
        &mut self,
        r: FsResult<()>,
        charge: ObjectCharge,
        dir: &Resource<Descriptor>,
        path: &str,
    ) -> FsResult<()> {
        self.created(r)?;
        let key = self.identity_at(dir, path).await;
        charge.created(key);
        Ok(())
    }
}

/// Whether removing a name of the object `stat` describes deletes the object: a regular
/// file or symlink with no other link, or a directory (which can have only one).
pub(super) fn deletes(stat: &types::DescriptorStat) -> bool {
    match stat.type_ {
        types::DescriptorType::RegularFile | types::DescriptorType::SymbolicLink => {
            stat.link_count <= 1
        }
        types::DescriptorType::Directory => true,
        _ => false,
    }
}
