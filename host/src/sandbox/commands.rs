//! The host side of `runbox:plugin/commands`: a plugin (the shell) runs another runtime's
//! command (`python gen.py`), or a program `cc` made (`./a.out`), in its own sandbox, and
//! gets the command's output back to pipe on.
//!
//! A command runs in a child of the caller's sandbox ([`Sandbox::for_command`]): the same
//! scratch directory, memory, disk and tool-call budgets, journal and deadline (the
//! caller's call clock, since it runs on the caller's task), with an output capture of
//! its own. Which runtimes answer to which names is the run layer's business
//! ([`CommandHost`], implemented in `run/commands.rs`); running a produced program is
//! here, beside `process.rs`'s spawning of one.

use std::future::Future;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::process::{child as spawned, run_to_end};
use super::sandbox::StoreState;
use super::sandbox::{CommandResult, Sandbox};
use super::store::Stdin;
use crate::budget::output::Channel;
use crate::wit::runbox::plugin::process::{Command, SpawnError};
use crate::wit::runbox::plugin::{command_line, commands};

pub use command_line::{Finished, Invocation};

impl command_line::Host for StoreState {}

impl commands::Host for StoreState {
    fn available(&mut self) -> wasmtime::Result<Vec<(String, String)>> {
        Ok(self
            .sandbox
            .commands
            .as_ref()
            .map(|host| host.available())
            .unwrap_or_default())
    }

    async fn run(&mut self, invocation: Invocation) -> CommandResult {
        let caller = self.sandbox.clone();
        if invocation.name.contains('/') {
            return run_program(&caller, invocation).await;
        }
        match caller.commands.clone() {
            Some(host) => host.run(&caller, invocation).await,
            None => Ok(Err(format!(
                "{}: this sandbox runs no other runtime's commands",
                invocation.name
            ))),
        }
    }
}

/// Runs the produced program `invocation.name` (a path relative to `cwd`, or absolute)
/// in a child of `caller`, capturing its output: found, checked, compiled and started as
/// a plugin's `process.spawn` of it would be.
async fn run_program(caller: &Arc<Sandbox>, invocation: Invocation) -> CommandResult {
    let Some(guest) = guest_path(&invocation.cwd, &invocation.name) else {
        return Ok(Err(format!(
            "{}: not a path inside the scratch directory",
            invocation.name
        )));
    };
    let child = caller.for_command(
        caller.tools.clone(),
        caller.settings.clone(),
        caller.mounts.clone(),
    );
    let command = Command {
        program: guest,
        args: invocation.args,
        env: vec![("HOME".into(), "/".into()), ("PWD".into(), invocation.cwd)],
        stdin: None,
    };
    let name = invocation.name;
    let work = async {
        let stdin = Stdin::Bytes(invocation.stdin);
        let (mut store, pre) = match spawned(&child, command, stdin).await? {
            Ok(found) => found,
            Err(e) => return Ok(Err(format!("{name}: {}", spawn_message(e)))),
        };
        run_to_end(&mut store, &pre).await.map(Ok)
    };
    captured(caller, &child, work).await
}

/// A `process` spawn error as a shell would word it.
fn spawn_message(e: SpawnError) -> String {
    match e {
        SpawnError::NotFound(m) | SpawnError::InvalidProgram(m) => m,
    }
}

/// `name` as an absolute guest path, seen from `cwd`; `None` when it leaves `/`.
fn guest_path(cwd: &str, name: &str) -> Option<String> {
    let joined = if name.starts_with('/') {
        PathBuf::from(name)
    } else {
        Path::new(cwd).join(name)
    };
    let mut parts: Vec<String> = Vec::new();
    for part in joined.components() {
        match part {
            Component::RootDir | Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(p) => parts.push(p.to_str()?.to_string()),
            Component::Prefix(_) => return None,
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// Runs a command's `work` in `child`, a child of `caller`, and hands back what it wrote.
///
/// The output is held in host memory until the caller takes it: room for it (the run's
/// output limit, each stream) is charged to the run's memory budget meanwhile, and a run
/// without that room ends as a memory limit would. Programs the command compiled are the caller's to keep or
/// forget. When the command ends the whole call, what it wrote to stderr is passed on to
/// the caller's, so a traceback before a timeout is not lost.
pub async fn captured(
    caller: &Arc<Sandbox>,
    child: &Arc<Sandbox>,
    work: impl Future<Output = wasmtime::Result<Result<i32, String>>>,
) -> CommandResult {
    // Charged before: the output is held in host memory until the caller has it.
    let Some(_held) = caller.memory.reserve(2 * child.output.cap()) else {
        return Err(wasmtime::format_err!(
            "memory limit reached: no room for a command's output ({} bytes a stream)",
            child.output.cap()
        ));
    };
    let ended = work.await;
    let compiled =
        std::mem::take(&mut *child.new_programs.lock().unwrap_or_else(|e| e.into_inner()));
    caller
        .new_programs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(compiled);
    let output = child.output.take();
    let code = match ended {
        Ok(Ok(code)) => code,
        Ok(Err(message)) => return Ok(Err(message)),
        Err(trap) => {
            // Best effort: past the caller's own output limit the rest is dropped.
            let _ = caller.output.write(Channel::Stderr, &output.stderr);
            return Err(trap);
        }
    };
    Ok(Ok(Finished {
        exit_code: code,
        stdout: output.stdout,
        stderr: output.stderr,
    }))
}

impl Sandbox {
    /// A child of this sandbox for one command (see the module's documentation), with
    /// the tools, settings and mounts of the runtime that runs it. Its own commands are
    /// none: a command cannot run another.
    pub fn for_command(
        self: &Arc<Self>,
        tools: Arc<std::collections::HashMap<String, super::sandbox::Tool>>,
        settings: Arc<Vec<(String, Vec<String>)>>,
        mounts: Arc<Vec<super::sandbox::Mount>>,
    ) -> Arc<Sandbox> {
        Sandbox::new(super::sandbox::SandboxConfig {
            engine: self.engine.clone(),
            programs: self.programs.clone(),
            tools,
            settings,
            scratch: self.scratch.clone(),
            mounts,
            output_bytes: self.output.cap(),
            memory: self.memory.clone(),
            disk: self.disk.clone(),
            resources_per_store: self.resources_per_store,
            journal: self.journal.clone(),
            tool_calls: self.tool_calls.clone(),
            net_calls: self.net_calls.clone(),
            empty_tools_dir: self.empty_tools_dir.clone(),
            commands: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_seen_from_the_working_directory() {
        assert_eq!(guest_path("/", "./a.out").as_deref(), Some("/a.out"));
        assert_eq!(guest_path("/src", "../bin/p").as_deref(), Some("/bin/p"));
        assert_eq!(guest_path("/src", "/p").as_deref(), Some("/p"));
        assert_eq!(guest_path("/", "../p"), None);
        assert_eq!(guest_path("/a", "../../p"), None);
    }
}
