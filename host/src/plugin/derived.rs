//! Files a plugin derives once from its own tools, kept in the cache and shown read-only
//! to every run: `[[plugins.NAME.derived]]` (a C++ precompiled header of the standard
//! library, so no run parses libc++'s headers again).
//!
//! At preparation the host writes the entry's `files` into a fresh scratch directory, runs
//! `run` (a declared tool and its arguments) there like any run (the scratch directory at
//! `/`, the plugin's mounts, no network), and keeps the directory `dir` it left, under
//! `ROOT/derived/`. Every run then sees it read-only at `/DIR`, the path it was made at,
//! so whatever the files record about their own location still holds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::budget::disk::DiskBudget;
use crate::budget::memory::MemoryBudget;
use crate::engine::SandboxEngine;
use crate::manifest::{DerivedSpec, PluginSpec};
use crate::sandbox::clock::{self, CallClock};
use crate::sandbox::ProgramCompiles;
use crate::sandbox::{Mount, Sandbox, SandboxConfig, Tool};

/// How long making derived files may take, and how much memory and disk they may use.
const DERIVE_TIMEOUT: Duration = Duration::from_secs(600);
const DERIVE_MEMORY: usize = 2 << 30;
const DERIVE_SCRATCH_BYTES: u64 = 1 << 30;
/// Marks a complete directory (it only appears by a rename, this is belt and braces).
const COMPLETE: &str = ".runbox-derived";

#[derive(Debug, thiserror::Error)]
pub enum DeriveError {
    #[error("cannot make the derived files `{dir}`: {message}")]
    Failed { dir: String, message: String },
}

/// The cache key of `derived`: its files, its command line, and what the command runs
/// with (the tool's artifact, the mounts).
pub fn derived_key(spec: &PluginSpec, derived: &DerivedSpec) -> String {
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(b"derived-v1");
    part(derived.dir.as_bytes());
    for (path, contents) in &derived.files {
        part(path.as_bytes());
        part(contents.as_bytes());
    }
    for arg in derived.run.iter().chain(&derived.env) {
        part(arg.as_bytes());
    }
    if let Some(tool) = derived.run.first().and_then(|t| spec.tools.get(t)) {
        part(tool.artifact.sha256.as_bytes());
    }
    for m in &spec.mounts {
        part(m.artifact().sha256.as_bytes());
        part(m.at.as_bytes());
    }
    hex::encode(h.finalize())
}

/// What making derived files needs of the loaded plugin.
pub struct Deriver<'a> {
    pub root: &'a Path,
    pub engine: &'a SandboxEngine,
    pub tools: &'a Arc<HashMap<String, Tool>>,
    pub mounts: &'a [Mount],
}

