//! The wasmtime engines every run shares, their epoch ticker, and loading components
//! through the compiled cache.
//!
//! Two engines: one for plugins and their declared tools (Cranelift, compiled once per
//! artifact), and one for programs a plugin produces in a run (compiled per program, in a
//! child process under the run's limits: see `sandbox/program.rs`). Both enable only the
//! WebAssembly proposals the default plugins need.

pub mod compile_pool;
pub mod compiled_cache;
pub mod function_pack;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::error::Context as _;
use wasmtime::{Config, Engine, OptLevel, Strategy};

use crate::engine::compiled_cache::{CacheTrustError, CompiledCache, CompiledKind};

/// How often the epoch advances. A running guest yields to the executor on every tick
/// and checks its deadline, so this is also the timeout's granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Turns off the Rust backtraces wasmtime's error values capture, unless
/// `RUST_LIB_BACKTRACE` asks for them. A guest's exit (every `exit()`, and the end of
/// each pre-started python run) is such an error value, and with `RUST_BACKTRACE=1` in
/// the environment each one walked the unwind tables of the compiled code (about 0.2 ms
/// of a pre-started python run, side by side here). runbox never shows those; a
/// panic's still follows `RUST_BACKTRACE`. Call it first thing in `main`, before any
/// other thread exists (it sets an environment variable).
pub fn quiet_error_backtraces() {
    if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
        std::env::set_var("RUST_LIB_BACKTRACE", "0");
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot configure wasmtime: {0:#}")]
    Config(anyhow::Error),
    #[error("cannot compile {what}: {source:#}")]
    Compile { what: String, source: anyhow::Error },
    #[error("cannot write the compiled cache file {path}: {source}")]
    CacheWrite {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Cache(#[from] CacheTrustError),
}

/// The compiler for programs a plugin produces in a run (the C/C++ case).
///
/// Cranelift is the default: measured with `cargo bench --bench program_compiler`, its
/// code runs CPU-bound C several times faster than Winch's, and the compile it costs is
/// bounded by the run's deadline and memory either way (it runs in a child process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgramCompiler {
    /// Cranelift, optimizing for speed.
    #[default]
    Cranelift,
    /// Cranelift without optimizations.
    CraneliftUnoptimized,
    /// Winch, wasmtime's single-pass baseline compiler.
    Winch,
}

impl ProgramCompiler {
    pub const ALL: [ProgramCompiler; 3] = [
        ProgramCompiler::Cranelift,
        ProgramCompiler::CraneliftUnoptimized,
        ProgramCompiler::Winch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ProgramCompiler::Cranelift => "cranelift",
            ProgramCompiler::CraneliftUnoptimized => "cranelift-unoptimized",
            ProgramCompiler::Winch => "winch",
        }
    }

    pub fn from_name(name: &str) -> Option<ProgramCompiler> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// What every engine of runbox has: epoch interruption, components, copy-on-write
/// memory images, bounded stacks, and none of the proposals no default plugin uses
/// (threads, GC, memory64, stack switching, async components, …).
fn base_config() -> Config {
    let mut config = Config::new();
    config
        .epoch_interruption(true)
        .wasm_component_model(true)
        // Copy-on-write memory images make instantiating a large interpreter cheap.
        .memory_init_cow(true)
        // Each 32-bit memory has all it can address reserved, so it never moves: a
        // session's memory tails are mapped into that reservation (`state/tail.rs`).
        // (wasmtime's default on 64-bit hosts, said here because runbox relies on it.)
        .memory_reservation(1 << 32)
        .max_wasm_stack(4 << 20)
        .async_stack_size(8 << 20)
        .concurrency_support(false)
        .wasm_component_model_async(false)
        .wasm_threads(false)
        .wasm_shared_everything_threads(false)
        .wasm_gc(false)
        .wasm_function_references(false)
        .wasm_memory64(false)
        .wasm_stack_switching(false)
        .wasm_wide_arithmetic(false)
        .wasm_custom_page_sizes(false);
    // `RUNBOX_PROFILE=perfmap` (or `jitdump`) names the guest's compiled functions to
    // `perf` (docs/benchmarks.md, "Profiling"): for finding where a run's time goes.
    match std::env::var("RUNBOX_PROFILE").as_deref() {
        Ok("perfmap") => {
            config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        }
        Ok("jitdump") => {
            config.profiler(wasmtime::ProfilingStrategy::JitDump);
        }
        _ => {}
    }
    config
}

/// Plugins and their tools. Exception handling stays on: CPython 3.15 is built with
/// wasm exceptions.
fn plugin_config() -> Config {
    let mut config = base_config();
    config.wasm_exceptions(true);
    config
}

/// Programs produced in a run. Also used by the compiling child process, so that what
/// it writes loads in the parent (wasmtime checks the configuration when loading).
pub fn program_config(compiler: ProgramCompiler) -> Config {
    let mut config = base_config();
    // C++ exceptions (clangpp compiles with -fwasm-exceptions): the exnref proposal,
    // whose exception objects live in wasmtime's GC heap. Winch has no exceptions.
    let exceptions = compiler != ProgramCompiler::Winch;
    config
        .wasm_exceptions(exceptions)
        .gc_support(exceptions)
        // One core per compile: concurrent compiles are bounded server-wide instead.
        .parallel_compilation(false);
    match compiler {
        ProgramCompiler::Cranelift => {
            config.strategy(Strategy::Cranelift);
        }
        ProgramCompiler::CraneliftUnoptimized => {
            config
                .strategy(Strategy::Cranelift)
                .cranelift_opt_level(OptLevel::None);
        }
        ProgramCompiler::Winch => {
            config
                .strategy(Strategy::Winch)
                .wasm_relaxed_simd(false)
                .wasm_tail_call(false);
        }
    }
    config
}

/// The program engine of a compiling child, with the pack of compiled functions kept in
/// `dir` when the compiler is Cranelift (see [`function_pack`]); save the pack after the
/// compile. Winch has no incremental cache: no pack.
pub fn program_engine_with_pack(
    compiler: ProgramCompiler,
    dir: &Path,
) -> Result<(Engine, Option<Arc<function_pack::FunctionPack>>), EngineError> {
    let new = |config: &Config| Engine::new(config).map_err(|e| EngineError::Config(e.into()));
    let plain = new(&program_config(compiler))?;
    if compiler == ProgramCompiler::Winch {
        return Ok((plain, None));
    }
    let path = function_pack::FunctionPack::path_in(dir, compiler.name(), &plain);
    let pack = Arc::new(function_pack::FunctionPack::open(path));
    let mut config = program_config(compiler);
    config
        .enable_incremental_compilation(pack.clone())
        .map_err(|e| EngineError::Config(e.into()))?;
    Ok((new(&config)?, Some(pack)))
}

/// Compiled functions by Cranelift's cache key, kept in memory for the compiles of one
/// engine (see [`snapshot_compiler`]).
#[derive(Debug, Default)]
struct FunctionCache(
    std::sync::Mutex<std::collections::HashMap<Vec<u8>, Vec<u8>>>,
    std::sync::atomic::AtomicUsize,
    std::sync::atomic::AtomicUsize,
);

impl Drop for FunctionCache {
    fn drop(&mut self) {
        tracing::info!(
            hits = self.1.load(std::sync::atomic::Ordering::Relaxed),
            misses = self.2.load(std::sync::atomic::Ordering::Relaxed),
            "function cache"
        );
    }
}

impl wasmtime::CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<std::borrow::Cow<'_, [u8]>> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let found = kept.get(key).cloned().map(std::borrow::Cow::Owned);
        let counter = if found.is_some() { &self.1 } else { &self.2 };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        found
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.insert(key.to_vec(), value);
        true
    }
}

