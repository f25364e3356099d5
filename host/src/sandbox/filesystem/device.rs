//! How a device descriptor (`/tools/call`, `/net/fetch`: `sandbox/tool_device.rs`) answers the filesystem's
//! operations: its open, and each operation `host.rs` hands it. Its writes are the
//! request, its reads the answer, its size (`stat`) the answer's; truncating, syncing
//! and flags are no-ops that succeed, as a program expects of a file opened `r+`.

use wasmtime::component::Resource;
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::filesystem::types::{self, ErrorCode, HostDescriptor};
use wasmtime_wasi::p2::FsResult;
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream};

use super::view::{borrow, QuotaFsView};
use crate::sandbox::tool_device::{Device, DeviceInput, DeviceOutput};

/// What `sync` and `sync-data` do on a device: nothing, successfully.
pub(super) const SYNCED: () = ();
/// What `set-size` does on a device (`open(…, "w+")` truncates): nothing.
pub(super) const TRUNCATED: () = ();
/// A device's flags: open for reading and writing.
pub(super) fn flags() -> types::DescriptorFlags {
    types::DescriptorFlags::READ | types::DescriptorFlags::WRITE
}

impl QuotaFsView<'_> {
    /// The device behind `fd`, if it is one.
    pub(super) fn device(&self, fd: &Resource<Descriptor>) -> Option<Device> {
        self.devices.get(fd.rep())
    }

    /// Opens a device when `path` under `dir` is one (`/tools/call`, `/net/fetch`): the file itself is
    /// opened read-only (the mount is), and the descriptor is served by `tool_device.rs`.
    pub(super) async fn open_device(
        &mut self,
        dir: &Resource<Descriptor>,
        path_flags: types::PathFlags,
        path: &str,
    ) -> Option<FsResult<Resource<Descriptor>>> {
        if !(path.ends_with(crate::upstream::gateway::DEVICE_NAME)
            || path.ends_with(crate::net::DEVICE_NAME))
        {
            return None;
        }
        let dir_file = match self.inner.table.get(dir) {
            Ok(Descriptor::Dir(d)) => d.dir.clone(),
            _ => return None,
        };
        let which = self.devices.device_at(&dir_file, path)?;
        // The run holds at most so many open devices: a descriptor past it is refused as
        // busy (each holds host memory for its request and answer).
        if let Err(e) = self.devices.may_open(which) {
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
            self.devices.open_failed(which);
        }
        if let Ok(fd) = &opened {
            self.devices.opened(fd.rep(), which);
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
}

/// Up to `len` bytes of the answer (the call made first, if it was not yet).
pub(super) async fn read(device: &Device, len: types::Filesize) -> (Vec<u8>, bool) {
    device.answer().await;
    device.read(usize::try_from(len).unwrap_or(usize::MAX))
}

/// `buf` added to the request.
pub(super) fn write(device: &Device, buf: &[u8]) -> FsResult<types::Filesize> {
    device.write(buf).map_err(|_| ErrorCode::Io)?;
    Ok(buf.len() as u64)
}

/// The device file's `stat`, with the answer's size.
pub(super) async fn stat(
    device: &Device,
    mut stat: types::DescriptorStat,
) -> types::DescriptorStat {
    stat.size = device.size().await;
    stat
}

pub(super) fn input_stream(device: Device) -> DynInputStream {
    Box::new(DeviceInput(device))
}

pub(super) fn output_stream(device: Device) -> DynOutputStream {
    Box::new(DeviceOutput(device))
}
