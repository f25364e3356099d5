//! The file streams of a store's filesystem: an output stream that charges each write to
//! the run's disk budget and makes it on the run's own thread, and an input stream that
//! keeps its file open in the books.

use std::io::IoSlice;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::Bytes;
use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable, StreamError};
use wasmtime_wasi_io::streams::{DynInputStream, StreamResult};

use super::view::stream_no_space;
use crate::budget::disk::OpenFile;

/// What a guest may hand one write (what `check-write` says).
const WRITE_CAPACITY: usize = 1 << 20;

/// Where a [`QuotaOutputStream`] writes next.
pub(super) enum At {
    Offset(u64),
    /// Appends: at the end of the file.
    End,
}

/// A file output stream that charges each write to the run's disk budget, fails with
/// [`DiskFull`](crate::budget::disk::DiskFull) past the cap, and writes at once, on the
/// calling thread. wasmtime-wasi's own file stream hands every non-blocking write to
/// its blocking pool, a round trip of two thread wake-ups per write (each `print` to a
/// file, a session's program file); a run's thread may block (`run/thread.rs`), and
/// local files take microseconds.
pub struct QuotaOutputStream {
    pub(super) handle: Arc<std::fs::File>,
    pub(super) file: Arc<OpenFile>,
    pub(super) at: At,
    /// A write failed: the stream is closed, as wasmtime-wasi's is after a failure.
    pub(super) closed: bool,
}

impl QuotaOutputStream {
    /// Charges `bytes` to the budget and writes them where the stream is.
    fn write_now(&mut self, bytes: &[u8]) -> StreamResult<()> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        let len = bytes.len() as u64;
        let ext = match self.at {
            At::Offset(p) => {
                let end = p.checked_add(len).ok_or_else(stream_no_space)?;
                self.file.extend_to(end)
            }
            At::End => {
                let size = self.handle.metadata().map_err(failed)?.len();
                self.file.extend_append(size, len)
            }
        };
        let ext = ext.map_err(|_| stream_no_space())?;
        let written = match self.at {
            At::Offset(p) => self.handle.write_all_at(bytes, p),
            At::End => append(&self.handle, bytes),
        };
        match written {
            Ok(()) => {
                if let At::Offset(p) = &mut self.at {
                    *p += len;
                }
                Ok(())
            }
            Err(e) => {
                // Part of it may have been written: the charge stays.
                let _ = ext;
                self.closed = true;
                Err(failed(e))
            }
        }
    }
}

/// Appends all of `bytes` at the file's end, whoever else writes to it.
fn append(file: &std::fs::File, mut bytes: &[u8]) -> std::io::Result<()> {
    use rustix::io::{pwritev2, Errno, ReadWriteFlags};
    while !bytes.is_empty() {
        let n = match pwritev2(file, &[IoSlice::new(bytes)], 0, ReadWriteFlags::APPEND) {
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            // Kernels before 4.16: at the end as it is now.
            Err(Errno::NOSYS) | Err(Errno::NOTSUP) => {
                let end = file.metadata()?.len();
                file.write_all_at(bytes, end)?;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
    }
    Ok(())
}

fn failed(e: std::io::Error) -> StreamError {
    StreamError::LastOperationFailed(e.into())
}

#[async_trait::async_trait]
impl OutputStream for QuotaOutputStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_now(&bytes)
    }

    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_now(&bytes)
    }

    fn flush(&mut self) -> StreamResult<()> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        if self.closed {
            return Err(StreamError::Closed);
        }
        Ok(WRITE_CAPACITY)
    }
}

#[async_trait::async_trait]
impl Pollable for QuotaOutputStream {
    /// Every write is done when it returns.
    async fn ready(&mut self) {}
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
