//! What a session's programs learned from outside the sandbox that is not in their
//! requests: random bytes and clock readings, recorded per call so that the calls can be
//! run again, in a fresh instance, to exactly the same state (see `durable.rs`).
//!
//! A WebAssembly program is deterministic but for what its imports return. In a runbox
//! sandbox those are the request (code, arguments, stdin, input files), the files earlier
//! calls left, and three WASI sources: `wasi:random` (secure and insecure, and the
//! insecure seed), the wall clock and the monotonic clock. The journal stands in for the
//! last three in every store of a session: while recording it draws from the host and
//! keeps what it handed out; while replaying it hands out what was kept, in the same
//! order. If a replayed program asks for more than was kept, it has diverged: the journal
//! says so and falls back to the host's sources.

use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand_core::TryRng;
use serde::{Deserialize, Serialize};
use wasmtime_wasi::clocks::{HostMonotonicClock, HostWallClock};

/// What one call drew from the journal's sources, in order per source.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Draws {
    /// Every random byte, secure and insecure alike, in the order handed out.
    pub random: Vec<u8>,
    /// Wall-clock readings, in nanoseconds since the Unix epoch.
    pub wall: Vec<u64>,
    /// Monotonic-clock readings, in nanoseconds.
    pub monotonic: Vec<u64>,
    /// Tool calls (`/tools/call`): each request and the answer it got, so that a replay
    /// never calls an upstream server again.
    pub tools: Vec<ToolDraw>,
}

/// One tool call as a program made it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDraw {
    pub request: Vec<u8>,
    pub answer: Vec<u8>,
}

impl Draws {
    pub fn bytes(&self) -> usize {
        let tools: usize = self
            .tools
            .iter()
            .map(|t| t.request.len() + t.answer.len())
            .sum();
        self.random.len() + 8 * (self.wall.len() + self.monotonic.len()) + tools
    }
}

/// The most one call may draw while recording (random bytes, and 8 bytes per clock
/// reading): past it the call cannot be replayed, and the journal stops keeping.
pub const MAX_DRAWS_BYTES: usize = 4 << 20;

/// Where the journal is: drawing from the host (keeping what it hands out, `None` once
/// past [`MAX_DRAWS_BYTES`]), or handing out a call's draws again.
#[derive(Debug)]
enum Mode {
    Record(Option<Draws>),
    Replay {
        draws: Draws,
        random_at: usize,
        wall_at: usize,
        monotonic_at: usize,
        tool_at: usize,
        diverged: bool,
    },
}

/// One session's journal, shared by every store of the session.
#[derive(Debug, Clone)]
pub struct Journal(Arc<Mutex<Mode>>);

impl Default for Journal {
    fn default() -> Self {
        Journal(Arc::new(Mutex::new(Mode::Record(Some(Draws::default())))))
    }
}

