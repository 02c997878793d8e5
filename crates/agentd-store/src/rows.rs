//! Reading rows back into the store's records, for every backend.
//!
//! Both schemas store ids, times and JSON as text and numbers as 64-bit integers, so one
//! mapping serves them through [`Cells`].

use std::sync::Arc;

use agentd_events::{ErrorInfo, TurnEndKind, Usage};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{Session, SessionStatus, StoredEvent, Turn, TurnStatus};

/// The typed cells the mappings read, implemented for each backend's row.
pub(crate) trait Cells {
    fn text(&self, column: &str) -> Result<String>;
    fn opt_text(&self, column: &str) -> Result<Option<String>>;
    fn int(&self, column: &str) -> Result<i64>;
    fn opt_int(&self, column: &str) -> Result<Option<i64>>;
}

macro_rules! cells_for {
    ($row:ty) => {
        impl Cells for $row {
            fn text(&self, column: &str) -> Result<String> {
                Ok(self.try_get(column)?)
            }
            fn opt_text(&self, column: &str) -> Result<Option<String>> {
                Ok(self.try_get(column)?)
            }
            fn int(&self, column: &str) -> Result<i64> {
                Ok(self.try_get(column)?)
            }
            fn opt_int(&self, column: &str) -> Result<Option<i64>> {
                Ok(self.try_get(column)?)
            }
        }
    };
}

cells_for!(PgRow);

impl Cells for rusqlite::Row<'_> {
    fn text(&self, column: &str) -> Result<String> {
        Ok(self.get(column)?)
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        Ok(self.get(column)?)
    }
    fn int(&self, column: &str) -> Result<i64> {
        Ok(self.get(column)?)
    }
    fn opt_int(&self, column: &str) -> Result<Option<i64>> {
        Ok(self.get(column)?)
    }
}

pub(crate) const SESSION_COLUMNS: &str = "id, title, model, system, tools, max_steps, \
     active_turn_id, last_seq, usage, created_at, updated_at";

pub(crate) const TURN_COLUMNS: &str = "t.id, t.session_id, t.status, t.end_kind, t.started_at, \
     t.ended_at, t.first_seq, t.last_seq, t.usage, t.error, s.last_seq AS session_last_seq";

pub(crate) fn session(row: &impl Cells) -> Result<Session> {
    let active_turn_id = opt_uuid(row.opt_text("active_turn_id")?)?;
    Ok(Session {
        id: uuid(&row.text("id")?)?,
        title: row.opt_text("title")?,
        model: row.opt_text("model")?,
        system: row.opt_text("system")?,
        tools: opt_json(row.opt_text("tools")?)?,
        max_steps: row.opt_int("max_steps")?.map(clamp_u32),
        status: if active_turn_id.is_some() {
            SessionStatus::Running
        } else {
            SessionStatus::Idle
        },
        active_turn_id,
        last_seq: seq(row.int("last_seq")?),
        usage: json(&row.text("usage")?)?,
        created_at: time(&row.text("created_at")?)?,
        updated_at: time(&row.text("updated_at")?)?,
    })
}

pub(crate) fn turn(row: &impl Cells) -> Result<Turn> {
    let status = match row.text("status")?.as_str() {
        "running" => TurnStatus::Running,
        _ => TurnStatus::Ended,
    };
    let end_kind: Option<TurnEndKind> = row
        .opt_text("end_kind")?
        .map(|kind| json(&format!("\"{kind}\"")))
        .transpose()?;
    // A running turn's last event is the session's last event.
    let last_seq = match status {
        TurnStatus::Running => row.int("session_last_seq")?,
        TurnStatus::Ended => row.int("last_seq")?,
    };
    Ok(Turn {
        id: uuid(&row.text("id")?)?,
        session_id: uuid(&row.text("session_id")?)?,
        status,
        end_kind,
        started_at: time(&row.text("started_at")?)?,
        ended_at: row.opt_text("ended_at")?.map(|t| time(&t)).transpose()?,
        first_seq: seq(row.int("first_seq")?),
        last_seq: seq(last_seq),
        usage: json::<Usage>(&row.text("usage")?)?,
        error: opt_json::<ErrorInfo>(row.opt_text("error")?)?,
    })
}

