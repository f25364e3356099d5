//! Durable sessions on snapshots: a session whose runtime keeps its interpreter at rest
//! between calls is stored with that interpreter's state (a `StoredImage`: its memories'
//! changed pages and its globals), and comes back by writing the state into a fresh
//! instance of the same plugin. Nothing runs again, so resuming takes as long as copying
//! the pages, whatever the calls computed, and nothing outside the sandbox can make it
//! differ. Runtimes whose sessions are programs waiting for input are replayed
//! (`durable.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::durable::charge_restored;
use super::entry::{self, StoredFile};
use super::session::Session;
use crate::run::instance::PluginInstance;
use crate::run::thread::off_the_workers;
use crate::run::{RunError, Runner};
use crate::sandbox::clock::{self, CallClock};
use crate::state::{SessionImage, StoredImage, Taking};

/// How long a resume waits for the server's memory budget before it is refused as busy.
pub(super) const RESUME_MEMORY_WAIT: Duration = Duration::from_secs(30);

/// How long taking or writing a session's state may take: it is a copy of its pages,
/// a matter of milliseconds; this only stops a plugin whose doors never answer.
const STATE_DEADLINE: Duration = Duration::from_secs(60);

/// Takes the state of `instance` (at rest: its session's lock is held) and stores it,
/// on a thread of its own under [`STATE_DEADLINE`]. Gives the instance back, with the
/// image or why there is none (the runtime's sessions are replayed, or the state holds
/// what a copy cannot carry). Blocks: it is called where the store is written.
pub(super) fn store_state(
    instance: PluginInstance,
) -> (Option<PluginInstance>, Result<StoredImage, String>) {
    let taken = std::thread::Builder::new()
        .name("runbox-store-state".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let clock = CallClock::new(Instant::now() + STATE_DEADLINE, CancellationToken::new());
            Ok::<_, String>(runtime.block_on(clock::timed(clock, async move {
                let mut instance = instance;
                let image = instance.capture(Taking::Whole).await;
                (instance, image)
            })))
        })
        .map_err(|e| e.to_string())
        .and_then(|thread| {
            thread
                .join()
                .map_err(|_| "the thread taking it failed".to_string())?
        });
    match taken {
        Ok((instance, Ok(image))) => (Some(instance), Ok(StoredImage::encode(&image))),
        Ok((instance, Err(e))) => (Some(instance), Err(e.to_string())),
        // The instance went with the thread: the session's next call starts afresh.
        Err(e) => (None, Err(e)),
    }
}

impl Session {
    /// Puts `stored` (the state of this runtime's interpreter, as stored) into a fresh
    /// instance of this session, and `files` into its working directory. The image's
    /// memory is checked against the session's and the server's memory before anything
    /// is decompressed or mapped; a page that does not match its checksum, or an
    /// instance that starts differently from the one the image was taken of, refuses the
    /// whole session.
    pub(super) async fn restore_state(
        self: &Arc<Self>,
        runner: &Runner,
        stored: &StoredImage,
        files: &[StoredFile],
    ) -> Result<(), RunError> {
        let refused = |why: String| RunError::Host(format!("cannot restore the session: {why}"));
        // Set aside from the server's budget for this session's instance to grow into:
        // resumes at once take turns rather than one failing half-way through mapping.
        let needed = usize::try_from(stored.memory_bytes()).unwrap_or(usize::MAX);
        let server = runner.admission.memory();
        let Some(_prepaid) = self.sandbox.memory.prepay(needed, RESUME_MEMORY_WAIT).await else {
            return Err(refused(format!(
                "its interpreter holds {} MiB, and the server's memory budget ({} MiB, {} MiB \
                 free) did not have them within {} s",
                needed >> 20,
                server.cap() >> 20,
                server.remaining() >> 20,
                RESUME_MEMORY_WAIT.as_secs()
            )));
        };
        // Checking every page takes tens of milliseconds: off the async workers.
        let (owned, limit) = (stored.clone(), runner.limits.memory_bytes);
        let image: SessionImage = tokio::task::spawn_blocking(move || owned.decode(limit))
            .await
            .map_err(|e| refused(e.to_string()))?
            .map_err(|e| refused(e.to_string()))?;
        charge_restored(self, files)?;
        off_the_workers(|| entry::restore_dir(&self.sandbox.scratch, files))
            .map_err(|e| refused(e.to_string()))?;
        let (plugin, sandbox) = (self.plugin.clone(), self.sandbox.clone());
        let instance = in_state_time(async move {
            let mut instance = PluginInstance::with_session(&plugin, &sandbox)
                .await
                .map_err(|e| format!("{e:#}"))?;
            instance.restore(&image).await.map_err(|e| e.to_string())?;
            Ok::<_, String>(instance)
        })
        .await?
        .map_err(refused)?;
        *self.live.lock().await = Some(instance);
        Ok(())
    }
}

/// Runs `work` (which runs guest code) on a thread of its own, on a clock that stops it
/// after [`STATE_DEADLINE`], as a call's instance runs.
pub(super) async fn in_state_time<R: Send + 'static>(
    work: impl std::future::Future<Output = R> + Send + 'static,
) -> Result<R, RunError> {
    let clock = CallClock::new(Instant::now() + STATE_DEADLINE, CancellationToken::new());
    crate::run::thread::on_own_thread(move || clock::timed(clock, work))
        .await
        .map_err(|e| RunError::Host(format!("the thread copying a session's state failed: {e}")))
}
