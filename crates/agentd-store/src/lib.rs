//! agentd's event log: sessions, turns and their append-only events.
//!
//! Owns the [`EventStore`] trait and its implementations (SQLite now; Postgres behind the
//! same trait later). The store is where the log's invariants live (DESIGN.md §5): per-session
//! `seq` rises by one with no gaps, at most one running turn per session (enforced atomically
//! here), and a turn ends exactly once. It must not call models, run tools or publish events:
//! callers publish what [`EventStore::append`] returned, after it returned.

mod error;
mod model;
mod postgres;
mod rows;
mod sqlite;

pub use error::{Error, Result};
pub use model::{BeginTurn, NewSession, Session, SessionStatus, StoredEvent, Turn, TurnStatus};
pub use postgres::PgStore;
pub use sqlite::SqliteStore;

use std::pin::Pin;
use std::time::Duration;

use agentd_events::{Event, EventData, TurnEnd};
use async_trait::async_trait;
use futures_util::Stream;
use uuid::Uuid;

/// A stream of [`Change`]s from other processes.
pub type ChangeStream = Pin<Box<dyn Stream<Item = Change> + Send>>;

/// What another process did to the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Session `session_id` has events up to `seq`.
    Appended {
        /// The session.
        session_id: Uuid,
        /// Its newest seq.
        seq: u64,
    },
    /// The channel was lost and re-established: notifications may have been missed, so every
    /// reader should re-read from its cursor.
    Resync,
}

/// The event log. Every method is atomic: it either happened whole or not at all.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Creates a session. Errors: [`Error::Database`].
    async fn create_session(&self, new: NewSession) -> Result<Session>;

    /// The session `id`. Errors: [`Error::SessionNotFound`].
    async fn session(&self, id: Uuid) -> Result<Session>;

    /// Sessions newest first, at most `limit`, starting after the session `before` (a cursor
    /// from the previous page). Errors: [`Error::SessionNotFound`] for an unknown cursor.
    async fn list_sessions(&self, limit: u32, before: Option<Uuid>) -> Result<Vec<Session>>;

    /// Deletes a session with its turns and events. Errors: [`Error::SessionNotFound`].
    async fn delete_session(&self, id: Uuid) -> Result<()>;

    /// Starts turn `turn_id` and appends its `user/message`, atomically, unless a turn is
    /// already running ([`Error::TurnInProgress`] with its id). With an `idempotency_key`
    /// this session has seen before, starts nothing and returns that turn
    /// ([`BeginTurn::Existing`]). The turn's lease runs for `lease` from now.
    async fn begin_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        text: &str,
        idempotency_key: Option<&str>,
        lease: Duration,
    ) -> Result<BeginTurn>;

    /// Extends the lease of running turn `turn_id` to `lease` from now.
    /// Errors: [`Error::TurnNotRunning`] when it is no longer running (e.g. reclaimed).
    async fn renew_lease(&self, turn_id: Uuid, lease: Duration) -> Result<()>;

    /// Running turns whose lease has lapsed: their process died without ending them.
    async fn expired_turns(&self) -> Result<Vec<Turn>>;

    /// Notifications of events appended by other processes on the same database, for live
    /// fan-out across replicas; `None` when the backend has no such channel (SQLite: one
    /// process owns the file). Notifications only wake readers, who read the rows.
    async fn listen(&self) -> Result<Option<ChangeStream>>;

    /// Appends events of the running turn `turn_id`, assigning consecutive `seq`s, in one
    /// transaction; returns them as stored. Errors: [`Error::TurnNotRunning`] when `turn_id`
    /// is not the session's running turn (it ended, or another one runs).
    async fn append(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        data: &[EventData],
    ) -> Result<Vec<StoredEvent>>;

    /// Appends the `turn/end` of the running turn `turn_id`, records its end kind, usage and
    /// error, adds its usage to the session's and frees the session for the next turn, all at
    /// once. Errors: [`Error::TurnNotRunning`].
    async fn end_turn(&self, session_id: Uuid, turn_id: Uuid, end: &TurnEnd)
    -> Result<StoredEvent>;

    /// Events with `seq > after`, in order, at most `limit` (all when `None`).
    /// Errors: [`Error::SessionNotFound`].
    async fn load(
        &self,
        session_id: Uuid,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<StoredEvent>>;

    /// The events that carry the conversation (`user/message`, `assistant/message`,
    /// `tool/result`), parsed, in order: what `derive_messages` needs, without the chunks.
    async fn load_conversation(&self, session_id: Uuid) -> Result<Vec<Event>>;

    /// The turn `turn_id` of session `session_id`. Errors: [`Error::TurnNotFound`].
    async fn turn(&self, session_id: Uuid, turn_id: Uuid) -> Result<Turn>;

    /// The session's turns, oldest first. Errors: [`Error::SessionNotFound`].
    async fn list_turns(&self, session_id: Uuid) -> Result<Vec<Turn>>;

    /// Every running turn of every session (for closing them after a crash).
    async fn running_turns(&self) -> Result<Vec<Turn>>;

    /// Whether the database answers (for `/readyz`).
    async fn ping(&self) -> Result<()>;
}
