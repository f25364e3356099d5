//! The open sessions: their ids, the cap on how many, idle expiry, and what became of
//! the ids that ended; with a session store, hibernation (an idle session is stored and
//! its memory freed) and resumption (a stored session is rebuilt at its next call, here
//! or on any replica sharing the store).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::directory::{SessionStore, StoreError, Taken};
use super::entry::StoredSession;
use super::session::{Busy, Session};
use super::snapshot::{store_state, RESUME_MEMORY_WAIT};
use crate::budget::memory::{Held, MemoryBudget};
use crate::plugin::LoadedPlugin;
use crate::replica::{OtherReplica, Replica};
use crate::run::Runner;
use crate::sweeper;

/// How many ended ids are remembered, to say why a call for one is refused.
const REMEMBERED_ENDINGS: usize = 4096;
/// How long a stopping server waits for a session's call to let go before storing it.
const STOP_WAIT: Duration = Duration::from_secs(5);

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
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the stored session `{id}` ran on another version of the `{runtime}` runtime than this server has, and cannot be rebuilt on this one; call create_session to make a new one")]
    OtherPlugin { id: String, runtime: String },
    #[error("the stored session `{id}` runs `{runtime}`, which this server does not offer; call create_session to make a new one")]
    NoRuntime { id: String, runtime: String },
    #[error("the stored session `{id}` could not be resumed: {why}")]
    Resume { id: String, why: String },
    #[error("the server is busy: resuming session `{id}` needs {mib} MiB of its memory budget, which is in use; try again shortly")]
    Busy { id: String, mib: usize },
    #[error("session `{id}` was not forked: {why}")]
    Fork { id: String, why: String },
}

/// A stored session read back to be resumed: the entry, the lock that keeps anyone
/// else from storing or resuming it meanwhile, and its charge on the server's budget.
pub struct Resumable {
    pub entry: StoredSession,
    gate: tokio::sync::OwnedMutexGuard<()>,
    _charge: Held,
}

/// A session store and when sessions go there.
pub struct Durability {
    pub store: Arc<SessionStore>,
    /// The server's memory budget, which storing and resuming are charged to.
    pub memory: MemoryBudget,
    /// An idle session is stored after this long without calls.
    pub hibernate_after: Duration,
    /// The most bytes of file contents one stored session may hold.
    pub max_entry_bytes: u64,
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
    durability: Option<Durability>,
    /// One lock per session id being stored or resumed, so that the two never overlap.
    gates: Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
    /// Places held for sessions being created or resumed (see [`Inner::make_room`]).
    making: AtomicUsize,
}

/// A place for one more open session, held until it drops.
struct Room<'a>(&'a AtomicUsize);

impl Drop for Room<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The server's sessions.
pub struct Sessions(Arc<Inner>);

impl Sessions {
    /// At most `max` open at once, each ending after `idle` without calls (checked by a
    /// thread of its own).
    pub fn new(
        max: usize,
        idle: Duration,
        replica: Replica,
        durability: Option<Durability>,
    ) -> Sessions {
        let tick = match &durability {
            Some(d) => idle.min(d.hibernate_after),
            None => idle,
        };
        let inner = Arc::new(Inner {
            open: Mutex::default(),
            ended: Mutex::default(),
            max,
            idle,
            replica,
            draining: AtomicBool::new(false),
            durability,
            gates: Mutex::default(),
            making: AtomicUsize::new(0),
        });
        start_reaper(Arc::downgrade(&inner), tick);
        Sessions(inner)
    }

    /// Whether sessions go to a session store.
    pub fn is_durable(&self) -> bool {
        self.0.durability.is_some()
    }

