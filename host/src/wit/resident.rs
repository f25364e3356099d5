//! `process.resident`: a program kept alive between calls and fed through its stdin.
//!
//! A session's interpreter is a small driver program that reads its next request from
//! standard input and runs it. Its stdin is a [`ResidentInput`]: bytes the plugin feeds,
//! and a signal when the program waits with nothing left to read. The host runs it only
//! while a `start` or `feed` is under way, in one of two ways:
//!
//! - a *program* (any command): a future (its store inside) that reads its input in a
//!   loop; when it waits for input the host stops polling it, and it stays suspended in
//!   that wait until it is fed again;
//! - *turns* (a reactor tool with a `resume` program, see [`AtRest`]): each feed runs the
//!   resume program as one turn on the tool's instance, which reads what it was fed and
//!   returns. Between turns the instance is at rest, with no call of it under way, so
//!   its state can be copied (`crate::state`). A turn may still wait for input in the
//!   middle (a program reading its stdin), as a program does.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::watch;
use wasmtime_wasi::cli::{IsTerminal, StdinStream};
use wasmtime_wasi::p2::{InputStream, Pollable, StreamError, StreamResult};
use wasmtime_wasi::I32Exit;

/// The program, run to its end: its exit code, or the trap that ended it.
type Program = Pin<Box<dyn Future<Output = wasmtime::Result<i32>> + Send>>;

/// One turn under way: it gives the instance back with the turn's status.
pub type Turn = Pin<Box<dyn Future<Output = (Box<dyn AtRest>, wasmtime::Result<i32>)> + Send>>;

/// A reactor tool's instance, kept between turns.
pub trait AtRest: Send + 'static {
    /// Runs `program` as one turn: its status is 0 when it ran to its end.
    fn turn(self: Box<Self>, program: String) -> Turn;

    /// For the host side that knows the concrete type (to copy its state).
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// How long a program that polls its input beside something else (a timer) may stay so
/// before the host takes it as waiting for input: a zero-delay timer fires within it.
const POLL_GRACE: std::time::Duration = std::time::Duration::from_millis(3);

/// Whether the program waits for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waiting {
    No,
    /// It polls its input, maybe beside other things.
    Polling,
    /// It is blocked in a read of its input.
    Reading,
}

/// What runs, when something does.
enum Running {
    Program(Program),
    Turn(Turn),
}

/// How a run of the resident ended, when it did.
enum Ended {
    /// The program or its instance exited, with this code.
    Exited(i32),
    /// A turn returned 0: the instance is at rest again.
    AtRest(Box<dyn AtRest>),
}

/// A resident program (the host side of `process.resident`).
pub struct Resident {
    input: ResidentInput,
    /// What runs: a program suspended where it waits for input, or a turn under way.
    running: Option<Running>,
    /// With turns: the instance between them.
    rest: Option<Box<dyn AtRest>>,
    /// With turns: the program each feed runs.
    resume: Option<String>,
    exit_code: Option<i32>,
}

impl Resident {
    /// A resident running `program`, whose stdin is `input`. Nothing runs until
    /// [`Resident::run_until_waiting`].
    pub fn new(input: ResidentInput, program: Program) -> Resident {
        Resident {
            input,
            running: Some(Running::Program(program)),
            rest: None,
            resume: None,
            exit_code: None,
        }
    }

    /// A resident run in turns on `instance`: `start` now, one turn each until one does
    /// not end at rest, then `resume` at every feed.
    pub async fn in_turns(
        input: ResidentInput,
        instance: Box<dyn AtRest>,
        start: Vec<String>,
        resume: String,
    ) -> wasmtime::Result<Resident> {
        let mut resident = Resident {
            input,
            running: None,
            rest: Some(instance),
            resume: Some(resume),
            exit_code: None,
        };
        for program in start {
            let Some(rest) = resident.rest.take() else {
                break;
            };
            resident.running = Some(Running::Turn(rest.turn(program)));
            if resident.run_until_waiting().await?.is_some() || resident.rest.is_none() {
                break;
            }
        }
        Ok(resident)
    }

    /// The instance, when the resident runs in turns and none is under way.
    pub fn at_rest(&mut self) -> Option<&mut dyn AtRest> {
        self.rest.as_deref_mut()
    }

    /// Runs `program` as one turn now, on the instance at rest; `None` without one.
    pub async fn run_turn(&mut self, program: String) -> wasmtime::Result<Option<i32>> {
        let Some(rest) = self.rest.take() else {
            return Ok(None);
        };
        self.running = Some(Running::Turn(rest.turn(program)));
        self.run_until_waiting().await
    }

    /// Feeds `bytes` (and, with `end_of_input`, the end of input after them) and runs the
    /// program until it waits for more or exits.
    pub async fn feed(
        &mut self,
        bytes: &[u8],
        end_of_input: bool,
    ) -> wasmtime::Result<Option<i32>> {
        if self.exit_code.is_none() {
            self.input.push(bytes, end_of_input);
        }
        if self.running.is_none() {
            if let (Some(rest), Some(resume)) = (self.rest.take(), &self.resume) {
                self.running = Some(Running::Turn(rest.turn(resume.clone())));
            }
        }
        self.run_until_waiting().await
    }

