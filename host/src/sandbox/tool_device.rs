//! The devices `/tools/call` (docs/tools.md: how a program in any runtime calls an
//! upstream tool) and `/net/fetch` (docs/network.md: how it makes an HTTP request the
//! host checks and makes). Opening a device's file in its mount gives a descriptor the
//! filesystem (`sandbox/filesystem/`) routes here: what the program writes is the
//! request; its first read sends it through the run's [`DeviceService`] (its caps, the
//! run's deadline, a durable session's journal) and the answer is what it reads, to the
//! end.
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
pub use crate::upstream::device::DeviceService;

/// Device descriptors one run may hold open at once (its stores together): a binding
/// holds one per call, so this is room for any program, and a bound on what a program
/// that never closes them (a session keeps its descriptors between calls) can hold.
pub const MAX_OPEN_DEVICES: usize = 16;

/// Why a request was not kept whole (the rest of it was dropped as it was written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    /// Past the gateway's cap on a request's size.
    Size,
    /// Past what the run's memory (or the server's) had left.
    Memory,
}

/// One open of the device: the request written so far, then the answer being read.
#[derive(Default)]
struct DeviceCall {
    request: Vec<u8>,
    /// The request's bytes: host memory the run pays for while they are held.
    request_charge: Option<Reservation>,
    /// `request` was written through an earlier open (see [`StoreDevices::closed`]): a
    /// write here starts a new one instead.
    carried: bool,
    refused: Option<Refused>,
    answer: Option<Bytes>,
    /// The answer's bytes, charged to the run's memory budget while this open holds them.
    _charged: Option<Reservation>,
    read: usize,
}

/// A request written and closed unread, with its charge, for the next open to answer.
struct Pending {
    request: Vec<u8>,
    charge: Option<Reservation>,
}

/// One of the run's [`MAX_OPEN_DEVICES`], taken while a device descriptor is open.
struct OpenSlot(Arc<dyn DeviceService>);

impl Drop for OpenSlot {
    fn drop(&mut self) {
        self.0.device_closed();
    }
}

/// What a store needs to serve its devices: each device's service, journal and
/// directory, and the device descriptors open now (by handle, with their device).
#[derive(Default)]
pub struct StoreDevices {
    ctxs: Vec<DeviceContext>,
    open: HashMap<u32, (Arc<Mutex<DeviceCall>>, OpenSlot, usize)>,
    /// A request written and closed without being read, for the next open of the same
    /// device to answer.
    pending: Option<(usize, Pending)>,
}

/// The run's side of one device.
#[derive(Clone)]
pub struct DeviceContext {
    pub service: Arc<dyn DeviceService>,
    pub journal: Option<Journal>,
    /// The directory this store was shown the device in.
    pub dir: Arc<PathBuf>,
    /// The run's memory budget (which draws from the server's): requests and answers
    /// held for the program are charged to it.
    pub memory: MemoryBudget,
}

/// Why the device cannot be opened now.
#[derive(Debug, thiserror::Error)]
#[error("the run already holds {MAX_OPEN_DEVICES} open descriptors of a device (/tools/call, /net/fetch), the most one run may hold; close one first")]
pub struct TooManyOpen;

impl StoreDevices {
    pub fn new(ctxs: Vec<DeviceContext>) -> StoreDevices {
        StoreDevices {
            ctxs,
            open: HashMap::new(),
            pending: None,
        }
    }

    /// Which device opening `path` under the directory `dir` opens, if any.
    pub fn device_at(&self, dir: &std::fs::File, path: &str) -> Option<usize> {
        let name = path.trim_start_matches("./");
        self.ctxs.iter().position(|ctx| {
            name == ctx.service.file_name() && crate::upstream::gateway::same_dir(dir, &ctx.dir)
        })
    }

    /// Takes one of the run's open devices for an open of device `which` about to be made.
    pub fn may_open(&self, which: usize) -> Result<(), TooManyOpen> {
        let ctx = self.ctxs.get(which).ok_or(TooManyOpen)?;
        if ctx.service.device_opened(MAX_OPEN_DEVICES) {
            Ok(())
        } else {
            Err(TooManyOpen)
        }
    }

    /// Gives back the open taken by [`StoreDevices::may_open`] when the open failed.
    pub fn open_failed(&self, which: usize) {
        if let Some(ctx) = self.ctxs.get(which) {
            ctx.service.device_closed();
        }
    }

