//! Where a program's output goes: the interpreter writes each `console.log` line or
//! `process.stdout.write` through an [`Output`] (the real standard streams in the
//! component, a buffer in the tests).

/// Where a program's output goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// The program's standard output and error. Each call is one `console.log` line or one
/// `process.stdout.write`, to be written (and flushed) at once.
pub trait Output {
    fn write(&self, stream: Stream, bytes: &[u8]);
}
