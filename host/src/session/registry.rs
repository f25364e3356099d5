//! The open sessions: their ids, the cap on how many, idle expiry, and what became of
//! the ids that ended.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::Session;
use crate::plugin::LoadedPlugin;
use crate::replica::{OtherReplica, Replica};
use crate::run::Runner;

/// How many ended ids are remembered, to say why a call for one is refused.
const REMEMBERED_ENDINGS: usize = 4096;

/// Why a session could not be used or made.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionError {
    #[error("unknown session_id `{id}`: no such session was created by this server; call create_session to make one")]
    Unknown { id: String },
    #[error("session `{id}` was closed; call create_session to make a new one")]
    Closed { id: String },
    #[error("session `{id}` expired after {idle_secs} s without calls; call create_session to make a new one")]
    Expired { id: String, idle_secs: u64 },
    #[error(
        "session `{id}` ended when the server shut down; call create_session to make a new one"
    )]
    ShutDown { id: String },
    #[error("session `{id}` runs `{runtime}`, not `{asked}`: leave `runtime` out (or give `{runtime}`), or call create_session with runtime `{asked}` for a new session")]
    WrongRuntime {
        id: String,
        runtime: String,
        asked: String,
    },
    #[error("{max} sessions are open, the most this server allows (--max-sessions); close one with close_session, or wait for an idle one to expire")]
    TooMany { max: usize },
    #[error("cannot create the session's scratch directory: {0}")]
    Scratch(String),
    #[error(transparent)]
    OtherReplica(#[from] OtherReplica),
    #[error("{here} is draining before it stops and takes no new sessions; call create_session again: a balancer sends it to another replica (a client whose MCP connection is held by this replica must reconnect first)")]
    Draining { here: String },
}

#[derive(Debug, Clone, Copy)]
enum Ending {
    Closed,
    Expired { idle_secs: u64 },
    ShutDown,
}

struct Inner {
    open: Mutex<HashMap<String, Arc<Session>>>,
    ended: Mutex<VecDeque<(String, Ending)>>,
    max: usize,
    idle: Duration,
    /// Mints the ids, and tells another replica's ids apart.
    replica: Replica,
    /// Set when the server drains: no new sessions.
    draining: AtomicBool,
}

/// The server's sessions.
pub struct Sessions(Arc<Inner>);

impl Sessions {
    /// At most `max` open at once, each ending after `idle` without calls (checked by a
    /// thread of its own).
    pub fn new(max: usize, idle: Duration, replica: Replica) -> Sessions {
        let inner = Arc::new(Inner {
            open: Mutex::default(),
            ended: Mutex::default(),
            max,
            idle,
            replica,
            draining: AtomicBool::new(false),
        });
        start_reaper(Arc::downgrade(&inner), idle);
        Sessions(inner)
    }

    pub fn idle_timeout(&self) -> Duration {
        self.0.idle
    }

    pub fn max(&self) -> usize {
        self.0.max
    }

