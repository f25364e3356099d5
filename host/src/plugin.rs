//! Loading a plugin: its adapter component, its tools (componentized and precompiled
//! once into the cache) and its read-only mounts, ready to instantiate per run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::Linker;
use wasmtime_wasi::p2::bindings::CommandPre;

use crate::artifact::{ArtifactError, Cache, Progress};
use crate::compiled_cache::CompiledKind;
use crate::componentize::{binary_kind, componentize, transform_fingerprint, BinaryKind};
use crate::engine::{EngineError, SandboxEngine};
use crate::manifest::{AdapterSpec, ArtifactSource, ArtifactSpec, PluginSpec};
use crate::sandbox::bindings::PluginPre;
use crate::sandbox::store::StoreState;
use crate::sandbox::{Mount, Tool};

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("plugin `{plugin}`: {message}")]
    Invalid { plugin: String, message: String },
}

/// A plugin ready to run: everything per-run is cheap from here.
pub struct LoadedPlugin {
    pub spec: PluginSpec,
    pub adapter: PluginPre<StoreState>,
    pub tools: Arc<HashMap<String, Tool>>,
    pub mounts: Arc<Vec<Mount>>,
    pub settings: Arc<Vec<(String, Vec<String>)>>,
}

/// Whether a plugin's pieces are already on disk, for `runbox runtimes`.
#[derive(Debug, Clone, Copy)]
pub struct CacheState {
    pub fetched: bool,
    pub compiled: bool,
}

/// Cache key of a componentized preview1 tool: the artifact's bytes (pinned by sha256)
/// and everything else that decides the component.
fn tool_key(artifact: &ArtifactSpec) -> String {
    format!("tool:{}:{}", artifact.sha256, transform_fingerprint())
}

/// The name a compiled tool is cached under: its artifact's file name, so runtimes that
/// share an artifact (clang and clangpp) share one compiled file.
fn tool_label(artifact: &ArtifactSpec) -> String {
    let file = match artifact.source() {
        ArtifactSource::Npm { file, .. } | ArtifactSource::Pypi { file, .. } => file.to_string(),
        ArtifactSource::Path(p) => p.display().to_string(),
    };
    file.rsplit('/').next().unwrap_or("tool").to_string()
}

fn adapter_key(bytes: &[u8]) -> String {
    format!("adapter:{}", hex::encode(Sha256::digest(bytes)))
}

/// What is cached of `spec` (no fetching, no compiling).
pub fn cache_state(spec: &PluginSpec, cache: &Cache, engine: &SandboxEngine) -> CacheState {
    let mut artifacts = spec.tools.values().map(|t| &t.artifact).collect::<Vec<_>>();
    if let AdapterSpec::Artifact(a) = &spec.adapter {
        artifacts.push(a);
    }
    let fetched = artifacts.iter().all(|a| cache.is_cached(a))
        && spec.mounts.iter().all(|m| cache.is_mount_ready(&m.archive));
    let compiled = spec.tools.values().all(|t| {
        engine.is_compiled(
            CompiledKind::Tool,
            &tool_label(&t.artifact),
            &tool_key(&t.artifact),
        )
    });
    CacheState { fetched, compiled }
}

