//! Protocol sessions of handshake-era HTTP clients (`Mcp-Session-Id`), bounded.
//!
//! Clients of the current MCP revision (2026-07-28) are served statelessly and hold no
//! session. Older clients get one from `initialize`: rmcp's `LocalSessionManager` keeps a
//! worker per session (~55 KB measured) until it is idle for its keep-alive. Unbounded,
//! 10,000 `initialize` requests held half a gigabyte for five minutes, so here at most
//! `--max-http-sessions` are open, each charged [`SESSION_BYTES`] to the server's budget,
//! and each ends after [`KEEP_ALIVE`] without requests. One more `initialize` is refused
//! at once (`503`, see `server.rs`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};

use crate::service::{MemoryBudget, Reservation};

/// Handshake-era sessions open at once, by default.
pub const DEFAULT_MAX_HTTP_SESSIONS: usize = 256;
/// A session ends after this long without requests.
pub const KEEP_ALIVE: Duration = Duration::from_secs(120);
/// What one session is charged in the server's budget (its worker, channels and caches).
pub const SESSION_BYTES: usize = 64 << 10;

/// Why a session was not opened.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    #[error(
        "{max} MCP sessions are open, the most this server keeps (--max-http-sessions); \
         try again shortly, or use a client of the 2026-07-28 revision, which needs none"
    )]
    Full { max: usize },
    #[error("runbox is busy: the server's memory budget has no room for another MCP session")]
    Busy,
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's local session manager, capped and charged to the server's budget.
pub struct CappedProtocolSessions {
    inner: LocalSessionManager,
    max: usize,
    budget: MemoryBudget,
    held: Mutex<HashMap<SessionId, Reservation>>,
}

impl CappedProtocolSessions {
    pub fn new(max: usize, budget: MemoryBudget) -> CappedProtocolSessions {
        let mut inner = LocalSessionManager::default();
        let mut config = SessionConfig::default();
        config.keep_alive = Some(KEEP_ALIVE);
        config.init_timeout = Some(Duration::from_secs(30));
        inner.session_config = config;
        CappedProtocolSessions {
            inner,
            max,
            budget,
            held: Mutex::default(),
        }
    }

    /// Sessions open now.
    pub fn open(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether one more would be refused.
    pub fn is_full(&self) -> bool {
        self.open() >= self.max
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

impl SessionManager for CappedProtocolSessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let reservation = {
            let held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            if held.len() >= self.max {
                return Err(SessionsError::Full { max: self.max });
            }
            self.budget
                .reserve(SESSION_BYTES)
                .ok_or(SessionsError::Busy)?
        };
        let (id, transport) = self.inner.create_session().await?;
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), reservation);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(SessionManager::create_stream(&self.inner, id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(SessionManager::create_standalone_stream(&self.inner, id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(SessionManager::resume(&self.inner, id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_are_capped_and_charged() {
        let budget = MemoryBudget::new(1 << 30);
        let sessions = CappedProtocolSessions::new(2, budget.clone());
        let (a, _ta) = sessions.create_session().await.unwrap();
        let (_b, _tb) = sessions.create_session().await.unwrap();
        assert!(sessions.is_full());
        assert_eq!(budget.used(), 2 * SESSION_BYTES);
        let e = sessions.create_session().await.err().unwrap();
        assert!(matches!(e, SessionsError::Full { max: 2 }), "{e}");
        sessions.close_session(&a).await.unwrap();
        assert_eq!(budget.used(), SESSION_BYTES);
        let (_c, _tc) = sessions.create_session().await.unwrap();
        let tight = CappedProtocolSessions::new(10, MemoryBudget::new(SESSION_BYTES - 1));
        assert!(matches!(
            tight.create_session().await.err().unwrap(),
            SessionsError::Busy
        ));
    }
}
