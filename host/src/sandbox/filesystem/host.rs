//! `wasi:filesystem/types` as runbox serves it: every operation delegated to wasmtime-wasi's
//! own, the ones that grow files or create names charged first (`view.rs`), a `/tools/call`
//! descriptor's answered by `device.rs`.

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    self, ErrorCode, HostDescriptor, HostDirectoryEntryStream,
};
use wasmtime_wasi::p2::{FsError, FsResult};
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream};

use super::device;
use super::streams::{At, QuotaInputStream, QuotaOutputStream};
use super::view::{borrow, no_follow, no_space, QuotaFsView};
use crate::budget::disk::{DiskFull, DIRECTORY_BYTES};

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
        if self.device(&fd).is_some() {
            return Ok(device::SYNCED);
        }
        self.inner.sync_data(fd).await
    }

    async fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorFlags> {
        if self.device(&fd).is_some() {
            return Ok(device::flags());
        }
        self.inner.get_flags(fd).await
    }

    async fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<types::DescriptorType> {
        self.inner.get_type(fd).await
    }

    async fn set_size(&mut self, fd: Resource<Descriptor>, size: types::Filesize) -> FsResult<()> {
        if self.device(&fd).is_some() {
            return Ok(device::TRUNCATED);
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
        if let Some(device) = self.device(&fd) {
            return Ok(device::read(&device, len).await);
        }
        self.inner.read(fd, len, offset).await
    }

    async fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buf: Vec<u8>,
        offset: types::Filesize,
    ) -> FsResult<types::Filesize> {
        if let Some(device) = self.device(&fd) {
            return device::write(&device, &buf);
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
        if self.device(&fd).is_some() {
            return Ok(device::SYNCED);
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
        if let Some(device) = self.device(&fd) {
            let stat = self.inner.stat(fd).await?;
            return Ok(device::stat(&device, stat).await);
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
        if let Some(device) = self.device(&fd) {
            return Ok(self.inner.table.push(device::input_stream(device))?);
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
        if let Some(device) = self.device(&fd) {
            return Ok(self.inner.table.push(device::output_stream(device))?);
        }
        let file = self.registered_file(&fd)?;
        let handle = match self.inner.table.get(&fd)? {
            Descriptor::File(f) => Some(f.file.clone()),
            Descriptor::Dir(_) => None,
        };
        // wasmtime-wasi's stream first: its checks (a descriptor opened for writing).
        let stream = match offset {
            Some(offset) => self.inner.write_via_stream(fd, offset)?,
            None => self.inner.append_via_stream(fd)?,
        };
        let (Some(file), Some(handle)) = (file, handle) else {
            return Ok(stream);
        };
        let at = match offset {
            Some(offset) => At::Offset(offset),
            None => At::End,
        };
        self.inner.table.delete(stream)?;
        let wrapped: DynOutputStream = Box::new(QuotaOutputStream {
            handle,
            file,
            at,
            closed: false,
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