    /// A new open of the device (its slot taken by [`StoreDevices::may_open`]). It
    /// answers the request a closed open left unread, if any: so a runtime that cannot
    /// open a file for reading and writing at once writes the request through one open
    /// and reads the answer through the next.
    pub fn opened(&mut self, handle: u32, which: usize) {
        let Some(ctx) = self.ctxs.get(which) else {
            return;
        };
        let carried = match self.pending.take() {
            Some((w, pending)) if w == which => Some(pending),
            other => {
                self.pending = other;
                None
            }
        };
        let call = match carried {
            Some(Pending { request, charge }) => DeviceCall {
                request,
                request_charge: charge,
                carried: true,
                ..Default::default()
            },
            None => DeviceCall::default(),
        };
        let slot = OpenSlot(ctx.service.clone());
        self.open
            .insert(handle, (Arc::new(Mutex::new(call)), slot, which));
    }

    /// The open device behind `handle`, if it is one.
    pub fn get(&self, handle: u32) -> Option<Device> {
        let (call, _, which) = self.open.get(&handle)?;
        let ctx = self.ctxs.get(*which)?.clone();
        Some(Device {
            call: call.clone(),
            ctx,
        })
    }

    pub fn closed(&mut self, handle: u32) {
        if let Some((call, _slot, which)) = self.open.remove(&handle) {
            let mut c = lock(&call);
            if c.answer.is_none() && !c.request.is_empty() && c.refused.is_none() {
                self.pending = Some((
                    which,
                    Pending {
                        request: std::mem::take(&mut c.request),
                        charge: c.request_charge.take(),
                    },
                ));
            }
        }
    }
}

fn lock(call: &Mutex<DeviceCall>) -> std::sync::MutexGuard<'_, DeviceCall> {
    call.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why a write to the device is refused: its answer was read already (one call per open).