/// An engine like the plugins' one whose compiles share their compiled functions: for a
/// tool taken as a snapshot, which is compiled twice with the same functions (once to
/// run its start-up, then the snapshot, which differs only in its data). The second
/// compile reuses the first one's code: measured on the python tool, 2 cores, it
/// replaced a compile of 75 s (see bench/RESULTS.md, "First start"). What it writes
/// loads in the plugins' engine: the configuration is the same.
pub fn snapshot_compiler() -> Result<Engine, EngineError> {
    let mut config = plugin_config();
    config
        .enable_incremental_compilation(Arc::new(FunctionCache::default()))
        .map_err(|e| EngineError::Config(e.into()))?;
    Engine::new(&config).map_err(|e| EngineError::Config(e.into()))
}

/// An engine like the plugins' one that compiles about twice as fast, for code that
/// runs only a while: no optimisations and a single-pass register allocator (python's
/// 99 MB: 24.8 s against 51.9 s on 2 cores, measured with wasmtime's Python binding,
/// bench/RESULTS.md "First start"). What it writes loads in the plugins' engine: neither
/// setting is one wasmtime checks when loading.
pub fn quick_compiler() -> Result<Engine, EngineError> {
    let mut config = plugin_config();
    config
        .cranelift_opt_level(OptLevel::None)
        .cranelift_regalloc_algorithm(wasmtime::RegallocAlgorithm::SinglePass);
    Engine::new(&config).map_err(|e| EngineError::Config(e.into()))
}

