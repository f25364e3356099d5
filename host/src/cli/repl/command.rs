//! `runbox repl RUNTIME`: a session at a terminal, so a person sees what a model sees.
//!
//! Each entered block is one `run_code` call in one session; `input.rs` says where a
//! block ends for each runtime. At a terminal the line is edited with rustyline: arrows,
//! history (kept per runtime in the user's data directory), Tab indents or completes
//! (`complete.rs`: in python, the interpreter's names), Ctrl-C clears the line,
//! Ctrl-D leaves. Ctrl-C while a block runs stops it and keeps the session's state: the
//! session keeps a journal of its blocks (as a durable session does, see
//! `session/durable.rs`), and the interpreter is rebuilt from the blocks before, by
//! running them again. That takes as long as their computing took (their sleeps end at
//! once, `sandbox/replay_clock.rs`; a wasmtime instance cannot be interrupted and kept,
//! nor its memory copied: see `session/durable.rs`), so the REPL says how long they ran
//! before it starts, and what was lost after. Lines starting with `:` are
//! the REPL's own commands (`:help`); an unknown one is refused, never sent to the
//! interpreter.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use rustyline::error::ReadlineError;
use tokio_util::sync::CancellationToken;

use super::complete::{python_matches, python_program, split_python_word, Ask, Helper, Words};
use super::input::{Blocks, Statements};
use crate::cli::global::{check_runtime_name, runtime_help, GlobalArgs};
use crate::cli::limits::seconds;
use crate::cli::terminal::replay_as_terminal;
use runbox::service::{escaped_name, OutputFile, ReturnCaps};
use runbox::service::{LimitOverrides, LimitSettings, RunRequest, Runbox, RunboxOptions};
use runbox::service::{RunOutcome, RunStatus, StateAfter};
use runbox::service::{StoreSettings, DEFAULT_MAX_ENTRY_BYTES, DEFAULT_STORED_TTL};

#[derive(Debug, Args)]
pub struct ReplArgs {
    #[arg(help = runtime_help())]
    pub runtime: String,
    /// Wall-clock limit of each block, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub timeout: f64,
}

/// `runbox repl RUNTIME`.
pub async fn command(global: &GlobalArgs, args: ReplArgs) -> Result<u8> {
    let timeout = seconds("--timeout", args.timeout)?;
    check_runtime_name(global, &args.runtime)?;
    // The session's journal (what rebuilds it after Ctrl-C) lives with a session store;
    // this one is the REPL's own, and goes with it.
    let store = tempfile::Builder::new()
        .prefix("runbox-repl-")
        .tempdir()
        .context("cannot make the REPL's temporary directory")?;
    let options = RunboxOptions {
        limits: LimitSettings {
            max_timeout: timeout,
            default_timeout: timeout,
            ..LimitSettings::default()
        },
        max_concurrent: 1,
        // Its session and the copies `:fork` makes, one inside another.
        max_sessions: 1 + MAX_REPL_FORKS,
        only: vec![args.runtime.clone()],
        session_store: Some(StoreSettings {
            dir: store.path().to_path_buf(),
            max_entries: 1 + MAX_REPL_FORKS,
            ttl: DEFAULT_STORED_TTL,
            max_entry_bytes: DEFAULT_MAX_ENTRY_BYTES,
        }),
        // Never stored while the REPL is open: it is the only session.
        session_hibernate_after: std::time::Duration::from_secs(86_400),
        ..RunboxOptions::default()
    };
    let runbox = global.load(options).await?;
    repl(&runbox, &args.runtime, timeout).await
}

/// Ctrl-C while a block runs (the terminal is then in its usual mode, so Ctrl-C is
/// SIGINT). Listened to from the REPL's start: a SIGINT never ends runbox itself.
/// (At the prompt the line editor reads Ctrl-C as a key.)
struct Interrupts(Option<tokio::signal::unix::Signal>);

impl Interrupts {
    fn new() -> Interrupts {
        Interrupts(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()).ok())
    }

    async fn next(&mut self) {
        match &mut self.0 {
            Some(signal) => {
                signal.recv().await;
            }
            None => std::future::pending().await,
        }
    }
}