    /// Runs the program (or the turn under way) until it waits for input with nothing to
    /// read (`None`) or exits (`Some(code)`); a trap or a broken limit is the error.
    pub async fn run_until_waiting(&mut self) -> wasmtime::Result<Option<i32>> {
        let Some(running) = self.running.as_mut() else {
            return Ok(self.exit_code);
        };
        let mut waiting = self.input.waiting();
        let ended = loop {
            let how = tokio::select! {
                biased;
                ended = finish(running) => break ended,
                how = waiting.wait_for(|w| *w != Waiting::No) => *how.expect("the sender lives"),
            };
            if how == Waiting::Reading {
                return Ok(None);
            }
            // Polling: give whatever else it polls a moment to wake it.
            let woke = tokio::time::timeout(POLL_GRACE, async {
                tokio::select! {
                    biased;
                    ended = finish(running) => Some(ended),
                    _ = waiting.wait_for(|w| *w == Waiting::No) => None,
                }
            })
            .await;
            match woke {
                Err(_) => return Ok(None),
                Ok(Some(ended)) => break ended,
                Ok(None) => continue,
            }
        };
        self.running = None;
        match ended? {
            Ended::AtRest(instance) => {
                self.rest = Some(instance);
                Ok(None)
            }
            Ended::Exited(code) => {
                self.exit_code = Some(code);
                Ok(Some(code))
            }
        }
    }
}

/// Polls what runs to its end.
async fn finish(running: &mut Running) -> wasmtime::Result<Ended> {
    match running {
        Running::Program(program) => program.await.map(Ended::Exited),
        Running::Turn(turn) => {
            let (instance, status) = turn.await;
            match status {
                Ok(0) => Ok(Ended::AtRest(instance)),
                Ok(code) => Ok(Ended::Exited(code)),
                Err(e) => match e.downcast_ref::<I32Exit>() {
                    Some(I32Exit(code)) => Ok(Ended::Exited(*code)),
                    None => Err(e),
                },
            }
        }
    }
}

/// A resident program's standard input: what it was fed and not yet read.
#[derive(Clone)]
pub struct ResidentInput(Arc<Shared>);

struct Shared {
    unread: Mutex<Unread>,
    /// Bumped on every feed, to wake a waiting reader.
    fed: watch::Sender<u64>,
    /// Whether the program waits for input with nothing to read.
    waiting: watch::Sender<Waiting>,
}

/// Bytes fed and not yet read, and whether input has ended after them.
#[derive(Default)]
struct Unread {
    bytes: BytesMut,
    ended: bool,
}

impl Default for ResidentInput {
    fn default() -> Self {
        ResidentInput(Arc::new(Shared {
            unread: Mutex::new(Unread::default()),
            fed: watch::Sender::new(0),
            waiting: watch::Sender::new(Waiting::No),
        }))
    }
}

impl ResidentInput {
    fn push(&self, bytes: &[u8], end_of_input: bool) {
        {
            let mut unread = self.unread();
            unread.bytes.extend_from_slice(bytes);
            unread.ended |= end_of_input;
        }
        self.0.waiting.send_replace(Waiting::No);
        self.0.fed.send_modify(|n| *n += 1);
    }

    fn waiting(&self) -> watch::Receiver<Waiting> {
        self.0.waiting.subscribe()
    }

    fn unread(&self) -> std::sync::MutexGuard<'_, Unread> {
        self.0.unread.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Up to `size` bytes; `None` at the end of input.
    fn take(&self, size: usize) -> Option<Bytes> {
        let mut unread = self.unread();
        if unread.bytes.is_empty() && unread.ended {
            return None;
        }
        let n = size.min(unread.bytes.len());
        Some(unread.bytes.split_to(n).freeze())
    }

    /// Whether a read would not wait: there are bytes, or the input has ended.
    fn has_something(&self) -> bool {
        let unread = self.unread();
        !unread.bytes.is_empty() || unread.ended
    }

    /// Resolves once there is something to read. Until then the program is waiting,
    /// which the host sees, but only for as long as it is: a program that also waits
    /// for something else (a timer) and wakes for that is not waiting for input, so the
    /// flag drops when this future ends, however it ends.
    async fn readable(&self, how: Waiting) {
        let mut fed = self.0.fed.subscribe();
        let _waiting = WaitingFlag(self);
        loop {
            if self.has_something() {
                return;
            }
            self.0.waiting.send_replace(how);
            if fed.changed().await.is_err() {
                return;
            }
        }
    }
}

/// Clears the waiting flag when dropped.
struct WaitingFlag<'a>(&'a ResidentInput);

impl Drop for WaitingFlag<'_> {
    fn drop(&mut self) {
        self.0 .0.waiting.send_replace(Waiting::No);
    }
}

impl IsTerminal for ResidentInput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdinStream for ResidentInput {
    fn p2_stream(&self) -> Box<dyn InputStream> {
        Box::new(ResidentStream(self.clone()))
    }