/// The engines plus the cache their compiled components are kept in.
#[derive(Clone)]
pub struct SandboxEngine {
    engine: Engine,
    programs: Engine,
    program_compiler: ProgramCompiler,
    cache: CompiledCache,
}

impl SandboxEngine {
    /// Engines for sandboxed runs; compiled components are cached under `compiled_dir`
    /// (created private; refused when others can write it).
    pub fn new(
        compiled_dir: &Path,
        program_compiler: ProgramCompiler,
    ) -> Result<SandboxEngine, EngineError> {
        let cache = CompiledCache::open(compiled_dir)?;
        let engine = Engine::new(&plugin_config()).map_err(|e| EngineError::Config(e.into()))?;
        let programs = Engine::new(&program_config(program_compiler))
            .map_err(|e| EngineError::Config(e.into()))?;
        start_epoch_ticker(&engine);
        start_epoch_ticker(&programs);
        Ok(SandboxEngine {
            engine,
            programs,
            program_compiler,
            cache,
        })
    }

    /// The engine of plugins and their declared tools.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The engine of programs produced in a run.
    pub fn programs(&self) -> &Engine {
        &self.programs
    }

    pub fn program_compiler(&self) -> ProgramCompiler {
        self.program_compiler
    }

    pub fn cache(&self) -> &CompiledCache {
        &self.cache
    }

    /// The engine files of `kind` are compiled for.
    fn engine_for(&self, kind: CompiledKind) -> &Engine {
        match kind {
            CompiledKind::Program => &self.programs,
            _ => &self.engine,
        }
    }

    /// Where the compiled form of `key` lives (see [`CompiledCache::path`]).
    pub fn compiled_path(&self, kind: CompiledKind, name: &str, key: &str) -> PathBuf {
        self.cache.path(kind, name, key, self.engine_for(kind))
    }

    /// True when a compiled form for `key` is cached.
    pub fn is_compiled(&self, kind: CompiledKind, name: &str, key: &str) -> bool {
        self.cache
            .contains(kind, &self.compiled_path(kind, name, key))
    }

    /// Loads the compiled file at `path` (written by runbox for this engine), opened
    /// through the checked cache directory's descriptor (see [`CompiledCache::open_compiled`]).
    pub fn load_compiled(&self, kind: CompiledKind, path: &Path) -> wasmtime::Result<Component> {
        let file = self
            .cache
            .open_compiled(kind, path)
            .with_context(|| format!("cannot open the compiled file {}", path.display()))?;
        // SAFETY: the file was written by `precompile_component` of an engine with the
        // same configuration (wasmtime checks it, and its hash is part of the file name)
        // into a cache directory only this user can write or replace (checked at open,
        // with every directory above it), and opened through that directory's
        // descriptor as a file of this user that nobody else can write.
        unsafe { deserialize_open_file(self.engine_for(kind), file) }
            .with_context(|| format!("failed to load code for: {}", path.display()))
    }

