//! [`SqliteStore`]: the event log in one SQLite file.
//!
//! One writer connection serialises every write transaction in this process (each begins
//! `IMMEDIATE`, so a second process on the same file waits on `busy_timeout` instead of
//! failing a read-to-write upgrade); a small pool of readers serves loads concurrently under
//! WAL. `synchronous=NORMAL`: a committed event survives a crash of the process (what the
//! server promises); a power loss may drop the last transactions (set FULL for that).

use std::str::FromStr;
use std::time::Duration;

use agentd_events::{Event, EventData, TurnEnd, format_time};
use async_trait::async_trait;
use chrono::Utc;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};
use uuid::Uuid;

use crate::EventStore;
use crate::error::{Error, Result};
use crate::model::{BeginTurn, NewSession, Session, StoredEvent, Turn};
use crate::rows::{self, SESSION_COLUMNS, TURN_COLUMNS, lease_until, to_json};

/// How long a write waits for another process's lock on the file before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent readers (SSE replays, page loads).
const READERS: u32 = 4;

/// The event log in SQLite: one file (plus its `-wal`), created and migrated on open.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    /// The one connection that writes; every write transaction goes through it, in turn.
    writer: SqlitePool,
    /// Read-only connections for loads.
    readers: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating if missing) the database at `url` (`sqlite://path/to/agentd.db`) and
    /// applies the embedded migrations (`migrations/sqlite/`). The parent folder must exist.
    /// Errors: [`Error::Database`] when the file cannot be opened, [`Error::Migrate`].
    pub async fn open(url: &str) -> Result<Self> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options.clone())
            .await?;
        sqlx::migrate!("../../migrations/sqlite")
            .run(&writer)
            .await?;
        let readers = SqlitePoolOptions::new()
            .max_connections(READERS)
            .connect_with(options.read_only(true))
            .await?;
        Ok(Self { writer, readers })
    }

    async fn write(&self) -> Result<Transaction<'static, Sqlite>> {
        Ok(self.writer.begin_with("BEGIN IMMEDIATE").await?)
    }
}

async fn head(
    tx: &mut Transaction<'static, Sqlite>,
    session_id: Uuid,
) -> Result<rows::SessionHead> {
    let row = sqlx::query("SELECT active_turn_id, last_seq, usage FROM sessions WHERE id = ?")
        .bind(session_id.to_string())
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(Error::SessionNotFound(session_id))?;
    rows::head(&row)
}

