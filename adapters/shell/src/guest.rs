//! The component's side of `runbox:plugin`: the request's files into the scratch
//! directory, then the script into a [`Shell`] whose output is the real standard streams.
//! A session keeps its shell from one call to the next.

use std::sync::Arc;

use crate::commands::{Commands, Finished};
use crate::shell::{Output, Script, Shell};

wit_bindgen::generate!({ path: "../../wit", world: "session-plugin" });

use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
use exports::runbox::plugin::session::{Guest as SessionGuest, GuestSession};
use runbox::plugin::{command_line, commands, config, process};

#[allow(dead_code)]
mod guest_io {
    #[allow(unused_imports)]
    use super::{config, process, File, Info};
    runbox_adapter_support::guest_glue!();
}

struct Adapter;

export!(Adapter);

/// `wasi:cli/stdout` and `stderr`, written at once.
struct Stdio;

impl Output for Stdio {
    fn stdout(&self, bytes: &[u8]) {
        runbox_adapter_support::write_stdout(bytes);
    }

    fn stderr(&self, bytes: &[u8]) {
        runbox_adapter_support::write_stderr(bytes);
    }
}

/// The host's `runbox:plugin/commands`.
struct HostCommands;

impl Commands for HostCommands {
    fn available(&self) -> Vec<(String, String)> {
        commands::available()
    }

    fn run(
        &self,
        name: &str,
        args: &[String],
        stdin: Option<&[u8]>,
        cwd: &str,
    ) -> Result<Finished, String> {
        let finished = commands::run(&command_line::Invocation {
            name: name.to_string(),
            args: args.to_vec(),
            stdin: stdin.map(<[u8]>::to_vec),
            cwd: cwd.to_string(),
        })?;
        Ok(Finished {
            exit_code: finished.exit_code,
            stdout: finished.stdout,
            stderr: finished.stderr,
        })
    }
}

fn shell() -> Result<Shell, String> {
    Shell::new("/", Arc::new(Stdio), Arc::new(HostCommands))
}

fn run(shell: &mut Shell, request: &RunRequest) -> Result<i32, String> {
    guest_io::write_files(&request.files)?;
    Ok(shell.run(&Script {
        code: &request.code,
        args: &request.args,
        stdin: request.stdin.as_deref(),
    }))
}

runbox_adapter_support::native_component!(Shell, shell, run);
