//! The command line, which only the binary has: `runbox run` ([`run`]), `runbox repl`
//! ([`repl`]), `runbox runtimes` and `runbox plugins …` ([`plugins`]), `runbox mcp`
//! ([`mcp`]). The flags that several commands share are [`limits`]; the library never sees
//! clap.

mod limits;
mod mcp;
mod plugins;
mod repl;
mod repl_input;
mod run;
mod terminal;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use runbox::service::Manifest;
use runbox::service::ProgramCompiler;
use runbox::service::{Cache, Progress};
use runbox::service::{Runbox, RunboxOptions, StartError};

use plugins::PluginsCommand;

/// Exit status of `runbox run` when the program hit the deadline.
pub const EXIT_TIMEOUT: u8 = 124;
/// Exit status of `runbox run` when runbox itself failed (bad arguments, plugins, fetch).
pub const EXIT_RUNBOX_ERROR: u8 = 125;
/// Exit status of `runbox run` when the program crashed (a trap) or its runtime failed.
pub const EXIT_CRASHED: u8 = 126;
/// Exit status of `runbox run` when the program was stopped by the output or memory cap.
pub const EXIT_TERMINATED: u8 = 127;

#[derive(Debug, Parser)]
#[command(
    name = "runbox",
    version,
    about = "Run untrusted code in WebAssembly sandboxes: an MCP server and a command line",
    after_help = "Exit status of `runbox run`: the program's own exit code; 124 timeout; \
                  125 runbox error; 126 crashed; 127 terminated (output or memory cap, Ctrl-C). \
                  Bad arguments exit 125 with every command."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// The heading `--help` shows the global flags under, apart from a command's own.
pub const GLOBAL_HEADING: &str = "Global options";

/// Prints what clap says about the command line (help, version, or a bad argument) and
/// returns the exit status: 0 for help and version, [`EXIT_RUNBOX_ERROR`] for a bad
/// argument (clap's own is 2), as docs/cli.md and `--help` say.
pub fn exit_on_bad_arguments(e: &clap::Error) -> u8 {
    // Printing fails only when stdout or stderr is closed: nothing left to tell.
    let _ = e.print();
    if e.use_stderr() {
        EXIT_RUNBOX_ERROR
    } else {
        0
    }
}

#[derive(Debug, Args)]
#[command(next_help_heading = GLOBAL_HEADING)]
pub struct GlobalArgs {
    /// A plugins.toml that replaces the built-in runtime list.
    #[arg(long, global = true, env = "RUNBOX_PLUGINS", value_name = "FILE")]
    pub plugins: Option<PathBuf>,
    /// A plugins.toml whose runtimes are added beside the built-in ones (or those of
    /// --plugins); repeat for more. A name already taken is an error.
    #[arg(
        long = "plugins-add",
        global = true,
        env = "RUNBOX_PLUGINS_ADD",
        value_name = "FILE",
        value_delimiter = ':'
    )]
    pub plugins_add: Vec<PathBuf>,
    /// A requirements file of pure-Python wheels every python run and session can import:
    /// one `NAME==VERSION --hash=sha256:HEX` (or `PATH.whl --hash=…`) per line, fetched
    /// with pip, checked, and refused if a wheel holds compiled code.
    #[arg(
        long,
        global = true,
        env = "RUNBOX_PYTHON_PACKAGES",
        value_name = "FILE"
    )]
    pub python_packages: Option<PathBuf>,
    /// Where artifacts and compiled runtimes are cached [default: $XDG_CACHE_HOME/runbox].
    #[arg(long, global = true, env = "RUNBOX_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Where runs keep their scratch directories [default: scratch/ in the cache
    /// directory]. Stale ones of a killed runbox are removed at start.
    #[arg(long, global = true, env = "RUNBOX_SCRATCH_DIR", value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// The compiler of programs a plugin produces (a compiler's output): cranelift,
    /// cranelift-unoptimized or winch.
    #[arg(long, global = true, env = "RUNBOX_PROGRAM_COMPILER", value_name = "NAME",
          default_value = "cranelift", value_parser = parse_program_compiler)]
    pub program_compiler: ProgramCompiler,
    /// Show no progress bars and no start-up line (`runbox mcp --http` still prints the
    /// address it serves at, which port 0 leaves to the system).
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

fn parse_program_compiler(name: &str) -> Result<ProgramCompiler, String> {
    ProgramCompiler::from_name(name).ok_or_else(|| {
        let names: Vec<_> = ProgramCompiler::ALL.iter().map(|c| c.name()).collect();
        format!("`{name}` is not one of {}", names.join(", "))
    })
}

/// The help of a RUNTIME argument: the built-in runtimes by name.
fn runtime_help() -> String {
    let names = runbox::service::Manifest::builtin()
        .map(|m| m.plugins.keys().cloned().collect::<Vec<_>>().join(", "))
        .unwrap_or_default();
    format!(
        "The runtime: {names} (the built-in ones; `runbox runtimes` lists those of \
         --plugins and --plugins-add too)"
    )
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a program in the sandbox and print its output.
    Run(run::RunArgs),
    /// An interactive session at a terminal: each entered block is one call, in one
    /// session (what a model sees through create_session and run_code).
    Repl(repl::ReplArgs),
    /// List the runtimes and whether their artifacts are fetched and compiled.
    Runtimes,
    /// Fetch and compile plugins ahead of time, or run their conformance suite.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Serve MCP (the `run_code` tool) on stdio, or on streamable HTTP with --http.
    Mcp(Box<mcp::McpArgs>),
    /// (internal) Compile one produced program read from stdin, in a child process the
    /// server limits: see `sandbox/program.rs`.
    #[command(name = "__compile-program", hide = true)]
    CompileProgram {
        #[arg(long, value_parser = parse_program_compiler)]
        compiler: ProgramCompiler,
        #[arg(long)]
        output: PathBuf,
    },
}

