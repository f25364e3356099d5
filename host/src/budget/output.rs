//! Captured program output: stdout, stderr and the interleaved `tty`, bounded by a cap.
//!
//! Every store of a run (the plugin and each program it spawns) writes into the same
//! [`OutputCapture`], so the order of writes across streams and programs is kept.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError, StreamResult};

/// Which stream a write went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Stdout,
    Stderr,
}

impl Channel {
    pub fn name(self) -> &'static str {
        match self {
            Channel::Stdout => "stdout",
            Channel::Stderr => "stderr",
        }
    }
}

/// The error a write past the cap traps with; the run reports it as `terminated`.
#[derive(Debug, thiserror::Error)]
#[error("output limit reached: more than {cap} bytes written to {}", channel.name())]
pub struct OutputLimitExceeded {
    pub channel: Channel,
    pub cap: usize,
}

#[derive(Debug, Default)]
struct Buffers {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    segments: Vec<(Channel, usize)>,
    truncated: bool,
}

/// The shared, bounded output buffer of one run.
#[derive(Debug, Clone)]
pub struct OutputCapture {
    cap: usize,
    buffers: Arc<Mutex<Buffers>>,
}

/// What a run wrote, once it is over: each stream once, and the order of the writes
/// (the interleaved `tty` is rebuilt from them when asked for, never stored twice).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// The writes in order, merged into consecutive runs of one channel: (channel,
    /// length in bytes).
    pub segments: Vec<(Channel, usize)>,
    pub truncated: bool,
}

impl CapturedOutput {
    /// Both streams interleaved in the order written, piece by piece, each with the
    /// stream it was written to.
    pub fn tty_segments(&self) -> impl Iterator<Item = (Channel, &[u8])> {
        let (mut out, mut err) = (0, 0);
        self.segments.iter().map(move |(channel, len)| {
            let piece = match channel {
                Channel::Stdout => {
                    out += len;
                    &self.stdout[out - len..out]
                }
                Channel::Stderr => {
                    err += len;
                    &self.stderr[err - len..err]
                }
            };
            (*channel, piece)
        })
    }

    /// Both streams interleaved in the order written.
    pub fn tty(&self) -> Vec<u8> {
        let mut tty = Vec::with_capacity(self.stdout.len() + self.stderr.len());
        for (_, piece) in self.tty_segments() {
            tty.extend_from_slice(piece);
        }
        tty
    }

    /// Bytes held, for memory accounting.
    pub fn len(&self) -> usize {
        self.stdout.len() + self.stderr.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl OutputCapture {
    /// `cap` bytes per stream; the `tty` holds what both kept.
    pub fn new(cap: usize) -> OutputCapture {
        OutputCapture {
            cap,
            buffers: Arc::default(),
        }
    }

    /// The most bytes kept of each stream.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// A WASI stdout/stderr that writes into this capture.
    pub fn stream(&self, channel: Channel) -> CaptureStream {
        CaptureStream {
            capture: self.clone(),
            channel,
        }
    }

    /// Appends `bytes`, keeping what fits under the cap. Past the cap, the rest is
    /// dropped, `truncated` is set, and the write fails so the program stops.
    pub fn write(&self, channel: Channel, bytes: &[u8]) -> Result<(), OutputLimitExceeded> {
        let mut b = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        let Buffers {
            stdout,
            stderr,
            segments,
            truncated,
        } = &mut *b;
        let target = match channel {
            Channel::Stdout => stdout,
            Channel::Stderr => stderr,
        };
        let room = self.cap.saturating_sub(target.len());
        let kept = &bytes[..bytes.len().min(room)];
        target.extend_from_slice(kept);
        match segments.last_mut() {
            Some((last, len)) if *last == channel => *len += kept.len(),
            _ if kept.is_empty() => {}
            _ => segments.push((channel, kept.len())),
        }
        if kept.len() < bytes.len() {
            *truncated = true;
            return Err(OutputLimitExceeded {
                channel,
                cap: self.cap,
            });
        }
        Ok(())
    }

    pub fn truncated(&self) -> bool {
        self.buffers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .truncated
    }

    /// Bytes written so far (both streams) and the last line written, at most 120
    /// characters of it: what a long call's progress shows.
    pub fn so_far(&self) -> (usize, String) {
        let b = self.buffers.lock().unwrap_or_else(|e| e.into_inner());
        let total = b.stdout.len() + b.stderr.len();
        let stream = match b.segments.last() {
            Some((Channel::Stderr, _)) => &b.stderr,
            _ => &b.stdout,
        };
        let tail = &stream[stream.len().saturating_sub(512)..];
        let line = tail
            .split(|&c| c == b'\n')
            .rev()
            .find(|l| !l.iter().all(u8::is_ascii_whitespace))
            .unwrap_or_default();
        let line: String = String::from_utf8_lossy(line)
            .chars()
            .filter(|c| !c.is_control())
            .take(120)
            .collect();
        (total, line)
    }

    /// Takes the output out of the capture.
    pub fn take(&self) -> CapturedOutput {
        let b = std::mem::take(&mut *self.buffers.lock().unwrap_or_else(|e| e.into_inner()));
        CapturedOutput {
            stdout: b.stdout,
            stderr: b.stderr,
            segments: b.segments,
            truncated: b.truncated,
        }
    }
}

/// One program's view of stdout or stderr.
#[derive(Debug, Clone)]
pub struct CaptureStream {
    capture: OutputCapture,
    channel: Channel,
}

impl CaptureStream {
    fn write_all(&self, bytes: &[u8]) -> StreamResult<()> {
        self.capture
            .write(self.channel, bytes)
            .map_err(|e| StreamError::Trap(e.into()))
    }
}

impl IsTerminal for CaptureStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CaptureStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[async_trait::async_trait]
impl Pollable for CaptureStream {
    async fn ready(&mut self) {}
}

impl OutputStream for CaptureStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.write_all(&bytes)
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always ready; a write past the cap is what stops the program.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CaptureStream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(
            self.capture
                .write(self.channel, buf)
                .map(|()| buf.len())
                .map_err(std::io::Error::other),
        )
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_order_across_streams() {
        let c = OutputCapture::new(100);
        c.write(Channel::Stdout, b"a").unwrap();
        c.write(Channel::Stderr, b"b").unwrap();
        c.write(Channel::Stdout, b"c").unwrap();
        let out = c.take();
        assert_eq!(out.stdout, b"ac");
        assert_eq!(out.stderr, b"b");
        assert_eq!(out.tty(), b"abc");
        let pieces: Vec<_> = out.tty_segments().collect();
        assert_eq!(
            pieces,
            vec![
                (Channel::Stdout, &b"a"[..]),
                (Channel::Stderr, &b"b"[..]),
                (Channel::Stdout, &b"c"[..])
            ]
        );
        assert!(!out.truncated);
    }

    #[test]
    fn cap_is_per_stream_and_sets_truncated() {
        let c = OutputCapture::new(4);
        c.write(Channel::Stdout, b"1234").unwrap();
        c.write(Channel::Stderr, b"ab").unwrap();
        let err = c.write(Channel::Stdout, b"5").unwrap_err();
        assert_eq!(err.channel, Channel::Stdout);
        let err = c.write(Channel::Stderr, b"cdef").unwrap_err();
        assert_eq!(err.channel, Channel::Stderr);
        let out = c.take();
        assert_eq!(out.stdout, b"1234");
        assert_eq!(out.stderr, b"abcd");
        assert_eq!(out.tty(), b"1234abcd");
        assert!(out.truncated);
    }
}
