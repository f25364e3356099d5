//! The device `/tools/call` (docs/tools.md): how a program in any runtime calls an
//! upstream tool. Opening the device's file in the `/tools` mount gives a descriptor the
//! filesystem (`quota_fs.rs`) routes here: what the program writes is the request; its
//! first read sends it through the run's [`ToolCalls`] (its cap, the run's deadline, a
//! durable session's journal) and the answer is what it reads, to the end.
//!
//! A file, not a new import, so that every runtime has it already: a preview1 command
//! (ruby, php, qjs, trealla), a reactor (python), a native component (javascript, shell)
//! and a program a compiler produced reach it through the `open`/`write`/`read` they
//! have, and nothing about a language is taught to the host.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable, StreamError};
use wasmtime_wasi_io::streams::StreamResult;

use super::clock;
use crate::budget::memory::{MemoryBudget, Reservation};
use crate::sandbox::journal::Journal;
use crate::upstream::answer::{Answer, Failure};
use crate::upstream::gateway::DEVICE_NAME;
use crate::upstream::ToolCalls;

/// One open of the device: the request written so far, then the answer being read.
#[derive(Default)]
struct DeviceCall {
    request: Vec<u8>,
    /// `request` was written through an earlier open (see [`StoreDevices::closed`]): a
    /// write here starts a new one instead.
    carried: bool,
    /// The request passed the size cap (the rest was not kept).
    over: bool,
    answer: Option<Bytes>,
    /// The answer's bytes, charged to the run's memory budget while this open holds them.
    _charged: Option<Reservation>,
    read: usize,
}

/// What a store needs to serve the device: the run's tool calls and journal, the
/// `/tools` directory it was shown, and the device descriptors open now (by handle).
#[derive(Default)]
pub struct StoreDevices {
    ctx: Option<DeviceContext>,
    open: HashMap<u32, Arc<Mutex<DeviceCall>>>,
    /// A request written and closed without being read, for the next open to answer.
    pending: Option<Vec<u8>>,
}

/// The run's side of the device.
#[derive(Clone)]
pub struct DeviceContext {
    pub calls: Arc<ToolCalls>,
    pub journal: Option<Journal>,
    /// The `/tools` directory this store was shown.
    pub dir: Arc<PathBuf>,
    /// The run's memory budget: answers held for reading are charged to it.
    pub memory: MemoryBudget,
}

impl StoreDevices {
    pub fn new(ctx: Option<DeviceContext>) -> StoreDevices {
        StoreDevices {
            ctx,
            open: HashMap::new(),
            pending: None,
        }
    }

    /// Whether opening `path` under the directory `dir` opens the device.
    pub fn is_device(&self, dir: &std::fs::File, path: &str) -> bool {
        let Some(ctx) = &self.ctx else { return false };
        let name = path.trim_start_matches("./");
        name == DEVICE_NAME && crate::upstream::gateway::same_dir(dir, &ctx.dir)
    }

    /// A new open of the device. It answers the request a closed open left unread, if
    /// any: so a runtime that cannot open a file for reading and writing at once writes
    /// the request through one open and reads the answer through the next.
    pub fn opened(&mut self, handle: u32) {
        let call = match self.pending.take() {
            Some(request) => DeviceCall {
                request,
                carried: true,
                ..Default::default()
            },
            None => DeviceCall::default(),
        };
        self.open.insert(handle, Arc::new(Mutex::new(call)));
    }

    /// The open device behind `handle`, if it is one.
    pub fn get(&self, handle: u32) -> Option<Device> {
        let call = self.open.get(&handle)?.clone();
        let ctx = self.ctx.clone()?;
        Some(Device { call, ctx })
    }

    pub fn closed(&mut self, handle: u32) {
        if let Some(call) = self.open.remove(&handle) {
            let mut c = lock(&call);
            if c.answer.is_none() && !c.request.is_empty() && !c.over {
                self.pending = Some(std::mem::take(&mut c.request));
            }
        }
    }
}

fn lock(call: &Mutex<DeviceCall>) -> std::sync::MutexGuard<'_, DeviceCall> {
    call.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a write to the device is refused: its answer was read already (one call per open).
#[derive(Debug, thiserror::Error)]
#[error("this /tools/call descriptor already made its call; open the device again for another")]
pub struct AlreadyAnswered;

