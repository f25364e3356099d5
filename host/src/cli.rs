//! The command line: `runbox run`, `runbox repl`, `runbox runtimes`, `runbox plugins …`,
//! `runbox mcp`.

use std::io::{Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use tokio_util::sync::CancellationToken;

use crate::artifact::{Cache, Progress};
use crate::conformance::check_plugin;
use crate::engine::{ProgramCompiler, SandboxEngine};
use crate::files::ReturnCaps;
use crate::manifest::Manifest;
use crate::outcome::{RunOutcome, RunStatus};
use crate::plugin::cache_state;
use crate::sandbox::output::Channel;
use crate::service::{
    LimitOverrides, LimitSettings, RunRequest, Runbox, RunboxOptions, StartError,
};

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
                  125 runbox error; 126 crashed; 127 terminated (output or memory cap, Ctrl-C)."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
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
    /// Where artifacts and compiled runtimes are cached [default: $XDG_CACHE_HOME/runbox].
    #[arg(long, global = true, env = "RUNBOX_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Where runs keep their scratch directories [default: scratch/ in the cache
    /// directory]. Stale ones of a killed runbox are removed at start.
    #[arg(long, global = true, env = "RUNBOX_SCRATCH_DIR", value_name = "DIR")]
    pub scratch_dir: Option<PathBuf>,
    /// The compiler of programs a plugin produces (C, C++): cranelift,
    /// cranelift-unoptimized or winch.
    #[arg(long, global = true, env = "RUNBOX_PROGRAM_COMPILER", value_name = "NAME",
          default_value = "cranelift", value_parser = parse_program_compiler)]
    pub program_compiler: ProgramCompiler,
    /// Show no progress bars.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

fn parse_program_compiler(name: &str) -> Result<ProgramCompiler, String> {
    ProgramCompiler::from_name(name).ok_or_else(|| {
        let names: Vec<_> = ProgramCompiler::ALL.iter().map(|c| c.name()).collect();
        format!("`{name}` is not one of {}", names.join(", "))
    })
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a program in the sandbox and print its output.
    Run(RunArgs),
    /// An interactive session at a terminal: each entered block is one call, in one
    /// session (what a model sees through create_session and run_code).
    Repl(ReplArgs),
    /// List the runtimes and whether their artifacts are fetched and compiled.
    Runtimes,
    /// Fetch and compile plugins ahead of time, or run their conformance suite.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Serve MCP (the `run_code` tool) on stdio, or on streamable HTTP with --http.
    Mcp(crate::mcp::McpArgs),
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

#[derive(Debug, Args)]
pub struct ReplArgs {
    /// The runtime, e.g. python, quickjs, ruby (see `runbox runtimes`).
    pub runtime: String,
    /// Wall-clock limit of each block, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The runtime, e.g. python, quickjs, ruby, php-cgi (see `runbox runtimes`).
    pub runtime: String,
    /// The program file; `-` or nothing reads it from standard input.
    pub file: Option<PathBuf>,
    /// A file given to the program as standard input (default: none, end of input at once).
    #[arg(long, value_name = "FILE")]
    pub stdin: Option<PathBuf>,
    /// Wall-clock limit in seconds (fractions allowed).
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
    /// Memory limit in MiB, shared by everything the run starts.
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub memory_mb: u64,
    /// Output limit per stream in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub output_bytes: usize,
    /// An input file placed in the program's working directory: PATH keeps its file name,
    /// NAME=PATH places the host file PATH at NAME (a relative path); an existing file
    /// whose own name holds `=` is taken whole. Repeat for more (at most 100 files,
    /// 32 MiB in total).
    #[arg(long = "file", value_name = "[NAME=]PATH")]
    pub files: Vec<String>,
    /// Write the files the program created or changed under this directory (created
    /// if missing); without it they are only listed on stderr.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Arguments for the program.
    #[arg(last = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PluginsCommand {
    /// Fetch and compile the artifacts of every runtime, or of the named ones.
    Fetch {
        /// Runtime names (default: all in the plugins file).
        names: Vec<String>,
    },
    /// Run the conformance suite (describe, every sample) against every plugin, or the
    /// named ones. Exits non-zero when a check fails.
    Test {
        /// Runtime names (default: all in the plugins file).
        names: Vec<String>,
    },
}

impl GlobalArgs {
    fn manifest(&self) -> Result<Manifest> {
        let mut manifest = Manifest::load_or_builtin(self.plugins.as_deref())?;
        for path in &self.plugins_add {
            manifest.add(Manifest::load(path)?)?;
        }
        Ok(manifest)
    }

    fn cache(&self) -> Result<Cache> {
        Ok(match &self.cache_dir {
            Some(dir) => Cache::at(dir.clone()),
            None => Cache::from_env()?,
        })
    }

    fn progress(&self) -> Progress {
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
        Command::Run(args) => run(&cli.global, args).await,
        Command::Repl(args) => repl(&cli.global, args).await,
        Command::Runtimes => runtimes(&cli.global).map(|()| 0),
        Command::Plugins(PluginsCommand::Fetch { names }) => {
            let options = RunboxOptions {
                only: names,
                ..RunboxOptions::default()
            };
            let runbox = cli.global.load(options).await?;
            eprintln!("ready: {}", runbox.runtime_names().join(", "));
            Ok(0)
        }
        Command::Plugins(PluginsCommand::Test { names }) => plugins_test(&cli.global, names).await,
        Command::Mcp(args) => crate::mcp::main(&cli.global, args).await.map(|()| 0),
        Command::CompileProgram { compiler, output } => Ok(u8::try_from(
            crate::sandbox::program::compile_program_child(compiler, &output),
        )
        .unwrap_or(1)),
    }
}

/// `--file PATH` or `--file NAME=PATH`: the name in the sandbox and the host file's bytes.
/// A PATH that is an existing file is never split, `=` or not.
fn read_input_file(spec: &str) -> Result<(String, Vec<u8>)> {
    let named = spec
        .split_once('=')
        .filter(|(name, _)| !name.is_empty() && !std::path::Path::new(spec).is_file());
    let (name, path) = match named {
        Some((name, path)) => (name.to_string(), PathBuf::from(path)),
        _ => {
            let path = PathBuf::from(spec);
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .with_context(|| format!("--file {spec}: no file name to use; write NAME={spec}"))?
                .to_string();
            (name, path)
        }
    };
    let bytes =
        std::fs::read(&path).with_context(|| format!("--file: cannot read {}", path.display()))?;
    Ok((name, bytes))
}

/// Writes the run's output files under `out` (or only lists them), telling stderr.
fn save_output_files(
    files: &[crate::files::OutputFile],
    out: Option<&std::path::Path>,
    err: &mut impl Write,
) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let Some(out) = out else {
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        writeln!(
            err,
            "runbox: output files (save them with --out DIR): {}",
            names.join(", ")
        )?;
        return Ok(());
    };
    for file in files {
        let Some(bytes) = &file.contents else {
            writeln!(
                err,
                "runbox: {} ({} bytes) could not be read back",
                file.path, file.size
            )?;
            continue;
        };
        // The path came from the sandbox's own directory listing: relative, no `..`
        // (checked again, as the host writes here).
        crate::files::normalize_path(&file.path)
            .map_err(|rule| anyhow::anyhow!("output file `{}`: {rule}", file.path))?;
        let target = out.join(&file.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, bytes)
            .with_context(|| format!("cannot write {}", target.display()))?;
        writeln!(err, "runbox: wrote {}", target.display())?;
    }
    Ok(())
}