    /// Loads the component cached under `key`, or builds it with `make_component`,
    /// compiles it in this process and caches the result. For plugins and tools, whose
    /// inputs are pinned by plugins.toml; `name` is for messages and file names.
    pub fn load_or_compile(
        &self,
        kind: CompiledKind,
        name: &str,
        key: &str,
        make_component: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> Result<Component, EngineError> {
        self.load_or_compile_with(kind, name, key, self.engine_for(kind), make_component)
    }

    /// [`SandboxEngine::load_or_compile`], compiling with `compiler`, an engine of the
    /// same configuration as the one of `kind` (see [`snapshot_compiler`]).
    pub fn load_or_compile_with(
        &self,
        kind: CompiledKind,
        name: &str,
        key: &str,
        compiler: &Engine,
        make_component: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> Result<Component, EngineError> {
        let path = self.compiled_path(kind, name, key);
        match self.load_compiled(kind, &path) {
            Ok(c) => return Ok(c),
            Err(e) if is_not_found(&e) => {}
            Err(e) => tracing::warn!(
                "recompiling {name}: cached {} unusable: {e:#}",
                path.display()
            ),
        }
        let compile_err = |source: anyhow::Error| EngineError::Compile {
            what: name.to_string(),
            source,
        };
        let bytes = make_component().map_err(compile_err)?;
        let compiled = precompile(name, compiler, &bytes)?;
        self.cache.ensure_dir(kind)?;
        self.cache
            .write(kind, &path, &compiled)
            .map_err(|source| EngineError::CacheWrite {
                path: path.clone(),
                source,
            })?;
        self.cache.prune_superseded(&path, KEEP_SUPERSEDED);
        self.load_compiled(kind, &path)
            .map_err(|e| compile_err(e.into()))
    }
}

impl SandboxEngine {
    /// `component` compiled by `compiler` (an engine of the plugins' configuration) for
    /// this process only: nothing is written to the compiled cache.
    pub fn compile_uncached(
        &self,
        what: &str,
        compiler: &Engine,
        component: &[u8],
    ) -> Result<Component, EngineError> {
        let compiled = precompile(what, compiler, component)?;
        // SAFETY: `precompile_component` of an engine with the plugins' configuration
        // wrote these bytes just now, and nothing else holds them.
        unsafe { Component::deserialize(&self.engine, &compiled) }.map_err(|e| {
            EngineError::Compile {
                what: what.to_string(),
                source: e.into(),
            }
        })
    }
}

/// `component` compiled by `compiler` on a pool of its own (see [`compile_pool`]), timed.
fn precompile(what: &str, compiler: &Engine, component: &[u8]) -> Result<Vec<u8>, EngineError> {
    let started = std::time::Instant::now();
    let compiled =
        compile_pool::compile(component.len(), || compiler.precompile_component(component))
            .map_err(|e| EngineError::Compile {
                what: what.to_string(),
                source: e.into(),
            })?;
    tracing::info!(
        what,
        wasm_bytes = component.len(),
        seconds = started.elapsed().as_secs_f64(),
        "compiled"
    );
    Ok(compiled)
}

/// Compiled forms of one plugin or tool kept, the newest among them: enough to go back
/// one version of runbox without minutes of compiling.
const KEEP_SUPERSEDED: usize = 2;

/// Whether loading failed because no compiled file is there (yet).
fn is_not_found(e: &wasmtime::Error) -> bool {
    e.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    })
}

