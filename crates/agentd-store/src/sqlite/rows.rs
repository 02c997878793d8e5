//! Reading SQLite rows back into the store's records.

use std::sync::Arc;

use agentd_events::{ErrorInfo, TurnEndKind, Usage};
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{Session, SessionStatus, StoredEvent, Turn, TurnStatus};

pub(super) const SESSION_COLUMNS: &str = "id, title, model, system, tools, max_steps, \
     active_turn_id, last_seq, usage, created_at, updated_at";

pub(super) const TURN_COLUMNS: &str = "t.id, t.session_id, t.status, t.end_kind, t.started_at, \
     t.ended_at, t.first_seq, t.last_seq, t.usage, t.error, s.last_seq AS session_last_seq";

pub(super) fn session(row: &SqliteRow) -> Result<Session> {
    let active_turn_id = opt_uuid(row.try_get("active_turn_id")?)?;
    Ok(Session {
        id: uuid(&row.try_get::<String, _>("id")?)?,
        title: row.try_get("title")?,
        model: row.try_get("model")?,
        system: row.try_get("system")?,
        tools: opt_json(row.try_get("tools")?)?,
        max_steps: row.try_get::<Option<i64>, _>("max_steps")?.map(clamp_u32),
        status: if active_turn_id.is_some() {
            SessionStatus::Running
        } else {
            SessionStatus::Idle
        },
        active_turn_id,
        last_seq: seq(row.try_get("last_seq")?),
        usage: json(&row.try_get::<String, _>("usage")?)?,
        created_at: time(&row.try_get::<String, _>("created_at")?)?,
        updated_at: time(&row.try_get::<String, _>("updated_at")?)?,
    })
}

pub(super) fn turn(row: &SqliteRow) -> Result<Turn> {
    let status = match row.try_get::<String, _>("status")?.as_str() {
        "running" => TurnStatus::Running,
        _ => TurnStatus::Ended,
    };
    let end_kind: Option<TurnEndKind> = row
        .try_get::<Option<String>, _>("end_kind")?
        .map(|kind| json(&format!("\"{kind}\"")))
        .transpose()?;
    // A running turn's last event is the session's last event.
    let last_seq = match status {
        TurnStatus::Running => row.try_get("session_last_seq")?,
        TurnStatus::Ended => row.try_get("last_seq")?,
    };
    Ok(Turn {
        id: uuid(&row.try_get::<String, _>("id")?)?,
        session_id: uuid(&row.try_get::<String, _>("session_id")?)?,
        status,
        end_kind,
        started_at: time(&row.try_get::<String, _>("started_at")?)?,
        ended_at: row
            .try_get::<Option<String>, _>("ended_at")?
            .map(|t| time(&t))
            .transpose()?,
        first_seq: seq(row.try_get("first_seq")?),
        last_seq: seq(last_seq),
        usage: json::<Usage>(&row.try_get::<String, _>("usage")?)?,
        error: opt_json::<ErrorInfo>(row.try_get("error")?)?,
    })
}

pub(super) fn event(row: &SqliteRow) -> Result<StoredEvent> {
    Ok(StoredEvent {
        seq: seq(row.try_get("seq")?),
        event_type: Arc::from(row.try_get::<String, _>("type")?),
        json: Arc::from(row.try_get::<String, _>("body")?),
    })
}

pub(super) fn uuid(text: &str) -> Result<Uuid> {
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
pub(super) fn seq(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn clamp_u32(value: i64) -> u32 {
    u32::try_from(value.max(0)).unwrap_or(u32::MAX)
}