async fn run(global: &GlobalArgs, args: RunArgs) -> Result<u8> {
    let timeout = crate::mcp::settings::seconds("--timeout", args.timeout)?;
    let memory_bytes = crate::mcp::settings::memory_bytes("--memory-mb", args.memory_mb)?;
    if args.output_bytes == 0 {
        bail!("--output-bytes must be at least 1");
    }
    let code = match args.file.as_deref() {
        None => read_stdin()?,
        Some(p) if p.as_os_str() == "-" => read_stdin()?,
        Some(p) => std::fs::read_to_string(p)
            .with_context(|| format!("cannot read program file {}", p.display()))?,
    };
    let stdin = match &args.stdin {
        Some(p) => Some(
            std::fs::read(p).with_context(|| format!("cannot read stdin file {}", p.display()))?,
        ),
        None => None,
    };
    let files = args
        .files
        .iter()
        .map(|spec| read_input_file(spec))
        .collect::<Result<Vec<_>>>()?;
    let options = RunboxOptions {
        limits: LimitSettings {
            default_timeout: timeout,
            max_timeout: timeout,
            memory_bytes,
            output_bytes: args.output_bytes,
            ..LimitSettings::default()
        },
        max_concurrent: 1,
        only: vec![args.runtime.clone()],
        ..RunboxOptions::default()
    };
    // Check the name before loading anything, so a typo fails fast and clearly.
    check_runtime_name(global, &args.runtime)?;
    let runbox = global.load(options).await?;
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    let outcome = runbox
        .run(
            RunRequest {
                runtime: args.runtime,
                code,
                stdin,
                args: args.args,
                limits: LimitOverrides::default(),
                files,
                // A terminal has no message size to protect: every file the run's scratch
                // cap let it write comes back.
                return_caps: ReturnCaps::everything(),
                session_id: None,
                ..RunRequest::default()
            },
            cancel,
        )
        .await?;
    replay_as_terminal(&outcome)?;
    let mut err = std::io::stderr().lock();
    if let Some(e) = &outcome.error {
        writeln!(err, "runbox: {}: {e}", outcome.status.as_str())?;
    }
    save_output_files(&outcome.files, args.out.as_deref(), &mut err)?;
    Ok(match outcome.status {
        RunStatus::Completed => exit_status_byte(outcome.exit_code.unwrap_or(0)),
        RunStatus::Timeout => EXIT_TIMEOUT,
        RunStatus::Crashed => EXIT_CRASHED,
        RunStatus::Terminated => EXIT_TERMINATED,
    })
}

