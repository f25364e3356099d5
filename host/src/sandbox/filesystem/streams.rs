//! The file streams of a store's filesystem: an output stream that charges each write to
//! the run's disk budget first, and an input stream that keeps its file open in the books.

use std::sync::Arc;

use bytes::Bytes;
use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable, StreamError};
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream, StreamResult};

use super::view::stream_no_space;
use crate::budget::disk::{Extension, OpenFile};

/// Where a [`QuotaOutputStream`] writes next.
pub(super) enum At {
    Offset(u64),
    /// Appends: at the end of this file.
    End(Arc<std::fs::File>),
}

/// A file output stream that charges each write to the run's disk budget before handing
/// it to wasmtime-wasi's stream, and fails with [`DiskFull`] past the cap.
pub struct QuotaOutputStream {
    pub(super) inner: DynOutputStream,
    pub(super) file: Arc<OpenFile>,
    pub(super) at: At,
    /// A write was handed to `inner` and is not yet known to be done.
    pub(super) pending: bool,
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
    pub(super) inner: DynInputStream,
    pub(super) _file: Arc<OpenFile>,
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
