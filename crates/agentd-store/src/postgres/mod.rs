//! [`PgStore`]: the event log in Postgres, shared by several agentd replicas.
//!
//! Every write to a session locks its row first (`SELECT … FOR UPDATE`, or the `UPDATE` that
//! claims an append's seqs), so appends from any number of replicas are serialised per
//! session: seqs are assigned inside that lock and commit in order, and a reader can never
//! see seq 101 committed before 100. The turn lock is the same row (`active_turn_id`). Each
//! write of events sends `NOTIFY agentd_events` with `<session_id>:<seq>` inside its
//! transaction, so it is delivered only after commit; other replicas use it to wake live
//! readers, who then read the rows (see [`listen`]). An append, the write of every chunk, is
//! one statement (see [`oneshot`]), as are most starts and ends of turns.

mod listen;
mod oneshot;

use std::str::FromStr;
use std::time::Duration;

use agentd_events::{Event, EventData, TurnEnd, format_time};
use async_trait::async_trait;
use chrono::Utc;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{BeginTurn, NewSession, Session, StoredEvent, Turn};
use crate::rows::{self, SESSION_COLUMNS, TURN_COLUMNS, lease_until, to_json};
use crate::{ChangeStream, EventStore};

/// The notification channel of appends.
pub(crate) const CHANNEL: &str = "agentd_events";

/// The event log in Postgres. Cheap to clone.
///
/// Durability matches [`crate::SqliteStore`]'s: a turn's start and end (and everything
/// else but appends) commit synchronously, so they survive a crash of Postgres's machine;
/// appends within a turn (chunks, messages, tool events) commit with
/// `synchronous_commit = off`: they survive a crash of agentd and of any replica, but a
/// crash of the Postgres server or its machine may drop the last ~0.6 s of them (never
/// leaving a gap: WAL replays in order), as a power loss may with SQLite's
/// `synchronous=NORMAL`. The turn's synchronous end flushes every earlier append with it.
/// Waiting for each append's WAL flush cost ~6 ms per turn here (issue 7).
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
    /// Connections for appends, with `synchronous_commit = off`.
    appends: PgPool,
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the embedded
    /// migrations (`migrations/postgres/`). Errors: [`Error::Database`], [`Error::Migrate`].
    pub async fn open(url: &str) -> Result<Self> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await?;
        sqlx::migrate!("../../migrations/postgres")
            .run(&pool)
            .await?;
        let asynchronous =
            PgConnectOptions::from_str(url)?.options([("synchronous_commit", "off")]);
        let appends = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_lazy_with(asynchronous);
        Ok(Self { pool, appends })
    }
}

/// Locks the session's row for this transaction and reads its turn lock and cursor.
async fn lock_head(
    tx: &mut Transaction<'static, Postgres>,
    session_id: Uuid,
) -> Result<rows::SessionHead> {
    let row = sqlx::query(
        "SELECT active_turn_id, last_seq, usage FROM sessions WHERE id = $1 FOR UPDATE",
    )
    .bind(session_id.to_string())
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(Error::SessionNotFound(session_id))?;
    rows::head(&row)
}

/// Inserts `data` as events `after + 1 …` (multi-row inserts), queues the notification,
/// returns them as stored.
async fn insert_events(
    tx: &mut Transaction<'static, Postgres>,
    session_id: Uuid,
    turn_id: Uuid,
    after: u64,
    data: &[EventData],
) -> Result<Vec<StoredEvent>> {
    let stored = rows::encode_events(session_id, turn_id, after, data);
    let (session, turn) = (session_id.to_string(), turn_id.to_string());
    let batches = stored.chunks(rows::INSERT_ROWS);
    let count = batches.len();
    for (i, batch) in batches.enumerate() {
        let insert = rows::insert_events_sql(batch.len());
        // The last batch queues the notification in the same statement (one round trip).
        let notify = (i + 1 == count).then(|| batch.len() * 5);
        let sql = match notify {
            Some(n) => format!(
                "WITH inserted AS ({insert}) SELECT pg_notify(${}, ${})",
                n + 1,
                n + 2
            ),
            None => insert,
        };
        let mut query = sqlx::query(&sql);
        for event in batch {
            query = query
                .bind(&session)
                .bind(event.seq as i64)
                .bind(&turn)
                .bind(&*event.event_type)
                .bind(&*event.json);
        }
        if let (Some(_), Some(last)) = (notify, batch.last()) {
            query = query
                .bind(CHANNEL)
                .bind(format!("{session_id}:{}", last.seq));
        }
        query.execute(&mut **tx).await?;
    }
    Ok(stored)
}

#[async_trait]
impl EventStore for PgStore {
    async fn create_session(&self, new: NewSession) -> Result<Session> {
        let id = Uuid::now_v7();
        let now = format_time(&Utc::now());
        sqlx::query(
            "INSERT INTO sessions (id, title, model, system, tools, max_steps, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
        )
        .bind(id.to_string())
        .bind(&new.title)
        .bind(&new.model)
        .bind(&new.system)
        .bind(new.tools.as_ref().map(to_json).transpose()?)
        .bind(new.max_steps.map(i64::from))
        .bind(&now)
        .execute(&self.pool)
        .await?;
        self.session(id).await
    }