/// `Component::deserialize_file` for a file already open (wasmtime 48 has
/// `Module::deserialize_open_file` but no component counterpart). On Linux the file is
/// reopened through `/proc/self/fd`, which names the open file itself rather than a path
/// to look up again, so wasmtime maps it as it maps any file (its memory images then
/// share the file's pages); elsewhere, or when `/proc` is unavailable, its bytes are read.
///
/// # Safety
///
/// As for [`Component::deserialize_file`]: `file` must hold what
/// `Engine::precompile_component` wrote, and nobody may change it while it is loaded.
unsafe fn deserialize_open_file(engine: &Engine, file: File) -> wasmtime::Result<Component> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        let proc = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
        let same =
            |a: &std::fs::Metadata, b: &std::fs::Metadata| (a.dev(), a.ino()) == (b.dev(), b.ino());
        if let (Ok(held), Ok(named)) = (file.metadata(), std::fs::metadata(&proc)) {
            if same(&held, &named) {
                // SAFETY: `proc` is `file` (checked above, and `file` stays open until
                // wasmtime has opened it); the caller vouches for its contents.
                return unsafe { Component::deserialize_file(engine, &proc) };
            }
        }
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut bytes)?;
    // SAFETY: the caller vouches for the contents.
    unsafe { Component::deserialize(engine, &bytes) }
}

