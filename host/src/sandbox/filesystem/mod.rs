//! `wasi:filesystem/types` with the run's scratch-space cap: every call is delegated to
//! wasmtime-wasi's own implementation ([`WasiFilesystemCtxView`]); the calls that grow
//! files or create names are charged to the run's [`DiskBudget`] first and refused with
//! `insufficient-space` (ENOSPC to a preview1 program) past the cap.
//!
//! - Bytes: `write`, `set-size`, and the streams of `write-via-stream` and
//!   `append-via-stream` (wrapped in a [`QuotaOutputStream`]) are charged by the growth of
//!   the file's high-water mark; see `disk.rs` for the rule and for when bytes come back.
//!   `symlink-at` is charged the target's length in bytes and `create-directory-at`
//!   [`DIRECTORY_BYTES`] (4096); nothing is created past the cap. Those bytes come back
//!   when `remove-directory-at`, `unlink-file-at` of a symlink's last link, or `rename-at`
//!   over it removes the object (`link-at` of a symlink adds a link, not a charge).
//! - Names: `open-at` with `create` of a path that does not exist yet,
//!   `create-directory-at`, `symlink-at` and `link-at` take one entry each;
//!   `unlink-file-at`, `remove-directory-at` and `rename-at` over an existing name give one
//!   back.
//!
//! A stream refused for space fails with an error that `types::Host::filesystem_error_code`
//! (`host.rs`) maps to `insufficient-space`, which is what the preview1 bridge and wasi-libc ask
//! for when a stream write fails.
//!
//! - [`view`]: a store's filesystem with its side of the disk budget and its devices,
//!   and the bookkeeping every operation shares.
//! - [`host`]: the `wasi:filesystem/types` host, each operation charged or delegated.
//! - [`streams`]: the file streams that charge what they write.
//! - [`device`]: how a `/tools/call` descriptor answers the operations
//!   (`sandbox/tool_device.rs` is the device itself).

mod device;
mod host;
mod streams;
mod view;

pub use streams::{QuotaInputStream, QuotaOutputStream};
pub use view::{add_to_linker, QuotaFs, QuotaFsView, StoreDisk, WasiQuotaFsView};

#[cfg(test)]
mod tests;
