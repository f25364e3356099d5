//! `wasi:filesystem/types` with the run's scratch-space cap: every call is delegated to
//! wasmtime-wasi's own implementation ([`WasiFilesystemCtxView`]); the calls that grow
//! files or create names are charged to the run's [`DiskBudget`] first and refused with
//! `insufficient-space` (ENOSPC to a preview1 program) past the cap.
//!
//! - Bytes: `write`, `set-size`, and the streams of `write-via-stream` and
//!   `append-via-stream` (wrapped in a [`QuotaOutputStream`]) are charged by the growth of
//!   the file's high-water mark; see `disk.rs` for the rule and for when bytes come back.
//!   `symlink-at` is charged the target's length in bytes and `create-directory-at`
//!   [`DIRECTORY_BYTES`] (4096); nothing is created past the cap. Those bytes come back
//!   when `remove-directory-at`, `unlink-file-at` of a symlink's last link, or `rename-at`
//!   over it removes the object (`link-at` of a symlink adds a link, not a charge).
//! - Names: `open-at` with `create` of a path that does not exist yet,
//!   `create-directory-at`, `symlink-at` and `link-at` take one entry each;
//!   `unlink-file-at`, `remove-directory-at` and `rename-at` over an existing name give one
//!   back.
//!
//! A stream refused for space fails with an error that [`types::Host::filesystem_error_code`]
//! below maps to `insufficient-space`, which is what the preview1 bridge and wasi-libc ask
//! for when a stream write fails.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{FsError, FsResult, InputStream, OutputStream, Pollable, StreamError};
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream, StreamResult};

use super::tool_device::{DeviceInput, DeviceOutput, StoreDevices};
use crate::budget::disk::{
    DiskBudget, DiskFull, Extension, FileKey, ObjectCharge, OpenFile, DIRECTORY_BYTES,
};

/// One store's side of the run's disk budget: the budget, and the files this store's
/// descriptors have open (by descriptor handle).
pub struct StoreDisk {
    budget: DiskBudget,
    files: HashMap<u32, Arc<OpenFile>>,
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

fn borrow<T: 'static>(r: &Resource<T>) -> Resource<T> {
    Resource::new_borrow(r.rep())
}

fn no_space() -> FsError {
    ErrorCode::InsufficientSpace.into()
}

fn stream_no_space() -> StreamError {
    StreamError::LastOperationFailed(DiskFull.into())
}

fn key(h: types::MetadataHashValue) -> FileKey {
    FileKey {
        lower: h.lower,
        upper: h.upper,
    }
}

/// Path flags that do not follow a final symlink.
fn no_follow() -> types::PathFlags {
    types::PathFlags::empty()
}

