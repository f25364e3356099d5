//! How one tool of a plugin is loaded: fetched, componentized (a reactor with its start-up,
//! a snapshot taken once), compiled into the cache, and linked.

use std::sync::Arc;

use wasmtime::component::Linker;
use wasmtime_wasi::p2::bindings::CommandPre;

use crate::componentize::snapshot::{take_snapshot, Preopen, SnapshotPlan};
use crate::componentize::{
    binary_kind, componentize_tool, transform_fingerprint, BinaryKind, ToolRecipe,
};
use crate::engine::compiled_cache::CompiledKind;
use crate::engine::SandboxEngine;
use crate::manifest::{ArtifactSource, ArtifactSpec, MountSpec, PluginSpec, ToolSpec};
use crate::plugin::artifact::{Cache, Progress};
use crate::sandbox::turn_doors::TurnDoors;
use crate::sandbox::StoreState;
use crate::sandbox::{Mount, Tool, ToolLead};
use crate::state::StateAccess;

use super::error::PluginError;

/// Cache key of a componentized preview1 tool: the artifact's bytes (pinned by sha256)
/// and everything else that decides the component (how it is started, its stubs, a
/// snapshot's program and the mounts it saw).
pub(super) fn tool_key(tool: &ToolSpec, mounts: &[MountSpec]) -> String {
    let mut key = format!("tool:{}:{}", tool.artifact.sha256, transform_fingerprint());
    if !ToolRecipe::for_tool(tool).is_plain() {
        key.push_str(&format!(":{:?}:{:?}", tool.reactor, tool.stub_imports));
    }
    if tool.reactor.as_ref().is_some_and(|r| r.snapshot.is_some()) {
        for m in mounts {
            key.push_str(&format!(":{}@{}", m.artifact().sha256, m.at));
        }
        // The snapshot saw `/tools` and `/net` after the mounts (see `snapshot_on_own_thread`).
        key.push_str(&format!(
            ":@{}:@{}",
            crate::sandbox::store::TOOLS_MOUNT,
            crate::net::NET_MOUNT
        ));
    }
    key
}

/// The name a compiled tool is cached under: its artifact's file name, so runtimes that
/// share an artifact (clang and clangpp) share one compiled file.
pub(super) fn tool_label(artifact: &ArtifactSpec) -> String {
    let file = match artifact.source() {
        ArtifactSource::Npm { file, .. } | ArtifactSource::Pypi { file, .. } => file.to_string(),
        ArtifactSource::Path(p) => p.display().to_string(),
    };
    file.rsplit('/').next().unwrap_or("tool").to_string()
}

pub(super) fn has_snapshot(tool: &ToolSpec) -> bool {
    tool.reactor.as_ref().is_some_and(|r| r.snapshot.is_some())
}

/// What loading a plugin's tools needs.
pub(super) struct ToolLoader<'a> {
    pub(super) spec: &'a PluginSpec,
    pub(super) cache: &'a Cache,
    pub(super) engine: &'a SandboxEngine,
    pub(super) tool_linker: &'a Linker<StoreState>,
    pub(super) progress: &'a Progress,
    pub(super) mounts: &'a [Mount],
    pub(super) snapshot_compiler: Option<wasmtime::Engine>,
}

