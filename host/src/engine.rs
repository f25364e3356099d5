//! The wasmtime engine every run shares, its epoch ticker, and the cache of
//! precompiled components.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

/// How often the epoch advances. A running guest yields to the executor on every tick
/// and checks its deadline, so this is also the timeout's granularity.
pub const EPOCH_TICK: Duration = Duration::from_millis(5);

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
}

/// The engine plus the directory its compiled components are cached in.
#[derive(Clone)]
pub struct SandboxEngine {
    engine: Engine,
    compiled_dir: PathBuf,
}

impl SandboxEngine {
    /// An engine for sandboxed runs; compiled components are cached under `compiled_dir`.
    pub fn new(compiled_dir: &Path) -> Result<SandboxEngine, EngineError> {
        let mut config = Config::new();
        config
            .epoch_interruption(true)
            .wasm_component_model(true)
            // Copy-on-write memory images make instantiating a large interpreter cheap.
            .memory_init_cow(true)
            .max_wasm_stack(4 << 20)
            .async_stack_size(8 << 20);
        let engine = Engine::new(&config).map_err(|e| EngineError::Config(e.into()))?;
        start_epoch_ticker(&engine);
        Ok(SandboxEngine {
            engine,
            compiled_dir: compiled_dir.to_path_buf(),
        })
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Where the compiled form of a component with this `key` lives. The key must
    /// identify the component's bytes; the engine's own settings and version are
    /// added here.
    pub fn compiled_path(&self, name: &str, key: &str) -> PathBuf {
        let mut h = Sha256::new();
        h.update(key.as_bytes());
        h.update(env!("CARGO_PKG_VERSION").as_bytes());
        let mut hasher = DigestHasher(&mut h);
        std::hash::Hash::hash(&self.engine.precompile_compatibility_hash(), &mut hasher);
        let digest = hex::encode(h.finalize());
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.compiled_dir
            .join(format!("{safe}-{}.cwasm", &digest[..32]))
    }

    /// True when a compiled form for `key` is cached.
    pub fn is_compiled(&self, name: &str, key: &str) -> bool {
        self.compiled_path(name, key).is_file()
    }

    /// Loads the component cached under `key`, or builds it with `make_component`,
    /// compiles it and caches the result. `name` is for messages and file names.
    pub fn load_or_compile(
        &self,
        name: &str,
        key: &str,
        make_component: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> Result<Component, EngineError> {
        let path = self.compiled_path(name, key);
        if path.is_file() {
            // SAFETY: the file was written by `precompile_component` of an engine with
            // the same compatibility hash (it is part of the file name), into a cache
            // directory only runbox writes.
            match unsafe { Component::deserialize_file(&self.engine, &path) } {
                Ok(c) => return Ok(c),
                Err(e) => tracing::warn!(
                    "recompiling {name}: cached {} unusable: {e:#}",
                    path.display()
                ),
            }
        }
        let compile_err = |source: anyhow::Error| EngineError::Compile {
            what: name.to_string(),
            source,
        };
        let bytes = make_component().map_err(compile_err)?;
        let compiled = self
            .engine
            .precompile_component(&bytes)
            .map_err(|e| compile_err(e.into()))?;
        write_atomically(&path, &compiled)?;
        // SAFETY: as above; the file was just written by this engine.
        unsafe { Component::deserialize_file(&self.engine, &path) }
            .map_err(|e| compile_err(e.into()))
    }
}

impl SandboxEngine {
    /// Deletes the oldest compiled files cached under `name` beyond the newest `keep`,
    /// so caches of ever-new inputs (programs compiled in a run) stay bounded.
    pub fn prune_compiled(&self, name: &str, keep: usize) {
        let prefix = format!("{name}-");
        let Ok(entries) = std::fs::read_dir(&self.compiled_dir) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(&prefix) && n.ends_with(".cwasm")
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        if files.len() <= keep {
            return;
        }
        files.sort();
        for (_, path) in &files[..files.len() - keep] {
            // Another process may have removed it first; nothing to do then.
            let _ = std::fs::remove_file(path);
        }
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), EngineError> {
    let err = |source| EngineError::CacheWrite {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().expect("cache files live in a directory");
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

/// Feeds `std::hash::Hash` output into a sha256.
struct DigestHasher<'a>(&'a mut Sha256);

impl std::hash::Hasher for DigestHasher<'_> {
    fn finish(&self) -> u64 {
        0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
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

    #[test]
    fn prune_keeps_the_newest_files_of_one_name() {
        let dir = tempfile::tempdir().unwrap();
        let engine = SandboxEngine::new(dir.path()).unwrap();
        for i in 0..5 {
            let path = dir.path().join(format!("program-{i}.cwasm"));
            std::fs::write(&path, b"x").unwrap();
            let t = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1000 + i);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        std::fs::write(dir.path().join("python-x.cwasm"), b"x").unwrap();
        engine.prune_compiled("program", 2);
        let mut left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["program-3.cwasm", "program-4.cwasm", "python-x.cwasm"]
        );
    }
}
