//! The component's side of `runbox:plugin`: reads the settings, writes the source, and
//! spawns the compiler, the linker and the program. The logic is in [`crate::plan`].

use std::fs;
use std::path::Path;

use crate::command_plan::scratch_path;
use crate::plan::{self, Step};

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use exports::runbox::plugin::runtime::{File, Guest, Info, RunRequest};
use runbox::plugin::{config, process};

struct Adapter;

export!(Adapter);

impl Guest for Adapter {
    fn describe() -> Info {
        let settings = config::settings();
        // The host always sets these four; an empty string would only show a host bug.
        let field = |key: &str| {
            crate::command_plan::values(&settings, key)
                .and_then(|v| v.first().cloned())
                .unwrap_or_default()
        };
        Info {
            name: field("name"),
            language: field("language"),
            version: field("version"),
            extension: field("extension"),
        }
    }

    fn run(request: RunRequest) -> Result<i32, String> {
        let build = plan::build(&config::settings(), &request.args)?;
        write_files(&request.files)?;
        write_file(&build.source, request.code.as_bytes())
            .map_err(|e| format!("cannot write the program to `{}`: {e}", build.source))?;
        // A failed compile or link is the run's result: its diagnostics are on stderr.
        for step in std::iter::once(build.compile).chain(build.link) {
            let code = spawn(step, None)?;
            if code != 0 {
                return Ok(code);
            }
        }
        spawn(build.run, request.stdin)
    }
}

/// Writes the request's extra files into the scratch directory.
fn write_files(files: &[File]) -> Result<(), String> {
    for file in files {
        let relative =
            scratch_path(&file.path).map_err(|e| format!("file `{}`: {e}", file.path))?;
        write_file(&format!("/{relative}"), &file.contents)
            .map_err(|e| format!("cannot write file `{}`: {e}", file.path))?;
    }
    Ok(())
}

/// Writes `contents` to the absolute sandbox path `path`, creating its parent directories.
fn write_file(path: &str, contents: &[u8]) -> std::io::Result<()> {
    match Path::new(path).parent() {
        Some(parent) if parent != Path::new("/") => fs::create_dir_all(parent)?,
        _ => {}
    }
    fs::write(path, contents)
}

/// Runs one step to completion and returns its exit code.
fn spawn(step: Step, stdin: Option<Vec<u8>>) -> Result<i32, String> {
    let command = process::Command {
        program: step.program,
        args: step.args,
        env: step.env,
        stdin,
    };
    process::spawn(&command).map_err(|e| match e {
        process::SpawnError::NotFound(detail) => format!(
            "cannot start `{}`: no such tool is declared for this runtime, or the file is missing ({detail})",
            command.program
        ),
        process::SpawnError::InvalidProgram(detail) => format!(
            "cannot start `{}`: not a runnable WebAssembly program ({detail})",
            command.program
        ),
    })
}
