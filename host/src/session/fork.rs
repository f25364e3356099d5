//! Forking a session: new sessions that each start with the source's interpreter state
//! and files as they are at that moment, and then live on their own (a write in one is
//! never seen by another).
//!
//! The interpreter state goes below the language: the source's instance, at rest between
//! calls, is taken out as an image of its memories and globals (`crate::state`), and each
//! child is a fresh instance of the same compiled plugin, its session opened, with the
//! image written in. Nothing is run again and nothing is compiled.

use std::sync::Arc;
use std::time::Duration;

use super::durable::charge_restored;
use super::entry;
use super::history::History;
use super::session::Session;
use super::snapshot::in_state_time;
use crate::run::instance::PluginInstance;
use crate::run::thread::off_the_workers;
use crate::run::{RunError, Runner};
use crate::state::Taking;

impl Session {
    /// Gives each of `children` (new, with no call made) this session's state and files
    /// as they are now, after the call under way (if any) ends. On an error every child
    /// is as it was made: the caller drops them all.
    pub(super) async fn fork_into(
        self: &Arc<Self>,
        runner: &Runner,
        children: &[Arc<Session>],
    ) -> Result<(), RunError> {
        if self.keeps_state() && !self.copies_state() {
            return Err(RunError::Host(format!(
                "`{}` keeps a session as the record of its calls (its list_runtimes entry \
                 says session_mode \"replay\"), which cannot be copied; sessions of runtimes \
                 whose session_mode is \"snapshot\" can be forked",
                self.runtime
            )));
        }
        let mut live = self.live.clone().lock_owned().await;
        if self.retired.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(RunError::SessionMoved);
        }
        // The state first: it is what may refuse the fork.
        let image = match (live.take(), self.keeps_state()) {
            (Some(instance), true) => {
                let (instance, image) = in_state_time(async move {
                    let mut instance = instance;
                    let image = instance.capture(Taking::ForCopies).await;
                    (instance, image)
                })
                .await?;
                *live = Some(instance);
                let image = image
                    .map_err(|e| RunError::Host(format!("this session cannot be forked: {e}")))?;
                Some(Arc::new(image))
            }
            (kept, _) => {
                *live = kept;
                None
            }
        };
        // Each child's memory is set aside from the server's budget before any is made
        // (its instance then grows into it), so a fork that does not fit is refused whole.
        let mut prepaid = Vec::with_capacity(children.len());
        if let Some(image) = &image {
            let needed = usize::try_from(image.memory_bytes()).unwrap_or(usize::MAX);
            for child in children {
                let Some(held) = child.sandbox.memory.prepay(needed, Duration::ZERO).await else {
                    let free = runner.admission.memory().remaining();
                    return Err(RunError::Host(format!(
                        "the server's memory budget has {} MiB free, and {} copies of this \
                         session need {} MiB: fork fewer, or close sessions first",
                        (free + prepaid.len() * needed) >> 20,
                        children.len(),
                        needed.saturating_mul(children.len()) >> 20
                    )));
                };
                prepaid.push(held);
            }
        }
        let mut used = 0;
        let files =
            off_the_workers(|| entry::snapshot_dir(&self.sandbox.scratch, u64::MAX, &mut used))
                .map_err(|e| RunError::Host(format!("cannot copy the session's files: {e}")))?;
        let history = self.history.as_ref().map(|h| self.lock_history(h).copy());
        for child in children {
            charge_restored(child, &files)?;
            off_the_workers(|| entry::restore_dir(&child.sandbox.scratch, &files))
                .map_err(|e| RunError::Host(format!("cannot copy the session's files: {e}")))?;
            if let (Some(from), Some(to)) = (&history, &child.history) {
                *child.lock_history(to) = from.copy();
            }
        }
        drop(live);
        if let Some(image) = image {
            // The copies are made side by side, each on a thread of its own.
            let made = futures::future::join_all(children.iter().map(|child| {
                let (plugin, sandbox, image) =
                    (child.plugin.clone(), child.sandbox.clone(), image.clone());
                in_state_time(async move {
                    let mut instance = PluginInstance::with_session(&plugin, &sandbox)
                        .await
                        .map_err(|e| format!("{e:#}"))?;
                    instance.restore(&image).await.map_err(|e| e.to_string())?;
                    instance.after_fork().await.map_err(|e| format!("{e:#}"))?;
                    Ok::<_, String>(instance)
                })
            }))
            .await;
            for (child, instance) in children.iter().zip(made) {
                let instance = instance?.map_err(|e| {
                    RunError::Host(format!("cannot make a copy of the session: {e}"))
                })?;
                *child.live.lock().await = Some(instance);
            }
        }
        Ok(())
    }
}

impl History {
    /// The same history, for a copy of the session.
    pub(super) fn copy(&self) -> History {
        History {
            created_ms: self.created_ms,
            base: self.base.clone(),
            calls: self.calls.clone(),
            bytes: self.bytes,
            broken: self.broken.clone(),
        }
    }
}
