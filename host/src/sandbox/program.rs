//! Programs a plugin produced in its scratch directory (the C/C++ case: `/main.wasm`),
//! turned into something to spawn without letting the compile escape the run's limits.
//!
//! A produced program is untrusted input to the compiler: a small C file can make
//! Cranelift work for minutes or allocate gigabytes. So the compile
//!
//! - is refused past [`MAX_PROGRAM_BYTES`], a size no real program here reaches;
//! - runs in a child process (`runbox __compile-program`), which is killed at the run's
//!   deadline (or when the run is cancelled or dropped), whose address space is capped
//!   at what the run has left of its memory cap plus [`COMPILER_BASE_BYTES`] for the
//!   compiler itself, and which holds that part of the run's budget while it works;
//! - waits for one of the server's compile slots, so repeated requests queue instead of
//!   taking every core;
//! - only enters the compiled cache (bounded by count and bytes) when the run that
//!   produced it completes.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Instant;

use rustix::process::{Resource, Rlimit};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wasmtime::component::Component;
use wasmtime_wasi::p2::bindings::CommandPre;

use super::sandbox::Sandbox;
use super::sandbox::StoreState;
use crate::componentize::transform_fingerprint;
use crate::engine::compiled_cache::CompiledKind;
use crate::engine::{ProgramCompiler, SandboxEngine};

/// The first line of a program `cc` made in the shell, before its WebAssembly: it makes
/// `./a.out` a script whose interpreter is the shell's `runbox-wasm` command, so the
/// shell runs it by any path. The host skips it when it loads the program.
pub const PROGRAM_HEADER: &[u8] = b"#!/usr/bin/env runbox-wasm\n";

/// Produced programs larger than this are refused. A C++ program using much of the
/// standard library is a few MB; 32 MiB leaves room for big static tables.
pub const MAX_PROGRAM_BYTES: u64 = 32 << 20;
/// Address space the compiling child may use beyond the run's remaining memory: the
/// runbox binary, the compiler's own code and its fixed allocations.
pub const COMPILER_BASE_BYTES: u64 = 512 << 20;
/// Compiled programs kept in the cache: the newest, within both caps.
pub const CACHED_PROGRAMS: usize = 128;
pub const CACHED_PROGRAM_BYTES: u64 = 256 << 20;
/// The hidden subcommand the child runs.
pub const COMPILE_SUBCOMMAND: &str = "__compile-program";

/// A limit the compile of a produced program broke; ends the run as `terminated`.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompileLimitExceeded(pub String);

/// Why a produced program cannot be spawned (the plugin sees it as `invalid-program`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InvalidProgram(pub String);

/// The cache key of a produced program's bytes.
fn program_key(bytes: &[u8]) -> String {
    format!(
        "program:{}:{}",
        hex::encode(Sha256::digest(bytes)),
        transform_fingerprint()
    )
}

/// A runnable form of the program at `path` (a file in scratch), compiled within the
/// run's limits. `Ok(Err(_))` is a program the plugin should hear about; `Err(_)` ends
/// the run (deadline, memory).
pub async fn load_program(
    run: &Arc<Sandbox>,
    path: &Path,
    guest: &str,
) -> wasmtime::Result<Result<CommandPre<StoreState>, InvalidProgram>> {
    let bytes = match read_program(path, guest) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let engine = &run.engine;
    let key = program_key(&bytes);
    let cached = engine.compiled_path(CompiledKind::Program, "program", &key);
    let component = match cached
        .is_file()
        .then(|| engine.load_compiled(CompiledKind::Program, &cached))
    {
        Some(Ok(c)) => c,
        _ => match compile(run, bytes, &cached, guest).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        },
    };
    Ok(run
        .programs
        .linker
        .instantiate_pre(&component)
        .and_then(CommandPre::new)
        .map_err(|e| InvalidProgram(format!("`{guest}` cannot run in the sandbox: {e:#}"))))
}