    pub fn len(&self) -> usize {
        self.0.open().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Refuses new sessions from now on (the server drains before it stops); the open
    /// ones go on serving calls.
    pub fn start_draining(&self) {
        self.0.draining.store(true, Ordering::SeqCst);
    }

    pub fn is_draining(&self) -> bool {
        self.0.draining.load(Ordering::SeqCst)
    }

    /// A new session of `plugin`.
    pub fn create(
        &self,
        runner: &Runner,
        plugin: Arc<LoadedPlugin>,
    ) -> Result<Arc<Session>, SessionError> {
        if self.is_draining() {
            return Err(SessionError::Draining {
                here: self.0.replica.describe(),
            });
        }
        let mut open = self.0.open();
        if open.len() >= self.0.max {
            return Err(SessionError::TooMany { max: self.0.max });
        }
        let id = self.0.replica.mint();
        let session = Session::new(id.clone(), runner, plugin)
            .map_err(|e| SessionError::Scratch(e.to_string()))?;
        let session = Arc::new(session);
        open.insert(id, session.clone());
        Ok(session)
    }

    /// The open session `id`, for a call (it does not expire while the call holds it:
    /// see [`Session::run`]).
    pub fn get(&self, id: &str) -> Result<Arc<Session>, SessionError> {
        if let Some(session) = self.0.open().get(id) {
            session.touch();
            return Ok(session.clone());
        }
        let ended = self.0.ended.lock().unwrap_or_else(|e| e.into_inner());
        let id = id.to_string();
        Err(match ended.iter().rev().find(|(e, _)| *e == id) {
            Some((_, Ending::Closed)) => SessionError::Closed { id },
            Some((_, Ending::Expired { idle_secs })) => SessionError::Expired {
                id,
                idle_secs: *idle_secs,
            },
            Some((_, Ending::ShutDown)) => SessionError::ShutDown { id },
            None => match self.0.replica.elsewhere("session", &id) {
                Some(elsewhere) => elsewhere.into(),
                None => SessionError::Unknown { id },
            },
        })
    }

    /// Ends session `id` (a call under way finishes first); its files are removed.
    pub fn close(&self, id: &str) -> Result<(), SessionError> {
        self.get(id)?;
        self.0.end(id, Ending::Closed);
        Ok(())
    }

    /// Ends every session (the server is stopping); their files are removed once their
    /// calls, if any, are over.
    pub fn close_all(&self) {
        let ids: Vec<String> = self.0.open().keys().cloned().collect();
        for id in ids {
            self.0.end(&id, Ending::ShutDown);
        }
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        self.close_all();
    }
}

impl Inner {
    fn open(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn end(&self, id: &str, ending: Ending) {
        let removed = self.open().remove(id);
        if removed.is_some() {
            let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
            if ended.len() >= REMEMBERED_ENDINGS {
                ended.pop_front();
            }
            ended.push_back((id.to_string(), ending));
            tracing::info!(session = id, ?ending, "session ended");
        }
        // Dropped here (outside the lock): its scratch directory goes with its last user.
        drop(removed);
    }

    /// Ends the sessions idle for longer than `idle`.
    fn expire_idle(&self) {
        let idle: Vec<(String, u64)> = self
            .open()
            .iter()
            .filter(|(_, s)| s.busy.load(Ordering::SeqCst) == 0 && s.idle_for() >= self.idle)
            .map(|(id, s)| (id.clone(), s.idle_for().as_secs()))
            .collect();
        for (id, idle_secs) in idle {
            self.end(&id, Ending::Expired { idle_secs });
        }
    }
}

/// A thread that ends idle sessions, checking a few times per `idle` period; it stops
/// when the sessions are dropped.
fn start_reaper(inner: Weak<Inner>, idle: Duration) {
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    let spawned = std::thread::Builder::new()
        .name("runbox-sessions".into())
        .spawn(move || loop {
            std::thread::sleep(tick);
            match inner.upgrade() {
                Some(inner) => inner.expire_idle(),
                None => return,
            }
        });
    if let Err(e) = spawned {
        tracing::error!("cannot start the session reaper, idle sessions will not expire: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_became_of_the_id_and_what_to_do() {
        let sessions = Sessions::new(2, Duration::from_secs(60), Replica::default());
        let e = sessions.get("nope").err().unwrap().to_string();
        assert!(
            e.contains("unknown session_id `nope`") && e.contains("create_session"),
            "{e}"
        );
        sessions
            .0
            .ended
            .lock()
            .unwrap()
            .push_back(("a".into(), Ending::Closed));
        sessions
            .0
            .ended
            .lock()
            .unwrap()
            .push_back(("b".into(), Ending::Expired { idle_secs: 601 }));
        let e = sessions.get("a").err().unwrap().to_string();
        assert!(
            e.contains("was closed") && e.contains("create_session"),
            "{e}"
        );
        let e = sessions.get("b").err().unwrap().to_string();
        assert!(
            e.contains("expired after 601 s") && e.contains("create_session"),
            "{e}"
        );
        let e = sessions
            .get(&format!("r9.{}", "0".repeat(32)))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("belongs to replica `r9`"), "{e}");
        let e = SessionError::TooMany { max: 2 }.to_string();
        assert!(
            e.contains("2 sessions") && e.contains("--max-sessions"),
            "{e}"
        );
    }
}
