//! A connection whose client stops reading is closed: every answer waiting to be sent
//! holds memory (a `resources/read` body is charged to the server's budget until it is
//! sent), so a client that never reads must not hold it for ever.
//!
//! [`StalledWriteTimeout`] wraps a connection's I/O: a write that makes no progress for
//! [`STALLED_WRITE_TIMEOUT`] fails with `TimedOut`, which ends the connection and drops
//! what was waiting to be sent. A connection with nothing to send (a client waiting for
//! a long call, an idle stream) is not affected: only a write the client does not take.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use tokio::time::Sleep;

/// How long a write may wait for its client to read before the connection is closed.
pub const STALLED_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// `io` whose writes time out when the peer takes nothing for `timeout`.
pub struct StalledWriteTimeout<T> {
    io: T,
    timeout: Duration,
    /// Armed while a write waits for the peer.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> StalledWriteTimeout<T> {
    pub fn new(io: T, timeout: Duration) -> Self {
        StalledWriteTimeout {
            io,
            timeout,
            stalled: None,
        }
    }

    /// After a write or flush returned `poll`: disarmed on progress, armed (and checked)
    /// while it waits.
    fn watch<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client read nothing for {} s: connection closed",
                    timeout.as_secs()
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: Read + Unpin> Read for StalledWriteTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for StalledWriteTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::rt::TokioIo;

    /// A peer that reads nothing: the writer fills the socket's buffers, then its write
    /// fails after the timeout instead of waiting for ever.
    #[tokio::test]
    async fn a_write_the_peer_never_takes_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _peer = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let mut io = StalledWriteTimeout::new(TokioIo::new(tcp), Duration::from_millis(300));
        let chunk = vec![0u8; 1 << 16];
        let started = std::time::Instant::now();
        let failed = loop {
            let wrote = std::future::poll_fn(|cx| Pin::new(&mut io).poll_write(cx, &chunk));
            match tokio::time::timeout(Duration::from_secs(20), wrote).await {
                Ok(Ok(_)) => continue,
                Ok(Err(e)) => break e,
                Err(_) => panic!("the write never timed out"),
            }
        };
        assert_eq!(failed.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    /// A peer that reads keeps the connection however long the transfer takes: the
    /// timeout is on a write that makes no progress, not on the transfer.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_is_not_cut_off() {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut peer = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 1 << 16];
            let mut total = 0;
            loop {
                tokio::time::sleep(Duration::from_millis(5)).await;
                match peer.read(&mut buf).await {
                    Ok(0) | Err(_) => return total,
                    Ok(n) => total += n,
                }
            }
        });
        let mut io = StalledWriteTimeout::new(TokioIo::new(tcp), Duration::from_secs(3));
        let chunk = vec![0u8; 1 << 16];
        for _ in 0..64 {
            let mut at = 0;
            while at < chunk.len() {
                let wrote =
                    std::future::poll_fn(|cx| Pin::new(&mut io).poll_write(cx, &chunk[at..]));
                at += wrote.await.expect("a reading peer keeps the connection");
            }
        }
        drop(io);
        assert_eq!(reader.await.unwrap(), 64 << 16, "all of it arrived");
    }
}
