//! The store's errors.

use uuid::Uuid;

/// What a store operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No session with this id.
    #[error("session {0} not found")]
    SessionNotFound(Uuid),
    /// No turn with this id in this session.
    #[error("turn {0} not found")]
    TurnNotFound(Uuid),
    /// The session already runs a turn; carries its id.
    #[error("session is already running turn {active_turn_id}")]
    TurnInProgress {
        /// The running turn.
        active_turn_id: Uuid,
    },
    /// The turn is not the session's running turn (it ended, or never started).
    #[error("turn {0} is not running")]
    TurnNotRunning(Uuid),
    /// A stored row could not be read back (bad JSON, bad id): a bug or a tampered database.
    #[error("corrupt row: {0}")]
    Corrupt(String),
    /// The database failed (connection, IO, constraint, …). Callers may retry.
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// SQLite failed (IO, constraint, a lock held past `busy_timeout`, …). Callers may retry.
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database could not take the operation: a group commit failed, or the SQLite
    /// writer thread is gone. Carries the reason. Callers may retry.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Applying the embedded migrations failed at start-up.
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// `Result` with the store's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