/// One ticker thread per process advances the epoch of every engine it was given.
fn start_epoch_ticker(engine: &Engine) {
    static TICKER: OnceLock<Arc<std::sync::Mutex<Vec<wasmtime::EngineWeak>>>> = OnceLock::new();
    let engines = TICKER.get_or_init(|| {
        let engines: Arc<std::sync::Mutex<Vec<wasmtime::EngineWeak>>> = Arc::default();
        let ticking = engines.clone();
        std::thread::Builder::new()
            .name("runbox-epoch".into())
            .spawn(move || loop {
                std::thread::sleep(EPOCH_TICK);
                let mut list = ticking.lock().unwrap_or_else(|e| e.into_inner());
                list.retain(|weak| match weak.upgrade() {
                    Some(engine) => {
                        engine.increment_epoch();
                        true
                    }
                    None => false,
                });
            })
            .expect("spawn the epoch ticker thread");
        engines
    });
    engines
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(engine.weak());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Someone renames the cache directory away after the check and puts a directory of
    /// their own in its place, with a valid compiled component under the same name: what
    /// runbox loads is still what it compiled into the directory it checked.
    #[test]
    fn a_substituted_cache_directory_is_not_what_gets_loaded() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("cache").join("compiled");
        let engine = SandboxEngine::new(&root, ProgramCompiler::default()).unwrap();
        let component = |export: &str| {
            wat::parse_str(format!(
                r#"(component
                    (core module $m (func (export "f")))
                    (core instance $i (instantiate $m))
                    (func $f (canon lift (core func $i "f")))
                    (export "{export}" (func $f)))"#
            ))
            .unwrap()
        };
        let exports = |c: &Component| -> Vec<String> {
            c.component_type()
                .exports(engine.engine())
                .map(|(name, _)| name.to_string())
                .collect()
        };
        let kind = CompiledKind::Plugin;
        let ours = engine
            .load_or_compile(kind, "p", "k", || Ok(component("ours")))
            .unwrap();
        assert_eq!(exports(&ours), ["ours"]);
        let path = engine.compiled_path(kind, "p", "k");

        std::fs::rename(base.path().join("cache"), base.path().join("moved")).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let theirs = engine
            .engine()
            .precompile_component(&component("theirs"))
            .unwrap();
        std::fs::write(&path, theirs).unwrap();

        let again = engine.load_compiled(kind, &path).unwrap();
        assert_eq!(exports(&again), ["ours"]);
        let again = engine
            .load_or_compile(kind, "p", "k", || panic!("compiled again"))
            .unwrap();
        assert_eq!(exports(&again), ["ours"]);
        // A file only in the planted directory is not there for runbox.
        let planted = engine.compiled_path(kind, "q", "k");
        std::fs::copy(&path, &planted).unwrap();
        assert!(!engine.is_compiled(kind, "q", "k"));
        assert!(engine.load_compiled(kind, &planted).is_err());
    }

    /// The stand-in's compile (`plugin/provisional.rs`) loads where plugins run, and runs;
    /// an engine that differs in a checked setting would be refused.
    #[test]
    fn what_the_quick_compiler_writes_runs_in_the_plugins_engine() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("cache").join("compiled");
        let engine = SandboxEngine::new(&root, ProgramCompiler::default()).unwrap();
        let component = wat::parse_str(
            r#"(component
                (core module $m (func (export "f") (result i32) (i32.const 7)))
                (core instance $i (instantiate $m))
                (func $f (result u32) (canon lift (core func $i "f")))
                (export "f" (func $f)))"#,
        )
        .unwrap();
        let quick = quick_compiler().unwrap();
        let loaded = engine
            .compile_uncached("quick", &quick, &component)
            .unwrap();
        let mut store = wasmtime::Store::new(engine.engine(), ());
        store.set_epoch_deadline(u64::MAX / 2);
        let instance = wasmtime::component::Linker::new(engine.engine())
            .instantiate(&mut store, &loaded)
            .unwrap();
        let f = instance
            .get_typed_func::<(), (u32,)>(&mut store, "f")
            .unwrap();
        assert_eq!(f.call(&mut store, ()).unwrap(), (7,));
        // A setting wasmtime checks (here: no epoch interruption) is refused when loading.
        let mut other = plugin_config();
        other.epoch_interruption(false);
        let other = Engine::new(&other).unwrap();
        assert!(engine
            .compile_uncached("other", &other, &component)
            .is_err());
    }

    #[test]
    fn every_program_compiler_makes_an_engine() {
        for compiler in ProgramCompiler::ALL {
            Engine::new(&program_config(compiler))
                .unwrap_or_else(|e| panic!("{}: {e}", compiler.name()));
            assert_eq!(ProgramCompiler::from_name(compiler.name()), Some(compiler));
        }
        Engine::new(&plugin_config()).unwrap();
    }

    /// Proposals no default plugin needs are refused at validation.
    #[test]
    fn unused_proposals_are_off() {
        let engine = Engine::new(&plugin_config()).unwrap();
        for (what, wat) in [
            ("threads", "(module (memory 1 1 shared))"),
            ("memory64", "(module (memory i64 1))"),
            ("gc", "(module (type (struct (field i32))))"),
        ] {
            let bytes = wat::parse_str(wat).unwrap();
            assert!(
                wasmtime::Module::new(&engine, &bytes).is_err(),
                "{what} is accepted"
            );
        }
        // Exception handling is on (CPython 3.15 needs it).
        let eh = wat::parse_str("(module (tag $t) (func (throw $t)))").unwrap();
        wasmtime::Module::new(&engine, &eh).unwrap();
    }

    #[test]
    fn produced_programs_get_fewer_proposals_still() {
        for compiler in ProgramCompiler::ALL {
            let engine = Engine::new(&program_config(compiler)).unwrap();
            for (what, wat) in [
                ("threads", "(module (memory 1 1 shared))"),
                ("gc", "(module (type (struct (field i32))))"),
            ] {
                let bytes = wat::parse_str(wat).unwrap();
                assert!(
                    wasmtime::Module::new(&engine, &bytes).is_err(),
                    "{what} is accepted by {}",
                    compiler.name()
                );
            }
            // Exception handling (C++ exceptions, exnref) with Cranelift; Winch has none.
            let eh = wat::parse_str(
                "(module (tag $t (param i32)) (func (param i32) (result i32) \
                 (block (result i32) (try_table (catch $t 0) (throw $t (local.get 0)))
                 unreachable)) (func (block (result exnref) \
                 (try_table (catch_all_ref 0) (call 0 (i32.const 1)) drop) unreachable) \
                 throw_ref))",
            )
            .unwrap();
            assert_eq!(
                wasmtime::Module::new(&engine, &eh).is_ok(),
                compiler != ProgramCompiler::Winch,
                "exceptions with {}",
                compiler.name()
            );
            let plain = wat::parse_str("(module (func (export \"f\")))").unwrap();
            wasmtime::Module::new(&engine, &plain).unwrap();
        }
    }
}