/// How many `:fork`s deep a REPL may go.
const MAX_REPL_FORKS: usize = 16;

/// The REPL's own commands, for `:help`.
const COMMANDS: &str = "\
:help             this help
:files            the files the blocks wrote (the latest of each)
:save NAME [DEST] copy a file a block wrote to DEST (default: ./NAME's file name)
:open NAME        show a file a block wrote with the desktop's viewer
:fork             copy the session (its variables and files) and go on in the copy
:back             close the copy and go back to the session it was forked from
:quit             end the session (or Ctrl-D)
Tab indents at the start of a line, elsewhere completes the word (twice: lists the choices).
Ctrl-C stops a running block (the session keeps what earlier blocks made: it runs them
again, which takes as long as their computing took: their sleeps end at once) or clears
the line.";

/// Where a runtime's history is kept: `$XDG_DATA_HOME/runbox/history/RUNTIME`.
fn history_path(runtime: &str) -> Option<PathBuf> {
    let dir = dirs::data_dir()?.join("runbox").join("history");
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join(runtime))
}

/// One line from the person (or a pipe).
enum Input {
    Line(String),
    /// Ctrl-C at the prompt: the line (and any block gathering) is dropped.
    Interrupted,
    End,
}

type LineEditor = rustyline::Editor<Helper, rustyline::history::FileHistory>;

/// Lines from a terminal, edited, with history and Tab; or from a pipe, as they come.
enum Reader {
    Terminal {
        /// On the line editor's thread while a line is read.
        editor: Option<Box<LineEditor>>,
        history: Option<PathBuf>,
        /// Tabs that need the interpreter's names.
        asks: tokio::sync::mpsc::UnboundedReceiver<Ask>,
    },
    Pipe(std::io::Lines<std::io::StdinLock<'static>>),
}

impl Reader {
    /// `interpreter_names`: Tab completes from the interpreter's names (else from the
    /// words typed).
    fn new(runtime: &str, interpreter_names: bool) -> Reader {
        if std::io::stdin().is_terminal() {
            let config = rustyline::Config::builder()
                .completion_type(rustyline::CompletionType::List)
                .build();
            if let Ok(mut editor) = LineEditor::with_config(config) {
                let (ask, asks) = tokio::sync::mpsc::unbounded_channel();
                let words = match interpreter_names {
                    true => Words::Interpreter(ask),
                    false => Words::Typed,
                };
                editor.set_helper(Some(Helper { words }));
                let history = history_path(runtime);
                if let Some(path) = &history {
                    let _ = editor.load_history(path);
                }
                return Reader::Terminal {
                    editor: Some(Box::new(editor)),
                    history,
                    asks,
                };
            }
        }
        Reader::Pipe(std::io::stdin().lock().lines())
    }

    fn interactive(&self) -> bool {
        matches!(self, Reader::Terminal { .. })
    }

    /// The next line. At a terminal the line editor runs on a blocking thread, and a
    /// Tab's question is answered here, by a call in `session`.
    async fn read(&mut self, prompt: &str, session: &mut ReplSession<'_>) -> Result<Input> {
        let (editor, history, asks) = match self {
            Reader::Terminal {
                editor,
                history,
                asks,
            } => (editor, history, asks),
            Reader::Pipe(lines) => {
                return match lines.next() {
                    Some(line) => Ok(Input::Line(line?)),
                    None => Ok(Input::End),
                }
            }
        };
        let mut taken = editor.take().context("the line editor was lost")?;
        let prompt = prompt.to_string();
        let mut reading = tokio::task::spawn_blocking(move || {
            let line = taken.readline(&prompt);
            (taken, line)
        });
        let (mut taken, line) = loop {
            tokio::select! {
                read = &mut reading => break read.context("the line editor failed")?,
                Some(ask) = asks.recv() => {
                    let _ = ask.reply.send(session.names(&ask.word).await);
                }
            }
        };
        let input = match line {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = taken.add_history_entry(line.as_str());
                    if let Some(path) = history {
                        let _ = taken.append_history(path);
                    }
                }
                Ok(Input::Line(line))
            }
            Err(ReadlineError::Interrupted) => Ok(Input::Interrupted),
            Err(ReadlineError::Eof) => Ok(Input::End),
            Err(e) => Err(e.into()),
        };
        *editor = Some(taken);
        if let Some(said) = session.said_later.take() {
            eprintln!("{said}");
        }
        input
    }
}