/// The monotonic clock starts at an arbitrary point: the host's, measured from here.
fn host_monotonic() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn host_wall() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Journal {
    fn mode(&self) -> MutexGuard<'_, Mode> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts recording a new call; what was drawn before is dropped.
    pub fn record(&self) {
        *self.mode() = Mode::Record(Some(Draws::default()));
    }

    /// Starts handing out `draws` again (the replay of one call).
    pub fn replay(&self, draws: Draws) {
        *self.mode() = Mode::Replay {
            draws,
            random_at: 0,
            wall_at: 0,
            monotonic_at: 0,
            tool_at: 0,
            diverged: false,
        };
    }

    /// What a tool call gets in a replay: the answer it got when recorded (`Some(Ok)`),
    /// or `Some(Err)` when the replay asks what was not asked then (it diverged: no
    /// upstream is called again). `None` while recording: make the call.
    pub fn replayed_tool_answer(&self, request: &[u8]) -> Option<Result<Vec<u8>, ()>> {
        match &mut *self.mode() {
            Mode::Record(_) => None,
            Mode::Replay {
                draws,
                tool_at,
                diverged,
                ..
            } => match draws.tools.get(*tool_at) {
                Some(kept) if !*diverged && kept.request == request => {
                    *tool_at += 1;
                    Some(Ok(kept.answer.clone()))
                }
                _ => {
                    *diverged = true;
                    Some(Err(()))
                }
            },
        }
    }

    /// Whether a call is being run again and still follows its recorded path.
    pub fn replaying(&self) -> bool {
        matches!(
            &*self.mode(),
            Mode::Replay {
                diverged: false,
                ..
            }
        )
    }

    /// Keeps a tool call's request and answer (while recording).
    pub fn record_tool(&self, request: &[u8], answer: &[u8]) {
        let mut mode = self.mode();
        if let Mode::Record(kept) = &mut *mode {
            if let Some(draws) = kept {
                draws.tools.push(ToolDraw {
                    request: request.to_vec(),
                    answer: answer.to_vec(),
                });
                if draws.bytes() > MAX_DRAWS_BYTES {
                    *kept = None;
                }
            }
        }
    }

    /// What the call drew (recording; `None` when it drew more than could be kept), and
    /// the journal starts over for the next call.
    pub fn take(&self) -> Option<Draws> {
        match std::mem::replace(&mut *self.mode(), Mode::Record(Some(Draws::default()))) {
            Mode::Record(draws) => draws,
            Mode::Replay { draws, .. } => Some(draws),
        }
    }

    /// Whether a replayed call drew something it did not draw when recorded (or less of
    /// it): then the replay did not take the recorded path. Ends the replay.
    pub fn finish_replay(&self) -> bool {
        let mode = std::mem::replace(&mut *self.mode(), Mode::Record(Some(Draws::default())));
        match mode {
            Mode::Record(_) => false,
            Mode::Replay {
                draws,
                random_at,
                wall_at,
                monotonic_at,
                tool_at,
                diverged,
            } => {
                diverged
                    || random_at != draws.random.len()
                    || wall_at != draws.wall.len()
                    || monotonic_at != draws.monotonic.len()
                    || tool_at != draws.tools.len()
            }
        }
    }

    fn fill(&self, dst: &mut [u8]) {
        let mut mode = self.mode();
        match &mut *mode {
            Mode::Record(kept) => {
                getrandom::getrandom(dst).expect("the host has randomness");
                if let Some(draws) = kept {
                    draws.random.extend_from_slice(dst);
                    if draws.bytes() > MAX_DRAWS_BYTES {
                        *kept = None;
                    }
                }
            }
            Mode::Replay {
                draws,
                random_at,
                diverged,
                ..
            } => match draws.random.get(*random_at..*random_at + dst.len()) {
                Some(kept) if !*diverged => {
                    dst.copy_from_slice(kept);
                    *random_at += dst.len();
                }
                _ => {
                    *diverged = true;
                    getrandom::getrandom(dst).expect("the host has randomness");
                }
            },
        }
    }

    fn clock(&self, wall: bool) -> u64 {
        let mut mode = self.mode();
        let now = || if wall { host_wall() } else { host_monotonic() };
        match &mut *mode {
            Mode::Record(kept) => {
                let value = now();
                if let Some(draws) = kept {
                    if wall {
                        &mut draws.wall
                    } else {
                        &mut draws.monotonic
                    }
                    .push(value);
                    if draws.bytes() > MAX_DRAWS_BYTES {
                        *kept = None;
                    }
                }
                value
            }
            Mode::Replay {
                draws,
                wall_at,
                monotonic_at,
                diverged,
                ..
            } => {
                let (kept, at) = if wall {
                    (&draws.wall, wall_at)
                } else {
                    (&draws.monotonic, monotonic_at)
                };
                match kept.get(*at) {
                    Some(&value) if !*diverged => {
                        *at += 1;
                        value
                    }
                    _ => {
                        *diverged = true;
                        now()
                    }
                }
            }
        }
    }

    /// A random source for `wasi:random` (secure or insecure) drawing from this journal.
    pub fn random(&self) -> JournalRandom {
        JournalRandom(self.clone())
    }

    /// The seed of `wasi:random/insecure-seed`, drawn like any random bytes.
    pub fn seed(&self) -> u128 {
        let mut bytes = [0u8; 16];
        self.fill(&mut bytes);
        u128::from_le_bytes(bytes)
    }

    pub fn wall_clock(&self) -> JournalWallClock {
        JournalWallClock(self.clone())
    }

    pub fn monotonic_clock(&self) -> JournalMonotonicClock {
        JournalMonotonicClock(self.clone())
    }
}