    async fn session(&self, id: Uuid) -> Result<Session> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = $1"
        ))
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::SessionNotFound(id))?;
        rows::session(&row)
    }

    async fn list_sessions(&self, limit: u32, before: Option<Uuid>) -> Result<Vec<Session>> {
        let cursor = match before {
            Some(id) => Some(self.session(id).await?),
            None => None,
        };
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE $1::TEXT IS NULL OR (created_at, id) < ($1, $2) \
             ORDER BY created_at DESC, id DESC LIMIT $3"
        ))
        .bind(cursor.as_ref().map(|c| format_time(&c.created_at)))
        .bind(cursor.as_ref().map(|c| c.id.to_string()))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::session).collect()
    }

    async fn delete_session(&self, id: Uuid) -> Result<()> {
        let done = sqlx::query("DELETE FROM sessions WHERE id = $1")
            .bind(id.to_string())
            .execute(&self.pool)
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
        if idempotency_key.is_none() {
            if let Some(started) = self.begin_idle(session_id, turn_id, text, lease).await? {
                return Ok(started);
            }
        }
        let mut tx = self.pool.begin().await?;
        let head = lock_head(&mut tx, session_id).await?;
        if let Some(key) = idempotency_key {
            let existing = sqlx::query(&format!(
                "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
                 WHERE t.session_id = $1 AND t.idempotency_key = $2"
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
        let seq = (head.last_seq + 1) as i64;
        let now = format_time(&Utc::now());
        sqlx::query(
            "INSERT INTO turns (id, session_id, status, started_at, first_seq, last_seq, \
             idempotency_key, lease_expires_at) VALUES ($1, $2, 'running', $3, $4, $4, $5, $6)",
        )
        .bind(turn_id.to_string())
        .bind(session_id.to_string())
        .bind(&now)
        .bind(seq)
        .bind(idempotency_key)
        .bind(lease_until(lease))
        .execute(&mut *tx)
        .await?;
        let data = [EventData::UserMessage {
            text: text.to_owned(),
        }];
        let mut stored = insert_events(&mut tx, session_id, turn_id, head.last_seq, &data).await?;
        sqlx::query(
            "UPDATE sessions SET active_turn_id = $1, last_seq = $2, updated_at = $3 WHERE id = $4",
        )
        .bind(turn_id.to_string())
        .bind(seq)
        .bind(&now)
        .bind(session_id.to_string())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        let turn = rows::started_turn(session_id, turn_id, seq as u64, &now)?;
        let event = stored.pop().ok_or(Error::TurnNotFound(turn_id))?;
        Ok(BeginTurn::Started(turn, event))
    }

    async fn renew_lease(&self, turn_id: Uuid, lease: Duration) -> Result<()> {
        let done = sqlx::query(
            "UPDATE turns SET lease_expires_at = $1 WHERE id = $2 AND status = 'running'",
        )
        .bind(lease_until(lease))
        .bind(turn_id.to_string())
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::TurnNotRunning(turn_id));
        }
        Ok(())
    }

    async fn expired_turns(&self) -> Result<Vec<Turn>> {
        let rows = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.status = 'running' AND t.lease_expires_at < $1 ORDER BY t.started_at"
        ))
        .bind(format_time(&Utc::now()))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::turn).collect()
    }

    async fn listen(&self) -> Result<Option<ChangeStream>> {
        Ok(Some(listen::changes(&self.pool).await?))
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
        self.append_one(session_id, turn_id, data).await
    }

    async fn end_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        end: &TurnEnd,
    ) -> Result<StoredEvent> {
        if let Some(event) = self.end_unlocked(session_id, turn_id, end).await? {
            return Ok(event);
        }
        let mut tx = self.pool.begin().await?;
        let mut head = lock_head(&mut tx, session_id).await?;
        if head.active_turn_id != Some(turn_id) {
            return Err(Error::TurnNotRunning(turn_id));
        }
        let data = [EventData::TurnEnd(end.clone())];
        let mut stored = insert_events(&mut tx, session_id, turn_id, head.last_seq, &data).await?;
        let seq = (head.last_seq + 1) as i64;
        let now = format_time(&Utc::now());
        sqlx::query(
            "UPDATE turns SET status = 'ended', end_kind = $1, ended_at = $2, last_seq = $3, \
             usage = $4, error = $5 WHERE id = $6",
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
            "UPDATE sessions SET active_turn_id = NULL, last_seq = $1, usage = $2, updated_at = $3 \
             WHERE id = $4",
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
            "SELECT seq, type, body FROM events WHERE session_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
        )
        .bind(session_id.to_string())
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(limit.map(i64::from))
        .fetch_all(&self.pool)
        .await?;
        if rows.is_empty() {
            self.session(session_id).await?;
        }
        rows.iter().map(rows::event).collect()
    }

    async fn load_conversation(&self, session_id: Uuid) -> Result<Vec<Event>> {
        let rows = sqlx::query(
            "SELECT seq, type, body FROM events WHERE session_id = $1 \
             AND type IN ('user/message', 'assistant/message', 'tool/result') ORDER BY seq",
        )
        .bind(session_id.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(|row| rows::event(row)?.parse()).collect()
    }

    async fn turn(&self, session_id: Uuid, turn_id: Uuid) -> Result<Turn> {
        let row = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.session_id = $1 AND t.id = $2"
        ))
        .bind(session_id.to_string())
        .bind(turn_id.to_string())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::TurnNotFound(turn_id))?;
        rows::turn(&row)
    }

    async fn list_turns(&self, session_id: Uuid) -> Result<Vec<Turn>> {
        let rows = sqlx::query(&format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.session_id = $1 ORDER BY t.first_seq"
        ))
        .bind(session_id.to_string())
        .fetch_all(&self.pool)
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
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(rows::turn).collect()
    }

    async fn ping(&self) -> Result<()> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }
}
