//! The component's side of `runbox:plugin`: the request's files into the scratch
//! directory, then the script into a [`Shell`] whose output is the real standard streams.
//! A session keeps its shell from one call to the next.

use std::sync::Arc;

use crate::shell::{Output, Script, Shell};

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
    fn stdout(&self, bytes: &[u8]) {
        runbox_adapter_support::write_stdout(bytes);
    }

    fn stderr(&self, bytes: &[u8]) {
        runbox_adapter_support::write_stderr(bytes);
    }
}

fn shell() -> Result<Shell, String> {
    Shell::new("/", Arc::new(Stdio))
}

fn run(shell: &mut Shell, request: &RunRequest) -> Result<i32, String> {
    guest_io::write_files(&request.files)?;
    Ok(shell.run(&Script {
        code: &request.code,
        args: &request.args,
        stdin: request.stdin.as_deref(),
    }))
}

runbox_adapter_support::native_component!(Shell, shell, run);
