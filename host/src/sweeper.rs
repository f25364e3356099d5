//! A background thread that tidies a shared structure every so often and ends with it.

use std::sync::Weak;
use std::time::Duration;

/// A quarter of `period`, within `least..=most`: how often to sweep what lives for
/// `period`, so that it goes soon after its time without the thread waking needlessly.
pub fn quarter_of(period: Duration, least: Duration, most: Duration) -> Duration {
    (period / 4).clamp(least, most)
}

/// [`spawn`], with a failure to start the thread logged (`what` names what then stays
/// untidied).
pub fn start<T, F>(name: &str, what: &str, every: Duration, target: Weak<T>, work: F)
where
    T: Send + Sync + 'static,
    F: Fn(&T) + Send + 'static,
{
    if let Err(e) = spawn(name, every, target, work) {
        tracing::error!("cannot start the {name} thread, {what}: {e}");
    }
}

/// Spawns a thread named `name` that calls `work` on `target` every `every`, as long as
/// something else holds `target` (the thread keeps only a [`Weak`]); it ends once the
/// target is dropped.
pub fn spawn<T, F>(name: &str, every: Duration, target: Weak<T>, work: F) -> std::io::Result<()>
where
    T: Send + Sync + 'static,
    F: Fn(&T) + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || loop {
            std::thread::sleep(every);
            let Some(target) = target.upgrade() else {
                return;
            };
            work(&target);
        })
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn works_while_the_target_lives_and_ends_with_it() {
        let target = Arc::new(AtomicUsize::new(0));
        spawn(
            "sweeper-test",
            Duration::from_millis(5),
            Arc::downgrade(&target),
            |n: &AtomicUsize| {
                n.fetch_add(1, Ordering::SeqCst);
            },
        )
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while target.load(Ordering::SeqCst) < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the sweeper never ran"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let weak = Arc::downgrade(&target);
        drop(target);
        // The thread holds the target only while it works on it.
        while weak.upgrade().is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "the sweeper kept its target"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
