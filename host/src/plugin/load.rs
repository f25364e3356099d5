//! A plugin loaded: its adapter and tools compiled and linked, its mounts, derived files
//! and packages in place ([`load_plugin_telling`]); and what is already cached of it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::{InstancePre, Linker};

use crate::componentize::state_access::add_state_access;
use crate::componentize::{binary_kind, transform_fingerprint, BinaryKind};
use crate::engine::compiled_cache::CompiledKind;
use crate::engine::SandboxEngine;
use crate::manifest::{AdapterSpec, MountSpec, PluginSpec};
use crate::plugin::artifact::{ArtifactError, Cache, Progress};
use crate::sandbox::StoreState;
use crate::sandbox::{Mount, Tool};
use crate::state::StateAccess;
use crate::wit::exports::runbox::plugin::{command, runtime, session};

use super::error::PluginError;
use super::provisional;
use super::tool_loader::{has_snapshot, tool_key, tool_label, ToolLoader};

/// A plugin ready to run: everything per-run is cheap from here.
pub struct LoadedPlugin {
    pub spec: PluginSpec,
    /// The plugin's component (a built-in adapter or a third party's), linked.
    pub component: InstancePre<StoreState>,
    /// Where its `runtime` export is.
    pub runtime_exports: runtime::GuestIndices,
    /// Where its `session` export is, when it has one.
    pub session_exports: Option<session::GuestIndices>,
    /// Where its `command` export is, when it can be run as a command.
    pub command_exports: Option<command::GuestIndices>,
    pub tools: Arc<HashMap<String, Tool>>,
    pub mounts: Arc<Vec<Mount>>,
    pub settings: Arc<Vec<(String, Vec<String>)>>,
    /// What the plugin is made of (its component, tools, mounts and settings), as a
    /// digest: a stored session is rebuilt only on the very same plugin.
    pub identity: String,
    /// Served before its snapshots are taken: each run starts its interpreter up first
    /// (see [`provisional`]); the same runtime otherwise.
    pub provisional: bool,
    /// The doors into its component's state (`componentize/state_access.rs`): how a
    /// session's interpreter is taken out of one instance and into another.
    pub state: Option<Arc<StateAccess>>,
}

/// Whether a plugin's pieces are already on disk, for `runbox runtimes`.
#[derive(Debug, Clone, Copy)]
pub struct CacheState {
    pub fetched: bool,
    pub compiled: bool,
}

/// Cache key of a plugin component: its bytes.
pub(super) fn component_key(bytes: &[u8]) -> String {
    format!("plugin-component:{}", hex::encode(Sha256::digest(bytes)))
}