/// A line that is one of the REPL's commands (`:word …`), as its words.
fn command_words(line: &str) -> Option<Vec<&str>> {
    let rest = line.trim().strip_prefix(':')?;
    let word = rest.split_whitespace().next()?;
    word.chars()
        .all(|c| c.is_ascii_alphabetic())
        .then(|| rest.split_whitespace().collect())
}

/// What the session's blocks wrote, the latest of each file.
#[derive(Default)]
struct Written(BTreeMap<String, OutputFile>);

impl Written {
    fn get(&self, name: &str) -> Result<&OutputFile, String> {
        self.0.get(name).ok_or_else(|| {
            if self.0.is_empty() {
                format!("no block wrote `{name}` (none wrote any file yet)")
            } else {
                let names: Vec<String> = self.0.keys().map(|n| escaped_name(n)).collect();
                format!("no block wrote `{name}`; they wrote: {}", names.join(", "))
            }
        })
    }

    /// Writes `name` to `dest` (a directory gets it under its file name).
    fn save(&self, name: &str, dest: Option<&str>) -> Result<PathBuf, String> {
        let file = self.get(name)?;
        let bytes = file
            .contents
            .as_ref()
            .ok_or_else(|| format!("`{name}` was too large to keep"))?;
        let base = Path::new(name)
            .file_name()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("file"));
        let dest = match dest {
            None => base,
            Some(d) if Path::new(d).is_dir() => Path::new(d).join(base),
            Some(d) => PathBuf::from(d),
        };
        std::fs::write(&dest, bytes)
            .map_err(|e| format!("cannot write {}: {e}", dest.display()))?;
        Ok(dest)
    }
}

/// The desktop's viewer, when there is a desktop and a viewer on PATH.
fn viewer() -> Option<&'static str> {
    let candidates: &[&str] = if cfg!(target_os = "macos") {
        &["open"]
    } else {
        let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
        if !desktop {
            return None;
        }
        &["xdg-open", "gio"]
    };
    let path = std::env::var_os("PATH")?;
    candidates
        .iter()
        .copied()
        .find(|c| std::env::split_paths(&path).any(|d| d.join(c).is_file()))
}

/// `:open NAME`: the file saved in a temporary directory, shown with the viewer.
fn open(written: &Written, name: &str, shown: &Path) -> Result<String, String> {
    let _ = std::fs::create_dir_all(shown);
    let path = written.save(name, Some(&shown.to_string_lossy()))?;
    match viewer() {
        Some(program) => {
            let mut cmd = std::process::Command::new(program);
            if program == "gio" {
                cmd.arg("open");
            }
            cmd.arg(&path)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start {program}: {e}"))?;
            Ok(format!("opened {} with {program}", path.display()))
        }
        None => Ok(format!(
            "no desktop viewer here (no display, or no xdg-open): saved to {}",
            path.display()
        )),
    }
}

