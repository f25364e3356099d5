//! Pre-initialised reactors: run a reactor's start-up once and keep the memory it leaves.
//!
//! An interpreter that imports a large library on every run (CPython with numpy, pandas
//! and matplotlib: seconds) can instead start every run from memory in which that has
//! been done. plugins.toml asks for it with `[plugins.NAME.tools.TOOL.reactor.snapshot]`.
//! At first use, [`take_snapshot`] instruments the module with `wasmtime-wizer`, runs its
//! `init` exports and then its `entry` with the snapshot's program, and rewrites the
//! module with the resulting memory and globals as its initial state. The result is
//! componentized and compiled like any tool, and cached; every run then starts from it
//! with copy-on-write memory.
//!
//! What the module saw while the snapshot was taken stays in it: its environment (the
//! snapshot's `env`), its preopened directories (so they are given in the same order as
//! in a run: the scratch directory at `/`, then the plugin's mounts), and anything it
//! seeded from randomness. State outside the module (open files, the scratch directory)
//! is not kept; a snapshot program must not rely on it.

use std::path::PathBuf;
use std::time::Duration;

use wasmtime::{Engine, Linker, Module, Store, Val};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::reactor::ReactorStart;
use super::stubs::ImportStub;

/// The longest a snapshot's start-up may run: a hang in it must not hang the server.
pub const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(600);
/// Memory the snapshot's start-up may use.
const SNAPSHOT_MEMORY_BYTES: usize = 4 << 30;

#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot prepare the snapshot: {0:#}")]
    Prepare(anyhow::Error),
    #[error("the snapshot's start-up failed: {what}{}", output_note(.output))]
    Failed { what: String, output: String },
}

fn output_note(output: &str) -> String {
    if output.trim().is_empty() {
        String::new()
    } else {
        format!("; it printed:\n{}", output.trim_end())
    }
}

/// A directory the module sees while the snapshot is taken.
#[derive(Debug, Clone)]
pub struct Preopen {
    pub host: PathBuf,
    pub guest: String,
    pub writable: bool,
}

/// Everything a snapshot needs besides the module.
#[derive(Debug, Clone)]
pub struct SnapshotPlan<'a> {
    pub start: &'a ReactorStart,
    /// The program given to `entry`.
    pub program: &'a str,
    /// `argv[0]`, as in a run.
    pub argv0: &'a str,
    pub env: Vec<(String, String)>,
    /// In the order a run gives them.
    pub preopens: Vec<Preopen>,
    pub stubs: &'a [ImportStub],
}

struct State {
    wasi: WasiP1Ctx,
    limits: wasmtime::StoreLimits,
}

/// The module pre-initialised as `plan` says.
pub fn take_snapshot(
    module: &[u8],
    plan: &SnapshotPlan<'_>,
    engine: &Engine,
) -> Result<Vec<u8>, SnapshotError> {
    let prepare = |e: anyhow::Error| SnapshotError::Prepare(e);
    let mut wizer = wasmtime_wizer::Wizer::new();
    // The last init export is the one wizer removes; `_initialize` it removes anyway.
    if let Some(last) = plan.start.init.last() {
        wizer.init_func(last.clone());
    }
    let (cx, instrumented) = wizer.instrument(module).map_err(|e| prepare(e.into()))?;

    // The engine the snapshot is then compiled with, which keeps the functions compiled
    // here (`engine::snapshot_compiler`): the snapshot has the same ones. (Cranelift
    // without optimisations compiled this no faster: 51 s against 48 s for python.)
    let started = std::time::Instant::now();
    let compiled = crate::engine::compile_pool::compile(instrumented.len(), || {
        Module::new(engine, &instrumented)
    })
    .map_err(|e| prepare(e.into()))?;
    let compiled_in = started.elapsed();

    let output = MemoryOutputPipe::new(64 << 10);
    let mut wasi = WasiCtxBuilder::new();
    wasi.args(&[plan.argv0])
        .envs(&plan.env)
        .stdout(output.clone())
        .stderr(output.clone());
    for p in &plan.preopens {
        let perms = if p.writable {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        wasi.preopened_dir(&p.host, &p.guest, perms)
            .map_err(|e| prepare(e.into()))?;
    }
    let state = State {
        wasi: wasi.build_p1(),
        limits: wasmtime::StoreLimitsBuilder::new()
            .memory_size(SNAPSHOT_MEMORY_BYTES)
            .build(),
    };
    let mut store = Store::new(engine, state);
    store.limiter(|s| &mut s.limits);
    let ticks = (SNAPSHOT_TIMEOUT.as_millis() / crate::engine::EPOCH_TICK.as_millis()) as u64;
    store.set_epoch_deadline(ticks);
    let ticker = Ticker::start(engine.clone());

    let mut linker: Linker<State> = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s| &mut s.wasi)
        .map_err(|e| prepare(e.into()))?;
    for stub in plan.stubs {
        let Some(wasmtime::ExternType::Func(ty)) = compiled
            .imports()
            .find(|i| i.module() == stub.module && i.name() == stub.name)
            .map(|i| i.ty())
        else {
            continue;
        };
        let value = stub.value;
        linker
            .func_new(
                &stub.module,
                &stub.name,
                ty.clone(),
                move |_, _, results| {
                    for (slot, ty) in results.iter_mut().zip(ty.results()) {
                        *slot = match ty {
                            wasmtime::ValType::I64 => Val::I64(value),
                            wasmtime::ValType::F32 => Val::F32((value as f32).to_bits()),
                            wasmtime::ValType::F64 => Val::F64((value as f64).to_bits()),
                            _ => Val::I32(value as i32),
                        };
                    }
                    Ok(())
                },
            )
            .map_err(|e| prepare(e.into()))?;
    }
    let failed = |what: String| SnapshotError::Failed {
        what,
        output: String::from_utf8_lossy(&output.contents()).into_owned(),
    };
    let instance = linker
        .instantiate(&mut store, &compiled)
        .map_err(|e| failed(format!("cannot instantiate it: {e:#}")))?;
    for name in &plan.start.init {
        if let Ok(init) = instance.get_typed_func::<(), ()>(&mut store, name) {
            init.call(&mut store, ())
                .map_err(|e| failed(format!("`{name}` failed: {e:#}")))?;
        }
    }
    let alloc = instance
        .get_typed_func::<i32, i32>(&mut store, &plan.start.alloc)
        .map_err(|e| failed(format!("no `{}` export: {e:#}", plan.start.alloc)))?;
    let entry = instance
        .get_typed_func::<(i32, i32), i32>(&mut store, &plan.start.entry)
        .map_err(|e| failed(format!("no `{}` export: {e:#}", plan.start.entry)))?;
    let len = i32::try_from(plan.program.len()).map_err(|_| failed("program too long".into()))?;
    let ptr = alloc
        .call(&mut store, len)
        .map_err(|e| failed(format!("`{}` failed: {e:#}", plan.start.alloc)))?;
    let memory = instance
        .get_memory(&mut store, "memory")
        .ok_or_else(|| failed("the module exports no `memory`".into()))?;
    memory
        .write(&mut store, ptr as usize, plan.program.as_bytes())
        .map_err(|e| failed(format!("cannot write the program into memory: {e}")))?;
    let result = entry
        .call(&mut store, (ptr, len))
        .map_err(|e| failed(format!("the program failed: {e:#}")))?;
    if result != 0 {
        return Err(failed(format!("the program exited with {result}")));
    }
    drop(ticker);
    let snapshot = futures::executor::block_on(wizer.snapshot(
        &cx,
        &mut wasmtime_wizer::WasmtimeWizer {
            store: &mut store,
            instance,
        },
    ))
    .map_err(|e| prepare(e.into()))?;
    tracing::info!(
        compile_s = compiled_in.as_secs_f64(),
        start_up_and_snapshot_s = (started.elapsed() - compiled_in).as_secs_f64(),
        "snapshot taken"
    );
    Ok(snapshot)
}