fn read_program(path: &Path, guest: &str) -> Result<Vec<u8>, InvalidProgram> {
    let too_big = || {
        InvalidProgram(format!(
            "`{guest}` is larger than {} MiB, the most a produced program may be",
            MAX_PROGRAM_BYTES >> 20
        ))
    };
    let file = std::fs::File::open(path)
        .map_err(|e| InvalidProgram(format!("cannot read `{guest}`: {e}")))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if len > MAX_PROGRAM_BYTES {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(len as usize);
    // Read at most one byte past the cap, in case the file grew since.
    std::io::Read::read_to_end(
        &mut std::io::Read::take(file, MAX_PROGRAM_BYTES + 1),
        &mut bytes,
    )
    .map_err(|e| InvalidProgram(format!("cannot read `{guest}`: {e}")))?;
    if bytes.len() as u64 > MAX_PROGRAM_BYTES {
        return Err(too_big());
    }
    // A program `cc` made in the shell starts with a `#!` line (see `commands.rs`).
    if let Some(module) = bytes.strip_prefix(PROGRAM_HEADER) {
        return Ok(module.to_vec());
    }
    Ok(bytes)
}

/// Compiles `bytes` in a child process into `cached`, and loads it.
async fn compile(
    run: &Arc<Sandbox>,
    bytes: Vec<u8>,
    cached: &Path,
    guest: &str,
) -> wasmtime::Result<Result<Component, InvalidProgram>> {
    let engine: &SandboxEngine = &run.engine;
    let dir = engine.cache().ensure_dir(CompiledKind::Program)?;
    // Waiting for a slot counts against the run's deadline like everything else.
    let _slot = run.programs.slots.clone().acquire_owned().await?;
    // The compiler gets what the run has left of its memory; the run holds it meanwhile.
    let grant = run.memory.remaining();
    let Some(_held) = run.memory.reserve(grant) else {
        return Err(CompileLimitExceeded(format!(
            "memory limit reached: no memory was left to compile `{guest}`"
        ))
        .into());
    };
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempfile_in(&dir)?
        .into_temp_path();
    let started = Instant::now();
    let outcome = run_compiler(
        &run.programs.compiler_exe,
        engine.program_compiler(),
        &bytes,
        &tmp,
        super::clock::current().map_or_else(Instant::now, |c| c.deadline()),
        COMPILER_BASE_BYTES.saturating_add(grant as u64),
    )
    .await;
    tracing::debug!(
        program = guest,
        bytes = bytes.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        ok = outcome.is_ok(),
        "compiled a produced program"
    );
    match outcome {
        Ok(()) => {}
        Err(ChildFailure::Invalid(message)) => {
            return Ok(Err(InvalidProgram(format!("`{guest}`: {message}"))))
        }
        Err(ChildFailure::Limit(message)) => {
            return Err(CompileLimitExceeded(format!(
                "{message} while compiling `{guest}` ({} MiB allowed: what the run had left \
                 of its memory cap, plus {} MiB for the compiler)",
                (COMPILER_BASE_BYTES + grant as u64) >> 20,
                COMPILER_BASE_BYTES >> 20
            ))
            .into())
        }
        Err(ChildFailure::Deadline) => return Err(wasmtime::Trap::Interrupt.into()),
        Err(ChildFailure::Start(e)) => {
            return Err(wasmtime::format_err!(
                "cannot start the program compiler: {e}"
            ))
        }
    }
    // A call already over (its deadline passed while the child worked) keeps nothing:
    // its answer may be out, and its programs forgotten, already.
    if super::clock::must_stop() {
        return Err(wasmtime::Trap::Interrupt.into());
    }
    tmp.persist(cached)?;
    // Kept only if the run completes (see `Sandbox::forget_new_programs`).
    run.new_programs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(cached.to_path_buf());
    engine
        .cache()
        .prune(CompiledKind::Program, CACHED_PROGRAMS, CACHED_PROGRAM_BYTES);
    Ok(Ok(engine.load_compiled(CompiledKind::Program, cached)?))
}

/// How the compiling child failed.
#[derive(Debug)]
enum ChildFailure {
    /// Not a valid WebAssembly program: the child said why.
    Invalid(String),
    /// The child broke its memory or CPU limit.
    Limit(String),
    /// The run's deadline came first; the child was killed.
    Deadline,
    Start(std::io::Error),
}

/// Runs `runbox __compile-program` on `bytes`, writing the compiled program to `output`.
async fn run_compiler(
    exe: &Path,
    compiler: ProgramCompiler,
    bytes: &[u8],
    output: &Path,
    deadline: Instant,
    address_space: u64,
) -> Result<(), ChildFailure> {
    let cpu_seconds = deadline
        .saturating_duration_since(Instant::now())
        .as_secs()
        .saturating_add(1);
    let mut command = tokio::process::Command::new(exe);
    command
        .arg(COMPILE_SUBCOMMAND)
        .arg("--compiler")
        .arg(compiler.name())
        .arg("--output")
        .arg(output)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // SAFETY: only async-signal-safe calls (setrlimit) between fork and exec.
    unsafe {
        command.pre_exec(move || {
            set_limit(Resource::As, address_space)?;
            set_limit(Resource::Cpu, cpu_seconds)?;
            set_limit(Resource::Core, 0)?;
            Ok(())
        });
    }
    let mut reaped = Reaped(command.spawn().map_err(ChildFailure::Start)?);
    let child = &mut reaped.0;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let work = async {
        // The child may die before reading everything; its status says why.
        let _ = stdin.write_all(bytes).await;
        drop(stdin);
        let mut message = Vec::new();
        let _ = (&mut stderr).take(8 << 10).read_to_end(&mut message).await;
        let status = child.wait().await;
        (status, String::from_utf8_lossy(&message).trim().to_string())
    };
    let (status, message) =
        match tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), work).await {
            Ok(done) => done,
            // `Reaped` kills the child and waits for it.
            Err(_) => return Err(ChildFailure::Deadline),
        };
    let status = status.map_err(ChildFailure::Start)?;
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(0), _) => Ok(()),
        (Some(EXIT_INVALID_PROGRAM), _) => Err(ChildFailure::Invalid(message)),
        (_, Some(libc::SIGXCPU)) | (_, Some(libc::SIGKILL)) if Instant::now() >= deadline => {
            Err(ChildFailure::Deadline)
        }
        (_, Some(libc::SIGXCPU)) => Err(ChildFailure::Limit("CPU time limit reached".into())),
        // Allocation failures abort, or exit with a message.
        _ => Err(ChildFailure::Limit(format!(
            "memory limit reached ({})",
            if message.is_empty() {
                status.to_string()
            } else {
                message
            }
        ))),
    }
}