impl QuotaFsView<'_> {
    /// The books' handle of a writable file descriptor; `None` for directories and for
    /// files of read-only mounts (which cannot be changed, so cost nothing).
    async fn open_file(&mut self, fd: &Resource<Descriptor>) -> FsResult<Option<Arc<OpenFile>>> {
        Ok(self.register(fd).await?.map(|(file, _)| file))
    }

    /// [`Self::open_file`], also saying whether the books knew the file before.
    async fn register(
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
    fn registered_file(&self, fd: &Resource<Descriptor>) -> FsResult<Option<Arc<OpenFile>>> {
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

    /// Opens the device when `path` under `dir` is `/tools/call`: the file itself is
    /// opened read-only (the mount is), and the descriptor is served by `tool_device.rs`.
    async fn open_device(
        &mut self,
        dir: &Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: &str,
    ) -> Option<FsResult<Resource<Descriptor>>> {
        if !path.ends_with(crate::upstream::gateway::DEVICE_NAME) {
            return None;
        }
        let dir_file = match self.inner.table.get(dir) {
            Ok(Descriptor::Dir(d)) => d.dir.clone(),
            _ => return None,
        };
        if !self.devices.is_device(&dir_file, path) {
            return None;
        }
        // The run holds at most so many open devices: a descriptor past it is refused as
        // busy (each holds host memory for its request and answer).
        if let Err(e) = self.devices.may_open() {
            tracing::debug!("{e}");
            return Some(Err(ErrorCode::Busy.into()));
        }
        let opened = self
            .inner
            .open_at(
                borrow(dir),
                path_flags,
                path.to_string(),
                types::OpenFlags::empty(),
                types::DescriptorFlags::READ,
            )
            .await;
        if opened.is_err() {
            self.devices.open_failed();
        }
        if let Ok(fd) = &opened {
            self.devices.opened(fd.rep());
            // An open that carries a request written through the one before it is for
            // reading the answer: make the call now, so that every way of reading (a
            // non-blocking one too) finds the answer there.
            if let Some(device) = self.devices.get(fd.rep()) {
                if device.carries_request() {
                    device.answer().await;
                }
            }
        }
        Some(opened)
    }

    /// Whether `path` names something (following symlinks as `path_flags` says).
    async fn exists(
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
    async fn last_link(&mut self, dir: &Resource<Descriptor>, path: &str) -> Option<FileKey> {
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

    async fn identity_at(&mut self, dir: &Resource<Descriptor>, path: &str) -> Option<FileKey> {
        self.inner
            .metadata_hash_at(borrow(dir), no_follow(), path.to_string())
            .await
            .ok()
            .map(key)
    }

    /// Takes one entry for a name about to be created.
    fn take_entry(&self) -> FsResult<()> {
        self.disk.budget.take_entry().map_err(|_| no_space())
    }

    /// Gives the entry taken for a creation back if the creation failed.
    fn created<R>(&self, r: FsResult<R>) -> FsResult<R> {
        if r.is_err() {
            self.disk.budget.give_back_entry();
        }
        r
    }

    /// Takes one entry and `bytes` for a symlink or directory about to be created.
    fn charge_object(&self, bytes: u64) -> FsResult<ObjectCharge> {
        self.take_entry()?;
        self.disk.budget.charge_object(bytes).map_err(|DiskFull| {
            self.disk.budget.give_back_entry();
            no_space()
        })
    }

    /// Settles the charge of the symlink or directory `path` in `dir` once its creation
    /// is done: both the entry and the bytes come back if it failed; otherwise the bytes
    /// are booked against the new object, to come back when it is removed.
    async fn object_created(
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
fn deletes(stat: &types::DescriptorStat) -> bool {
    match stat.type_ {
        types::DescriptorType::RegularFile | types::DescriptorType::SymbolicLink => {
            stat.link_count <= 1
        }
        types::DescriptorType::Directory => true,
        _ => false,
    }
}

impl types::Host for QuotaFsView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        types::Host::convert_error_code(&mut self.inner, err)
    }

    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        if self
            .inner
            .table
            .get(&err)?
            .downcast_ref::<DiskFull>()
            .is_some()
        {
            return Ok(Some(ErrorCode::InsufficientSpace));
        }
        types::Host::filesystem_error_code(&mut self.inner, err)
    }
}

impl HostDescriptor for QuotaFsView<'_> {
    async fn advise(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
        len: types::Filesize,
        advice: types::Advice,
    ) -> FsResult<()> {
        self.inner.advise(fd, offset, len, advice).await
    }

    async fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        if self.devices.get(fd.rep()).is_some() {
            return Ok(());
        }
        self.inner.sync_data(fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorFlags> {
        if self.devices.get(fd.rep()).is_some() {
            return Ok(types::DescriptorFlags::READ | types::DescriptorFlags::WRITE);
        }
        self.inner.get_flags(fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorType> {
        self.inner.get_type(fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        if self.devices.get(fd.rep()).is_some() {
            // `open(..., "w+")` truncates: nothing to do on a device.
            return Ok(());
        }
        let Some(file) = self.open_file(&fd).await? else {
            return self.inner.set_size(fd, size).await;
        };
        let ext = file.extend_to(size).map_err(|_| no_space())?;
        match self.inner.set_size(fd, size).await {
            Ok(()) => {
                file.resized(size);
                Ok(())
            }
            Err(e) => {
                file.settle(ext, 0);
                Err(e)
            }
        }
    }

    async fn set_times(
        &mut self,
        fd: Resource<Descriptor>,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.inner.set_times(fd, atim, mtim).await
    }

    async fn read(
        &mut self,
        fd: Resource<Descriptor>,
        len: types::Filesize,
        offset: types::Filesize,
    ) -> FsResult<(Vec<u8>, bool)> {
        if let Some(device) = self.devices.get(fd.rep()) {
            device.answer().await;
            return Ok(device.read(usize::try_from(len).unwrap_or(usize::MAX)));
        }
        self.inner.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        if let Some(device) = self.devices.get(fd.rep()) {
            device.write(&buf).map_err(|_| ErrorCode::Io)?;
            return Ok(buf.len() as u64);
        }
        let Some(file) = self.open_file(&fd).await? else {
            return self.inner.write(fd, buf, offset).await;
        };
        let end = offset
            .checked_add(buf.len() as u64)
            .ok_or(ErrorCode::FileTooLarge)?;
        let ext = file.extend_to(end).map_err(|_| no_space())?;
        match self.inner.write(fd, buf, offset).await {
            Ok(n) => {
                file.settle(ext, if n > 0 { offset.saturating_add(n) } else { 0 });
                Ok(n)
            }
            Err(e) => {
                file.settle(ext, 0);
                Err(e)
            }
        }
    }

    async fn read_directory(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<types::DirectoryEntryStream>> {
        self.inner.read_directory(fd).await
    }

    async fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        if self.devices.get(fd.rep()).is_some() {
            return Ok(());
        }
        self.inner.sync(fd).await
    }

    async fn create_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let charge = self.charge_object(DIRECTORY_BYTES)?;
        let r = self
            .inner
            .create_directory_at(borrow(&fd), path.clone())
            .await;
        self.object_created(r, charge, &fd, &path).await
    }

    async fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorStat> {
        if let Some(device) = self.devices.get(fd.rep()) {
            let mut stat = self.inner.stat(fd).await?;
            stat.size = device.size().await;
            return Ok(stat);
        }
        self.inner.stat(fd).await
    }

    async fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::DescriptorStat> {
        self.inner.stat_at(fd, path_flags, path).await
    }

    async fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        atim: types::NewTimestamp,
        mtim: types::NewTimestamp,
    ) -> FsResult<()> {
        self.inner
            .set_times_at(fd, path_flags, path, atim, mtim)
            .await
    }

    async fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path_flags: types::PathFlags,
        old_path: String,
        new_descriptor: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.take_entry()?;
        let r = self
            .inner
            .link_at(fd, old_path_flags, old_path, new_descriptor, new_path)
            .await;
        self.created(r)
    }

    async fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
        oflags: types::OpenFlags,
        flags: types::DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        if let Some(device) = self.open_device(&fd, path_flags, &path).await {
            return device;
        }
        // An entry is taken before a `create`, and given back if the open did not create
        // the file. Every regular file in scratch was created by `open-at` and entered in
        // the books then, so a file the books do not know yet is one this open created.
        // The path is only looked up first at the cap, so that existing files still open
        // there: a lookup of a missing path costs an error value (and a backtrace).
        let mut reserved = false;
        if oflags.contains(types::OpenFlags::CREATE) {
            reserved = self.disk.budget.try_take_entry();
            if !reserved && !self.exists(&fd, path_flags, &path).await {
                self.disk.budget.refuse();
                return Err(no_space());
            }
        }
        let opened = self
            .inner
            .open_at(fd, path_flags, path, oflags, flags)
            .await;
        let opened = if reserved {
            self.created(opened)?
        } else {
            opened?
        };
        let created = match self.register(&opened).await {
            Ok(Some((file, known))) => {
                if oflags.contains(types::OpenFlags::TRUNCATE) {
                    file.resized(0);
                }
                !known
            }
            Ok(None) => false,
            Err(e) => {
                // Keep the entry: the file may well exist now.
                let _ = self.inner.table.delete(opened);
                return Err(e);
            }
        };
        if reserved && !created {
            self.disk.budget.give_back_entry();
        }
        Ok(opened)
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.disk.files.remove(&fd.rep());
        self.devices.closed(fd.rep());
        HostDescriptor::drop(&mut self.inner, fd)
    }

    async fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        self.inner.readlink_at(fd, path).await
    }

    async fn remove_directory_at(
        &mut self,
        fd: Resource<Descriptor>,
        path: String,
    ) -> FsResult<()> {
        let deletes = self.identity_at(&fd, &path).await;
        self.inner.remove_directory_at(fd, path).await?;
        self.disk.budget.give_back_entry();
        if let Some(key) = deletes {
            self.disk.budget.unlinked(key);
        }
        Ok(())
    }

    async fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        // Renaming over an existing name removes that name (and maybe its file), unless
        // both name the same file, when nothing happens.
        let mut replaces = false;
        let mut deletes = None;
        if self.exists(&new_fd, no_follow(), &new_path).await {
            let target = self.identity_at(&new_fd, &new_path).await;
            let source = self.identity_at(&fd, &old_path).await;
            if target.is_none() || target != source {
                replaces = true;
                deletes = self.last_link(&new_fd, &new_path).await;
            }
        }
        self.inner.rename_at(fd, old_path, new_fd, new_path).await?;
        if replaces {
            self.disk.budget.give_back_entry();
        }
        if let Some(key) = deletes {
            self.disk.budget.unlinked(key);
        }
        Ok(())
    }

    async fn symlink_at(
        &mut self,
        fd: Resource<Descriptor>,
        src_path: String,
        dest_path: String,
    ) -> FsResult<()> {
        // `src-path` is the target, stored as the link's contents.
        let bytes = src_path.len() as u64;
        let charge = self.charge_object(bytes)?;
        let r = self
            .inner
            .symlink_at(borrow(&fd), src_path, dest_path.clone())
            .await;
        self.object_created(r, charge, &fd, &dest_path).await
    }

    async fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        let deletes = self.last_link(&fd, &path).await;
        self.inner.unlink_file_at(fd, path).await?;
        self.disk.budget.give_back_entry();
        if let Some(key) = deletes {
            self.disk.budget.unlinked(key);
        }
        Ok(())
    }

    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynInputStream>> {
        if let Some(device) = self.devices.get(fd.rep()) {
            let stream: DynInputStream = Box::new(DeviceInput(device));
            return Ok(self.inner.table.push(stream)?);
        }
        let file = self.registered_file(&fd)?;
        let stream = self.inner.read_via_stream(fd, offset)?;
        let Some(file) = file else {
            return Ok(stream);
        };
        // The stream keeps the file open: its bytes stay charged while it lives.
        let inner = self.inner.table.delete(stream)?;
        let wrapped: DynInputStream = Box::new(QuotaInputStream { inner, _file: file });
        Ok(self.inner.table.push(wrapped)?)
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: types::Filesize,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.output_stream(fd, Some(offset))
    }

    fn append_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<Resource<DynOutputStream>> {
        self.output_stream(fd, None)
    }

    async fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        self.inner.is_same_object(a, b).await
    }

    async fn metadata_hash(
        &mut self,
        fd: Resource<Descriptor>,
    ) -> FsResult<types::MetadataHashValue> {
        self.inner.metadata_hash(fd).await
    }

    async fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: String,
    ) -> FsResult<types::MetadataHashValue> {
        self.inner.metadata_hash_at(fd, path_flags, path).await
    }
}