/// Inserts `data` as events `after + 1 …` (multi-row inserts) and returns them as stored.
async fn insert_events(
    tx: &mut Transaction<'static, Sqlite>,
    session_id: Uuid,
    turn_id: Uuid,
    after: u64,
    data: &[EventData],
) -> Result<Vec<StoredEvent>> {
    let stored = rows::encode_events(session_id, turn_id, after, data);
    let (session, turn) = (session_id.to_string(), turn_id.to_string());
    for batch in stored.chunks(rows::INSERT_ROWS) {
        let sql = rows::insert_events_sql(batch.len(), false);
        let mut query = sqlx::query(&sql);
        for event in batch {
            query = query
                .bind(&session)
                .bind(event.seq as i64)
                .bind(&turn)
                .bind(&*event.event_type)
                .bind(&*event.json);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(stored)
}

/// Why a write for `turn_id` found no running turn: the session is gone, or the turn is not
/// (or no longer) its running one.
async fn not_running(readers: &SqlitePool, session_id: Uuid, turn_id: Uuid) -> Error {
    let exists = sqlx::query("SELECT 1 FROM sessions WHERE id = ?")
        .bind(session_id.to_string())
        .fetch_optional(readers)
        .await;
    match exists {
        Ok(Some(_)) => Error::TurnNotRunning(turn_id),
        Ok(None) => Error::SessionNotFound(session_id),
        Err(error) => error.into(),
    }
}

#[async_trait]
impl EventStore for SqliteStore {
    async fn create_session(&self, new: NewSession) -> Result<Session> {
        let id = Uuid::now_v7();
        let now = format_time(&Utc::now());
        let tools = new.tools.as_ref().map(to_json).transpose()?;
        sqlx::query(
            "INSERT INTO sessions (id, title, model, system, tools, max_steps, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(id.to_string())
        .bind(&new.title)
        .bind(&new.model)
        .bind(&new.system)
        .bind(tools)
        .bind(new.max_steps.map(i64::from))
        .bind(&now)
        .bind(&now)
        .execute(&self.writer)
        .await?;
        self.session(id).await
    }

    async fn session(&self, id: Uuid) -> Result<Session> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"
        ))
        .bind(id.to_string())
        .fetch_optional(&self.readers)
        .await?
        .ok_or(Error::SessionNotFound(id))?;
        rows::session(&row)
    }

    async fn list_sessions(&self, limit: u32, before: Option<Uuid>) -> Result<Vec<Session>> {
        let rows = match before {
            None => sqlx::query(&format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?"
            ))
            .bind(i64::from(limit))
            .fetch_all(&self.readers)
            .await?,
            Some(cursor) => {
                let cursor = self.session(cursor).await?;
                sqlx::query(&format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions WHERE (created_at, id) < (?, ?) \
                     ORDER BY created_at DESC, id DESC LIMIT ?"
                ))
                .bind(format_time(&cursor.created_at))
                .bind(cursor.id.to_string())
                .bind(i64::from(limit))
                .fetch_all(&self.readers)
                .await?
            }
        };
        rows.iter().map(rows::session).collect()
    }

    async fn delete_session(&self, id: Uuid) -> Result<()> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = ?")
            .bind(id.to_string())
            .execute(&self.writer)
            .await?;
        if done.rows_affected() == 0 {
            return Err(Error::SessionNotFound(id));
        }
        Ok(())
    }

    async fn begin_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        text: &str,
        idempotency_key: Option<&str>,
        lease: Duration,
    ) -> Result<BeginTurn> {
        let mut tx = self.write().await?;
        let head = head(&mut tx, session_id).await?;
        if let Some(key) = idempotency_key {
            let existing = sqlx::query(&format!(
                "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
                 WHERE t.session_id = ? AND t.idempotency_key = ?"
            ))
            .bind(session_id.to_string())
            .bind(key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = existing {
                return Ok(BeginTurn::Existing(rows::turn(&row)?));
            }
        }
        if let Some(active_turn_id) = head.active_turn_id {
            return Err(Error::TurnInProgress { active_turn_id });
        }
        let seq = head.last_seq + 1;
        let now = format_time(&Utc::now());
        sqlx::query(
            "INSERT INTO turns (id, session_id, status, started_at, first_seq, last_seq, idempotency_key, \
             lease_expires_at) VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
        )
        .bind(turn_id.to_string())
        .bind(session_id.to_string())
        .bind(&now)
        .bind(seq as i64)
        .bind(seq as i64)
        .bind(idempotency_key)
        .bind(lease_until(lease))
        .execute(&mut *tx)
        .await?;
        let data = [EventData::UserMessage {
            text: text.to_owned(),
        }];
        let mut stored = insert_events(&mut tx, session_id, turn_id, head.last_seq, &data).await?;
        sqlx::query(
            "UPDATE sessions SET active_turn_id = ?, last_seq = ?, updated_at = ? WHERE id = ?",
        )
        .bind(turn_id.to_string())
        .bind(seq as i64)
        .bind(&now)
        .bind(session_id.to_string())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let turn = self.turn(session_id, turn_id).await?;
        let event = stored.pop().ok_or(Error::TurnNotFound(turn_id))?;
        Ok(BeginTurn::Started(turn, event))
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
        // One statement claims the seqs and checks the turn lock; one inserts the rows.
        let mut tx = self.write().await?;
        let claimed = sqlx::query(
            "UPDATE sessions SET last_seq = last_seq + ?, updated_at = ? \
             WHERE id = ? AND active_turn_id = ? RETURNING last_seq",
        )
        .bind(data.len() as i64)
        .bind(format_time(&Utc::now()))
        .bind(session_id.to_string())
        .bind(turn_id.to_string())
        .fetch_optional(&mut *tx)
        .await?;
        let Some(claimed) = claimed else {
            drop(tx);
            return Err(not_running(&self.readers, session_id, turn_id).await);
        };
        let last = rows::seq(sqlx::Row::try_get(&claimed, 0)?);
        let after = last.saturating_sub(data.len() as u64);
        let stored = insert_events(&mut tx, session_id, turn_id, after, data).await?;
        tx.commit().await?;
        Ok(stored)
    }

    async fn end_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        end: &TurnEnd,
    ) -> Result<StoredEvent> {
        let mut tx = self.write().await?;
        let mut head = head(&mut tx, session_id).await?;
        if head.active_turn_id != Some(turn_id) {
            return Err(Error::TurnNotRunning(turn_id));
        }
        let data = [EventData::TurnEnd(end.clone())];
        let mut stored = insert_events(&mut tx, session_id, turn_id, head.last_seq, &data).await?;
        let seq = (head.last_seq + 1) as i64;
        let now = format_time(&Utc::now());
        sqlx::query(
            "UPDATE turns SET status = 'ended', end_kind = ?, ended_at = ?, last_seq = ?, usage = ?, \
             error = ? WHERE id = ?",
        )
        .bind(end.kind.as_str())
        .bind(&now)
        .bind(seq)
        .bind(to_json(&end.usage)?)
        .bind(end.error.as_ref().map(to_json).transpose()?)
        .bind(turn_id.to_string())
        .execute(&mut *tx)
        .await?;
        head.usage.add(&end.usage);
        sqlx::query(
            "UPDATE sessions SET active_turn_id = NULL, last_seq = ?, usage = ?, updated_at = ? \
             WHERE id = ?",
        )
        .bind(seq)
        .bind(to_json(&head.usage)?)
        .bind(&now)
        .bind(session_id.to_string())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        stored.pop().ok_or(Error::TurnNotFound(turn_id))
    }

    async fn load(
        &self,
        session_id: Uuid,
        after: u64,
        limit: Option<u32>,
    ) -> Result<Vec<StoredEvent>> {
        let rows = sqlx::query(
            "SELECT seq, type, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        )
        .bind(session_id.to_string())
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(limit.map_or(-1, i64::from))
        .fetch_all(&self.readers)
        .await?;
        if rows.is_empty() {
            // Tell an empty page of a real session from a session that does not exist.
            self.session(session_id).await?;
        }
        rows.iter().map(rows::event).collect()
    }

    async fn load_conversation(&self, session_id: Uuid) -> Result<Vec<Event>> {
        let rows = sqlx::query(
            // The partial index holds exactly these rows; without the hint SQLite walks the
            // primary key through every chunk of the session.
            "SELECT seq, type, body FROM events INDEXED BY events_conversation \
             WHERE session_id = ? \
             AND type IN ('user/message', 'assistant/message', 'tool/result') ORDER BY seq",
        )
        .bind(session_id.to_string())
        .fetch_all(&self.readers)
        .await?;
        rows.iter().map(|row| rows::event(row)?.parse()).collect()
    }

    async fn turn(&self, session_id: Uuid, turn_id: Uuid) -> Result<Turn> {
        let row = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.session_id = ? AND t.id = ?"
        ))
        .bind(session_id.to_string())
        .bind(turn_id.to_string())
        .fetch_optional(&self.readers)
        .await?
        .ok_or(Error::TurnNotFound(turn_id))?;
        rows::turn(&row)
    }

    async fn list_turns(&self, session_id: Uuid) -> Result<Vec<Turn>> {
        let rows = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.session_id = ? ORDER BY t.first_seq"
        ))
        .bind(session_id.to_string())
        .fetch_all(&self.readers)
        .await?;
        if rows.is_empty() {
            self.session(session_id).await?;
        }
        rows.iter().map(rows::turn).collect()
    }

    async fn running_turns(&self) -> Result<Vec<Turn>> {
        let rows = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.status = 'running' ORDER BY t.started_at"
        ))
        .fetch_all(&self.readers)
        .await?;
        rows.iter().map(rows::turn).collect()
    }

    async fn renew_lease(&self, turn_id: Uuid, lease: Duration) -> Result<()> {
        let done = sqlx::query(
            "UPDATE turns SET lease_expires_at = ? WHERE id = ? AND status = 'running'",
        )
        .bind(lease_until(lease))
        .bind(turn_id.to_string())
        .execute(&self.writer)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::TurnNotRunning(turn_id));
        }
        Ok(())
    }

    async fn expired_turns(&self) -> Result<Vec<Turn>> {
        let rows = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.status = 'running' AND t.lease_expires_at < ? ORDER BY t.started_at"
        ))
        .bind(format_time(&Utc::now()))
        .fetch_all(&self.readers)
        .await?;
        rows.iter().map(rows::turn).collect()
    }

    async fn listen(&self) -> Result<Option<crate::ChangeStream>> {
        Ok(None)
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.readers).await?;
        Ok(())
    }
}