impl Deriver<'_> {
    fn dir(&self, spec: &PluginSpec, derived: &DerivedSpec) -> PathBuf {
        let key = derived_key(spec, derived);
        self.root.join(format!(
            "{}-{}-{}",
            spec.name,
            derived.dir.replace('/', "_"),
            &key[..16]
        ))
    }

    /// Whether `derived`'s files are cached.
    pub fn is_ready(&self, spec: &PluginSpec, derived: &DerivedSpec) -> bool {
        self.dir(spec, derived).join(COMPLETE).is_file()
    }

    /// The directory holding `derived`'s files (made now if not cached), as a mount.
    pub fn mount(&self, spec: &PluginSpec, derived: &DerivedSpec) -> Result<Mount, DeriveError> {
        let dir = self.dir(spec, derived);
        if !dir.join(COMPLETE).is_file() {
            self.make(derived, &dir)?;
        }
        Ok(Mount {
            host: dir,
            guest: format!("/{}", derived.dir),
        })
    }

    fn make(&self, derived: &DerivedSpec, dest: &Path) -> Result<(), DeriveError> {
        let failed = |message: String| DeriveError::Failed {
            dir: derived.dir.clone(),
            message,
        };
        std::fs::create_dir_all(self.root).map_err(|e| failed(e.to_string()))?;
        let scratch = tempfile::Builder::new()
            .prefix(".tmp-")
            .tempdir_in(self.root)
            .map_err(|e| failed(e.to_string()))?;
        for (path, contents) in &derived.files {
            let file = scratch.path().join(path);
            if let Some(parent) = file.parent() {
                std::fs::create_dir_all(parent).map_err(|e| failed(e.to_string()))?;
            }
            std::fs::write(&file, contents).map_err(|e| failed(e.to_string()))?;
        }
        let started = Instant::now();
        let (code, output) = self
            .run(derived, scratch.path())
            .map_err(|e| failed(format!("{e:#}")))?;
        tracing::info!(
            dir = %derived.dir,
            ms = started.elapsed().as_millis() as u64,
            "made derived files"
        );
        if code != 0 {
            return Err(failed(format!(
                "`{}` exited with {code}:\n{}",
                derived.run.join(" "),
                String::from_utf8_lossy(&output).trim_end()
            )));
        }
        let made = scratch.path().join(&derived.dir);
        if !made.is_dir() {
            return Err(failed(format!(
                "`{}` left no directory `{}`",
                derived.run.join(" "),
                derived.dir
            )));
        }
        std::fs::write(made.join(COMPLETE), b"").map_err(|e| failed(e.to_string()))?;
        match std::fs::rename(&made, dest) {
            Ok(()) => Ok(()),
            // Another process made it meanwhile: keep theirs.
            Err(_) if dest.join(COMPLETE).is_file() => Ok(()),
            Err(e) => Err(failed(e.to_string())),
        }
    }

    /// Runs the command in a sandbox on `scratch`; its exit code and output.
    fn run(&self, derived: &DerivedSpec, scratch: &Path) -> anyhow::Result<(i32, Vec<u8>)> {
        let (name, args) = derived
            .run
            .split_first()
            .ok_or_else(|| anyhow::anyhow!("`run` is empty"))?;
        let tool = self
            .tools
            .get(name)
            .ok_or_else(|| anyhow::anyhow!("`{name}` is not a tool of this plugin"))?
            .clone();
        let env = super::tool_loader::parse_env(&derived.env);
        let sandbox = Sandbox::new(SandboxConfig {
            engine: self.engine.clone(),
            programs: Arc::new(ProgramCompiles {
                linker: crate::sandbox::linker::tool_linker(self.engine.programs())?,
                slots: Arc::new(tokio::sync::Semaphore::new(1)),
                compiler_exe: std::env::current_exe()?,
            }),
            tools: self.tools.clone(),
            settings: Arc::default(),
            scratch: scratch.to_path_buf(),
            mounts: Arc::new(self.mounts.to_vec()),
            output_bytes: 1 << 20,
            memory: MemoryBudget::new(DERIVE_MEMORY),
            disk: DiskBudget::new(DERIVE_SCRATCH_BYTES, 100_000),
            resources_per_store: crate::sandbox::store::MAX_RESOURCES_PER_STORE,
            journal: None,
            tool_calls: None,
            net_calls: None,
            empty_tools_dir: None,
            commands: None,
        });
        let args = args.to_vec();
        // Its own thread and runtime: preparation may run inside a caller's runtime.
        let code = std::thread::scope(|s| {
            s.spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(clock::timed(
                        CallClock::new(Instant::now() + DERIVE_TIMEOUT, CancellationToken::new()),
                        crate::sandbox::run_tool(&sandbox, &tool, args, env),
                    ))
            })
            .join()
            .map_err(|_| anyhow::anyhow!("the derived files' thread panicked"))?
        })?;
        let out = sandbox.output.take();
        Ok((code, out.tty()))
    }
}

/// Where derived files live in the cache.
pub fn derived_root(cache_root: &Path) -> PathBuf {
    cache_root.join("derived")
}
