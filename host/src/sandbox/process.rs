//! The host side of `runbox:plugin/process` and `runbox:plugin/config`: a plugin spawns
//! a declared tool, or a program it wrote into scratch, as a child in the same sandbox,
//! either to completion (`spawn`) or kept alive between calls (`resident`).

use std::path::{Component as PathComponent, Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime::Store;
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::I32Exit;

use super::program::load_program;
use super::sandbox::StoreState;
use super::sandbox::{Sandbox, ToolLead};
use super::store::{new_store, ProgramIo, Stdin};
use super::turns::ToolAtRest;
use crate::wit::resident::{Resident, ResidentInput};
use crate::wit::runbox::plugin::{config, process};

use process::{Command, SpawnError};

impl config::Host for StoreState {
    fn settings(&mut self) -> wasmtime::Result<Vec<(String, Vec<String>)>> {
        Ok(self.sandbox.settings.as_ref().clone())
    }
}

impl process::Host for StoreState {
    async fn spawn(&mut self, command: Command) -> wasmtime::Result<Result<i32, SpawnError>> {
        let stdin = Stdin::Bytes(command.stdin.clone());
        let (mut store, pre) = match child(&self.sandbox, command, stdin).await? {
            Ok(child) => child,
            Err(e) => return Ok(Err(e)),
        };
        run_to_end(&mut store, &pre).await.map(Ok)
    }

    async fn spawn_build(&mut self, command: Command) -> wasmtime::Result<Result<i32, SpawnError>> {
        let _step = super::clock::current().map(|clock| clock.build_step());
        self.spawn(command).await
    }
}

impl process::HostResident for StoreState {
    async fn start(
        &mut self,
        command: Command,
    ) -> wasmtime::Result<Result<Resource<Resident>, SpawnError>> {
        let input = ResidentInput::default();
        let tool = self.sandbox.tools.get(&command.program);
        let turns = tool.and_then(|t| t.turns.clone());
        // In turns, the texts it is started with run one turn each.
        let start: Vec<String> = tool
            .map(|t| t.lead.args.clone())
            .unwrap_or_default()
            .into_iter()
            .chain(command.args.iter().cloned())
            .collect();
        let (mut store, pre) =
            match child(&self.sandbox, command, Stdin::Resident(input.clone())).await? {
                Ok(child) => child,
                Err(e) => return Ok(Err(e)),
            };
        let resident = match turns {
            Some(doors) => {
                let instance = pre.instance_pre().instantiate_async(&mut store).await?;
                // A reactor served before its snapshot (a stand-in: it has a lead) is not
                // started yet, and `turn`'s text is handed over in memory its allocator
                // gives before `turn` runs, which it cannot do unstarted (wasmtime traps:
                // "cannot leave component instance"). Its `_start` starts it and runs the
                // lead and the next text; the rest run as turns.
                let lead = tool.map_or(0, |t| t.lead.args.len());
                let start = if lead > 0 {
                    let command = wasmtime_wasi::p2::bindings::Command::new(&mut store, &instance)?;
                    let code = exit_code(command.wasi_cli_run().call_run(&mut store).await)?;
                    if code != 0 {
                        return Err(wasmtime::format_err!(
                            "the interpreter exited with {code} as it started"
                        ));
                    }
                    start.into_iter().skip(lead + 1).collect()
                } else {
                    start
                };
                let resume = doors.resume.clone();
                let instance = Box::new(ToolAtRest::new(store, instance, doors));
                let mut resident = Resident::in_turns(input, instance, start, resume).await?;
                if let Some(tool) = at_rest_tool(&mut resident) {
                    tool.record_startup().await;
                }
                resident
            }
            None => {
                let program = Box::pin(async move { run_to_end(&mut store, &pre).await });
                let mut resident = Resident::new(input, program);
                resident.run_until_waiting().await?;
                resident
            }
        };
        Ok(Ok(self.table.push(resident)?))
    }

    async fn feed(
        &mut self,
        resident: Resource<Resident>,
        input: Vec<u8>,
        end_of_input: bool,
    ) -> wasmtime::Result<Option<i32>> {
        self.table
            .get_mut(&resident)?
            .feed(&input, end_of_input)
            .await
    }

    fn drop(&mut self, resident: Resource<Resident>) -> wasmtime::Result<()> {
        self.table.delete(resident)?;
        Ok(())
    }
}

/// The tool instance of `resident`, when it runs in turns and is at rest.
pub fn at_rest_tool(resident: &mut Resident) -> Option<&mut ToolAtRest> {
    resident
        .at_rest()?
        .as_any_mut()
        .downcast_mut::<ToolAtRest>()
}

/// A child program's store, ready to instantiate; `Ok(Err(_))` when it cannot be found.
pub(super) async fn child(
    sandbox: &Arc<Sandbox>,
    command: Command,
    stdin: Stdin,
) -> wasmtime::Result<Result<(Store<StoreState>, CommandPre<StoreState>), SpawnError>> {
    let (argv0, pre, lead) = match resolve_program(sandbox, &command.program).await? {
        Ok(found) => found,
        Err(e) => return Ok(Err(e)),
    };
    let (argv, env) = lead.apply(&argv0, command.args, command.env);
    let io = ProgramIo { argv, env, stdin };
    tracing::debug!(program = %command.program, "spawn");
    let engine = pre.instance_pre().engine().clone();
    let store = new_store(sandbox, io, &engine)?;
    Ok(Ok((store, pre)))
}

/// Runs a declared tool to its end in `sandbox`, outside any plugin (derived files):
/// its exit code.
pub async fn run_tool(
    sandbox: &Arc<Sandbox>,
    tool: &super::sandbox::Tool,
    args: Vec<String>,
    env: Vec<(String, String)>,
) -> anyhow::Result<i32> {
    let (argv, env) = tool.lead.apply(&tool.argv0, args, env);
    let io = ProgramIo {
        argv,
        env,
        stdin: Stdin::Empty,
    };
    let engine = tool.pre.instance_pre().engine().clone();
    let mut store = new_store(sandbox, io, &engine).map_err(|e| anyhow::anyhow!("{e:#}"))?;
    run_to_end(&mut store, &tool.pre)
        .await
        .map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// Runs a child to its end: its exit code, or the trap (or broken limit) that ends the
/// whole call.
pub(super) async fn run_to_end(
    store: &mut Store<StoreState>,
    pre: &CommandPre<StoreState>,
) -> wasmtime::Result<i32> {
    let outcome = async {
        let instance = pre.instantiate_async(&mut *store).await?;
        instance.wasi_cli_run().call_run(&mut *store).await
    }
    .await;
    exit_code(outcome)
}

/// The exit code of a `wasi:cli/run` call: 0 or 1 as it returned, or what `exit` gave;
/// any other error (a trap, a broken limit) stays an error.
fn exit_code(outcome: wasmtime::Result<Result<(), ()>>) -> wasmtime::Result<i32> {
    match outcome {
        Ok(Ok(())) => Ok(0),
        Ok(Err(())) => Ok(1),
        Err(e) => match e.downcast_ref::<I32Exit>() {
            Some(I32Exit(code)) => Ok(*code),
            None => Err(e),
        },
    }
}

/// Finds the program a plugin asked for: a declared tool, or a file in scratch.
async fn resolve_program(
    run: &Arc<Sandbox>,
    program: &str,
) -> wasmtime::Result<Result<(String, CommandPre<StoreState>, ToolLead), SpawnError>> {
    if let Some(tool) = run.tools.get(program) {
        return Ok(Ok((
            tool.argv0.clone(),
            tool.pre.clone(),
            tool.lead.clone(),
        )));
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
    // Compiling what the plugin produced is building, not running it.
    let step = super::clock::current().map(|clock| clock.build_step());
    let loaded = load_program(run, &path, program).await?;
    drop(step);
    let pre = match loaded {
        Ok(pre) => pre,
        Err(e) => return Ok(Err(SpawnError::InvalidProgram(e.to_string()))),
    };
    let argv0 = program.rsplit('/').next().unwrap_or(program).to_string();
    Ok(Ok((argv0, pre, ToolLead::default())))
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