    fn async_stream(&self) -> Box<dyn AsyncRead + Send + Sync> {
        Box::new(ResidentAsyncRead {
            input: self.clone(),
            pending: None,
        })
    }
}

struct ResidentStream(ResidentInput);

#[async_trait::async_trait]
impl InputStream for ResidentStream {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        self.0.take(size).ok_or(StreamError::Closed)
    }

    /// A blocking read waits for input and nothing else.
    async fn blocking_read(&mut self, size: usize) -> StreamResult<Bytes> {
        loop {
            self.0.readable(Waiting::Reading).await;
            let bytes = self.0.take(size).ok_or(StreamError::Closed)?;
            if !bytes.is_empty() || size == 0 {
                return Ok(bytes);
            }
        }
    }
}

#[async_trait::async_trait]
impl Pollable for ResidentStream {
    /// A poll may wait for other things too.
    async fn ready(&mut self) {
        self.0.readable(Waiting::Polling).await
    }
}

/// The same input as an [`AsyncRead`] (for WASI versions that read stdin that way).
struct ResidentAsyncRead {
    input: ResidentInput,
    pending: Option<Pin<Box<dyn Future<Output = ()> + Send + Sync>>>,
}

impl AsyncRead for ResidentAsyncRead {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        loop {
            let Some(bytes) = self.input.take(buf.remaining()) else {
                // End of input: a read of nothing.
                return Poll::Ready(Ok(()));
            };
            if !bytes.is_empty() {
                self.pending = None;
                buf.put_slice(&bytes);
                return Poll::Ready(Ok(()));
            }
            let input = self.input.clone();
            let pending = self.pending.get_or_insert_with(|| {
                Box::pin(async move { input.readable(Waiting::Reading).await })
            });
            match pending.as_mut().poll(cx) {
                Poll::Ready(()) => self.pending = None,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "program" that reads lines from its input and counts them, exiting at `quit`.
    fn counter(input: ResidentInput, seen: Arc<Mutex<Vec<String>>>) -> Program {
        Box::pin(async move {
            let mut stream = ResidentStream(input);
            let mut line = Vec::new();
            loop {
                let bytes = stream.blocking_read(1).await?;
                if bytes[0] != b'\n' {
                    line.extend_from_slice(&bytes);
                    continue;
                }
                let text = String::from_utf8(std::mem::take(&mut line)).unwrap();
                if text == "quit" {
                    return Ok(seen.lock().unwrap().len() as i32);
                }
                seen.lock().unwrap().push(text);
            }
        })
    }

    #[tokio::test]
    async fn a_resident_runs_until_it_waits_and_keeps_its_state() {
        let input = ResidentInput::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut resident = Resident::new(input.clone(), counter(input, seen.clone()));
        assert_eq!(resident.run_until_waiting().await.unwrap(), None);
        assert_eq!(resident.feed(b"a\n", false).await.unwrap(), None);
        assert_eq!(*seen.lock().unwrap(), ["a"]);
        // Two lines at once are both read before it waits again.
        assert_eq!(resident.feed(b"b\nc\n", false).await.unwrap(), None);
        assert_eq!(*seen.lock().unwrap(), ["a", "b", "c"]);
        assert_eq!(resident.feed(b"quit\n", false).await.unwrap(), Some(3));
        // Once exited, it stays so.
        assert_eq!(resident.feed(b"d\n", false).await.unwrap(), Some(3));
    }

    /// After the end of input a read does not wait: the program sees end of input.
    #[tokio::test]
    async fn the_end_of_input_ends_the_reads() {
        let input = ResidentInput::default();
        let program: Program = {
            let input = input.clone();
            Box::pin(async move {
                let mut stream = ResidentStream(input);
                let mut n = 0;
                loop {
                    match stream.blocking_read(64).await {
                        Ok(bytes) => n += bytes.len() as i32,
                        Err(StreamError::Closed) => return Ok(n),
                        Err(e) => return Err(wasmtime::format_err!("{e}")),
                    }
                }
            })
        };
        let mut resident = Resident::new(input, program);
        assert_eq!(resident.feed(b"abc", false).await.unwrap(), None);
        assert_eq!(resident.feed(b"de", true).await.unwrap(), Some(5));
    }

    /// A program that polls its input beside a timer and wakes for the timer is not
    /// waiting for input: the host keeps running it until it waits for input alone.
    #[tokio::test]
    async fn waiting_beside_a_timer_is_not_waiting_for_input() {
        let input = ResidentInput::default();
        let done = Arc::new(Mutex::new(false));
        let program: Program = {
            let (input, done) = (input.clone(), done.clone());
            Box::pin(async move {
                let mut stream = ResidentStream(input);
                tokio::select! {
                    _ = stream.ready() => unreachable!("nothing was fed"),
                    // Shorter than the grace a poll gets: it wakes the program first.
                    _ = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
                }
                *done.lock().unwrap() = true;
                stream.blocking_read(1).await?;
                Ok(0)
            })
        };
        let mut resident = Resident::new(input, program);
        assert_eq!(resident.run_until_waiting().await.unwrap(), None);
        assert!(
            *done.lock().unwrap(),
            "stopped while the program waited for its timer"
        );
    }
}
