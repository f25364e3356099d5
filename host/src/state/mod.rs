//! An instance's state below the language: the linear memories and mutable globals of the
//! core instances inside a component, read out of one instance at rest and written into a
//! fresh instance of the same compiled component, so that the fresh one continues where
//! the first stopped (a session resumed, or forked, without running its calls again).
//!
//! The component must carry the accessors of `componentize/state_access.rs`
//! ([`StateAccess`] finds them). An [`InstanceImage`] holds only what the instance changed
//! since it was made: the host pages the kernel says were written ([`written`]), each
//! compared with nothing, so taking one costs a scan of the page table and a copy of
//! what changed. A [`StoredImage`] is one as the session store keeps it.

mod access;
mod image;
mod stored;
mod tail;
mod unpack;
mod written;

pub use access::{LiveState, StateAccess, StateError, Taking};
pub use image::{ImageTail, InstanceImage, MemoryImage, SessionImage, Startup};
pub use stored::{ImageError, Payload, PayloadFile, StoredImage};
pub use tail::{FrozenTail, Overlay, Placement, Tail, TailFile, Window, SPAN};
pub use written::{page_size, page_uses, PageUse};

#[cfg(test)]
pub use tail::test_memory;