pub(crate) fn event(row: &impl Cells) -> Result<StoredEvent> {
    Ok(StoredEvent {
        seq: seq(row.int("seq")?),
        event_type: Arc::from(row.text("type")?),
        json: Arc::from(row.text("body")?),
    })
}

pub(crate) fn uuid(text: &str) -> Result<Uuid> {
    Uuid::parse_str(text).map_err(|e| Error::Corrupt(format!("id {text:?}: {e}")))
}

fn opt_uuid(text: Option<String>) -> Result<Option<Uuid>> {
    text.as_deref().map(uuid).transpose()
}

fn time(text: &str) -> Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| Error::Corrupt(format!("time {text:?}: {e}")))
}

fn json<T: DeserializeOwned>(text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Corrupt(format!("json {text:?}: {e}")))
}

fn opt_json<T: DeserializeOwned>(text: Option<String>) -> Result<Option<T>> {
    text.as_deref().map(json).transpose()
}

/// SQLite integers are i64; seqs are never negative.
pub(crate) fn seq(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn clamp_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}

/// The turn `begin_turn` just started at `started_at` (as stored) with its `user/message` at
/// `seq`: what a read would return, without reading it back.
pub(crate) fn started_turn(
    session_id: Uuid,
    turn_id: Uuid,
    seq: u64,
    started_at: &str,
) -> Result<Turn> {
    Ok(Turn {
        id: turn_id,
        session_id,
        status: TurnStatus::Running,
        end_kind: None,
        started_at: time(started_at)?,
        ended_at: None,
        first_seq: seq,
        last_seq: seq,
        usage: Usage::default(),
        error: None,
    })
}

/// A session's turn lock, cursor and usage, as read inside a write transaction.
pub(crate) struct SessionHead {
    pub(crate) active_turn_id: Option<Uuid>,
    pub(crate) last_seq: u64,
    pub(crate) usage: Usage,
}

/// Reads `active_turn_id, last_seq, usage`.
pub(crate) fn head(row: &impl Cells) -> Result<SessionHead> {
    Ok(SessionHead {
        active_turn_id: opt_uuid(row.opt_text("active_turn_id")?)?,
        last_seq: seq(row.int("last_seq")?),
        usage: json(&row.text("usage")?)?,
    })
}

/// A value as stored JSON text.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Corrupt(e.to_string()))
}

/// A lease's end, `lease` from now, as stored (far future when it overflows).
pub(crate) fn lease_until(lease: std::time::Duration) -> String {
    let until = chrono::Duration::from_std(lease)
        .ok()
        .and_then(|lease| Utc::now().checked_add_signed(lease))
        .unwrap_or(DateTime::<Utc>::MAX_UTC);
    agentd_events::format_time(&until)
}

/// Events `after + 1 …` of `data`, serialised once, as they will be stored.
pub(crate) fn encode_events(
    session_id: Uuid,
    turn_id: Uuid,
    after: u64,
    data: &[agentd_events::EventData],
) -> Vec<StoredEvent> {
    let at = Utc::now();
    (after + 1..)
        .zip(data)
        .map(|(seq, data)| StoredEvent {
            seq,
            event_type: data.type_name().into(),
            json: agentd_events::envelope_json(seq, session_id, turn_id, &at, data).into(),
        })
        .collect()
}

/// Rows per multi-row `INSERT INTO events` (5 parameters each, far below Postgres's
/// parameter limit).
pub(crate) const INSERT_ROWS: usize = 100;

/// `INSERT INTO events (…) VALUES ($1, …, $5), ($6, …)` for `rows` rows (Postgres).
pub(crate) fn insert_events_sql(rows: usize) -> String {
    let mut sql = String::from("INSERT INTO events (session_id, seq, turn_id, type, body) VALUES ");
    for row in 0..rows {
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for column in 0..5 {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", row * 5 + column + 1));
        }
        sql.push(')');
    }
    sql
}