/// What is cached of `spec` (no fetching, no compiling).
pub fn cache_state(spec: &PluginSpec, cache: &Cache, engine: &SandboxEngine) -> CacheState {
    let mut artifacts = spec.tools.values().map(|t| &t.artifact).collect::<Vec<_>>();
    if let AdapterSpec::Artifact(a) = &spec.adapter {
        artifacts.push(a);
    }
    let fetched = artifacts.iter().all(|a| cache.is_cached(a))
        && spec
            .mounts
            .iter()
            .all(|m| cache.is_mount_ready(m.artifact()));
    let compiled = spec.tools.values().all(|t| {
        engine.is_compiled(
            CompiledKind::Tool,
            &tool_label(&t.artifact),
            &tool_key(t, &spec.mounts),
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
    let linkers = (plugin_linker, tool_linker);
    load_plugin_telling(spec, cache, engine, linkers, progress, &Hooks::none())
}

/// What a runtime's preparation tells its caller on the way (see `preparation.rs`).
pub struct Hooks<'a> {
    /// Its adapter component is in the compiled cache: another runtime with the same
    /// adapter can load it from there now.
    pub adapter_compiled: &'a dyn Fn(),
    /// Whether a runtime whose snapshot is still to be taken is served by a stand-in
    /// first ([`provisional`]): when calls may come while it is prepared.
    pub serve_early: bool,
    /// Given the runtime served before its snapshots are taken.
    pub provisional: &'a dyn Fn(LoadedPlugin),
}

impl Hooks<'static> {
    /// Nobody waits and nothing is told.
    pub fn none() -> Self {
        Hooks {
            adapter_compiled: &|| {},
            serve_early: false,
            provisional: &|_| {},
        }
    }
}

/// The adapter component, linked, and where its exports are.
#[derive(Clone)]
struct LinkedAdapter {
    component: InstancePre<StoreState>,
    runtime_exports: runtime::GuestIndices,
    session_exports: Option<session::GuestIndices>,
    command_exports: Option<command::GuestIndices>,
    state: Option<Arc<StateAccess>>,
}

/// [`load_plugin`], telling `hooks` how it goes.
pub fn load_plugin_telling(
    spec: &PluginSpec,
    cache: &Cache,
    engine: &SandboxEngine,
    (plugin_linker, tool_linker): (&Linker<StoreState>, &Linker<StoreState>),
    progress: &Progress,
    hooks: &Hooks<'_>,
) -> Result<LoadedPlugin, PluginError> {
    let invalid = |message: String| PluginError::Invalid {
        plugin: spec.name.clone(),
        message,
    };

    let component_bytes: Vec<u8> = match &spec.adapter {
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
    if binary_kind(&component_bytes) != BinaryKind::Component {
        return Err(invalid(
            "the adapter must be a WebAssembly component exporting runbox:plugin/runtime".into(),
        ));
    }
    // With doors into its state, its sessions can be copied and stored as state; a
    // component they cannot be added to keeps its sessions as records of their calls.
    let component_bytes = match add_state_access(&component_bytes) {
        Ok(with_doors) => with_doors,
        Err(e) => {
            tracing::info!(plugin = %spec.name, "sessions are replayed, not snapshotted: {e}");
            component_bytes
        }
    };
    let key = component_key(&component_bytes);
    let mut identity = Sha256::new();
    identity.update(key.as_bytes());
    identity.update(transform_fingerprint().as_bytes());
    identity.update(
        format!(
            "{:?}{:?}{:?}{:?}{:?}{:?}",
            spec.tools, spec.mounts, spec.derived, spec.settings, spec.packages_dir, spec.packages
        )
        .as_bytes(),
    );
    let identity = hex::encode(identity.finalize());
    let step = (!engine.is_compiled(CompiledKind::Plugin, &spec.name, &key)).then(|| {
        progress.step(format!(
            "compiling {} plugin component (first run only)…",
            spec.name
        ))
    });
    let component = engine.load_or_compile(CompiledKind::Plugin, &spec.name, &key, || {
        Ok(component_bytes)
    })?;
    (hooks.adapter_compiled)();
    let state = StateAccess::of(&component).map(Arc::new);
    if let Some(step) = step {
        step.done(format!("compiled {} plugin component", spec.name));
    }
    let linked = plugin_linker
        .instantiate_pre(&component)
        .map_err(|e| invalid(format!("the adapter cannot run in the sandbox: {e:#}")))?;
    let runtime_exports = runtime::GuestIndices::new(&linked).map_err(|e| {
        invalid(format!(
            "the adapter does not export runbox:plugin/runtime@0.2.0 as the WIT says: {e:#}"
        ))
    })?;
    // Optional: without it, each call of a session runs in a fresh instance.
    let session_exports = session::GuestIndices::new(&linked).ok();
    let command_exports = command::GuestIndices::new(&linked).ok();
    if !spec.commands.is_empty() && command_exports.is_none() {
        return Err(invalid(format!(
            "it names commands ({}), but its adapter does not export runbox:plugin/command",
            spec.commands.join(", ")
        )));
    }
    let adapter = LinkedAdapter {
        component: linked,
        runtime_exports,
        session_exports,
        command_exports,
        state,
    };

    // Mounts first: a tool's snapshot is taken with them in place.
    let mut mounts = Vec::new();
    for m in &spec.mounts {
        mounts.extend(prepare_mount(m, cache, progress).map_err(|e| match e {
            MountError::Artifact(e) => PluginError::Artifact(e),
            MountError::Invalid(m) => invalid(m),
        })?);
    }

    let tools = ToolLoader {
        spec,
        cache,
        engine,
        tool_linker,
        progress,
        mounts: &mounts,
        // A snapshot's start-up and the snapshot are compiled by one engine, which
        // compiles their shared functions once.
        snapshot_compiler: match spec.tools.values().any(has_snapshot) {
            true => Some(crate::engine::snapshot_compiler()?),
            false => None,
        },
    };
    let assemble = |tools: HashMap<String, Tool>, provisional: bool| {
        assemble(
            spec,
            cache,
            engine,
            progress,
            (&adapter, &identity),
            tools,
            &mounts,
            provisional,
        )
    };
    // The stand-in is an extra: if it cannot be made, the runtime is prepared as ever.
    // (Not for a runtime with derived files: they would be made with the stand-in.)
    if spec.derived.is_empty() && hooks.serve_early && tools.snapshots_to_take() {
        let stand_in = || -> Result<LoadedPlugin, PluginError> {
            let mut served = HashMap::new();
            for (name, tool) in &spec.tools {
                let tool = match tools.is_fresh_snapshot(tool) {
                    true => provisional::tool(&tools, name, tool)?,
                    false => tools.load(name, tool)?,
                };
                served.insert(name.clone(), tool);
            }
            assemble(served, true)
        };
        match stand_in() {
            Ok(plugin) => (hooks.provisional)(plugin),
            Err(e) => tracing::warn!(
                "runtime `{}` waits for its snapshot: no stand-in: {e}",
                spec.name
            ),
        }
    }
    let mut loaded = HashMap::new();
    for (name, tool) in &spec.tools {
        loaded.insert(name.clone(), tools.load(name, tool)?);
    }
    assemble(loaded, false)
}

/// The plugin from its adapter and `tools`, with the files derived with them and its
/// packages beside `mounts`.
#[allow(clippy::too_many_arguments)]
fn assemble(
    spec: &PluginSpec,
    cache: &Cache,
    engine: &SandboxEngine,
    progress: &Progress,
    (adapter, identity): (&LinkedAdapter, &str),
    tools: HashMap<String, Tool>,
    mounts: &[Mount],
    provisional: bool,
) -> Result<LoadedPlugin, PluginError> {
    let invalid = |message: String| PluginError::Invalid {
        plugin: spec.name.clone(),
        message,
    };
    let mut mounts = mounts.to_vec();
    // Derived files last: they are made with the tools, beside the mounts.
    let tools = Arc::new(tools);
    let deriver = crate::plugin::derived::Deriver {
        root: &crate::plugin::derived::derived_root(cache.root()),
        engine,
        tools: &tools,
        mounts: &mounts,
    };
    let mut derived = Vec::new();
    for d in &spec.derived {
        let step = (!deriver.is_ready(spec, d)).then(|| {
            progress.step(format!(
                "making {} files `{}` with its tools (first run only)…",
                spec.name, d.dir
            ))
        });
        let mount = deriver.mount(spec, d).map_err(|e| invalid(e.to_string()))?;
        if let Some(step) = step {
            step.done(format!("made {} files `{}`", spec.name, d.dir));
        }
        derived.push(mount);
    }
    mounts.extend(derived);
    if let (Some(dir), false) = (&spec.packages_dir, spec.packages.is_empty()) {
        crate::plugin::packages::mount_packages(&spec.packages, dir, &mut mounts, cache, progress)
            .map_err(|e| match e {
                crate::plugin::packages::PackagesError::Artifact(e) => PluginError::Artifact(e),
                other => invalid(other.to_string()),
            })?;
    }

    let adapter = adapter.clone();
    Ok(LoadedPlugin {
        settings: Arc::new(spec.plugin_settings()),
        spec: spec.clone(),
        component: adapter.component,
        runtime_exports: adapter.runtime_exports,
        session_exports: adapter.session_exports,
        command_exports: adapter.command_exports,
        tools,
        mounts: Arc::new(mounts),
        identity: identity.to_string(),
        provisional,
        state: adapter.state,
    })
}

#[derive(Debug)]
enum MountError {
    Artifact(ArtifactError),
    Invalid(String),
}

/// The directories one mount shows: an unpacked archive, or a directory holding one file.
fn prepare_mount(
    m: &MountSpec,
    cache: &Cache,
    progress: &Progress,
) -> Result<Vec<Mount>, MountError> {
    if let Some(file) = &m.file {
        let at = m.at.trim_end_matches('/');
        let (parent, name) = at.rsplit_once('/').unwrap_or(("", at));
        let dir = cache
            .file_mount_dir(file, name, progress)
            .map_err(MountError::Artifact)?;
        return Ok(vec![Mount {
            host: dir,
            guest: if parent.is_empty() {
                "/".into()
            } else {
                parent.to_string()
            },
        }]);
    }
    let archive = m.artifact();
    let dir = cache
        .extract_archive(archive, progress)
        .map_err(MountError::Artifact)?;
    let dir = match &m.subdir {
        Some(sub) => dir.join(sub),
        None => dir,
    };
    mounts_for(&dir, &m.at).map_err(MountError::Invalid)
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
