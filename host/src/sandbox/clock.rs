//! A call's deadline and cancellation, handed to whatever runs for the call as the
//! context of its task rather than parked in the sandbox.
//!
//! The call's thread runs its work inside [`timed`]; every store polled there (the
//! plugin's, the tools it spawns, a resident driver it feeds, a session's kept instance)
//! reads the clock of the call under way at each epoch tick ([`current`]), so a store
//! made by an earlier call of a session obeys this call's deadline without being told.
//! Wasm that runs outside any call is stopped at once.
//!
//! Build steps (a compiler, a linker, the host compiling a program the plugin produced)
//! run on a budget of their own ([`CallClock::build_step`]): while one runs, the deadline
//! is the build budget's, and the time it took is added to the program's deadline after,
//! so compiling never eats the time limit the client gave the program.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

tokio::task_local! {
    static CALL: Arc<CallClock>;
}

/// One call's deadline and cancellation.
#[derive(Debug)]
pub struct CallClock {
    state: Mutex<ClockState>,
    /// Woken when the deadline moves (a build step began or ended).
    moved: Notify,
    cancel: CancellationToken,
}

#[derive(Debug)]
struct ClockState {
    /// The program's deadline, moved later by the time build steps took.
    deadline: Instant,
    /// What the build steps of this call may still take, and what they were given.
    build_left: Duration,
    build_budget: Duration,
    /// While a build step runs: when it started, and how deep the steps nest (a build
    /// step may compile a program it produced).
    building: Option<(Instant, u32)>,
    /// A build step ran into the build budget.
    build_overran: bool,
}

impl ClockState {
    fn deadline(&self) -> Instant {
        match self.building {
            Some((since, _)) => since + self.build_left,
            None => self.deadline,
        }
    }
}

impl CallClock {
    /// A clock whose build steps share the program's deadline (no budget of their own).
    pub fn new(deadline: Instant, cancel: CancellationToken) -> Arc<CallClock> {
        CallClock::with_build_budget(deadline, Duration::ZERO, cancel)
    }

    /// A clock whose build steps may take `build_budget` in all, on top of the time
    /// until `deadline` the program itself gets.
    pub fn with_build_budget(
        deadline: Instant,
        build_budget: Duration,
        cancel: CancellationToken,
    ) -> Arc<CallClock> {
        Arc::new(CallClock {
            state: Mutex::new(ClockState {
                deadline,
                build_left: build_budget,
                build_budget,
                building: None,
                build_overran: false,
            }),
            moved: Notify::new(),
            cancel,
        })
    }

    fn state(&self) -> MutexGuard<'_, ClockState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When running guests must stop: the build budget's end while a build step runs
    /// (when the call has one), else the program's deadline.
    pub fn deadline(&self) -> Instant {
        self.state().deadline()
    }

    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Past the deadline, or cancelled: running guests must stop.
    pub fn is_over(&self) -> bool {
        Instant::now() >= self.deadline() || self.cancel.is_cancelled()
    }

    /// Waits until the deadline has passed, following it as build steps move it.
    pub async fn reached(&self) {
        loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            let deadline = self.deadline();
            if Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)) => {}
                _ = moved => {}
            }
        }
    }

    /// What the call's build steps have taken so far.
    pub fn build_time(&self) -> Duration {
        let state = self.state();
        let running = state
            .building
            .map_or(Duration::ZERO, |(since, _)| since.elapsed());
        (state.build_budget - state.build_left + running).min(state.build_budget)
    }

    /// The build budget, when a build step ran into it (the call then ended there).
    pub fn build_overran(&self) -> Option<Duration> {
        let state = self.state();
        state.build_overran.then_some(state.build_budget)
    }

    /// Marks a build step until the guard drops. Without a build budget the step runs
    /// on the program's deadline, as everything else.
    pub fn build_step(self: &Arc<Self>) -> BuildStep {
        let mut state = self.state();
        if state.build_budget.is_zero() {
            return BuildStep { clock: None };
        }
        state.building = match state.building {
            Some((since, depth)) => Some((since, depth + 1)),
            None => Some((Instant::now(), 1)),
        };
        drop(state);
        self.moved.notify_waiters();
        BuildStep {
            clock: Some(self.clone()),
        }
    }
}