#[derive(Debug, thiserror::Error)]
#[error("this device descriptor already made its call; open the device again for another")]
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

    /// Appends `bytes` to the request, charging them to the run's memory. `Err` once the
    /// answer is being read. A request past its cap or the memory left is not kept: the
    /// rest is dropped as it comes, and the answer says why.
    pub fn write(&self, bytes: &[u8]) -> Result<(), AlreadyAnswered> {
        let cap = self.ctx.service.max_request_bytes();
        let mut c = self.state();
        if c.answer.is_some() {
            return Err(AlreadyAnswered);
        }
        if std::mem::take(&mut c.carried) {
            c.request = Vec::new();
            c.request_charge = None;
        }
        if c.refused.is_some() {
            return Ok(());
        }
        if c.request.len() + bytes.len() > cap {
            c.refused = Some(Refused::Size);
        } else if !self.charge(&mut c, bytes.len()) {
            c.refused = Some(Refused::Memory);
        } else {
            c.request.extend_from_slice(bytes);
            return Ok(());
        }
        c.request = Vec::new();
        c.request_charge = None;
        Ok(())
    }

    /// Charges `more` bytes of request to the run's memory.
    fn charge(&self, c: &mut DeviceCall, more: usize) -> bool {
        match &mut c.request_charge {
            Some(charge) => charge.grow(more),
            None => match self.ctx.memory.reserve(more) {
                Some(charge) => {
                    c.request_charge = Some(charge);
                    true
                }
                None => false,
            },
        }
    }

    /// Makes the call if it was not made yet (at the first read).
    pub async fn answer(&self) {
        let (request, _request_charge, refused) = {
            let mut c = self.state();
            if c.answer.is_some() {
                return;
            }
            (
                std::mem::take(&mut c.request),
                c.request_charge.take(),
                c.refused,
            )
        };
        let ctx = &self.ctx;
        let bytes =
            match refused {
                Some(Refused::Size) => {
                    let cap = ctx.service.max_request_bytes();
                    Answer::failed(
                        Failure::Limit,
                        format!(
                            "the request is over the {cap} byte cap on a request to {}",
                            ctx.service.path()
                        ),
                    )
                    .bytes
                }
                Some(Refused::Memory) => Answer::failed(
                    Failure::Limit,
                    "the request does not fit in the run's memory limit (what it holds besides \
                 is charged there too)",
                )
                .bytes,
                None if request.is_empty() => {
                    Answer::failed(
                        Failure::BadRequest,
                        format!(
                            "nothing was written to {} before it was read: write one JSON request \
                     (through this open, or an open closed just before), then read the answer",
                            ctx.service.path()
                        ),
                    )
                    .bytes
                }
                None => make_call(&request, ctx).await,
            };
        drop(request);
        // What the program has not read yet is the host's memory: the run pays for it.
        let (bytes, charged) = match ctx.memory.reserve(bytes.len()) {
            Some(charge) => (bytes, Some(charge)),
            None => {
                let refused = Answer::failed(
                    Failure::Limit,
                    format!(
                        "the answer ({} bytes) does not fit in the run's memory limit",
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
            c.answer.is_some() || !c.request.is_empty() || c.refused.is_some()
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
    // The request parsed is host memory too, for as long as the call is under way.
    let parsed = crate::upstream::gateway::parsed_size_bound(request);
    let Some(_parsed) = ctx.memory.reserve(parsed) else {
        return Answer::failed(
            Failure::Limit,
            format!(
                "the request ({} bytes, up to {parsed} bytes once parsed) does not fit in the \
                 run's memory limit",
                request.len()
            ),
        )
        .bytes;
    };
    let service = &ctx.service;
    let answer = match clock::current() {
        Some(clock) => tokio::select! {
            a = service.call(request, &ctx.memory) => a,
            _ = clock.reached() => {
                service.timed_out();
                Answer::failed(Failure::Timeout, "the run's time limit came while the call was under way")
            }
            _ = clock.cancel().cancelled() => {
                Answer::failed(Failure::Unavailable, "the run was cancelled while the call was under way")
            }
        },
        None => service.call(request, &ctx.memory).await,
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
            service: crate::upstream::ToolCalls::new(gateway.clone()),
            journal: None,
            dir: gateway.dir(),
            memory: MemoryBudget::new(memory),
        };
        (gateway, ctx)
    }

    /// A store's devices with one open, handle 1.
    fn opened(ctx: &DeviceContext) -> (StoreDevices, Device) {
        let mut devices = StoreDevices::new(vec![ctx.clone()]);
        devices.may_open(0).unwrap();
        devices.opened(1, 0);
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
        devices.may_open(0).unwrap();
        devices.opened(2, 0);
        devices
            .get(2)
            .unwrap()
            .write(br#"{"server":"x","tool":"y"}"#)
            .unwrap();
        devices.closed(2);
        assert!(ctx.memory.used() > 0, "the request left unread is charged");
        devices.may_open(0).unwrap();
        devices.opened(3, 0);
        let third = devices.get(3).unwrap();
        assert!(third.carries_request());
        third.answer().await;
        assert!(read_all(&third).contains("unknown_server"));
        gateway.stop();
    }

    #[tokio::test]
    async fn a_request_is_charged_as_it_is_written_and_one_past_the_memory_left_is_refused() {
        let (gateway, ctx) = context(64 << 10);
        let (mut devices, device) = opened(&ctx);
        device.write(&[b' '; 10_000]).unwrap();
        assert_eq!(ctx.memory.used(), 10_000);
        // Past what the run has left: dropped as it comes, the answer says why.
        device.write(&[b' '; 60_000]).unwrap();
        device.write(&[b' '; 1_000]).unwrap();
        assert_eq!(ctx.memory.used(), 0, "nothing of a refused request is held");
        device.answer().await;
        let answer = read_all(&device);
        assert!(
            answer.contains("\"limit\"") && answer.contains("memory limit"),
            "{answer}"
        );
        devices.closed(1);
        gateway.stop();
    }

    #[tokio::test]
    async fn the_parsed_request_is_charged_while_the_call_is_made() {
        // 2,000 small values take far more memory parsed than as text.
        let request = format!(
            r#"{{"server":"e","tool":"add","arguments":{{"a":[{}]}}}}"#,
            vec!["1"; 2_000].join(",")
        );
        let bound = crate::upstream::gateway::parsed_size_bound(request.as_bytes());
        assert!(
            bound > 100 * request.len() / 2,
            "{bound} for {} bytes",
            request.len()
        );
        let (gateway, ctx) = context(request.len() + bound / 2);
        let (mut devices, device) = opened(&ctx);
        device.write(request.as_bytes()).unwrap();
        device.answer().await;
        let answer = read_all(&device);
        assert!(answer.contains("once parsed"), "{answer}");
        devices.closed(1);
        gateway.stop();
    }

    #[tokio::test]
    async fn a_run_holds_so_many_open_devices_at_most_across_its_stores() {
        let (gateway, ctx) = context(1 << 20);
        let mut first = StoreDevices::new(vec![ctx.clone()]);
        let mut second = StoreDevices::new(vec![ctx.clone()]);
        for handle in 0..MAX_OPEN_DEVICES as u32 {
            let store = if handle % 2 == 0 {
                &mut first
            } else {
                &mut second
            };
            store.may_open(0).unwrap();
            store.opened(handle, 0);
        }
        assert!(first.may_open(0).is_err() && second.may_open(0).is_err());
        first.closed(0);
        first.may_open(0).expect("a closed one makes room");
        first.opened(100, 0);
        // A store that goes (its program ended) gives back what it held.
        drop(second);
        for _ in 0..MAX_OPEN_DEVICES / 2 {
            first.may_open(0).unwrap();
        }
        assert!(first.may_open(0).is_err());
        gateway.stop();
    }
}
