//! The command line: [`Cli`] and its [`Command`]s (clap's), and [`main`], which runs one.

use anyhow::Result;
use clap::{Parser, Subcommand};

use std::path::PathBuf;

use runbox::service::ProgramCompiler;

use super::global::{check_runtime_name, parse_program_compiler, GlobalArgs};
use super::plugins::PluginsCommand;
use super::{mcp, plugins, repl, run};

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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }
}
