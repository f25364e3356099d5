//! `wasi:clocks/monotonic-clock` for a session's stores: while a session's calls are run
//! again (a durable session resumed, or `runbox repl`'s Ctrl-C rebuilding its
//! interpreter, see `session/durable.rs`), a program's sleeps end at once.
//!
//! A replayed call reads the clocks it read the first time from the journal
//! (`sandbox/journal.rs`), so a program that slept 4 s still sees 4 s pass; waiting them
//! out again would change nothing but how long the rebuild takes. Once a replay diverges
//! (asks for what was not kept), sleeps are real again.

use wasmtime::component::{HasData, Resource};
use wasmtime_wasi::clocks::WasiClocksCtxView;
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock::{self, Duration, Instant};
use wasmtime_wasi::p2::DynPollable;

use crate::sandbox::journal::Journal;

/// The clocks of one store, with the session's journal when it has one.
pub struct ReplayClocks<'a> {
    pub inner: WasiClocksCtxView<'a>,
    pub journal: Option<&'a Journal>,
}

impl ReplayClocks<'_> {
    fn replaying(&self) -> bool {
        self.journal.is_some_and(Journal::replaying)
    }
}

/// A store data type whose monotonic clock knows replays.
pub trait WasiReplayClocksView: Send {
    fn replay_clocks(&mut self) -> ReplayClocks<'_>;
}

struct HasReplayClocks<T>(T);

impl<T: 'static> HasData for HasReplayClocks<T> {
    type Data<'a> = ReplayClocks<'a>;
}

/// Adds `wasi:clocks/monotonic-clock` (the wall clock needs no wrapping).
pub fn add_to_linker<T: WasiReplayClocksView + 'static>(
    l: &mut wasmtime::component::Linker<T>,
) -> wasmtime::Result<()> {
    monotonic_clock::add_to_linker::<T, HasReplayClocks<T>>(l, T::replay_clocks)
}

impl monotonic_clock::Host for ReplayClocks<'_> {
    fn now(&mut self) -> wasmtime::Result<Instant> {
        self.inner.now()
    }

    fn resolution(&mut self) -> wasmtime::Result<Instant> {
        self.inner.resolution()
    }

    fn subscribe_instant(&mut self, when: Instant) -> wasmtime::Result<Resource<DynPollable>> {
        // An instant already past: ready at once. (wasmtime-wasi reads the clock here
        // either way, which keeps the replay in step with the readings the journal kept.)
        let when = if self.replaying() { 0 } else { when };
        self.inner.subscribe_instant(when)
    }

    fn subscribe_duration(&mut self, d: Duration) -> wasmtime::Result<Resource<DynPollable>> {
        let d = if self.replaying() { 0 } else { d };
        self.inner.subscribe_duration(d)
    }
}