/// A build step under way (see [`CallClock::build_step`]).
pub struct BuildStep {
    clock: Option<Arc<CallClock>>,
}

impl Drop for BuildStep {
    fn drop(&mut self) {
        let Some(clock) = self.clock.take() else {
            return;
        };
        let mut state = clock.state();
        let Some((since, depth)) = state.building else {
            return;
        };
        if depth > 1 {
            state.building = Some((since, depth - 1));
            return;
        }
        let now = Instant::now();
        let took = now - since;
        if took >= state.build_left {
            state.build_overran = true;
        }
        state.build_left = state.build_left.saturating_sub(took);
        state.deadline += took;
        state.building = None;
        drop(state);
        clock.moved.notify_waiters();
    }
}

/// Runs `work` as the call `clock` times.
pub async fn timed<F: Future>(clock: Arc<CallClock>, work: F) -> F::Output {
    CALL.scope(clock, work).await
}

/// The clock of the call under way on this task, if any.
pub fn current() -> Option<Arc<CallClock>> {
    CALL.try_with(Arc::clone).ok()
}

/// Whether guests must stop now: the call under way is over, or there is none.
pub fn must_stop() -> bool {
    CALL.try_with(|clock| clock.is_over()).unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_clock_is_the_call_under_way() {
        assert!(must_stop(), "no call: stop");
        let cancel = CancellationToken::new();
        let clock = CallClock::new(Instant::now() + Duration::from_secs(60), cancel.clone());
        timed(clock, async {
            assert!(!must_stop());
            cancel.cancel();
            assert!(must_stop());
        })
        .await;
        let past = CallClock::new(Instant::now(), CancellationToken::new());
        timed(past, async { assert!(must_stop()) }).await;
    }

    /// A build step runs on the build budget, and the program's deadline moves on by the
    /// time it took.
    #[tokio::test]
    async fn build_steps_do_not_eat_the_programs_time() {
        let start = Instant::now();
        let program = Duration::from_millis(100);
        let clock = CallClock::with_build_budget(
            start + program,
            Duration::from_secs(10),
            CancellationToken::new(),
        );
        {
            let _step = clock.build_step();
            assert!(clock.deadline() >= start + Duration::from_secs(10));
            tokio::time::sleep(Duration::from_millis(150)).await;
            assert!(
                !clock.is_over(),
                "past the program's time, within the build's"
            );
        }
        assert!(
            !clock.is_over(),
            "the program's 100 ms start after the build"
        );
        assert!(clock.deadline() >= start + Duration::from_millis(250));
        assert_eq!(clock.build_overran(), None);
        assert!(clock.build_time() >= Duration::from_millis(150));
        clock.reached().await;
        let waited = start.elapsed();
        assert!(waited >= Duration::from_millis(250), "{waited:?}");
    }

    #[tokio::test]
    async fn a_build_step_past_its_budget_ends_the_call_and_says_so() {
        let budget = Duration::from_millis(50);
        let clock = CallClock::with_build_budget(
            Instant::now() + Duration::from_secs(60),
            budget,
            CancellationToken::new(),
        );
        let step = clock.build_step();
        // The waiter follows the deadline the step set (50 ms, not the program's 60 s).
        tokio::time::timeout(Duration::from_secs(5), clock.reached())
            .await
            .expect("the build budget's end is the deadline");
        assert!(clock.is_over());
        drop(step);
        assert_eq!(clock.build_overran(), Some(budget));
    }

    #[tokio::test]
    async fn without_a_build_budget_a_step_is_the_programs_time() {
        let deadline = Instant::now() + Duration::from_millis(40);
        let clock = CallClock::new(deadline, CancellationToken::new());
        let _step = clock.build_step();
        assert_eq!(clock.deadline(), deadline);
    }
}
