//! `runbox run RUNTIME [FILE]`: one program, its output as a terminal shows it, its
//! files under `--out`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use runbox::service::RunStatus;
use runbox::service::{LimitOverrides, RunRequest, Runbox, RunboxOptions};
use runbox::service::{OutputFile, ReturnCaps};
use tokio_util::sync::CancellationToken;

use super::exit::{EXIT_CRASHED, EXIT_TERMINATED, EXIT_TIMEOUT};
use super::global::{check_runtime_name, runtime_help, GlobalArgs};
use super::limits::{seconds, LimitArgs};
use super::terminal::replay_as_terminal;

#[derive(Debug, Args)]
pub struct RunArgs {
    #[arg(help = runtime_help())]
    pub runtime: String,
    /// The program file; `-` or nothing reads it from standard input.
    pub file: Option<PathBuf>,
    /// A file given to the program as standard input; `-` is runbox's own standard input
    /// (the program then comes from FILE). Without it, what is piped into runbox is the
    /// program's standard input when the program comes from FILE; otherwise the program
    /// sees end of input at once.
    #[arg(long, value_name = "FILE")]
    pub stdin: Option<PathBuf>,
    /// Wall-clock limit in seconds (fractions allowed).
    #[arg(long, value_name = "SECS",
          default_value_t = runbox::service::LimitSettings::default().default_timeout.as_secs_f64())]
    pub timeout: f64,
    #[command(flatten)]
    pub limits: LimitArgs,
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
    files: &[OutputFile],
    out: Option<&std::path::Path>,
    err: &mut impl Write,
) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let Some(out) = out else {
        let names: Vec<String> = files
            .iter()
            .map(|f| runbox::service::escaped_name(&f.path))
            .collect();
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
                runbox::service::escaped_name(&file.path),
                file.size
            )?;
            continue;
        };
        // The path came from the sandbox's own directory listing: relative, no `..`
        // (checked again, as the host writes here).
        runbox::service::normalize_path(&file.path)
            .map_err(|rule| anyhow::anyhow!("output file `{}`: {rule}", file.path))?;
        let target = out.join(&file.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&target, bytes)
            .with_context(|| format!("cannot write {}", target.display()))?;
        let shown = runbox::service::escaped_name(&target.display().to_string());
        writeln!(err, "runbox: wrote {shown}")?;
    }
    Ok(())
}

/// `runbox run RUNTIME [FILE]`: the program's exit status, or runbox's own.
pub async fn command(global: &GlobalArgs, args: RunArgs) -> Result<u8> {
    let timeout = seconds("--timeout", args.timeout)?;
    let limits = args.limits.settings(timeout, timeout)?;
    let code_from_stdin = args.file.as_deref().is_none_or(|p| p.as_os_str() == "-");
    let stdin = match args.stdin.as_deref() {
        Some(p) if p.as_os_str() == "-" => {
            if code_from_stdin {
                anyhow::bail!(
                    "--stdin - and the program would both be read from standard input: \
                     give the program as a FILE"
                );
            }
            Some(read_all_stdin()?)
        }
        Some(p) => Some(
            std::fs::read(p).with_context(|| format!("cannot read stdin file {}", p.display()))?,
        ),
        // Piped in (`printf 'carol\n' | runbox run python greet.py`): the program's.
        None if !code_from_stdin && !std::io::stdin().is_terminal() => Some(read_all_stdin()?),
        None => None,
    };
    let code = match args.file.as_deref() {
        Some(p) if !code_from_stdin => std::fs::read_to_string(p)
            .with_context(|| format!("cannot read program file {}", p.display()))?,
        _ => read_stdin()?,
    };
    let files = args
        .files
        .iter()
        .map(|spec| read_input_file(spec))
        .collect::<Result<Vec<_>>>()?;
    // Every runtime, as over MCP: the program may run the others as commands (the
    // shell's `python`). Each is prepared when a call first asks for it.
    let options = RunboxOptions {
        limits,
        max_concurrent: 1,
        ..RunboxOptions::default()
    };
    // Check the name before loading anything, so a typo fails fast and clearly.
    check_runtime_name(global, &args.runtime)?;
    let runbox = global.start_on_demand(options)?;
    let cancel = CancellationToken::new();
    let ctrl_c = cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            ctrl_c.cancel();
        }
    });
    // The first time, the runtime is fetched and compiled: as long as it takes (the
    // program's time limit starts once it answers). A snapshot runtime answers from its
    // stand-in before its snapshot is ready, as `runbox mcp` does.
    tokio::select! {
        ready = runbox.runtime_answers(&args.runtime) => ready?,
        _ = cancel.cancelled() => return Ok(EXIT_TERMINATED),
    }
    let outcome = runbox
        .run(
            RunRequest {
                runtime: args.runtime.clone(),
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
            cancel.clone(),
        )
        .await?;
    replay_as_terminal(&outcome)?;
    let mut err = std::io::stderr().lock();
    if let Some(e) = &outcome.error {
        writeln!(err, "runbox: {}: {e}", outcome.status.as_str())?;
    }
    save_output_files(&outcome.files, args.out.as_deref(), &mut err)?;
    drop(err);
    finish_preparing(&runbox, &args.runtime, &cancel).await?;
    Ok(match outcome.status {
        RunStatus::Completed => exit_status_byte(outcome.exit_code.unwrap_or(0)),
        RunStatus::Timeout => EXIT_TIMEOUT,
        RunStatus::Crashed => EXIT_CRASHED,
        RunStatus::Terminated => EXIT_TERMINATED,
    })
}

/// Once the program answered from a stand-in (its runtime's snapshot still being taken):
/// finishes the snapshot, saying so, so that later runs start in milliseconds instead of
/// paying the start-up again. Ctrl-C stops it (the next run starts it again).
async fn finish_preparing(
    runbox: &Runbox,
    runtime: &str,
    cancel: &CancellationToken,
) -> Result<()> {
    if !runbox.is_preparing(runtime) {
        return Ok(());
    }
    std::io::stdout().flush()?;
    eprintln!(
        "runbox: `{runtime}` answered before its snapshot was ready; preparing it now, once, so \
         that later runs start in milliseconds (a few minutes; Ctrl-C stops it)"
    );
    while runbox.is_preparing(runtime) && !cancel.is_cancelled() {
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {}
            _ = cancel.cancelled() => {}
        }
    }
    Ok(())
}

/// A program's exit code as a process exit status (the low 8 bits, like a shell).
fn exit_status_byte(code: i32) -> u8 {
    (code & 0xff) as u8
}

/// Everything piped into runbox, as the program's standard input.
fn read_all_stdin() -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    Ok(bytes)
}

fn read_stdin() -> Result<String> {
    let mut code = String::new();
    std::io::stdin()
        .read_to_string(&mut code)
        .context("cannot read the program from standard input")?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

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
