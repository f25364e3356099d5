//! The component's side of `runbox:plugin`: the request's files into the scratch
//! directory, then the program into an [`Interpreter`] whose output is the real standard
//! streams. A session keeps its interpreter from one call to the next.

use crate::engine::{Interpreter, Language, Output, Program, Stream};

wit_bindgen::generate!({ path: "../../wit", world: "command-plugin" });

use exports::runbox::plugin::command::Guest as CommandGuest;
use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
use exports::runbox::plugin::session::{Guest as SessionGuest, GuestSession};
use runbox::plugin::command_line::Invocation as CommandLine;
use runbox::plugin::{config, process};

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
    fn write(&self, stream: Stream, bytes: &[u8]) {
        match stream {
            Stream::Stdout => runbox_adapter_support::write_stdout(bytes),
            Stream::Stderr => runbox_adapter_support::write_stderr(bytes),
        }
    }
}

fn interpreter() -> Result<Interpreter, String> {
    Interpreter::new(Box::new(Stdio), language()?)
}

/// The language of the runtime's programs: its `source-language` setting, JavaScript
/// when it has none.
fn language() -> Result<Language, String> {
    let settings = config::settings();
    match runbox_adapter_support::values(&settings, "source-language").and_then(|v| v.first()) {
        None => Ok(Language::JavaScript),
        Some(name) if name == "javascript" => Ok(Language::JavaScript),
        Some(name) if name == "typescript" => Ok(Language::TypeScript),
        Some(other) => Err(format!(
            "the setting source-language = {other:?} names no language this adapter runs (javascript, typescript)"
        )),
    }
}

fn run(interpreter: &mut Interpreter, request: &RunRequest) -> Result<i32, String> {
    guest_io::write_files(&request.files)?;
    Ok(interpreter.run(&Program {
        code: &request.code,
        args: &request.args,
        stdin: request.stdin.as_deref(),
    }))
}

runbox_adapter_support::native_component!(Interpreter, interpreter, run);

/// `node FILE ARGS`, `node -e CODE`, a program on standard input: run in a fresh
/// interpreter as a run of its text would be.
impl CommandGuest for Adapter {
    fn run_command(invocation: CommandLine) -> Result<i32, String> {
        use crate::command::{parse, Source};
        let line = match parse(&invocation.name, &invocation.args, &invocation.cwd) {
            Ok(line) => line,
            Err(message) => {
                eprintln!("{message}");
                return Ok(9);
            }
        };
        let mut stdin = invocation.stdin;
        let code = match line.source {
            Source::File(path) => match std::fs::read_to_string(&path) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("{}: cannot open {path}: {e}", invocation.name);
                    return Ok(1);
                }
            },
            Source::Code(code) => code,
            Source::Print(code) => crate::command::printing(&code),
            Source::Stdin => {
                String::from_utf8_lossy(&stdin.take().unwrap_or_default()).into_owned()
            }
            Source::Version => {
                let settings = config::settings();
                let version = runbox_adapter_support::values(&settings, "version")
                    .and_then(|v| v.first().cloned())
                    .unwrap_or_default();
                println!("{version}");
                return Ok(0);
            }
        };
        Ok(interpreter()?.run(&Program {
            code: &code,
            args: &line.args,
            stdin: stdin.as_deref(),
        }))
    }
}