/// One open of the device, with the run's side of it: what the filesystem's hooks and
/// the device's streams work on.
#[derive(Clone)]
pub struct Device {
    call: Arc<Mutex<DeviceCall>>,
    ctx: DeviceContext,
}

impl Device {
    fn state(&self) -> std::sync::MutexGuard<'_, DeviceCall> {
        lock(&self.call)
    }

    /// Appends `bytes` to the request. `Err` once the answer is being read.
    pub fn write(&self, bytes: &[u8]) -> Result<(), AlreadyAnswered> {
        let cap = self.ctx.calls.gateway.settings.max_request_bytes;
        let mut c = self.state();
        if c.answer.is_some() {
            return Err(AlreadyAnswered);
        }
        if std::mem::take(&mut c.carried) {
            c.request.clear();
        }
        if c.request.len() + bytes.len() > cap {
            c.over = true;
        } else {
            c.request.extend_from_slice(bytes);
        }
        Ok(())
    }

    /// Makes the call if it was not made yet (at the first read).
    pub async fn answer(&self) {
        let (request, over) = {
            let mut c = self.state();
            if c.answer.is_some() {
                return;
            }
            (std::mem::take(&mut c.request), c.over)
        };
        let ctx = &self.ctx;
        let bytes = if request.is_empty() && !over {
            Answer::failed(
                Failure::BadRequest,
                "nothing was written to /tools/call before it was read: write one JSON request \
                 (through this open, or an open closed just before), then read the answer",
            )
            .bytes
        } else if over {
            let cap = ctx.calls.gateway.settings.max_request_bytes;
            Answer::failed(
                Failure::Limit,
                format!("the request is over the {cap} byte cap on a tool call's request"),
            )
            .bytes
        } else {
            make_call(&request, ctx).await
        };
        // What the program has not read yet is the host's memory: the run pays for it.
        let (bytes, charged) = match ctx.memory.reserve(bytes.len()) {
            Some(charge) => (bytes, Some(charge)),
            None => {
                let refused = Answer::failed(
                    Failure::Limit,
                    format!(
                        "the tool's answer ({} bytes) does not fit in the run's memory limit",
                        bytes.len()
                    ),
                )
                .bytes;
                let charge = ctx.memory.reserve(refused.len());
                (refused, charge)
            }
        };
        let mut c = self.state();
        c.answer = Some(Bytes::from(bytes));
        c._charged = charged;
    }

    /// Whether this open started with a request an earlier open wrote.
    pub fn carries_request(&self) -> bool {
        self.state().carried
    }

    /// The device's size as `stat` reports it: 0 before a request is written, else the
    /// answer's (making the call): some runtimes read no more than a file's size.
    pub async fn size(&self) -> u64 {
        let asked = {
            let c = self.state();
            c.answer.is_some() || !c.request.is_empty() || c.over
        };
        if !asked {
            return 0;
        }
        self.answer().await;
        self.state().answer.as_ref().map_or(0, |a| a.len() as u64)
    }

    /// Reads up to `len` bytes of the answer: `(bytes, at the end)`; nothing before the
    /// call was made.
    pub fn read(&self, len: usize) -> (Vec<u8>, bool) {
        let mut c = self.state();
        let Some(answer) = c.answer.clone() else {
            return (Vec::new(), false);
        };
        let start = c.read.min(answer.len());
        let end = start.saturating_add(len).min(answer.len());
        c.read = end;
        (answer[start..end].to_vec(), end == answer.len())
    }

    fn answered(&self) -> bool {
        self.state().answer.is_some()
    }
}

/// One call: replayed from the journal in a resumed session, else taken from the run's
/// cap and made, racing the run's deadline and its cancellation (losing the race drops
/// the call, which cancels it upstream).
async fn make_call(request: &[u8], ctx: &DeviceContext) -> Vec<u8> {
    if let Some(journal) = &ctx.journal {
        match journal.replayed_tool_answer(request) {
            Some(Ok(answer)) => return answer,
            Some(Err(())) => return Answer::failed(
                Failure::Unavailable,
                "this session is being resumed and this call was not made when it was recorded; \
                     a resumed session never calls an upstream server again",
            )
            .bytes,
            None => {}
        }
    }
    let answer = match ctx.calls.take_one() {
        Err(over) => over,
        Ok(()) => match clock::current() {
            Some(clock) => tokio::select! {
                a = ctx.calls.gateway.call(request) => a,
                _ = clock.reached() => {
                    ctx.calls.gateway.count("-", "-", Failure::Timeout.as_str());
                    Answer::failed(Failure::Timeout, "the run's time limit came while the tool call was under way")
                }
                _ = clock.cancel().cancelled() => {
                    Answer::failed(Failure::Unavailable, "the run was cancelled while the tool call was under way")
                }
            },
            None => ctx.calls.gateway.call(request).await,
        },
    };
    if let Some(journal) = &ctx.journal {
        journal.record_tool(request, &answer.bytes);
    }
    answer.bytes
}

