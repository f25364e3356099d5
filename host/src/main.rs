//! The `runbox` binary: logging to stderr, then the command line (`cli/`, which the
//! library never sees).

mod cli;

use std::process::ExitCode;

use clap::Parser;
use cli::Cli;

fn main() -> ExitCode {
    runbox::service::quiet_error_backtraces();
    // stdout belongs to the program's output (and to MCP in stdio mode): logs go to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a client's log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RUNBOX_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return ExitCode::from(cli::exit_on_bad_arguments(&e)),
    };
    // The compiling child needs no async runtime; start it at once.
    if let cli::Command::CompileProgram { compiler, output } = &cli.command {
        let code = runbox::service::compile_program_child(*compiler, output);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runbox: cannot start the async runtime: {e}");
            return ExitCode::from(cli::EXIT_RUNBOX_ERROR);
        }
    };
    let result = runtime.block_on(cli::main(cli));
    // Runs still winding down on their own threads (cancelled, their compile children
    // killed) must not hold up the exit.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("runbox: error: {}", describe_error(&e));
            ExitCode::from(cli::EXIT_RUNBOX_ERROR)
        }
    }
}

/// The error and its causes on one line, leaving out a cause its parent already quotes.
fn describe_error(e: &anyhow::Error) -> String {
    let mut message = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !message.contains(&cause) {
            message = format!("{message}: {cause}");
        }
    }
    message
}