impl ToolLoader<'_> {
    pub(super) fn invalid(&self, message: String) -> PluginError {
        PluginError::Invalid {
            plugin: self.spec.name.clone(),
            message,
        }
    }

    /// Whether a tool's snapshot is not in the compiled cache yet.
    pub(super) fn snapshots_to_take(&self) -> bool {
        self.spec.tools.values().any(|t| self.is_fresh_snapshot(t))
    }

    /// Whether `tool` is taken as a snapshot not in the compiled cache yet.
    pub(super) fn is_fresh_snapshot(&self, tool: &ToolSpec) -> bool {
        has_snapshot(tool)
            && !self.engine.is_compiled(
                CompiledKind::Tool,
                &tool_label(&tool.artifact),
                &tool_key(tool, &self.spec.mounts),
            )
    }

    /// A command ready to instantiate.
    pub(super) fn linked(
        &self,
        name: &str,
        component: &wasmtime::component::Component,
    ) -> Result<CommandPre<StoreState>, PluginError> {
        self.tool_linker
            .instantiate_pre(component)
            .and_then(CommandPre::new)
            .map_err(|e| self.invalid(format!("tool `{name}` cannot run in the sandbox: {e:#}")))
    }

    /// Tool `name`: fetched, componentized (its snapshot taken) and compiled, or loaded
    /// from the compiled cache.
    pub(super) fn load(&self, name: &str, tool: &ToolSpec) -> Result<Tool, PluginError> {
        let (spec, engine, progress) = (self.spec, self.engine, self.progress);
        let path = self.cache.fetch(&tool.artifact, progress)?;
        let key = tool_key(tool, &spec.mounts);
        let label = tool_label(&tool.artifact);
        let argv0 = tool.argv0.clone().unwrap_or_else(|| name.to_string());
        let recipe = ToolRecipe::for_tool(tool);
        let snapshot = tool.reactor.as_ref().and_then(|r| r.snapshot.as_ref());
        let fresh = !engine.is_compiled(CompiledKind::Tool, &label, &key);
        let step = fresh.then(|| {
            let what = if snapshot.is_some() {
                "taking a snapshot of its start-up and compiling"
            } else {
                "compiling"
            };
            progress.step(format!(
                "{what} {} tool `{name}` (first run only)…",
                spec.name
            ))
        });
        let compiler = match (snapshot, &self.snapshot_compiler) {
            (Some(_), Some(shared)) => shared,
            _ => engine.engine(),
        };
        let component =
            engine.load_or_compile_with(CompiledKind::Tool, &label, &key, compiler, || {
                let module = std::fs::read(&path)?;
                Ok(match binary_kind(&module) {
                    BinaryKind::CoreModule => {
                        let module = match (snapshot, &recipe.reactor) {
                            (Some(snap), Some(start)) => {
                                let program = snap.text();
                                let plan = SnapshotPlan {
                                    start,
                                    program: &program,
                                    argv0: &argv0,
                                    env: parse_env(&snap.env),
                                    preopens: Vec::new(),
                                    stubs: &recipe.stubs,
                                };
                                snapshot_on_own_thread(&module, plan, self.mounts, compiler)?
                            }
                            _ => module,
                        };
                        componentize_tool(&module, &recipe)?
                    }
                    BinaryKind::Component => module,
                    BinaryKind::NotWasm => anyhow::bail!("{} is not WebAssembly", path.display()),
                })
            })?;
        if let Some(step) = step {
            step.done(format!("compiled {} tool `{name}`", spec.name));
        }
        Ok(Tool {
            argv0,
            pre: self.linked(name, &component)?,
            lead: ToolLead::default(),
            turns: turn_doors(tool, &component),
        })
    }
}

/// How `tool` runs in turns as a session's resident, when it is a reactor with a
/// `resume` program (its component then exports `turn`).
pub(super) fn turn_doors(
    tool: &ToolSpec,
    component: &wasmtime::component::Component,
) -> Option<Arc<TurnDoors>> {
    let reactor = tool.reactor.as_ref()?;
    let resume = reactor.resume.clone()?;
    let turn = component.get_export_index(None, "turn")?;
    Some(Arc::new(TurnDoors {
        turn,
        resume,
        after_fork: reactor.after_fork.clone(),
        state: StateAccess::of(component).map(Arc::new),
    }))
}

/// `KEY=VALUE` items as pairs (a snapshot's and a derived directory's `env`); an item
/// without `=` is left out.
pub fn parse_env(items: &[String]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|e| e.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Takes a snapshot on a thread of its own (its WASI runs a small tokio runtime, which
/// must not nest in a caller's). It sees a fresh scratch directory at `/` and `mounts`,
/// as a run does.
pub(super) fn snapshot_on_own_thread(
    module: &[u8],
    mut plan: SnapshotPlan<'_>,
    mounts: &[Mount],
    engine: &wasmtime::Engine,
) -> anyhow::Result<Vec<u8>> {
    let scratch = tempfile::tempdir()?;
    plan.preopens.push(Preopen {
        host: scratch.path().to_path_buf(),
        guest: "/".into(),
        writable: true,
    });
    plan.preopens.extend(mounts.iter().map(|m| Preopen {
        host: m.host.clone(),
        guest: m.guest.clone(),
        writable: false,
    }));
    // Every run has `/tools` after the mounts (empty without upstream tools): the
    // snapshot's libc keeps the list of preopens it saw, so it must see that one too.
    let tools = tempfile::tempdir()?;
    plan.preopens.push(Preopen {
        host: tools.path().to_path_buf(),
        guest: crate::sandbox::store::TOOLS_MOUNT.into(),
        writable: false,
    });
    // And `/net` after it (empty without a network policy).
    plan.preopens.push(Preopen {
        host: tools.path().to_path_buf(),
        guest: crate::net::NET_MOUNT.into(),
        writable: false,
    });
    // Its compile is waited for as the preparation that asked for it is.
    let waited = crate::engine::compile_pool::current();
    std::thread::scope(|s| {
        s.spawn(|| match waited {
            Some(waited) => crate::engine::compile_pool::with_waited(waited, || {
                take_snapshot(module, &plan, engine)
            }),
            None => take_snapshot(module, &plan, engine),
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the snapshot thread panicked"))?
        .map_err(anyhow::Error::from)
    })
}