async fn repl(global: &GlobalArgs, args: ReplArgs) -> Result<u8> {
    let timeout = crate::mcp::settings::seconds("--timeout", args.timeout)?;
    check_runtime_name(global, &args.runtime)?;
    let options = RunboxOptions {
        limits: LimitSettings {
            max_timeout: timeout,
            default_timeout: timeout,
            ..LimitSettings::default()
        },
        max_concurrent: 1,
        max_sessions: 1,
        only: vec![args.runtime.clone()],
        ..RunboxOptions::default()
    };
    let runbox = global.load(options).await?;
    crate::repl::repl(&runbox, &args.runtime, timeout).await
}

/// Fails fast and clearly on a runtime name the plugins file does not have.
fn check_runtime_name(global: &GlobalArgs, runtime: &str) -> Result<()> {
    let manifest = global.manifest()?;
    if !manifest.plugins.contains_key(runtime) {
        let valid: Vec<_> = manifest.plugins.keys().cloned().collect();
        bail!(
            "unknown runtime `{runtime}`; valid runtimes: {}",
            valid.join(", ")
        );
    }
    Ok(())
}

async fn plugins_test(global: &GlobalArgs, names: Vec<String>) -> Result<u8> {
    let manifest = global.manifest()?;
    let options = RunboxOptions {
        only: names,
        ..RunboxOptions::default()
    };
    // A plugin that cannot be loaded fails its first check; the others are still checked.
    let runbox = global.load_each(options).await?;
    let (mut passed, mut failed) = (0, 0);
    // Plugins are checked side by side; each one's checks in order.
    let names = runbox.runtime_names();
    let results = futures::future::join_all(
        names
            .iter()
            .map(|name| check_plugin(&runbox, &manifest.plugins[name])),
    )
    .await;
    for checks in results {
        for check in checks {
            match &check.failure {
                None => {
                    passed += 1;
                    println!("ok    {} {}", check.plugin, check.name);
                }
                Some(why) => {
                    failed += 1;
                    println!("FAIL  {} {}: {why}", check.plugin, check.name);
                }
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    Ok(if failed == 0 { 0 } else { 1 })
}

/// A program's exit code as a process exit status (the low 8 bits, like a shell).
fn exit_status_byte(code: i32) -> u8 {
    (code & 0xff) as u8
}

fn read_stdin() -> Result<String> {
    let mut code = String::new();
    std::io::stdin()
        .read_to_string(&mut code)
        .context("cannot read the program from standard input")?;
    Ok(code)
}

fn runtimes(global: &GlobalArgs) -> Result<()> {
    let manifest = global.manifest()?;
    let cache = global.cache()?;
    let engine = SandboxEngine::new(&cache.root().join("compiled"), ProgramCompiler::default())?;
    println!(
        "{:<10} {:<12} {:<20} {:<8} {:<8}",
        "NAME", "LANGUAGE", "VERSION", "FETCHED", "COMPILED"
    );
    for spec in manifest.plugins.values() {
        let state = cache_state(spec, &cache, &engine);
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        println!(
            "{:<10} {:<12} {:<20} {:<8} {:<8}",
            spec.name,
            spec.language,
            spec.version,
            yes_no(state.fetched),
            yes_no(state.compiled)
        );
    }
    Ok(())
}

/// Replays a run's output as a terminal would have shown it, each piece on its own
/// stream and in the order it was written.
pub fn replay_as_terminal(outcome: &RunOutcome) -> std::io::Result<()> {
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr().lock());
    for (channel, bytes) in outcome.output.tty_segments() {
        match channel {
            Channel::Stdout => out.write_all(bytes)?,
            Channel::Stderr => {
                out.flush()?;
                err.write_all(bytes)?;
            }
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn an_input_file_is_named_or_keeps_its_own_name() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("data.csv");
        let with_equals = dir.path().join("a=b.csv");
        std::fs::write(&plain, "1,2").unwrap();
        std::fs::write(&with_equals, "3,4").unwrap();
        let read = |spec: String| read_input_file(&spec).unwrap();
        assert_eq!(
            read(plain.display().to_string()),
            ("data.csv".into(), b"1,2".to_vec())
        );
        assert_eq!(
            read(format!("in/x.csv={}", plain.display())),
            ("in/x.csv".into(), b"1,2".to_vec())
        );
        assert_eq!(
            read(with_equals.display().to_string()),
            ("a=b.csv".into(), b"3,4".to_vec())
        );
    }

    #[test]
    fn exit_codes_keep_the_low_byte() {
        assert_eq!(exit_status_byte(3), 3);
        assert_eq!(exit_status_byte(256 + 7), 7);
        assert_eq!(exit_status_byte(-1), 255);
    }
}
