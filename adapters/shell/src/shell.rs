//! The interpreter: one bashkit [`Bash`] on the real files, running scripts one after the
//! other, so a session's variables, functions and working directory carry over.
//!
//! Plain Rust, without the WIT bindings, so the unit tests run it natively; `guest.rs`
//! hands it the request and the real standard streams.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bashkit::{
    Bash, BashBuilder, ExecOptions, ExecutionLimits, MemoryLimits, PosixFs, SessionLimits,
};

use crate::commands::{Commands, ProgramCommand, RuntimeCommand, PROGRAM_INTERPRETER};
use crate::curl::CurlCommand;
use crate::files::RealFiles;
use crate::pip::PipCommand;
use crate::tools::ToolCommand;
use crate::wget::WgetCommand;

/// Where a script's output goes, as it is written.
pub trait Output: Send + Sync {
    fn stdout(&self, bytes: &[u8]);
    fn stderr(&self, bytes: &[u8]);
}

/// One script to run.
#[derive(Debug, Default, Clone)]
pub struct Script<'a> {
    pub code: &'a str,
    pub args: &'a [String],
    pub stdin: Option<&'a [u8]>,
}

pub struct Shell {
    bash: Bash,
    runtime: tokio::runtime::Runtime,
    output: Arc<dyn Output>,
}

impl Shell {
    /// A shell whose `/` is the directory `root`, writing to `output`. Its `tool` command
    /// calls through `root`'s `tools/call` (`/tools/call` in the component), its `curl`,
    /// `wget` and `pip` through `root`'s `net/fetch` (`/net/fetch`).
    ///
    /// The host's `commands` (the other runtimes: `python`, `cc`, …) are commands too.
    pub fn new(
        root: impl Into<PathBuf>,
        output: Arc<dyn Output>,
        commands: Arc<dyn Commands>,
    ) -> Result<Shell, String> {
        let root = root.into();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .map_err(|e| format!("cannot start the shell's runtime: {e}"))?;
        // runbox's own limits (deadline, memory, output, disk) are the real ones: bashkit's
        // counts of commands and loop turns would stop ordinary scripts, and its timeout
        // would end a long run early. Its depth limits stay: they keep recursion off the
        // end of the native stack.
        let limits = ExecutionLimits::new()
            .max_commands(usize::MAX)
            .max_loop_iterations(usize::MAX)
            .max_total_loop_iterations(usize::MAX)
            .max_work_units(u64::MAX)
            .max_stdout_bytes(usize::MAX / 4)
            .max_stderr_bytes(usize::MAX / 4)
            .max_aggregate_input_bytes(u64::MAX)
            .max_live_intermediate_bytes(u64::MAX)
            .timeout(Duration::from_secs(365 * 24 * 3600));
        let tools = ToolCommand::new(root.join("tools"));
        let net = root.join("net");
        let files = Arc::new(PosixFs::new(RealFiles::new(root)));
        let mut bash = Bash::builder()
            .fs(files)
            // No made-up /etc, /proc or /usr/bin over the scratch directory.
            .rootfs(false)
            .cwd("/")
            .env("HOME", "/");
        // The run's environment (a network policy's secret placeholders among it,
        // docs/network.md) is the shell's.
        for (name, value) in std::env::vars() {
            bash = bash.env(&name, &value);
        }
        let bash = bash
            .limits(limits)
            .session_limits(SessionLimits::unlimited())
            .memory_limits(MemoryLimits::unlimited())
            .builtin("bc", Box::new(crate::bc::BcCommand))
            .builtin("tool", Box::new(tools))
            // In place of bashkit's own, which need an HTTP client of their own.
            .builtin("curl", Box::new(CurlCommand::new(net.clone())))
            .builtin("wget", Box::new(WgetCommand::new(net.clone())))
            // Packages at run time, into /.runbox/site-packages (`python -m pip` is the
            // python runtime's).
            .builtin("pip", Box::new(PipCommand::new(net.clone())))
            .builtin("pip3", Box::new(PipCommand::new(net)));
        let bash = with_commands(bash, commands).build();
        Ok(Shell {
            bash,
            runtime,
            output,
        })
    }

    /// Runs `script` to its end and returns its exit status.
    pub fn run(&mut self, script: &Script<'_>) -> i32 {
        // The streaming callback gets each command's stdout and stderr as it ends, in
        // the order the commands ran (bashkit's `Execution` pumps the two streams apart
        // and loses that order between them).
        let output = self.output.clone();
        let options = ExecOptions::new()
            .arg0("main.sh")
            .positional(script.args.iter().cloned())
            .stdin(script.stdin.unwrap_or_default().to_vec())
            .streaming(Box::new(move |stdout, stderr| {
                if !stdout.is_empty() {
                    output.stdout(stdout.as_bytes());
                }
                if !stderr.is_empty() {
                    output.stderr(stderr.as_bytes());
                }
            }));
        let execution = self.bash.exec_with_options(script.code, options);
        match self.runtime.block_on(execution) {
            Ok(result) => result.exit_code,
            // A parse error or a limit of bashkit's: bash's status for a syntax error.
            Err(e) => {
                self.output.stderr(format!("main.sh: {e}\n").as_bytes());
                2
            }
        }
    }
}

/// `builder` with a builtin for each of the host's commands, and `runbox-wasm` for the
/// programs `cc` makes (see `commands.rs`).
fn with_commands(mut builder: BashBuilder, commands: Arc<dyn Commands>) -> BashBuilder {
    for (name, _runtime) in commands.available() {
        let command = RuntimeCommand {
            name: name.clone(),
            host: commands.clone(),
        };
        builder = builder.builtin(&name, Box::new(command));
    }
    builder.builtin(
        PROGRAM_INTERPRETER,
        Box::new(ProgramCommand { host: commands }),
    )
}