/// The banner: what this runtime keeps and how a block ends.
fn banner(runbox: &Runbox, runtime: &str, statements: Statements, id: &str) -> String {
    let info = runbox.runtimes().into_iter().find(|r| r.name == runtime);
    let (language, version, keeps) = info
        .map(|r| (r.language, r.version, r.session_state))
        .unwrap_or_default();
    let kept = match (keeps, statements) {
        (true, Statements::Sql) => "tables and settings carry over from one statement to the next",
        (true, Statements::Lines | Statements::Python) => {
            "what a block defines carries over to the next ones"
        }
        (false, _) => "files carry over; each block runs anew",
    };
    format!(
        "runbox repl: {language} ({version}), session {id}: {kept}.\n{}.\n:help for commands, Tab completes, Ctrl-C stops a block, Ctrl-D leaves.",
        capitalized(statements.describe())
    )
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

/// Runs the REPL for `runtime` on this process's stdin and stdout; returns the exit
/// status (0, or 1 when the last call did not complete).
pub async fn repl(runbox: &Runbox, runtime: &str, timeout: std::time::Duration) -> Result<u8> {
    let session = runbox.create_session(runtime).await?;
    let language = runbox
        .runtimes()
        .into_iter()
        .find(|r| r.name == runtime)
        .map(|r| r.language)
        .unwrap_or_default();
    let statements = Statements::of(runtime, &language);
    // python's names come from its interpreter (`complete.rs`); other runtimes'
    // from the words typed.
    let interpreter_names = statements == Statements::Python && session.keeps_state;
    let mut reader = Reader::new(runtime, interpreter_names);
    // After the line editor, which installs a SIGINT handler of its own when made: this
    // one goes over it (and passes the signal on to it).
    let mut interrupts = Interrupts::new();
    if reader.interactive() {
        eprintln!(
            "{}",
            banner(runbox, runtime, statements, &session.session_id)
        );
    }
    let shown = std::env::temp_dir().join(format!("runbox-repl-{}", std::process::id()));
    let mut calls = ReplSession {
        runbox,
        id: session.session_id.clone(),
        timeout,
        keeps_state: session.keeps_state,
        earlier: Earlier::default(),
        names: HashMap::new(),
        said_later: None,
        forked_from: Vec::new(),
    };
    let mut blocks = Blocks::new(statements);
    let mut written = Written::default();
    let mut status = 0;
    loop {
        let prompt = if blocks.is_open() { "... " } else { ">>> " };
        let line = match reader.read(prompt, &mut calls).await? {
            Input::Line(line) => line,
            Input::Interrupted => {
                blocks.clear();
                continue;
            }
            Input::End => match blocks.finish() {
                Some(block) => {
                    status = calls.block(block, &mut written, &mut interrupts).await?;
                    break;
                }
                None => break,
            },
        };
        if !blocks.is_open() {
            if let Some(words) = command_words(&line) {
                match words.as_slice() {
                    ["quit" | "exit" | "q"] => break,
                    ["help"] => eprintln!("{}\n{COMMANDS}", capitalized(statements.describe())),
                    ["files"] => list_files(&written),
                    ["save", name] | ["save", name, _] => {
                        match written.save(name, words.get(2).copied()) {
                            Ok(path) => eprintln!("saved {name} to {}", path.display()),
                            Err(e) => eprintln!("{e}"),
                        }
                    }
                    ["open", name] => match open(&written, name, &shown) {
                        Ok(said) | Err(said) => eprintln!("{said}"),
                    },
                    ["fork"] => eprintln!("{}", calls.fork().await),
                    ["back"] => eprintln!("{}", calls.back()),
                    [other, ..] => eprintln!(
                        "unknown command :{other} (not sent to {runtime}); :help lists the commands"
                    ),
                    [] => {}
                }
                continue;
            }
        }
        let Some(code) = blocks.push(&line) else {
            continue;
        };
        status = calls.block(code, &mut written, &mut interrupts).await?;
    }
    for copy in calls.forked_from.drain(..).skip(1) {
        let _ = runbox.close_session(&copy);
    }
    if calls.id != session.session_id {
        let _ = runbox.close_session(&calls.id);
    }
    runbox.close_session(&session.session_id)?;
    let _ = std::fs::remove_dir_all(&shown);
    Ok(status)
}

/// The longest a Tab's lookup of names may run before it is stopped (the session keeps
/// its state: it is stopped as Ctrl-C stops a block).
const LOOKUP_TIME: Duration = Duration::from_secs(5);

/// The REPL's session, and what the REPL knows of it.
struct ReplSession<'a> {
    runbox: &'a Runbox,
    id: String,
    /// Each block's wall-clock limit.
    timeout: Duration,
    /// Whether its interpreter keeps state (and so is rebuilt after Ctrl-C).
    keeps_state: bool,
    /// What a rebuild after Ctrl-C runs again.
    earlier: Earlier,
    /// The interpreter's names, by the expression they are attributes of ("" for the
    /// globals), until the next block runs.
    names: HashMap<String, Vec<String>>,
    /// What a Tab's lookup that went wrong says, once the line is entered.
    said_later: Option<String>,
    /// The sessions `:fork` left, the first the REPL's own: where `:back` returns.
    forked_from: Vec<String>,
}

