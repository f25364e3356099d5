//! Guest-side plumbing every built-in adapter shares, included as source by each adapter's
//! `guest.rs` (`#[path]`), where the `runbox:plugin` bindings and the settings helpers
//! `values` and `scratch_path` are in scope as `super::…`.

use std::fs;
use std::path::Path;

use super::{config, process, scratch_path, values, File, Info};

/// `describe()` from the settings the host fills in from the plugins.toml entry.
pub fn describe_from_settings() -> Info {
    let settings = config::settings();
    // The host always sets these four; an empty string would only show a host bug.
    let field = |key: &str| {
        values(&settings, key)
            .and_then(|v| v.first().cloned())
            .unwrap_or_default()
    };
    Info {
        name: field("name"),
        language: field("language"),
        version: field("version"),
        extension: field("extension"),
        session_state: field("session-state") == "true",
    }
}

/// Writes the request's extra files into the scratch directory.
pub fn write_files(files: &[File]) -> Result<(), String> {
    for file in files {
        let relative =
            scratch_path(&file.path).map_err(|e| format!("file `{}`: {e}", file.path))?;
        write_file(&format!("/{relative}"), &file.contents)
            .map_err(|e| format!("cannot write file `{}`: {e}", file.path))?;
    }
    Ok(())
}

/// Writes `contents` to the absolute sandbox path `path`, creating its parent directories.
pub fn write_file(path: &str, contents: &[u8]) -> std::io::Result<()> {
    match Path::new(path).parent() {
        Some(parent) if parent != Path::new("/") => fs::create_dir_all(parent)?,
        _ => {}
    }
    fs::write(path, contents)
}

/// Runs `command` to completion through the host and returns its exit code.
pub fn spawn(command: process::Command) -> Result<i32, String> {
    process::spawn(&command).map_err(|e| spawn_error(&command.program, e))
}

/// Why `program` could not be started, for the user.
pub fn spawn_error(program: &str, e: process::SpawnError) -> String {
    match e {
        process::SpawnError::NotFound(detail) => format!(
            "cannot start `{program}`: no such tool is declared for this runtime, or the file is missing ({detail})"
        ),
        process::SpawnError::InvalidProgram(detail) => format!(
            "cannot start `{program}`: not a runnable WebAssembly program ({detail})"
        ),
    }
}
