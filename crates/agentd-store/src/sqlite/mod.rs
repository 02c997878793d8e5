//! [`SqliteStore`]: the event log in one SQLite file.
//!
//! One thread owns the one writing connection and commits every write operation of this
//! process in groups ([`writer`]); each group begins `IMMEDIATE`, so a second process on the
//! same file waits on `busy_timeout` instead of failing a read-to-write upgrade. Reads run on
//! a small pool of read-only connections on tokio's blocking threads, concurrently under WAL
//! ([`readers`]). `synchronous=NORMAL`: a committed event survives a crash of the process
//! (what the server promises); a power loss may drop the last transactions (set FULL for
//! that).
//!
//! The statements run through `rusqlite`, each operation whole on one thread: through
//! sqlx's SQLite driver every statement and every row crossed to a worker thread and back,
//! which cost ~650 context switches per turn (issue 7). sqlx still applies the migrations,
//! so databases keep one migration history.

mod checkpoint;
mod ops;
mod readers;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use agentd_events::{Event, EventData, TurnEnd};
use async_trait::async_trait;
use rusqlite::{Connection, OpenFlags};
use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use uuid::Uuid;

use crate::EventStore;
use crate::error::Result;
use crate::model::{BeginTurn, NewSession, Session, StoredEvent, Turn};
use crate::rows::lease_until;
use checkpoint::Checkpointer;
use readers::Readers;
use writer::Writer;

/// How long a write waits for another process's lock on the file before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The event log in SQLite: one file (plus its `-wal`), created and migrated on open.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// The thread that runs every write transaction of this process, in groups.
    writer: Writer,
    /// Read-only connections for loads.
    readers: Readers,
    /// Checkpoints the WAL off the writer thread, while any clone lives.
    _checkpointer: Arc<Checkpointer>,
}

impl SqliteStore {
    /// Opens (creating if missing) the database file at `url` (`sqlite://path/to/agentd.db`)
    /// and applies the embedded migrations (`migrations/sqlite/`). The parent folder must
    /// exist; an in-memory database is not supported (the writer and readers share a file).
    /// Errors: [`crate::Error::Database`] or [`crate::Error::Sqlite`] when the file cannot be
    /// opened, [`crate::Error::Migrate`], [`crate::Error::Unavailable`] when the writer thread
    /// cannot start.
    pub async fn open(url: &str) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let path = options.get_filename().to_path_buf();
        let mut migrating = options.connect().await?;
        sqlx::migrate!("../../migrations/sqlite")
            .run(&mut migrating)
            .await?;
        sqlx::Connection::close(migrating).await?;
        let writer = Writer::spawn(open_writer(&path)?)?;
        let checkpointer = Arc::new(Checkpointer::spawn(&path)?);
        let readers = Readers::open(path)?;
        Ok(Self {
            writer,
            readers,
            _checkpointer: checkpointer,
        })
    }
}

/// The writing connection: WAL (already set on the file by the migration), `NORMAL` sync,
/// foreign keys on (for `ON DELETE CASCADE`), no automatic checkpoints (see [`checkpoint`]).
fn open_writer(path: &Path) -> Result<Connection> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = 0;",
    )?;
    connection.set_prepared_statement_cache_capacity(32);
    Ok(connection)
}

#[async_trait]
impl EventStore for SqliteStore {
    async fn create_session(&self, new: NewSession) -> Result<Session> {
        self.writer.run(move |c| ops::create_session(c, &new)).await
    }

    async fn session(&self, id: Uuid) -> Result<Session> {
        self.readers.run(move |c| ops::session(c, id)).await
    }

    async fn list_sessions(&self, limit: u32, before: Option<Uuid>) -> Result<Vec<Session>> {
        self.readers
            .run(move |c| ops::list_sessions(c, limit, before))
            .await
    }

    async fn delete_session(&self, id: Uuid) -> Result<()> {
        self.writer.run(move |c| ops::delete_session(c, id)).await
    }

    async fn begin_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        text: &str,
        idempotency_key: Option<&str>,
        lease: Duration,
    ) -> Result<BeginTurn> {
        let text = text.to_owned();
        let key = idempotency_key.map(str::to_owned);
        let until = lease_until(lease);
        self.writer
            .run(move |c| ops::begin_turn(c, session_id, turn_id, &text, key.as_deref(), &until))
            .await
    }

    async fn append(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        data: &[EventData],
    ) -> Result<Vec<StoredEvent>> {
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let data = data.to_vec();
        self.writer
            .run(move |c| ops::append(c, session_id, turn_id, &data))
            .await
    }

    async fn end_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        end: &TurnEnd,
    ) -> Result<StoredEvent> {
        let end = end.clone();
        self.writer
            .run(move |c| ops::end_turn(c, session_id, turn_id, &end))
            .await
    }

    async fn load(
        &self,
        session_id: Uuid,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<StoredEvent>> {
        self.readers
            .run(move |c| ops::load(c, session_id, after, limit))
            .await
    }

    async fn load_conversation(&self, session_id: Uuid) -> Result<Vec<Event>> {
        self.readers
            .run(move |c| ops::load_conversation(c, session_id))
            .await
    }

    async fn turn(&self, session_id: Uuid, turn_id: Uuid) -> Result<Turn> {
        self.readers
            .run(move |c| ops::turn(c, session_id, turn_id))
            .await
    }

    async fn list_turns(&self, session_id: Uuid) -> Result<Vec<Turn>> {
        self.readers
            .run(move |c| ops::list_turns(c, session_id))
            .await
    }

    async fn running_turns(&self) -> Result<Vec<Turn>> {
        self.readers.run(ops::running_turns).await
    }

    async fn renew_lease(&self, turn_id: Uuid, lease: Duration) -> Result<()> {
        let until = lease_until(lease);
        self.writer
            .run(move |c| ops::renew_lease(c, turn_id, &until))
            .await
    }

    async fn expired_turns(&self) -> Result<Vec<Turn>> {
        self.readers.run(ops::expired_turns).await
    }

    async fn listen(&self) -> Result<Option<crate::ChangeStream>> {
        Ok(None)
    }

    async fn ping(&self) -> Result<()> {
        self.readers
            .run(|c| Ok(c.query_row("SELECT 1", [], |_| Ok(()))?))
            .await
    }
}
