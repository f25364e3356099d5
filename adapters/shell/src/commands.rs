//! The other runtimes as commands of the shell (`python gen.py | sort -n`, `sqlite3 t.db
//! < q.sql`, `cc p.c -o p && ./p`): each command name the host offers
//! (`runbox:plugin/commands`) is a builtin that asks the host to run it, in the same
//! sandbox, and hands its output to the pipe or the redirect like any other command's.
//!
//! A program `cc` made starts with a `#!/usr/bin/env runbox-wasm` line, so the shell runs
//! `./p` as a script whose interpreter is the `runbox-wasm` builtin: the host runs the
//! program the path names.

use std::sync::Arc;

use bashkit::{async_trait, Builtin, BuiltinContext, ExecResult};

/// The interpreter a program `cc` made names on its first line.
pub const PROGRAM_INTERPRETER: &str = "runbox-wasm";

/// How a command ended, with what it wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Finished {
    pub exit_code: i32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// The host's side: the commands there are, and running one.
pub trait Commands: Send + Sync {
    /// Each command name with the runtime that runs it.
    fn available(&self) -> Vec<(String, String)>;

    /// Runs `name` (a command name, or a path to a program) with `args`; `Err` when
    /// nothing of that name can run.
    fn run(
        &self,
        name: &str,
        args: &[String],
        stdin: Option<&[u8]>,
        cwd: &str,
    ) -> Result<Finished, String>;
}

/// No other runtimes (the native tests' default).
#[cfg(test)]
pub struct NoCommands;

#[cfg(test)]
impl Commands for NoCommands {
    fn available(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    fn run(&self, name: &str, _: &[String], _: Option<&[u8]>, _: &str) -> Result<Finished, String> {
        Err(format!("{name}: command not found"))
    }
}

/// One command name as a builtin.
pub struct RuntimeCommand {
    pub name: String,
    pub host: Arc<dyn Commands>,
}

#[async_trait]
impl Builtin for RuntimeCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        Ok(run(&*self.host, &self.name, ctx.args, &ctx))
    }
}

/// `runbox-wasm PATH ARGS...`: runs the program `cc` made at `PATH`.
pub struct ProgramCommand {
    pub host: Arc<dyn Commands>,
}

#[async_trait]
impl Builtin for ProgramCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let Some((path, args)) = ctx.args.split_first() else {
            return Ok(ExecResult {
                stderr: format!("usage: {PROGRAM_INTERPRETER} PROGRAM [ARGS...]\n").into(),
                exit_code: 2,
                ..ExecResult::default()
            });
        };
        // The host resolves a path without `/` as a command name; a program is a path.
        let path = if path.contains('/') {
            path.clone()
        } else {
            format!("./{path}")
        };
        Ok(run(&*self.host, &path, args, &ctx))
    }
}

fn run(host: &dyn Commands, name: &str, args: &[String], ctx: &BuiltinContext<'_>) -> ExecResult {
    let cwd = ctx.cwd.to_string_lossy();
    let stdin = ctx.stdin.map(|s| s.as_bytes());
    match host.run(name, args, stdin, &cwd) {
        Ok(finished) => ExecResult {
            stdout: finished.stdout.into(),
            stderr: finished.stderr.into(),
            exit_code: finished.exit_code,
            ..ExecResult::default()
        },
        Err(message) => {
            // bash's statuses: 127 when there is no such command, 126 when it cannot run.
            let status = if message.ends_with("command not found") {
                127
            } else {
                126
            };
            ExecResult {
                stderr: format!("{message}\n").into(),
                exit_code: status,
                ..ExecResult::default()
            }
        }
    }
}
