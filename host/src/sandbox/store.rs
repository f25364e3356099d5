//! The data of one wasmtime store: the WASI context of one program in the run.

use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::filesystem::StoreDisk;
use super::sandbox::{Sandbox, StoreState};
use super::tool_device::{DeviceContext, DeviceService, StoreDevices};
use crate::budget::output::Channel;
use crate::wit::resident::ResidentInput;

/// One program's standard streams and arguments.
#[derive(Clone, Default)]
pub struct ProgramIo {
    /// Full argv, including `argv[0]`.
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    pub stdin: Stdin,
}

/// A program's standard input.
#[derive(Clone, Default)]
pub enum Stdin {
    /// These bytes, then end of input; `None`: end of input at once.
    Bytes(Option<Vec<u8>>),
    /// What a resident program is fed (see `resident.rs`).
    Resident(ResidentInput),
    /// End of input at once.
    #[default]
    Empty,
}

/// Where a run sees the tools it may call (docs/tools.md), when the server has any.
pub const TOOLS_MOUNT: &str = "/tools";

/// The most resources (descriptors, streams, pollables, …) one store may hold at once;
/// fewer when the open-file limit is shared by many runs (see `service.rs`). The
/// preview1 bridge keeps a program to ~128 descriptors anyway; this bounds a component
/// that uses `wasi:filesystem` directly, and so the host descriptors a run can hold.
pub const MAX_RESOURCES_PER_STORE: usize = 4096;
/// The most data one host call may move between guest and host: a run request (4 MiB of
/// code, 4 MiB of stdin, 32 MiB of files) with room to spare. wasmtime's default is 128 MiB.
pub const HOSTCALL_FUEL: usize = 64 << 20;

/// A new store for one program of `sandbox`, on `engine` (the plugin engine for plugins
/// and tools, the program engine for produced programs): the scratch directory at `/`,
/// the read-only mounts, output into the sandbox's capture, its memory and disk budgets;
/// it stops when the call under way on its task is over (see `clock.rs`).
pub fn new_store(
    sandbox: &Arc<Sandbox>,
    io: ProgramIo,
    engine: &wasmtime::Engine,
) -> wasmtime::Result<Store<StoreState>> {
    let run = sandbox;
    let mut b = WasiCtxBuilder::new();
    b.args(&io.argv)
        .envs(&io.env)
        .stdout(run.output.stream(Channel::Stdout))
        .stderr(run.output.stream(Channel::Stderr));
    match io.stdin {
        Stdin::Bytes(bytes) => b.stdin(MemoryInputPipe::new(bytes.unwrap_or_default())),
        Stdin::Resident(input) => b.stdin(input),
        Stdin::Empty => b.stdin(MemoryInputPipe::new(Vec::new())),
    };
    // File operations on the local scratch and mount directories take microseconds: run
    // them on this thread instead of a `spawn_blocking` round trip each. clang opens,
    // stats and `realpath`s ~12,000 times for `#include <iostream>`; this cuts a C++
    // hello from ~2.2 s to ~1.4 s. It is safe because every run has a thread of its own
    // (see `run/thread.rs`): a slow syscall stalls only the run that made it.
    b.allow_blocking_current_thread(true);
    if let Some(journal) = &run.journal {
        // A durable session: what its programs learn from outside is kept for a replay.
        b.secure_random(journal.random())
            .insecure_random(journal.random())
            .insecure_random_seed(journal.seed())
            .wall_clock(journal.wall_clock())
            .monotonic_clock(journal.monotonic_clock());
    }
    b.preopened_dir(&run.scratch, "/", FsPerms::ReadWrite)?;
    for m in run.mounts.iter() {
        b.preopened_dir(&m.host, &m.guest, FsPerms::ReadOnly)?;
    }
    // Code mode: the tools programs may call, and the device to call them through; an
    // empty `/tools` without them. Always after the mounts, as a snapshot saw it
    // (`componentize/snapshot.rs`: the preopens a snapshot's libc found are all it knows).
    let tools = run.tool_calls.as_ref().map(|calls| {
        let service: Arc<dyn DeviceService> = calls.clone();
        (service, calls.dir())
    });
    // The network (docs/network.md): `/net` after `/tools`, as the snapshot saw it, empty
    // without a policy; each secret's placeholder in the variable of its name.
    let net = run.net_calls.as_ref().map(|calls| {
        b.envs(&calls.net.environment());
        let service: Arc<dyn DeviceService> = calls.clone();
        (service, calls.net.dir())
    });
    let mut devices = Vec::new();
    for (mount, served) in [(TOOLS_MOUNT, tools), (crate::net::NET_MOUNT, net)] {
        match served {
            Some((service, dir)) => {
                b.preopened_dir(dir.as_path(), mount, FsPerms::ReadOnly)?;
                devices.push(DeviceContext {
                    service,
                    journal: run.journal.clone(),
                    dir,
                    memory: run.memory.clone(),
                });
            }
            None => {
                if let Some(empty) = &run.empty_tools_dir {
                    b.preopened_dir(empty, mount, FsPerms::ReadOnly)?;
                }
            }
        }
    }
    let devices = StoreDevices::new(devices);
    let mut table = ResourceTable::new();
    table.set_max_capacity(run.resources_per_store);
    let state = StoreState {
        wasi: b.build(),
        table,
        limiter: run.memory.limiter(),
        disk: StoreDisk::new(run.disk.clone()),
        devices,
        sandbox: run.clone(),
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limiter);
    store.set_hostcall_fuel(HOSTCALL_FUEL);
    store.set_epoch_deadline(1);
    // Yield to the executor on every tick so busy guests can't starve it; trap once the
    // deadline of the call under way (this task's) has passed or the call was cancelled.
    store.epoch_deadline_callback(|_| {
        if super::clock::must_stop() {
            Ok(UpdateDeadline::Interrupt)
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
    Ok(store)
}