/// The device's output stream: what is written goes into the request.
pub struct DeviceOutput(pub Device);

#[async_trait::async_trait]
impl OutputStream for DeviceOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.0
            .write(&bytes)
            .map_err(|e| StreamError::LastOperationFailed(e.into()))
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(64 << 10)
    }
}

#[async_trait::async_trait]
impl Pollable for DeviceOutput {
    async fn ready(&mut self) {}
}

/// The device's input stream: the answer, made when first waited for.
pub struct DeviceInput(pub Device);

#[async_trait::async_trait]
impl InputStream for DeviceInput {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        if !self.0.answered() {
            // Not made yet: nothing to read until `ready`.
            return Ok(Bytes::new());
        }
        let (bytes, _) = self.0.read(size);
        if bytes.is_empty() && size > 0 {
            return Err(StreamError::Closed);
        }
        Ok(Bytes::from(bytes))
    }
}

#[async_trait::async_trait]
impl Pollable for DeviceInput {
    async fn ready(&mut self) {
        self.0.answer().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::config::ToolsConfig;
    use crate::upstream::{Gateway, GatewaySettings};

    fn context(memory: usize) -> (Arc<Gateway>, DeviceContext) {
        let config = ToolsConfig::parse(
            "[servers.e]\ncommand = \"/nonexistent/runbox-test-server\"\nallow = [\"add\"]\n",
            std::path::Path::new("."),
        )
        .unwrap();
        let gateway = Gateway::start(config, GatewaySettings::default()).unwrap();
        let ctx = DeviceContext {
            calls: ToolCalls::new(gateway.clone()),
            journal: None,
            dir: gateway.dir(),
            memory: MemoryBudget::new(memory),
        };
        (gateway, ctx)
    }

    /// A store's devices with one open, handle 1.
    fn opened(ctx: &DeviceContext) -> (StoreDevices, Device) {
        let mut devices = StoreDevices::new(Some(ctx.clone()));
        devices.opened(1);
        let device = devices.get(1).unwrap();
        (devices, device)
    }

    fn read_all(device: &Device) -> String {
        let (bytes, end) = device.read(1 << 20);
        assert!(end);
        String::from_utf8(bytes).unwrap()
    }

    #[tokio::test]
    async fn a_request_written_then_read_gets_its_answer_charged_to_the_run() {
        let (gateway, ctx) = context(1 << 20);
        let (mut devices, device) = opened(&ctx);
        device.write(br#"{"server":"e","tool":"rm"}"#).unwrap();
        device.answer().await;
        assert!(ctx.memory.used() > 0, "the answer is charged while held");
        assert!(read_all(&device).contains("not_allowed"));
        assert!(device.write(b"more").is_err(), "one call per open");
        devices.closed(1);
        drop(device);
        assert_eq!(ctx.memory.used(), 0, "and given back with the open");
        gateway.stop();
    }

    #[tokio::test]
    async fn an_answer_past_the_runs_memory_is_refused() {
        let (gateway, ctx) = context(64);
        let (_devices, device) = opened(&ctx);
        device.write(br#"{"server":"e","tool":"rm"}"#).unwrap();
        device.answer().await;
        assert!(read_all(&device).contains("does not fit in the run's memory limit"));
        gateway.stop();
    }

    #[tokio::test]
    async fn reading_before_writing_is_a_bad_request_and_an_unread_request_carries_over() {
        let (gateway, ctx) = context(1 << 20);
        let (mut devices, first) = opened(&ctx);
        first.answer().await;
        assert!(read_all(&first).contains("bad_request"));
        devices.closed(1);
        devices.opened(2);
        devices
            .get(2)
            .unwrap()
            .write(br#"{"server":"x","tool":"y"}"#)
            .unwrap();
        devices.closed(2);
        devices.opened(3);
        let third = devices.get(3).unwrap();
        assert!(third.carries_request());
        third.answer().await;
        assert!(read_all(&third).contains("unknown_server"));
        gateway.stop();
    }
}
