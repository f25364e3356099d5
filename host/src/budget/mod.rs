//! What a run may use, counted as it goes: memory (the server's and each run's), the
//! scratch directory's bytes and files (and the room of the volume all runs share), and
//! captured output. The lowest layer: every
//! other part charges these, and they know nothing of runs, sandboxes or plugins.

pub mod disk;
pub mod memory;
pub mod output;
pub mod volume;
