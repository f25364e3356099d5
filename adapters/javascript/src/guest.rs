//! The component's side of `runbox:plugin`: the request's files into the scratch
//! directory, then the program into an [`Interpreter`] whose output is the real standard
//! streams. A session keeps its interpreter from one call to the next.

use crate::engine::{Interpreter, Language, Output, Program, Stream};

wit_bindgen::generate!({ path: "../../wit", world: "session-plugin" });

use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
use exports::runbox::plugin::session::{Guest as SessionGuest, GuestSession};
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
