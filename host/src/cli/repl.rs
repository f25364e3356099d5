//! `runbox repl RUNTIME`: a session at a terminal, so a person sees what a model sees.
//!
//! Each entered block is one `run_code` call in one session. A line runs as soon as it
//! is entered, unless it opens a block: it ends with `:`, `{`, `(`, `[`, `,`, `\` or
//! ` do` (or `|…|` after `do`), or a block is already open; then lines gather until an
//! empty line. `:quit` (or end of input) ends the session, `:files` lists the session's
//! files from the last call, `:help` says this.

use std::io::{BufRead, IsTerminal, Write};

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use super::terminal::replay_as_terminal;
use clap::Args;
use runbox::files::ReturnCaps;
use runbox::outcome::{RunOutcome, RunStatus};
use runbox::service::{LimitOverrides, LimitSettings, RunRequest, Runbox, RunboxOptions};

use super::limits::seconds;
use super::{check_runtime_name, GlobalArgs};

#[derive(Debug, Args)]
pub struct ReplArgs {
    #[arg(help = super::runtime_help())]
    pub runtime: String,
    /// Wall-clock limit of each block, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
}

/// `runbox repl RUNTIME`.
pub async fn command(global: &GlobalArgs, args: ReplArgs) -> Result<u8> {
    let timeout = seconds("--timeout", args.timeout)?;
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
    repl(&runbox, &args.runtime, timeout).await
}

const HELP: &str = "Enter code; a line runs when entered, unless it opens a block (ends \
with `:`, `{`, `(`, `[`, `,`, `\\` or `do`): then an empty line runs the block. Each block \
is one call in this session, with what earlier calls defined. :files lists the files the \
last call wrote, :quit (or Ctrl-D) ends the session.";

/// Whether `line` leaves a block open, so more lines follow before it runs.
pub fn opens_block(line: &str) -> bool {
    let line = line.trim_end();
    ['{', '(', '[', ':', ',', '\\']
        .iter()
        .any(|c| line.ends_with(*c))
        || line.ends_with(" do")
        || line == "do"
        || (line.contains(" do |") && line.ends_with('|'))
}

/// Splits input into the blocks the REPL runs, as [`opens_block`] says.
pub struct Blocks {
    pending: Vec<String>,
}

impl Blocks {
    pub fn new() -> Blocks {
        Blocks {
            pending: Vec::new(),
        }
    }

    /// Whether lines are gathering (for the prompt).
    pub fn is_open(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Takes one line; returns a block once one is complete.
    pub fn push(&mut self, line: &str) -> Option<String> {
        let line = line.trim_end_matches(['\n', '\r']);
        if self.pending.is_empty() {
            if line.trim().is_empty() {
                return None;
            }
            if !opens_block(line) {
                return Some(line.to_string());
            }
            self.pending.push(line.to_string());
            return None;
        }
        if line.trim().is_empty() {
            return self.finish();
        }
        self.pending.push(line.to_string());
        None
    }

    /// What is still gathering, at the end of input.
    pub fn finish(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.pending).join("\n") + "\n")
    }
}

impl Default for Blocks {
    fn default() -> Self {
        Blocks::new()
    }
}

/// Runs the REPL for `runtime` on this process's stdin and stdout; returns the exit
/// status (0, or 1 when the last call did not complete).
pub async fn repl(runbox: &Runbox, runtime: &str, timeout: std::time::Duration) -> Result<u8> {
    let session = runbox.create_session(runtime).await?;
    let interactive = std::io::stdin().is_terminal();
    let kept = if session.keeps_state {
        "variables, functions and imports carry over"
    } else {
        "files carry over; each block runs anew"
    };
    if interactive {
        eprintln!(
            "runbox repl: {runtime} session {} ({kept}). :help for help, Ctrl-D to end.",
            session.session_id
        );
    }
    let mut blocks = Blocks::new();
    let mut last: Option<RunOutcome> = None;
    let mut status = 0;
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if interactive {
            eprint!("{}", if blocks.is_open() { "... " } else { ">>> " });
            std::io::stderr().flush()?;
        }
        let block = match lines.next() {
            Some(line) => {
                let line = line?;
                match line.trim() {
                    ":quit" | ":exit" | ":q" if !blocks.is_open() => break,
                    ":help" if !blocks.is_open() => {
                        eprintln!("{HELP}");
                        continue;
                    }
                    ":files" if !blocks.is_open() => {
                        list_files(last.as_ref());
                        continue;
                    }
                    _ => blocks.push(&line),
                }
            }
            None => match blocks.finish() {
                Some(block) => Some(block),
                None => break,
            },
        };
        let Some(code) = block else { continue };
        let outcome = runbox
            .run(
                RunRequest {
                    code,
                    limits: LimitOverrides {
                        timeout: Some(timeout),
                        memory_bytes: None,
                        max_timeout: None,
                    },
                    return_caps: ReturnCaps::everything(),
                    session_id: Some(session.session_id.clone()),
                    ..RunRequest::default()
                },
                CancellationToken::new(),
            )
            .await?;
        show(&outcome)?;
        status = if outcome.status == RunStatus::Completed {
            0
        } else {
            1
        };
        last = Some(outcome);
    }
    runbox.close_session(&session.session_id)?;
    Ok(status)
}

/// The call's output as a terminal shows it, then what went wrong, if anything.
fn show(outcome: &RunOutcome) -> Result<()> {
    replay_as_terminal(outcome)?;
    let mut err = std::io::stderr().lock();
    if let Some(code) = outcome.exit_code.filter(|c| *c != 0) {
        writeln!(err, "[exit code {code}]")?;
    }
    if let Some(e) = &outcome.error {
        writeln!(err, "[{}: {e}]", outcome.status.as_str())?;
    }
    for file in &outcome.files {
        writeln!(err, "[wrote {} ({} bytes)]", file.path, file.size)?;
    }
    Ok(())
}

fn list_files(last: Option<&RunOutcome>) {
    match last.map(|o| &o.files) {
        Some(files) if !files.is_empty() => {
            for f in files {
                eprintln!("{} ({} bytes, {})", f.path, f.size, f.mime_type);
            }
        }
        _ => eprintln!("the last call wrote no files"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_run_at_once_and_blocks_at_an_empty_line() {
        let mut b = Blocks::new();
        assert_eq!(b.push("x = 1\n"), Some("x = 1".into()));
        assert_eq!(b.push(""), None);
        assert_eq!(b.push("def f(a):"), None);
        assert!(b.is_open());
        assert_eq!(b.push("    return a"), None);
        assert_eq!(b.push(""), Some("def f(a):\n    return a\n".into()));
        assert_eq!(b.push("function g() {"), None);
        assert_eq!(b.finish(), Some("function g() {\n".into()));
        assert!(!b.is_open());
    }

    #[test]
    fn what_opens_a_block() {
        for open in [
            "if x:",
            "f(",
            "[1,",
            "do",
            "xs.each do |x|",
            "a \\",
            "int main() {",
        ] {
            assert!(opens_block(open), "{open}");
        }
        for line in ["print(1)", "x = [1]", "puts 'do'", "done"] {
            assert!(!opens_block(line), "{line}");
        }
    }
}
