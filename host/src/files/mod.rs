//! Files in and out of a run: the input files a request brings (checked here, written
//! into the working directory by the plugin, `run-request.files` in the WIT) and the
//! files a run created or changed, collected from its scratch directory when it ends.
//!
//! The caps and messages are the contract's (docs/mcp.md, "Files"): [`input`] checks
//! what comes in, [`output`] collects what goes out, [`mime`] names it. How a file's bytes
//! travel in a message (base64) is [`wire`]'s.

mod input;
mod mime;
mod output;
mod own;
pub mod wire;

pub use input::*;
pub use mime::*;
pub use output::*;
pub use own::OwnFiles;
