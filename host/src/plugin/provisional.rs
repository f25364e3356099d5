//! A runtime served before its snapshot is taken.
//!
//! Taking python's snapshot compiles CPython (99 MB of WebAssembly) to run its start-up,
//! then compiles the snapshot: about two minutes on two cores (bench/RESULTS.md, "First
//! start on an empty cache"). A call waiting for it meanwhile is served by the module as
//! it is, started up at each run: its `_start` runs the snapshot program's parts, then the
//! call's ([`ReactorStart::programs`](crate::componentize::ReactorStart)), in the
//! snapshot's environment (ahead of the caller's, so its values win). Each run pays the
//! start-up (4 s for python, within the call's time limit) and writes what the start-up
//! writes (matplotlib's font cache under `/.runbox/`, an own file); a program sees the
//! same modules and settings. Random draws differ from the snapshot's, so a durable
//! session begun on the stand-in resumes on the snapshot with the notice that it could
//! not be rebuilt exactly (the identity is the runtime's, not refused as another one's).
//! Built when calls may come while the runtime is prepared (`runbox mcp`), whether or not
//! one waits yet: a call that comes later then waits for this compile, not the snapshot's
//! two. The compile is quick (`engine::quick_compiler`: no optimisations, about twice as
//! fast to compile, its code slower) and kept in memory only.

use super::error::PluginError;
use super::tool_loader::{parse_env, ToolLoader};
use crate::componentize::{componentize_tool, ToolRecipe};
use crate::manifest::ToolSpec;
use crate::sandbox::{Tool, ToolLead};

/// Tool `name` (a reactor with a snapshot) as it runs before its snapshot is taken.
pub(super) fn tool(
    loader: &ToolLoader<'_>,
    name: &str,
    spec: &ToolSpec,
) -> Result<Tool, PluginError> {
    let snapshot = spec
        .reactor
        .as_ref()
        .and_then(|r| r.snapshot.as_ref())
        .ok_or_else(|| loader.invalid(format!("tool `{name}` has no snapshot to stand in for")))?;
    let path = loader.cache.fetch(&spec.artifact, loader.progress)?;
    let mut recipe = ToolRecipe::for_tool(spec);
    // The snapshot program's parts, then the call's.
    let parts = snapshot.program.len() as u32;
    if let Some(start) = recipe.reactor.as_mut() {
        start.programs = parts + 1;
    }
    let step = loader.progress.step(format!(
        "compiling {} tool `{name}` to answer calls while its snapshot is taken…",
        loader.spec.name
    ));
    let module = std::fs::read(&path)
        .map_err(|e| loader.invalid(format!("cannot read {}: {e}", path.display())))?;
    let component = componentize_tool(&module, &recipe)
        .map_err(|e| loader.invalid(format!("tool `{name}`: {e}")))?;
    let compiler = crate::engine::quick_compiler()?;
    let component = loader
        .engine
        .compile_uncached(name, &compiler, &component)?;
    step.done(format!(
        "{} tool `{name}` answers calls, starting up at each run, until its snapshot is ready",
        loader.spec.name
    ));
    Ok(Tool {
        argv0: spec.argv0.clone().unwrap_or_else(|| name.to_string()),
        pre: loader.linked(name, &component)?,
        lead: ToolLead {
            args: snapshot.program.clone(),
            env: parse_env(&snapshot.env),
        },
        turns: super::tool_loader::turn_doors(spec, &component),
    })
}