impl QuotaFsView<'_> {
    /// `write-via-stream` (at `offset`) or `append-via-stream` (`None`), the stream
    /// wrapped to charge what it writes.
    fn output_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Option<types::Filesize>,
    ) -> FsResult<Resource<DynOutputStream>> {
        if let Some(device) = self.devices.get(fd.rep()) {
            let stream: DynOutputStream = Box::new(DeviceOutput(device));
            return Ok(self.inner.table.push(stream)?);
        }
        let file = self.registered_file(&fd)?;
        let handle = match self.inner.table.get(&fd)? {
            Descriptor::File(f) => Some(f.file.clone()),
            Descriptor::Dir(_) => None,
        };
        let stream = match offset {
            Some(offset) => self.inner.write_via_stream(fd, offset)?,
            None => self.inner.append_via_stream(fd)?,
        };
        let (Some(file), Some(handle)) = (file, handle) else {
            return Ok(stream);
        };
        let at = match offset {
            Some(offset) => At::Offset(offset),
            None => At::End(handle),
        };
        let inner = self.inner.table.delete(stream)?;
        let wrapped: DynOutputStream = Box::new(QuotaOutputStream {
            inner,
            file,
            at,
            pending: false,
        });
        Ok(self.inner.table.push(wrapped)?)
    }
}

