//! The component's side of `runbox:plugin`: reads the settings, prepares the scratch
//! directory and spawns the tool. The command-line logic is in [`crate::plan`].

use crate::plan::{self, scratch_path, values};

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
use runbox::plugin::{config, process};

#[path = "../../shared/guest_io.rs"]
mod guest_io;

struct Adapter;

export!(Adapter);

impl Guest for Adapter {
    fn describe() -> Info {
        guest_io::describe_from_settings()
    }

    fn run(request: RunRequest) -> Result<i32, String> {
        let invocation = plan::invocation(&config::settings(), &request.args)?;
        guest_io::write_files(&request.files)?;
        for (path, contents) in &invocation.files {
            guest_io::write_file(path, contents.as_bytes())
                .map_err(|e| format!("cannot write `{path}`: {e}"))?;
        }
        if let Some(path) = &invocation.stdin_file {
            guest_io::write_file(path, request.stdin.as_deref().unwrap_or_default())
                .map_err(|e| format!("cannot write the standard input to `{path}`: {e}"))?;
        }
        guest_io::write_file(&invocation.entry, request.code.as_bytes())
            .map_err(|e| format!("cannot write the program to `{}`: {e}", invocation.entry))?;
        guest_io::spawn(process::Command {
            program: invocation.program,
            args: invocation.args,
            env: invocation.env,
            stdin: request.stdin,
        })
    }
}