/// The calls the interpreter was built from since it last started, as the REPL saw them
/// (the session's history, see `session/durable.rs`): what a rebuild runs again.
#[derive(Debug, Default)]
struct Earlier {
    blocks: usize,
    /// What they took, blocks and name lookups: about what running them again takes.
    took: Duration,
}

/// How a call that the REPL stopped ended: what the session says it left of its
/// interpreter (`None`: it completed).
fn state_left(outcome: &RunOutcome) -> Option<StateAfter> {
    (outcome.status != RunStatus::Completed)
        .then(|| outcome.state_after.unwrap_or(StateAfter::Lost))
}

impl ReplSession<'_> {
    /// `:fork`: the session copied, and the REPL in the copy. What to say.
    async fn fork(&mut self) -> String {
        match self.runbox.fork_session(&self.id, 1).await {
            Ok(mut copies) => {
                let copy = copies.remove(0).session_id;
                let source = std::mem::replace(&mut self.id, copy.clone());
                self.forked_from.push(source.clone());
                self.names.clear();
                format!("forked: now in session {copy}, a copy of {source} (:back returns)")
            }
            Err(e) => format!("cannot fork: {e}"),
        }
    }

    /// `:back`: the copy closed, and the REPL in the session it was forked from.
    fn back(&mut self) -> String {
        let Some(source) = self.forked_from.pop() else {
            return "not in a fork: :fork makes one".into();
        };
        let copy = std::mem::replace(&mut self.id, source.clone());
        let _ = self.runbox.close_session(&copy);
        self.names.clear();
        format!("back in session {source} (its copy {copy} is closed)")
    }

    fn request(&self, code: String) -> RunRequest {
        RunRequest {
            code,
            limits: LimitOverrides {
                timeout: Some(self.timeout),
                memory_bytes: None,
                max_timeout: None,
            },
            return_caps: ReturnCaps::everything(),
            session_id: Some(self.id.clone()),
            keep_state_when_stopped: true,
            ..RunRequest::default()
        }
    }

    /// Books a call that ended: what a rebuild would run again. `stopped`: the REPL
    /// stopped it.
    fn book(&mut self, outcome: &RunOutcome, block: bool, stopped: bool) {
        if outcome.status == RunStatus::Completed {
            self.earlier.blocks += usize::from(block);
            self.earlier.took += outcome.duration;
            return;
        }
        let kept = stopped
            && matches!(
                state_left(outcome),
                Some(StateAfter::Untouched | StateAfter::Rebuilt { .. })
            );
        if !kept {
            // A timeout, a crash, a cap: the interpreter starts afresh.
            self.earlier = Earlier::default();
        }
    }

    /// Runs one block; Ctrl-C (`interrupts`) stops it, and the session keeps its state.
    /// Its exit status.
    async fn block(
        &mut self,
        code: String,
        written: &mut Written,
        interrupts: &mut Interrupts,
    ) -> Result<u8> {
        let cancel = CancellationToken::new();
        let run = self.runbox.run(self.request(code), cancel.clone());
        tokio::pin!(run);
        let outcome = loop {
            tokio::select! {
                outcome = &mut run => break outcome,
                () = interrupts.next() => {
                    if !cancel.is_cancelled() {
                        self.stopping();
                    }
                    cancel.cancel();
                }
            }
        };
        let outcome = outcome?;
        // The block may have changed any name.
        self.names.clear();
        let stopped = cancel.is_cancelled();
        self.book(&outcome, true, stopped);
        show(&outcome)?;
        if stopped {
            match state_left(&outcome) {
                Some(StateAfter::Rebuilt { .. }) => eprintln!(
                    "[lost: what the stopped block itself did to the interpreter (names it \
                     set or changed before it was stopped); the files it wrote are kept as \
                     it left them]"
                ),
                Some(StateAfter::Lost) => eprintln!(
                    "[lost: the interpreter's state (every variable, function and import); \
                     the files are kept]"
                ),
                Some(StateAfter::Untouched) | None => {}
            }
        }
        let status = u8::from(outcome.status != RunStatus::Completed);
        for file in outcome.files {
            written.0.insert(file.path.clone(), file);
        }
        Ok(status)
    }

    /// Ctrl-C came while a block runs: says what happens next, before the session
    /// rebuilds its interpreter by running the blocks before again.
    fn stopping(&self) {
        if !self.keeps_state || self.earlier.blocks == 0 {
            eprintln!("[stopping the block]");
            return;
        }
        let n = self.earlier.blocks;
        eprintln!(
            "[stopping the block; the session's state is rebuilt by running the {n} block{} \
             before it again (they took {:.1} s; a rebuild skips their sleeps)]",
            if n == 1 { "" } else { "s" },
            self.earlier.took.as_secs_f64()
        );
    }

    /// What `word` may complete to among the interpreter's names: the names of its
    /// expression, asked of the session once until the next block (see
    /// `complete.rs`).
    async fn names(&mut self, word: &str) -> Vec<String> {
        let (expr, _) = split_python_word(word);
        if !self.names.contains_key(expr) {
            match self.lookup(expr).await {
                Some(found) => {
                    self.names.insert(expr.to_string(), found);
                }
                None => return Vec::new(),
            }
        }
        python_matches(&self.names[expr], word)
    }

    /// The names `expr` has ("": the globals, builtins and keywords), from a call in the
    /// session that changes nothing the blocks see.
    async fn lookup(&mut self, expr: &str) -> Option<Vec<String>> {
        let cancel = CancellationToken::new();
        let run = self
            .runbox
            .run(self.request(python_program(expr)), cancel.clone());
        tokio::pin!(run);
        let outcome = tokio::select! {
            outcome = &mut run => outcome,
            () = tokio::time::sleep(LOOKUP_TIME) => {
                cancel.cancel();
                run.await
            }
        };
        let what = if expr.is_empty() {
            "the names".to_string()
        } else {
            format!("the attributes of `{expr}`")
        };
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                self.said_later = Some(format!("[Tab: cannot look up {what}: {e}]"));
                return None;
            }
        };
        self.book(&outcome, false, cancel.is_cancelled());
        if outcome.status != RunStatus::Completed {
            let error = outcome.error.as_deref().unwrap_or_default();
            self.said_later = Some(match cancel.is_cancelled() {
                true => format!(
                    "[Tab: looking up {what} was stopped after {} s: {error}]",
                    LOOKUP_TIME.as_secs()
                ),
                false => format!("[Tab: looking up {what} failed: {error}]"),
            });
            return None;
        }
        Some(super::complete::parse_names(&outcome.stdout()))
    }
}