impl HostDirectoryEntryStream for QuotaFsView<'_> {
    async fn read_directory_entry(
        &mut self,
        stream: Resource<types::DirectoryEntryStream>,
    ) -> FsResult<Option<types::DirectoryEntry>> {
        self.inner.read_directory_entry(stream).await
    }

    fn drop(&mut self, stream: Resource<types::DirectoryEntryStream>) -> wasmtime::Result<()> {
        HostDirectoryEntryStream::drop(&mut self.inner, stream)
    }
}

/// Where a [`QuotaOutputStream`] writes next.
enum At {
    Offset(u64),
    /// Appends: at the end of this file.
    End(Arc<std::fs::File>),
}

/// A file output stream that charges each write to the run's disk budget before handing
/// it to wasmtime-wasi's stream, and fails with [`DiskFull`] past the cap.
pub struct QuotaOutputStream {
    inner: DynOutputStream,
    file: Arc<OpenFile>,
    at: At,
    /// A write was handed to `inner` and is not yet known to be done.
    pending: bool,
}

impl QuotaOutputStream {
    /// Charges a write of `len` bytes at the stream's position.
    fn charge(&mut self, len: u64) -> StreamResult<Extension> {
        let ext = match &self.at {
            At::Offset(p) => {
                let end = p.checked_add(len).ok_or_else(stream_no_space)?;
                self.file.extend_to(end)
            }
            At::End(f) => {
                // One fstat of an open file: cheap enough to do on this thread.
                let size = f
                    .metadata()
                    .map_err(|e| StreamError::LastOperationFailed(e.into()))?
                    .len();
                self.file.extend_append(size, len)
            }
        };
        ext.map_err(|_| stream_no_space())
    }