    /// Sessions in the session store (hibernated, or left by other replicas).
    pub fn stored(&self) -> usize {
        self.0.durability.as_ref().map_or(0, |d| d.store.len())
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
    pub async fn create(
        &self,
        runner: &Runner,
        plugin: Arc<LoadedPlugin>,
    ) -> Result<Arc<Session>, SessionError> {
        if self.is_draining() {
            return Err(SessionError::Draining {
                here: self.0.replica.describe(),
            });
        }
        let room = self.0.make_room().await?;
        let id = self.0.replica.mint();
        let session = Session::new(id.clone(), runner, plugin, self.is_durable())
            .map_err(|e| SessionError::Scratch(e.to_string()))?;
        let session = Arc::new(session);
        self.0.open().insert(id, session.clone());
        drop(room);
        Ok(session)
    }

    /// `count` new sessions, each a copy of `source` as it is now (its interpreter state
    /// and its files), made after the call under way in it. Refused whole when they do
    /// not all fit (the session cap, the memory budget): never some of them.
    pub async fn fork(
        &self,
        runner: &Runner,
        source: &Arc<Session>,
        count: usize,
    ) -> Result<Vec<Arc<Session>>, SessionError> {
        if self.is_draining() {
            return Err(SessionError::Draining {
                here: self.0.replica.describe(),
            });
        }
        // Busy: making room never stores the source meanwhile.
        let _busy = Busy::new(source);
        let mut rooms = Vec::with_capacity(count);
        for _ in 0..count {
            rooms.push(self.0.make_room().await?);
        }
        let mut children = Vec::with_capacity(count);
        for _ in 0..count {
            let id = self.0.replica.mint();
            let child = Session::new(id, runner, source.plugin.clone(), self.is_durable())
                .map_err(|e| SessionError::Scratch(e.to_string()))?;
            children.push(Arc::new(child));
        }
        source
            .fork_into(runner, &children)
            .await
            .map_err(|e| SessionError::Fork {
                id: source.id.clone(),
                why: e.to_string(),
            })?;
        let mut open = self.0.open();
        for child in &children {
            open.insert(child.id.clone(), child.clone());
        }
        drop(open);
        drop(rooms);
        Ok(children)
    }

    /// The stored session `id`, if the store holds it (checked, not yet resumed), with
    /// the lock that keeps anyone else from storing or resuming it meanwhile. `None`
    /// when there is no store or no such entry.
    /// Reading it is charged to the server's memory budget at twice the entry's size on
    /// disk (its bytes, then what is decoded from them), the replay after it at once the
    /// size (the decoded entry); the reading runs on a blocking thread, off the async
    /// workers.
    pub async fn stored_entry(&self, id: &str) -> Result<Option<Resumable>, SessionError> {
        let Some(durability) = &self.0.durability else {
            return Ok(None);
        };
        let Some(len) = durability.store.entry_len(id) else {
            return Ok(None);
        };
        let gate = self.0.gate(id).lock_owned().await;
        let needed = usize::try_from(len).unwrap_or(usize::MAX).saturating_mul(2);
        // Resumes at once wait for each other's memory rather than all taking it.
        let Some(charge) = durability
            .memory
            .reserve_waiting(needed, RESUME_MEMORY_WAIT)
            .await
        else {
            return Err(SessionError::Busy {
                id: id.to_string(),
                mib: (needed >> 20).max(1),
            });
        };
        let store = durability.store.clone();
        let owned = id.to_string();
        let read = tokio::task::spawn_blocking(move || store.read(&owned))
            .await
            .map_err(|e| SessionError::Resume {
                id: id.to_string(),
                why: e.to_string(),
            })??;
        // The entry's bytes are gone once decoded: what stays held is the decoded entry,
        // and the replay's own runs draw from the budget beside it.
        let mut charge = charge;
        charge.shrink_to(needed / 2);
        Ok(read.map(|entry| Resumable {
            entry,
            gate,
            _charge: Held::new(charge),
        }))
    }

    /// Rebuilds the stored session `entry` on `plugin` (its runtime here) and opens it.
    /// It holds [`Sessions::stored_entry`]'s lock and charge until it is open. When the
    /// session was already resumed meanwhile (another call got the gate first), that one
    /// is returned.
    pub async fn resume(
        &self,
        resumable: Resumable,
        runner: &Runner,
        plugin: Arc<LoadedPlugin>,
    ) -> Result<Arc<Session>, SessionError> {
        let Resumable {
            entry,
            gate,
            _charge,
        } = resumable;
        let id = entry.id.clone();
        if let Some(session) = self.0.open().get(&id) {
            return Ok(session.clone());
        }
        if plugin.identity != entry.plugin {
            return Err(SessionError::OtherPlugin {
                id,
                runtime: entry.runtime,
            });
        }
        let durability = self
            .0
            .durability
            .as_ref()
            .expect("a stored entry has a store");
        let room = self.0.make_room().await?;
        // The lease first: a session another process holds is refused before any
        // replay (which can take as long as the calls it repeats).
        let taken = durability.store.take(&id)?;
        let started = Instant::now();
        let (calls, stored_ms) = (entry.calls.len(), entry.stored_ms);
        let session = match Session::resume(entry, runner, plugin).await {
            Ok(session) => session,
            Err(e) => {
                durability.store.release(&id);
                return Err(SessionError::Resume {
                    id: id.clone(),
                    why: e.to_string(),
                });
            }
        };
        if let Taken::Abandoned { by } = taken {
            let ago = super::directory::now_ms().saturating_sub(stored_ms) / 1000;
            session.add_notice(format!(
                "This session was resumed from the session store as it was stored {ago} s \
                 ago: the server that had it since ({by}) stopped without storing it, so \
                 what calls there changed after that (variables, files) was lost."
            ));
        }
        // Kept fresh by the reaper while this process holds the session.
        session.leased.store(true, Ordering::SeqCst);
        tracing::info!(session = %id, calls, ms = started.elapsed().as_millis() as u64, "session resumed from the store");
        self.0.open().insert(id, session.clone());
        drop(room);
        drop(gate);
        Ok(session)
    }

    /// Stores session `id` now and frees it, if no call is using it (as an idle session
    /// is stored after `--session-hibernate-after`). Says whether it was stored.
    pub fn hibernate(&self, id: &str) -> bool {
        self.0.hibernate(id, false)
    }

    /// Stores every session and frees it (the server is stopping). Those that cannot be
    /// stored end.
    pub fn hibernate_all(&self) {
        // A call being stopped still holds its session for a moment: wait for it.
        let deadline = Instant::now() + STOP_WAIT;
        let mut left: Vec<String> = self.0.open().keys().cloned().collect();
        loop {
            left.retain(|id| self.0.open().contains_key(id) && !self.0.hibernate(id, true));
            if left.is_empty() || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        for id in left {
            tracing::warn!(session = %id, "the session could not be stored before the server stopped");
            self.0.end(&id, Ending::ShutDown);
        }
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

    /// Ends session `id` (a call under way finishes first); its files are removed, and
    /// so is its entry in the session store.
    pub fn close(&self, id: &str) -> Result<(), SessionError> {
        let stored = self.0.durability.as_ref().filter(|d| d.store.contains(id));
        match (self.get(id), stored) {
            (Ok(_), _) => self.0.end(id, Ending::Closed),
            (Err(_), Some(durability)) => {
                durability.store.remove(id);
                self.0.remember(id, Ending::Closed);
            }
            (Err(e), None) => return Err(e),
        }
        if let Some(d) = &self.0.durability {
            d.store.remove(id);
        }
        Ok(())
    }

    /// Ends every session (the server is stopping); their files are removed once their
    /// calls, if any, are over. With a session store they are stored instead.
    pub fn close_all(&self) {
        if self.is_durable() {
            return self.hibernate_all();
        }
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
            self.remember(id, ending);
            tracing::info!(session = id, ?ending, "session ended");
        }
        // Dropped here (outside the lock): its scratch directory goes with its last user.
        drop(removed);
    }

    fn remember(&self, id: &str, ending: Ending) {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        if ended.len() >= REMEMBERED_ENDINGS {
            ended.pop_front();
        }
        ended.push_back((id.to_string(), ending));
    }

    /// The lock of session `id`'s moves between memory and the store.
    fn gate(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(gate) = gates.get(id).and_then(Weak::upgrade) {
            return gate;
        }
        gates.retain(|_, g| g.strong_count() > 0);
        let gate = Arc::new(tokio::sync::Mutex::new(()));
        gates.insert(id.to_string(), Arc::downgrade(&gate));
        gate
    }

    /// Stores session `id` and frees it, if nothing uses it (or, `stopping`, whatever
    /// it was doing: the server stops). Says whether it was stored.
    fn hibernate(&self, id: &str, stopping: bool) -> bool {
        let Some(durability) = &self.durability else {
            return false;
        };
        let gate = self.gate(id);
        let Ok(_moving) = gate.try_lock() else {
            return false;
        };
        let Some(session) = self.open().get(id).cloned() else {
            return false;
        };
        if !stopping && session.busy.load(Ordering::SeqCst) > 0 {
            return false;
        }
        // Holding the instance's lock: no call runs, and one that waits for it will see
        // the session retired and look it up again (in the store, once this is done).
        let Ok(mut live) = session.live.try_lock() else {
            return false;
        };
        // Charged to the server's budget while the entry is built and written; when the
        // server stops, every session is stored whatever the budget says.
        let needed = usize::try_from(session.storing_bytes()).unwrap_or(usize::MAX);
        let mut charge = match durability.memory.reserve(needed) {
            Some(charge) => Some(charge),
            None if stopping => None,
            None => {
                // The reaper tries again at its next tick.
                tracing::debug!(
                    session = id,
                    "not stored now: the server's memory budget is in use"
                );
                return false;
            }
        };
        // A snapshot runtime's state goes with it (a replayed one's is its calls).
        let image = match (live.take(), session.copies_state()) {
            (Some(instance), true) => {
                let (instance, image) = store_state(instance);
                *live = instance;
                image
                    .inspect_err(|e| tracing::info!(session = id, "stored without its state: {e}"))
                    .ok()
            }
            (instance, _) => {
                *live = instance;
                None
            }
        };
        // Its compressed pages are held until the entry is written, too.
        let image_bytes = image.as_ref().map_or(0, |i| i.stored_bytes() as usize);
        if let Some(charge) = &mut charge {
            if !charge.grow(image_bytes.saturating_mul(2)) && !stopping {
                tracing::debug!(
                    session = id,
                    "not stored now: the server's memory budget is in use"
                );
                return false;
            }
        }
        session.retire();
        let store = |image| {
            let entry = session
                .stored(
                    durability.store.incarnation(),
                    &session.plugin.identity,
                    durability.max_entry_bytes,
                    image,
                )
                .map_err(|e| (e.to_string(), false))?;
            durability
                .store
                .write(&entry)
                .map_err(|e| (e.to_string(), entry.image.is_some()))
        };
        // An entry too large with its snapshot is stored as its journal alone, which a
        // resume replays.
        let stored = match store(image) {
            Err((e, true)) => {
                tracing::info!(session = id, "stored without its snapshot: {e}");
                store(None).map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        };
        match stored {
            Ok(()) => {
                session.leased.store(false, Ordering::SeqCst);
                self.open().remove(id);
                tracing::info!(session = id, "session stored and freed");
                true
            }
            Err(e) => {
                session.unretire();
                tracing::warn!(
                    session = id,
                    "cannot store the session, it stays in memory: {e}"
                );
                false
            }
        }
    }

    /// Makes room for one more open session and holds it until the session is open (or
    /// its opening failed): with a store, the least recently used idle session that can
    /// be stored now is stored; without one, a full server refuses. Held places count
    /// as open, so resumes at once each make their own room, one decision each.
    async fn make_room(self: &Arc<Self>) -> Result<Room<'_>, SessionError> {
        loop {
            let idle: Vec<(String, Duration)> = {
                let open = self.open();
                if open.len() + self.making.load(Ordering::SeqCst) < self.max {
                    self.making.fetch_add(1, Ordering::SeqCst);
                    return Ok(Room(&self.making));
                }
                let mut idle: Vec<(String, Duration)> = open
                    .iter()
                    .filter(|(_, s)| s.busy.load(Ordering::SeqCst) == 0)
                    .map(|(id, s)| (id.clone(), s.idle_for()))
                    .collect();
                idle.sort_by_key(|(_, idle_for)| std::cmp::Reverse(*idle_for));
                idle
            };
            // One that another resume is storing right now is skipped for the next.
            // Storing writes files: on a blocking thread, off the async workers.
            let inner = self.clone();
            let stored = tokio::task::spawn_blocking(move || {
                idle.iter().any(|(id, _)| inner.hibernate(id, false))
            })
            .await
            .unwrap_or(false);
            if !stored {
                return Err(SessionError::TooMany { max: self.max });
            }
        }
    }

    /// Stores the sessions idle for `hibernate_after` (with a store), ends those idle for
    /// longer than `idle`, and drops stored sessions past their time.
    fn expire_idle(&self) {
        if let Some(d) = &self.durability {
            let leased: Vec<String> = self
                .open()
                .iter()
                .filter(|(_, s)| s.leased.load(Ordering::SeqCst))
                .map(|(id, _)| id.clone())
                .collect();
            for id in leased {
                d.store.refresh(&id);
            }
            let idle: Vec<String> = self
                .open()
                .iter()
                .filter(|(_, s)| {
                    s.busy.load(Ordering::SeqCst) == 0 && s.idle_for() >= d.hibernate_after
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in idle {
                self.hibernate(&id, false);
            }
            d.store.sweep();
        }
        let idle: Vec<(String, u64)> = self
            .open()
            .iter()
            .filter(|(_, s)| s.busy.load(Ordering::SeqCst) == 0 && s.idle_for() >= self.idle)
            .map(|(id, s)| (id.clone(), s.idle_for().as_secs()))
            .collect();
        for (id, idle_secs) in idle {
            self.end(&id, Ending::Expired { idle_secs });
            if let Some(d) = &self.durability {
                d.store.remove(&id);
            }
        }
    }
}

/// A thread that ends idle sessions, checking a few times per `idle` period (and often
/// enough to keep leases fresh); it stops when the sessions are dropped.
fn start_reaper(inner: Weak<Inner>, idle: Duration) {
    let tick = sweeper::quarter_of(
        idle,
        Duration::from_millis(50),
        super::directory::LEASE_REFRESH,
    );
    sweeper::start(
        "runbox-sessions",
        "idle sessions will not expire",
        tick,
        inner,
        Inner::expire_idle,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_what_became_of_the_id_and_what_to_do() {
        let sessions = Sessions::new(2, Duration::from_secs(60), Replica::default(), None);
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