/// A compiling child that is killed and reaped when dropped unfinished: at its deadline,
/// or when the run's future is dropped (the call's deadline passed, or it was
/// cancelled). Reaped there and then, before the compile slot is given back, so that no
/// more compilers than there are slots ever live at once (tokio's `kill_on_drop` only
/// kills, and reaps some time later).
struct Reaped(tokio::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if !matches!(self.0.try_wait(), Ok(None)) {
            return;
        }
        let _ = self.0.start_kill();
        // A killed process is gone within milliseconds; the bound only guards against
        // a kernel that takes longer (then tokio reaps it later).
        let until = Instant::now() + std::time::Duration::from_secs(2);
        while matches!(self.0.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// The child's exit code for input that is not a valid program (its reason on stderr).
pub const EXIT_INVALID_PROGRAM: i32 = 3;

/// Sets both the soft and the hard limit on `resource` (a direct system call on Linux,
/// safe between fork and exec).
fn set_limit(resource: Resource, value: u64) -> std::io::Result<()> {
    let limit = Rlimit {
        current: Some(value),
        maximum: Some(value),
    };
    Ok(rustix::process::setrlimit(resource, limit)?)
}

/// The child's side: reads a program on stdin, compiles it for the program engine with
/// `compiler` and writes the result to `output`. Exits [`EXIT_INVALID_PROGRAM`] for input
/// that is not a program.
pub fn compile_program_child(compiler: ProgramCompiler, output: &Path) -> i32 {
    use crate::componentize::{binary_kind, componentize, BinaryKind};
    let mut bytes = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin(), MAX_PROGRAM_BYTES + 1),
        &mut bytes,
    ) {
        eprintln!("cannot read the program: {e}");
        return 1;
    }
    let component = match binary_kind(&bytes) {
        BinaryKind::CoreModule => match componentize(&bytes) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("{e}");
                return EXIT_INVALID_PROGRAM;
            }
        },
        BinaryKind::Component => bytes,
        BinaryKind::NotWasm => {
            eprintln!("not a WebAssembly module or component");
            return EXIT_INVALID_PROGRAM;
        }
    };
    // The pack of compiled functions lives beside the output, in the compiled programs'
    // directory (see `engine::function_pack`).
    let dir = output.parent().unwrap_or(Path::new("."));
    let (engine, pack) = match crate::engine::program_engine_with_pack(compiler, dir) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cannot configure wasmtime: {e}");
            return 1;
        }
    };
    let compiled = match engine.precompile_component(&component) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e:#}");
            return EXIT_INVALID_PROGRAM;
        }
    };
    if let Err(e) = std::fs::write(output, compiled) {
        eprintln!("cannot write {}: {e}", output.display());
        return 1;
    }
    // Only a compile that succeeded adds to the pack; failing to write it costs speed
    // only.
    if let Some(Err(e)) = pack.map(|p| p.save()) {
        tracing::warn!(error = %e, "cannot keep the compiled functions of a program");
    }
    0
}
