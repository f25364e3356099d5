//! The host side of `runbox:plugin/process` and `runbox:plugin/config`: a plugin spawns
//! a declared tool, or a program it wrote into scratch, as a child in the same sandbox.

use std::path::{Component as PathComponent, Path, PathBuf};
use std::sync::Arc;

use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::I32Exit;

use super::bindings::runbox::plugin::{config, process};
use super::program::load_program;
use super::store::{new_store, ProgramIo, StoreState};
use super::RunContext;

use process::{Command, SpawnError};

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
        let engine = pre.instance_pre().engine().clone();
        let mut store = new_store(&run, io, &engine)?;
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
    let pre = match load_program(run, &path, program).await? {
        Ok(pre) => pre,
        Err(e) => return Ok(Err(SpawnError::InvalidProgram(e.to_string()))),
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