impl GlobalArgs {
    pub fn manifest(&self) -> Result<Manifest> {
        let mut manifest = Manifest::load_or_builtin(self.plugins.as_deref())?;
        for path in &self.plugins_add {
            manifest.add(Manifest::load(path)?)?;
        }
        if let Some(file) = &self.python_packages {
            let packages = runbox::service::parse_requirements(file)?;
            let python = manifest.plugins.get_mut("python").ok_or_else(|| {
                anyhow::anyhow!("--python-packages: the plugins file has no `python` runtime")
            })?;
            if python.packages_dir.is_none() {
                anyhow::bail!("--python-packages: the `python` runtime has no `packages-dir`");
            }
            python.packages.extend(packages);
        }
        Ok(manifest)
    }

    pub fn cache(&self) -> Result<Cache> {
        Ok(match &self.cache_dir {
            Some(dir) => Cache::at(dir.clone()),
            None => Cache::from_env()?,
        })
    }

    pub fn progress(&self) -> Progress {
        if self.quiet {
            Progress::hidden()
        } else {
            Progress::stderr()
        }
    }

    /// Starts the runtimes' preparation in the background (see `preparation.rs`) and
    /// returns at once: for a server, which must answer before minutes of compiling.
    pub fn start(&self, options: RunboxOptions) -> Result<Runbox> {
        let options = self.with_globals(options);
        Ok(Runbox::start(
            &self.manifest()?,
            &self.cache()?,
            options,
            self.progress(),
        )?)
    }

    /// Prepares each runtime only once a call asks for it (see `preparation.rs`), in the
    /// background: for `runbox run`, whose program may run other runtimes as commands.
    pub fn start_on_demand(&self, options: RunboxOptions) -> Result<Runbox> {
        let options = self.with_globals(options);
        Ok(Runbox::start_on_demand(
            &self.manifest()?,
            &self.cache()?,
            options,
            self.progress(),
        )?)
    }

    fn with_globals(&self, mut options: RunboxOptions) -> RunboxOptions {
        options.scratch_dir = self.scratch_dir.clone();
        options.program_compiler = self.program_compiler;
        options
    }

    /// Loads the runtimes (fetching and compiling what is missing) off the async runtime;
    /// fails on the first that cannot be loaded.
    pub async fn load(&self, options: RunboxOptions) -> Result<Runbox> {
        self.load_with(options, Runbox::load).await
    }

    /// Like [`GlobalArgs::load`], but a runtime that cannot be loaded is marked as failed
    /// and the others are still loaded.
    pub async fn load_each(&self, options: RunboxOptions) -> Result<Runbox> {
        self.load_with(options, Runbox::load_each).await
    }

    async fn load_with(
        &self,
        options: RunboxOptions,
        load: fn(&Manifest, &Cache, RunboxOptions, &Progress) -> Result<Runbox, StartError>,
    ) -> Result<Runbox> {
        let options = self.with_globals(options);
        let manifest = self.manifest()?;
        let cache = self.cache()?;
        let progress = self.progress();
        let runbox =
            tokio::task::spawn_blocking(move || load(&manifest, &cache, options, &progress))
                .await??;
        Ok(runbox)
    }
}

/// Runs the CLI; returns the process exit status.
pub async fn main(cli: Cli) -> Result<u8> {
    match cli.command {
        Command::Run(args) => run::command(&cli.global, args).await,
        Command::Repl(args) => repl::command(&cli.global, args).await,
        Command::Runtimes => plugins::runtimes(&cli.global).map(|()| 0),
        Command::Plugins(PluginsCommand::Fetch { names, bundle }) => match bundle {
            Some(dir) => {
                for name in &names {
                    check_runtime_name(&cli.global, name)?;
                }
                plugins::bundle(&cli.global, &names, &dir)
            }
            None => plugins::fetch(&cli.global, names).await,
        },
        Command::Plugins(PluginsCommand::Test { names }) => plugins::test(&cli.global, names).await,
        Command::Mcp(args) => mcp::command(&cli.global, *args).await.map(|()| 0),
        Command::CompileProgram { compiler, output } => Ok(u8::try_from(
            runbox::service::compile_program_child(compiler, &output),
        )
        .unwrap_or(1)),
    }
}

/// Fails fast and clearly on a runtime name the plugins file does not have.
pub fn check_runtime_name(global: &GlobalArgs, runtime: &str) -> Result<()> {
    let manifest = global.manifest()?;
    if !manifest.plugins.contains_key(runtime) {
        return Err(runbox::service::CallError::UnknownRuntime {
            name: runtime.to_string(),
            valid: manifest.plugins.keys().cloned().collect(),
        }
        .into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
