//! The engine's errors.

use uuid::Uuid;

/// What an engine operation can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store failed or refused (not found, turn in progress, …).
    #[error(transparent)]
    Store(#[from] agentd_store::Error),
    /// The request names something the server does not offer (e.g. an unknown tool).
    #[error("{0}")]
    Invalid(String),
    /// The server is shutting down and starts no new turns.
    #[error("the server is shutting down")]
    ShuttingDown,
    /// The turn exists but is not running, so it cannot be cancelled.
    #[error("turn {0} is not running")]
    NotRunning(Uuid),
    /// The session's workspace could not be created or removed.
    #[error("workspace: {0}")]
    Workspace(#[from] std::io::Error),
}

/// `Result` with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