/// Advances an engine's epoch until dropped (the snapshot's deadline).
struct Ticker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Ticker {
    fn start(engine: Engine) -> Ticker {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::spawn(move || {
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(crate::engine::EPOCH_TICK);
                engine.increment_epoch();
            }
        });
        Ticker { stop }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::componentize::reactor::tests::exit_code_of_command;

    /// A reactor whose `turn` stores the first byte of its program in a global that the
    /// entry point later reports: the snapshot keeps what the snapshot program did.
    const REACTOR: &str = r#"(module
        (import "wasi_snapshot_preview1" "args_sizes_get" (func (param i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "args_get" (func (param i32 i32) (result i32)))
        (import "wasi_snapshot_preview1" "proc_exit" (func (param i32)))
        (import "host" "call" (func $call (result i32)))
        (memory (export "memory") 1)
        (global $next (mut i32) (i32.const 1024))
        (global $seen (mut i32) (i32.const 0))
        (func (export "alloc") (param i32) (result i32)
            (global.get $next)
            (global.set $next (i32.add (global.get $next) (local.get 0))))
        (func (export "turn") (param i32 i32) (result i32)
            (if (i32.eqz (global.get $seen))
                (then (global.set $seen (i32.load8_u (local.get 0)))
                      (return (i32.add (call $call) (i32.const 1)))))
            (global.get $seen)))"#;

    fn compiler() -> Engine {
        crate::engine::snapshot_compiler().unwrap()
    }

    /// The test reactor's convention: `turn` after `alloc`, no init.
    fn turn_start() -> ReactorStart {
        ReactorStart {
            init: vec![],
            entry: "turn".into(),
            alloc: "alloc".into(),
            programs: 1,
        }
    }

    /// A plan whose snapshot program is `*`, with `stubs` for the imports.
    fn star_plan<'a>(start: &'a ReactorStart, stubs: &'a [ImportStub]) -> SnapshotPlan<'a> {
        SnapshotPlan {
            start,
            program: "*",
            argv0: "tool",
            env: vec![],
            preopens: vec![],
            stubs,
        }
    }

    #[test]
    fn the_snapshot_keeps_what_its_program_did() {
        let module = wat::parse_str(REACTOR).unwrap();
        let start = turn_start();
        let stubs = [ImportStub::parse("host.call", -1).unwrap()];
        let snapshot = take_snapshot(&module, &star_plan(&start, &stubs), &compiler()).unwrap();
        // Started as a command, the snapshot's `turn` returns the byte it kept: `*` = 42.
        let command =
            crate::componentize::reactor::command_from_reactor(&snapshot, &start).unwrap();
        let code = exit_code_of_command(&command, &["tool", "x"], |linker| {
            linker
                .func_wrap("host", "call", || -> i32 {
                    panic!("not called after the snapshot")
                })
                .unwrap();
        });
        assert_eq!(code, 42);
    }

    #[test]
    fn a_failing_snapshot_program_is_reported() {
        let module = wat::parse_str(REACTOR).unwrap();
        let start = turn_start();
        // Without the stub `host.call` cannot be linked.
        let e = take_snapshot(&module, &star_plan(&start, &[]), &compiler())
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot instantiate"), "{e}");
    }
}
