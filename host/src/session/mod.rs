//! The session lifecycle: state that carries over between calls (docs/mcp.md,
//! "Sessions").
//!
//! `create_session` makes a [`Session`]: a sandbox that lives until the session ends (its
//! scratch directory, memory and disk budgets), and, for a plugin that keeps state
//! (exports `runbox:plugin/session`), an instance that stays alive between calls. Each
//! call still gets its own deadline, output capture and stdin ([`Session::run`]); calls
//! in one session run one at a time, in order; calls in different sessions run in
//! parallel. A call that does not complete drops the instance (the state is reset, the
//! files stay). A session ends when it is closed, after `idle` without calls, or when
//! the server stops; its files go with it.
//!
//! With a session store (`--session-store`), a session is also durable: `durable.rs`
//! keeps what it takes to rebuild it elsewhere (the calls, to run again), `snapshot.rs`
//! its interpreter's state itself where its runtime's sessions are snapshots,
//! `directory.rs` where it is kept (the session store), `entry.rs` what one stored
//! session is. `fork.rs` copies an open session into new ones.

pub mod directory;
mod durable;
pub mod entry;
mod fork;
mod history;
mod mapped_entry;
mod registry;
// The module is named for the type it holds, as the folder's other files are.
#[allow(clippy::module_inception)]
mod session;
mod snapshot;

pub use crate::sandbox::journal::Journal;
pub use registry::{Durability, SessionError, Sessions};
pub use session::Session;
