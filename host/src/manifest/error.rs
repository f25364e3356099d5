//! What is wrong with a plugins file: every error names the file, and where it can, the
//! entry and the field.

use std::path::PathBuf;

use super::include::IncludeError;

#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read plugins file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid plugins file {file}: {message}")]
    Syntax { file: String, message: String },
    #[error("invalid plugins file {file}: entry `{entry}`: field `{field}`: {message}")]
    Field {
        file: String,
        entry: String,
        field: String,
        message: String,
    },
    #[error("invalid plugins file {file}: {error}")]
    Include { file: String, error: IncludeError },
    #[error("invalid plugins file {file}: no runtimes are defined (add a [plugins.NAME] table)")]
    Empty { file: String },
    #[error("plugins file {file}: runtime `{runtime}` takes the command `{command}`, which runtime `{taken_by}` already has; choose another name")]
    CommandTaken {
        file: String,
        runtime: String,
        command: String,
        taken_by: String,
    },
    #[error("plugins file {file} adds runtime `{name}`, which {taken_by} already has; choose another name")]
    Taken {
        file: String,
        name: String,
        taken_by: String,
    },
}