    fn advance(&mut self, len: u64) {
        if let At::Offset(p) = &mut self.at {
            *p += len;
        }
    }

    fn done(&mut self) {
        if std::mem::take(&mut self.pending) {
            self.file.write_finished();
        }
    }
}

#[async_trait::async_trait]
impl OutputStream for QuotaOutputStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let len = bytes.len() as u64;
        let ext = self.charge(len)?;
        match self.inner.write(bytes) {
            Ok(()) => {
                if !std::mem::replace(&mut self.pending, true) {
                    self.file.write_started();
                }
                self.advance(len);
                Ok(())
            }
            Err(e) => {
                self.file.settle(ext, 0);
                Err(e)
            }
        }
    }

    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> StreamResult<()> {
        let len = bytes.len() as u64;
        let ext = self.charge(len)?;
        let r = self.inner.blocking_write_and_flush(bytes).await;
        // wasmtime-wasi's file stream waits for earlier writes and writes this one before
        // returning, either way.
        self.done();
        match r {
            Ok(()) => {
                self.advance(len);
                Ok(())
            }
            Err(e) => {
                // Part of it may have been written: keep the charge unless nothing could be.
                if matches!(e, StreamError::Closed) {
                    self.file.settle(ext, 0);
                }
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        let r = self.inner.check_write();
        // Room to write, or an error, means no write is still running.
        if !matches!(r, Ok(0)) {
            self.done();
        }
        r
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
        self.done();
    }
}

#[async_trait::async_trait]
impl Pollable for QuotaOutputStream {
    async fn ready(&mut self) {
        self.inner.ready().await;
        // A file stream is ready once its write has completed.
        self.done();
    }
}

/// A file input stream that keeps the file open in the books while it lives.
pub struct QuotaInputStream {
    inner: DynInputStream,
    _file: Arc<OpenFile>,
}

#[async_trait::async_trait]
impl InputStream for QuotaInputStream {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        self.inner.read(size)
    }

    async fn blocking_read(&mut self, size: usize) -> StreamResult<Bytes> {
        self.inner.blocking_read(size).await
    }

    fn skip(&mut self, nelem: usize) -> StreamResult<usize> {
        self.inner.skip(nelem)
    }

    async fn blocking_skip(&mut self, nelem: usize) -> StreamResult<usize> {
        self.inner.blocking_skip(nelem).await
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}

#[async_trait::async_trait]
impl Pollable for QuotaInputStream {
    async fn ready(&mut self) {
        self.inner.ready().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasmtime::component::ResourceTable;
    use wasmtime_wasi::p2::bindings::filesystem::preopens;
    use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

    /// A store's filesystem with a temporary directory at `/`, under a disk budget.
    struct Fixture {
        dir: tempfile::TempDir,
        wasi: WasiCtx,
        table: ResourceTable,
        disk: StoreDisk,
        devices: StoreDevices,
        budget: DiskBudget,
    }

    impl Fixture {
        fn new(bytes: u64, entries: u64) -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let mut b = WasiCtxBuilder::new();
            b.allow_blocking_current_thread(true);
            b.preopened_dir(dir.path(), "/", FsPerms::ReadWrite)
                .unwrap();
            let budget = DiskBudget::new(bytes, entries);
            Fixture {
                dir,
                wasi: b.build(),
                table: ResourceTable::new(),
                disk: StoreDisk::new(budget.clone()),
                devices: StoreDevices::default(),
                budget,
            }
        }

        fn view(&mut self) -> QuotaFsView<'_> {
            QuotaFsView {
                inner: WasiFilesystemCtxView {
                    ctx: self.wasi.filesystem(),
                    table: &mut self.table,
                },
                disk: &mut self.disk,
                devices: &mut self.devices,
            }
        }

        fn root(&mut self) -> Resource<Descriptor> {
            let mut view = self.view();
            let mut dirs = preopens::Host::get_directories(&mut view.inner).unwrap();
            dirs.remove(0).0
        }

        /// The bytes and entries charged.
        fn charged(&self) -> (u64, u64) {
            (self.budget.bytes_used(), self.budget.entries())
        }

        fn exists(&self, path: &str) -> bool {
            self.dir.path().join(path).symlink_metadata().is_ok()
        }
    }

    /// The error code of a failed call.
    fn code(f: &mut Fixture, r: FsResult<()>) -> ErrorCode {
        let err = r.expect_err("the call should fail");
        types::Host::convert_error_code(&mut f.view(), err).unwrap()
    }

    #[tokio::test]
    async fn symlinks_are_charged_their_target_until_the_last_link_goes() {
        let mut f = Fixture::new(10_000, 100);
        let root = f.root();
        let target = "t".repeat(4000);
        let mut v = f.view();
        v.symlink_at(borrow(&root), target.clone(), "a".into())
            .await
            .unwrap();
        v.symlink_at(borrow(&root), target.clone(), "b".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (8000, 2));

        // Past the cap nothing is created, and nothing stays charged.
        let r = f
            .view()
            .symlink_at(borrow(&root), target.clone(), "c".into())
            .await;
        assert_eq!(code(&mut f, r), ErrorCode::InsufficientSpace);
        assert!(!f.exists("c"));
        assert!(f.budget.was_exceeded());
        assert_eq!(f.charged(), (8000, 2));
        // A creation that fails gives its charge back.
        let r = f
            .view()
            .symlink_at(borrow(&root), "x".into(), "a".into())
            .await;
        assert_eq!(code(&mut f, r), ErrorCode::Exist);
        assert_eq!(f.charged(), (8000, 2));

        // A hard link to a symlink adds a name, not bytes; the bytes come back with the
        // last link.
        let mut v = f.view();
        v.link_at(
            borrow(&root),
            no_follow(),
            "a".into(),
            borrow(&root),
            "h".into(),
        )
        .await
        .unwrap();
        assert!(f
            .dir
            .path()
            .join("h")
            .symlink_metadata()
            .unwrap()
            .is_symlink());
        assert_eq!(f.charged(), (8000, 3));
        f.view()
            .unlink_file_at(borrow(&root), "a".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (8000, 2));
        f.view()
            .unlink_file_at(borrow(&root), "h".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (4000, 1));

        // Renaming a symlink keeps its charge; renaming over one refunds that one.
        let mut v = f.view();
        v.symlink_at(borrow(&root), target.clone(), "c".into())
            .await
            .unwrap();
        v.rename_at(borrow(&root), "c".into(), borrow(&root), "d".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (8000, 2));
        let mut v = f.view();
        v.rename_at(borrow(&root), "d".into(), borrow(&root), "b".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (4000, 1));
        f.view()
            .unlink_file_at(borrow(&root), "b".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (0, 0));

        // A symlink the run did not make refunds nothing.
        std::os::unix::fs::symlink(&target, f.dir.path().join("host")).unwrap();
        f.view()
            .symlink_at(borrow(&root), "y".into(), "e".into())
            .await
            .unwrap();
        f.view()
            .unlink_file_at(borrow(&root), "host".into())
            .await
            .unwrap();
        assert_eq!(f.charged().0, 1);
    }

    /// What the host removes itself (a command's own files, `run/commands.rs`) is given
    /// back as the run's own removals are: its key is the one wasmtime-wasi hashes.
    #[tokio::test]
    async fn the_hosts_removals_give_back_what_the_run_made() {
        let mut f = Fixture::new(10 * DIRECTORY_BYTES, 100);
        let root = f.root();
        for d in ["d", "d/e"] {
            f.view()
                .create_directory_at(borrow(&root), d.into())
                .await
                .unwrap();
        }
        f.view()
            .symlink_at(borrow(&root), "target".into(), "d/link".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (2 * DIRECTORY_BYTES + 6, 3));
        f.budget.remove_tree(&f.dir.path().join("d")).unwrap();
        assert!(!f.exists("d"));
        assert_eq!(f.charged(), (0, 0));
    }

    #[tokio::test]
    async fn directories_are_charged_a_block_until_removed() {
        let mut f = Fixture::new(3 * DIRECTORY_BYTES + 100, 100);
        let root = f.root();
        let mut v = f.view();
        for d in ["d1", "d2", "d3"] {
            v.create_directory_at(borrow(&root), d.into())
                .await
                .unwrap();
        }
        assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
        let r = f
            .view()
            .create_directory_at(borrow(&root), "d4".into())
            .await;
        assert_eq!(code(&mut f, r), ErrorCode::InsufficientSpace);
        assert!(!f.exists("d4"));
        assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
        // A symlink does not fit either.
        let r = f
            .view()
            .symlink_at(borrow(&root), "t".repeat(101), "l".into())
            .await;
        assert_eq!(code(&mut f, r), ErrorCode::InsufficientSpace);
        assert!(!f.exists("l"));

        // Removing gives the block back; a failed removal does not.
        std::fs::write(f.dir.path().join("d1/file"), "x").unwrap();
        let r = f
            .view()
            .remove_directory_at(borrow(&root), "d1".into())
            .await;
        assert_eq!(code(&mut f, r), ErrorCode::NotEmpty);
        assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
        std::fs::remove_file(f.dir.path().join("d1/file")).unwrap();
        f.view()
            .remove_directory_at(borrow(&root), "d1".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (2 * DIRECTORY_BYTES, 2));
        f.view()
            .create_directory_at(borrow(&root), "d4".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));
        let r = f
            .view()
            .remove_directory_at(borrow(&root), "d1".into())
            .await;
        assert_eq!(code(&mut f, r), ErrorCode::NoEntry);
        assert_eq!(f.charged(), (3 * DIRECTORY_BYTES, 3));

        // Renaming over an empty directory removes it.
        let mut v = f.view();
        v.rename_at(borrow(&root), "d2".into(), borrow(&root), "d3".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (2 * DIRECTORY_BYTES, 2));
        let mut v = f.view();
        v.remove_directory_at(borrow(&root), "d3".into())
            .await
            .unwrap();
        v.remove_directory_at(borrow(&root), "d4".into())
            .await
            .unwrap();
        assert_eq!(f.charged(), (0, 0));

        // A directory the run did not make refunds nothing.
        std::fs::create_dir(f.dir.path().join("host")).unwrap();
        f.view()
            .create_directory_at(borrow(&root), "d5".into())
            .await
            .unwrap();
        f.view()
            .remove_directory_at(borrow(&root), "host".into())
            .await
            .unwrap();
        assert_eq!(f.charged().0, DIRECTORY_BYTES);
    }
}