/// Fetches, compiles (first time only) and prepares one plugin.
pub fn load_plugin(
    spec: &PluginSpec,
    cache: &Cache,
    engine: &SandboxEngine,
    plugin_linker: &Linker<StoreState>,
    tool_linker: &Linker<StoreState>,
    progress: &Progress,
) -> Result<LoadedPlugin, PluginError> {
    let invalid = |message: String| PluginError::Invalid {
        plugin: spec.name.clone(),
        message,
    };

    let adapter_bytes: Vec<u8> = match &spec.adapter {
        AdapterSpec::Builtin(name) => crate::adapters::BUILTIN
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.to_vec())
            .ok_or_else(|| invalid(format!("no built-in adapter `{name}`")))?,
        AdapterSpec::Artifact(a) => {
            let path = cache.fetch(a, progress)?;
            std::fs::read(&path)
                .map_err(|e| invalid(format!("cannot read adapter {}: {e}", path.display())))?
        }
    };
    if binary_kind(&adapter_bytes) != BinaryKind::Component {
        return Err(invalid(
            "the adapter must be a WebAssembly component exporting runbox:plugin/runtime".into(),
        ));
    }
    let key = adapter_key(&adapter_bytes);
    let step = (!engine.is_compiled(CompiledKind::Plugin, &spec.name, &key)).then(|| {
        progress.step(format!(
            "compiling {} plugin component (first run only)…",
            spec.name
        ))
    });
    let component =
        engine.load_or_compile(CompiledKind::Plugin, &spec.name, &key, || Ok(adapter_bytes))?;
    if let Some(step) = step {
        step.done(format!("compiled {} plugin component", spec.name));
    }
    let adapter = plugin_linker
        .instantiate_pre(&component)
        .and_then(PluginPre::new)
        .map_err(|e| invalid(format!("the adapter cannot run in the sandbox: {e:#}")))?;

    let mut tools = HashMap::new();
    for (name, tool) in &spec.tools {
        let path = cache.fetch(&tool.artifact, progress)?;
        let key = tool_key(&tool.artifact);
        let label = tool_label(&tool.artifact);
        let step = (!engine.is_compiled(CompiledKind::Tool, &label, &key)).then(|| {
            progress.step(format!(
                "compiling {} tool `{name}` (first run only)…",
                spec.name
            ))
        });
        let component = engine.load_or_compile(CompiledKind::Tool, &label, &key, || {
            let module = std::fs::read(&path)?;
            Ok(match binary_kind(&module) {
                BinaryKind::CoreModule => componentize(&module)?,
                BinaryKind::Component => module,
                BinaryKind::NotWasm => anyhow::bail!("{} is not WebAssembly", path.display()),
            })
        })?;
        if let Some(step) = step {
            step.done(format!("compiled {} tool `{name}`", spec.name));
        }
        let pre = tool_linker
            .instantiate_pre(&component)
            .and_then(CommandPre::new)
            .map_err(|e| invalid(format!("tool `{name}` cannot run in the sandbox: {e:#}")))?;
        let argv0 = tool.argv0.clone().unwrap_or_else(|| name.clone());
        tools.insert(name.clone(), Tool { argv0, pre });
    }

    let mut mounts = Vec::new();
    for m in &spec.mounts {
        let dir = cache.extract_archive(&m.archive, progress)?;
        let dir = match &m.subdir {
            Some(sub) => dir.join(sub),
            None => dir,
        };
        mounts.extend(mounts_for(&dir, &m.at).map_err(invalid)?);
    }

    Ok(LoadedPlugin {
        settings: Arc::new(spec.plugin_settings()),
        spec: spec.clone(),
        adapter,
        tools: Arc::new(tools),
        mounts: Arc::new(mounts),
    })
}

/// A directory mounted at `at`. At `/` (where the scratch directory lives) each
/// top-level directory is mounted on its own, e.g. `usr/` at `/usr`.
fn mounts_for(dir: &Path, at: &str) -> Result<Vec<Mount>, String> {
    if at != "/" {
        return Ok(vec![Mount {
            host: dir.to_path_buf(),
            guest: at.trim_end_matches('/').to_string(),
        }]);
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let host: PathBuf = entry.path();
        if host.is_dir() {
            out.push(Mount {
                guest: format!("/{}", entry.file_name().to_string_lossy()),
                host,
            });
        } else {
            tracing::warn!(
                "ignoring {}: only directories can be mounted at `/`",
                host.display()
            );
        }
    }
    out.sort_by(|a, b| a.guest.cmp(&b.guest));
    Ok(out)
}
