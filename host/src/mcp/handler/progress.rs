//! Progress notifications for long calls: a client that sends a `progressToken` hears
//! from the server every [`PROGRESS_EVERY`] while the call is under way (waiting for a
//! runtime to be prepared, or running), so it does not give up on long data work.

use std::future::Future;
use std::time::{Duration, Instant};

use rmcp::model::ProgressNotificationParam;
use rmcp::service::RequestContext;
use rmcp::RoleServer;

use crate::service::RunWatch;

/// How often a client that asked hears about a call under way (the contract says at
/// least every 5 s).
pub const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// Awaits `work`, sending `notifications/progress` (seconds elapsed, what is going on,
/// and the output so far when `watch` sees the call) every [`PROGRESS_EVERY`] when the
/// request carried a progress token.
pub async fn with_progress<T>(
    context: &RequestContext<RoleServer>,
    what: &str,
    watch: Option<&RunWatch>,
    work: impl Future<Output = T>,
) -> T {
    let Some(token) = context.meta.get_progress_token() else {
        return work.await;
    };
    let started = Instant::now();
    tokio::pin!(work);
    let mut ticks =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticks.tick() => {
                let elapsed = started.elapsed().as_secs_f64();
                let mut note = ProgressNotificationParam::new(token.clone(), elapsed.floor());
                let mut message = format!("{what}: {elapsed:.0} s so far");
                if let Some((bytes, _)) = watch.and_then(RunWatch::output_so_far) {
                    message.push_str(&format!(", {bytes} bytes of output"));
                }
                note.message = Some(message);
                // A client that is gone cannot be told; the run goes on to its own end.
                if let Err(e) = context.peer.notify_progress(note).await {
                    tracing::debug!("cannot send a progress notification: {e}");
                }
            }
        }
    }
}
