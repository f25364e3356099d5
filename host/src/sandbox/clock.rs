//! A call's deadline and cancellation, handed to whatever runs for the call as the
//! context of its task rather than parked in the sandbox.
//!
//! The call's thread runs its work inside [`timed`]; every store polled there (the
//! plugin's, the tools it spawns, a resident driver it feeds, a session's kept instance)
//! reads the clock of the call under way at each epoch tick ([`current`]), so a store
//! made by an earlier call of a session obeys this call's deadline without being told.
//! Wasm that runs outside any call is stopped at once.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

tokio::task_local! {
    static CALL: Arc<CallClock>;
}

/// One call's deadline and cancellation.
#[derive(Debug)]
pub struct CallClock {
    deadline: Instant,
    cancel: CancellationToken,
}

impl CallClock {
    pub fn new(deadline: Instant, cancel: CancellationToken) -> Arc<CallClock> {
        Arc::new(CallClock { deadline, cancel })
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    pub fn cancel(&self) -> &CancellationToken {
        &self.cancel
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Past the deadline, or cancelled: running guests must stop.
    pub fn is_over(&self) -> bool {
        Instant::now() >= self.deadline || self.cancel.is_cancelled()
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
    use std::time::Duration;

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
}