/// The call's output as a terminal shows it, then what went wrong, if anything, and the
/// files it wrote (with how to get them).
fn show(outcome: &RunOutcome) -> Result<()> {
    replay_as_terminal(outcome)?;
    let mut err = std::io::stderr().lock();
    if let Some(code) = outcome.exit_code.filter(|c| *c != 0) {
        writeln!(err, "[exit code {code}]")?;
    }
    if let Some(e) = &outcome.error {
        writeln!(err, "[{}: {e}]", outcome.status.as_str())?;
    }
    // A program names its files: shown escaped, so none can move the cursor, retitle
    // the window or forge a line.
    for file in &outcome.files {
        let name = escaped_name(&file.path);
        writeln!(
            err,
            "[wrote {name} ({} bytes): :save {name} [DEST], :open {name}]",
            file.size
        )?;
    }
    Ok(())
}

fn list_files(written: &Written) {
    if written.0.is_empty() {
        eprintln!("no block wrote a file yet");
    }
    for f in written.0.values() {
        eprintln!(
            "{} ({} bytes, {})",
            escaped_name(&f.path),
            f.size,
            f.mime_type
        );
    }
}

#[cfg(test)]
mod tests {
    use super::command_words;

    #[test]
    fn commands_are_colon_words_and_code_is_not() {
        assert_eq!(
            command_words(":save a.png out/"),
            Some(vec!["save", "a.png", "out/"])
        );
        assert_eq!(command_words("  :bogus"), Some(vec!["bogus"]));
        assert_eq!(command_words("x = {'a': 1}"), None);
        assert_eq!(command_words(":\"quoted\""), None);
        assert_eq!(command_words("::"), None);
    }
}
