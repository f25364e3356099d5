//! `plugins.toml`: the list of runtimes, their artifacts and their settings. [`schema`]
//! is what an entry holds; [`validate`] checks each of its sections; `include.rs` reads
//! the files it names; `list.rs` reads the whole of it into a [`Manifest`].
//!
//! The default list is compiled into the binary; `--plugins FILE` or `RUNBOX_PLUGINS`
//! replaces it. Every error names the file, the entry and the field.

mod error;
mod include;
mod list;
mod schema;
mod validate;

pub use error::ManifestError;
pub use include::{Files, IncludeError};
pub use list::{Manifest, DEFAULT_MANIFEST, DEFAULT_MANIFEST_NAME};
pub use schema::*;