/// `wasi:random` through the journal.
pub struct JournalRandom(Journal);

impl TryRng for JournalRandom {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        let mut b = [0u8; 4];
        self.0.fill(&mut b);
        Ok(u32::from_le_bytes(b))
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        let mut b = [0u8; 8];
        self.0.fill(&mut b);
        Ok(u64::from_le_bytes(b))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        self.0.fill(dst);
        Ok(())
    }
}

/// `wasi:clocks/wall-clock` through the journal.
pub struct JournalWallClock(Journal);

impl HostWallClock for JournalWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.clock(true))
    }
}

/// `wasi:clocks/monotonic-clock` through the journal.
pub struct JournalMonotonicClock(Journal);

impl HostMonotonicClock for JournalMonotonicClock {
    fn resolution(&self) -> u64 {
        1
    }

    fn now(&self) -> u64 {
        self.0.clock(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_core::Rng;

    #[test]
    fn a_replay_hands_out_what_was_recorded_in_order() {
        let journal = Journal::default();
        let mut random = journal.random();
        let (wall, mono) = (journal.wall_clock(), journal.monotonic_clock());
        let recorded = (
            random.next_u64(),
            wall.now(),
            mono.now(),
            random.next_u32(),
            journal.seed(),
        );
        let draws = journal.take().unwrap();
        assert_eq!(draws.random.len(), 8 + 4 + 16);
        journal.replay(draws.clone());
        let replayed = (
            random.next_u64(),
            wall.now(),
            mono.now(),
            random.next_u32(),
            journal.seed(),
        );
        assert_eq!(recorded, replayed);
        assert!(
            !journal.finish_replay(),
            "the same path is not a divergence"
        );
    }

    #[test]
    fn drawing_more_or_less_than_recorded_is_a_divergence() {
        let journal = Journal::default();
        let mut random = journal.random();
        random.next_u64();
        let draws = journal.take().unwrap();
        journal.replay(draws.clone());
        random.next_u64();
        random.next_u64();
        assert!(journal.finish_replay(), "one draw too many");
        journal.replay(draws);
        assert!(journal.finish_replay(), "one draw too few");
    }

    #[test]
    fn tool_calls_are_replayed_never_made_again() {
        let journal = Journal::default();
        assert_eq!(
            journal.replayed_tool_answer(b"q1"),
            None,
            "recording: make the call"
        );
        journal.record_tool(b"q1", b"a1");
        journal.record_tool(b"q2", b"a2");
        let draws = journal.take().unwrap();
        assert_eq!(draws.tools.len(), 2);
        journal.replay(draws.clone());
        assert_eq!(
            journal.replayed_tool_answer(b"q1"),
            Some(Ok(b"a1".to_vec()))
        );
        assert_eq!(
            journal.replayed_tool_answer(b"q2"),
            Some(Ok(b"a2".to_vec()))
        );
        assert!(!journal.finish_replay());
        journal.replay(draws);
        assert_eq!(
            journal.replayed_tool_answer(b"other"),
            Some(Err(())),
            "a new request"
        );
        assert_eq!(
            journal.replayed_tool_answer(b"q2"),
            Some(Err(())),
            "and after it"
        );
        assert!(journal.finish_replay());
    }

    /// A program that draws without end cannot make the host keep it all.
    #[test]
    fn a_call_that_draws_too_much_is_not_kept() {
        let journal = Journal::default();
        let mut random = journal.random();
        let mut chunk = vec![0u8; 1 << 20];
        for _ in 0..5 {
            random.fill_bytes(&mut chunk);
        }
        assert_eq!(journal.take(), None);
        random.fill_bytes(&mut chunk);
        assert_eq!(
            journal.take().unwrap().random.len(),
            1 << 20,
            "the next call is kept"
        );
    }
}
