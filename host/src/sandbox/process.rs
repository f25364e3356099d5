//! The host side of `runbox:plugin/process` and `runbox:plugin/config`: a plugin spawns
//! a declared tool, or a program it wrote into scratch, as a child in the same sandbox.

use std::path::{Component as PathComponent, Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::I32Exit;

use super::bindings::runbox::plugin::{config, process};
use super::store::{new_store, ProgramIo, StoreState};
use super::RunContext;
use crate::componentize::{binary_kind, componentize, BinaryKind, COMPONENTIZE_VERSION};

use process::{Command, SpawnError};

/// Programs a plugin writes into scratch larger than this are refused.
const MAX_PROGRAM_BYTES: u64 = 256 << 20;
/// Compiled programs kept in the cache (the newest; each is up to a few MB).
const CACHED_PROGRAMS: usize = 128;

impl config::Host for StoreState {
    fn settings(&mut self) -> wasmtime::Result<Vec<(String, Vec<String>)>> {
        Ok(self.run.settings.as_ref().clone())
    }
}

impl process::Host for StoreState {
    async fn spawn(&mut self, command: Command) -> wasmtime::Result<Result<i32, SpawnError>> {
        let run = self.run.clone();
        let (argv0, pre) = match resolve_program(&run, &command.program).await? {
            Ok(found) => found,
            Err(e) => return Ok(Err(e)),
        };
        let mut argv = vec![argv0];
        argv.extend(command.args);
        let io = ProgramIo {
            argv,
            env: command.env,
            stdin: command.stdin,
        };
        tracing::debug!(program = %command.program, "spawn");
        let mut store = new_store(&run, io)?;
        let outcome = async {
            let instance = pre.instantiate_async(&mut store).await?;
            instance.wasi_cli_run().call_run(&mut store).await
        }
        .await;
        match outcome {
            Ok(Ok(())) => Ok(Ok(0)),
            Ok(Err(())) => Ok(Ok(1)),
            Err(e) => match e.downcast_ref::<I32Exit>() {
                Some(I32Exit(code)) => Ok(Ok(*code)),
                // A trap or a broken limit in the child ends the whole run.
                None => Err(e),
            },
        }
    }
}

/// Finds the program a plugin asked for: a declared tool, or a file in scratch.
async fn resolve_program(
    run: &Arc<RunContext>,
    program: &str,
) -> wasmtime::Result<Result<(String, CommandPre<StoreState>), SpawnError>> {
    if let Some(tool) = run.tools.get(program) {
        return Ok(Ok((tool.argv0.clone(), tool.pre.clone())));
    }
    if !program.starts_with('/') {
        let mut known: Vec<_> = run.tools.keys().cloned().collect();
        known.sort();
        return Ok(Err(SpawnError::NotFound(format!(
            "no tool `{program}` is declared for this plugin (declared: {}); \
             a program in scratch is named by its absolute path, e.g. `/main.wasm`",
            known.join(", ")
        ))));
    }
    let path = match scratch_file(&run.scratch, program) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            return Ok(Err(SpawnError::NotFound(format!(
                "cannot read `{program}`: {e}"
            ))))
        }
    };
    let key = format!(
        "program:{}:{COMPONENTIZE_VERSION}",
        hex::encode(Sha256::digest(&bytes))
    );
    let engine = run.engine.clone();
    let compiled = tokio::task::spawn_blocking(move || {
        let new = !engine.is_compiled("program", &key);
        let compiled = engine.load_or_compile("program", &key, move || match binary_kind(&bytes) {
            BinaryKind::CoreModule => Ok(componentize(&bytes)?),
            BinaryKind::Component => Ok(bytes),
            BinaryKind::NotWasm => anyhow::bail!("not a WebAssembly module or component"),
        });
        if new {
            engine.prune_compiled("program", CACHED_PROGRAMS);
        }
        compiled
    })
    .await?;
    let component: Component = match compiled {
        Ok(c) => c,
        Err(e) => return Ok(Err(SpawnError::InvalidProgram(format!("`{program}`: {e}")))),
    };
    let pre = match run
        .linker
        .instantiate_pre(&component)
        .and_then(CommandPre::new)
    {
        Ok(p) => p,
        Err(e) => {
            return Ok(Err(SpawnError::InvalidProgram(format!(
                "`{program}` cannot run in the sandbox: {e:#}"
            ))))
        }
    };
    let argv0 = program.rsplit('/').next().unwrap_or(program).to_string();
    Ok(Ok((argv0, pre)))
}

/// Maps a guest path like `/out/main.wasm` to the host file in scratch, refusing
/// anything that leaves it (`..`, symlinks pointing out).
fn scratch_file(scratch: &Path, guest: &str) -> Result<PathBuf, SpawnError> {
    let rel = Path::new(guest.trim_start_matches('/'));
    if rel
        .components()
        .any(|c| !matches!(c, PathComponent::Normal(_)))
    {
        return Err(SpawnError::NotFound(format!(
            "`{guest}` is not a plain path inside the scratch directory"
        )));
    }
    let outside = || SpawnError::NotFound(format!("`{guest}` is not inside the scratch directory"));
    let root = scratch.canonicalize().map_err(|_| outside())?;
    let real = root
        .join(rel)
        .canonicalize()
        .map_err(|e| SpawnError::NotFound(format!("cannot open `{guest}`: {e}")))?;
    if !real.starts_with(&root) || !real.is_file() {
        return Err(outside());
    }
    let len = real.metadata().map(|m| m.len()).unwrap_or(u64::MAX);
    if len > MAX_PROGRAM_BYTES {
        return Err(SpawnError::InvalidProgram(format!(
            "`{guest}` is larger than {} MiB",
            MAX_PROGRAM_BYTES >> 20
        )));
    }
    Ok(real)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_paths_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.wasm"), b"x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("evil")).unwrap();
        assert!(scratch_file(dir.path(), "/a.wasm").is_ok());
        assert!(scratch_file(dir.path(), "/../etc/passwd").is_err());
        assert!(scratch_file(dir.path(), "/evil").is_err());
        assert!(scratch_file(dir.path(), "/missing").is_err());
    }
}
