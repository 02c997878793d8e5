//! The store's records: sessions, turns, stored events.

use std::sync::Arc;

use agentd_events::{ErrorInfo, Event, TurnEndKind, Usage};
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

use crate::error::{Error, Result};

/// What a client may set when creating a session; all optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewSession {
    /// A label for humans.
    pub title: Option<String>,
    /// The model for this session's requests; the server default when `None`.
    pub model: Option<String>,
    /// The system prompt; the server default when `None`.
    pub system: Option<String>,
    /// Names of the enabled tools; all of the server's when `None`.
    pub tools: Option<Vec<String>>,
    /// Step limit per turn; the server default when `None`.
    pub max_steps: Option<u32>,
}

/// Whether a session runs a turn now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// No turn runs; a new one may start.
    Idle,
    /// A turn runs (`active_turn_id`).
    Running,
}

/// A session as stored and served by `GET /sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Session {
    /// The session id.
    pub id: Uuid,
    /// A label for humans.
    pub title: Option<String>,
    /// The model override, if any.
    pub model: Option<String>,
    /// The system prompt override, if any.
    pub system: Option<String>,
    /// The enabled tools, if restricted.
    pub tools: Option<Vec<String>>,
    /// The step limit override, if any.
    pub max_steps: Option<u32>,
    /// `idle` or `running`.
    pub status: SessionStatus,
    /// The running turn, if any.
    pub active_turn_id: Option<Uuid>,
    /// The seq of the last event; 0 for an empty log.
    pub last_seq: u64,
    /// Token usage summed over the session's ended turns.
    pub usage: Usage,
    /// Creation time, UTC.
    pub created_at: DateTime<Utc>,
    /// Last change (an event appended or the session edited), UTC.
    pub updated_at: DateTime<Utc>,
}

/// Whether a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnStatus {
    /// The turn runs.
    Running,
    /// The turn has its `turn/end`.
    Ended,
}

/// A turn as stored and served by `GET /sessions/{id}/turns/{turn_id}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Turn {
    /// The turn id.
    pub id: Uuid,
    /// Its session.
    pub session_id: Uuid,
    /// `running` or `ended`.
    pub status: TurnStatus,
    /// How it ended, once it has.
    pub end_kind: Option<TurnEndKind>,
    /// When it started, UTC.
    pub started_at: DateTime<Utc>,
    /// When it ended, UTC.
    pub ended_at: Option<DateTime<Utc>>,
    /// The seq of its `user/message`.
    pub first_seq: u64,
    /// The seq of its last event so far (its `turn/end` once ended).
    pub last_seq: u64,
    /// Token usage of its model requests (known once ended).
    pub usage: Usage,
    /// The error it ended with, if any.
    pub error: Option<ErrorInfo>,
}

/// What [`crate::EventStore::begin_turn`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum BeginTurn {
    /// A new turn started; its `user/message` is stored.
    Started(Turn, StoredEvent),
    /// The idempotency key named a turn that already exists; nothing started.
    Existing(Turn),
}

/// An event as stored: its envelope JSON, serialised once and shared by every reader.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The event's seq.
    pub seq: u64,
    /// The event's `type`, e.g. `assistant/chunk`.
    pub event_type: Arc<str>,
    /// The whole envelope as one line of JSON (DESIGN.md §4).
    pub json: Arc<str>,
}

impl StoredEvent {
    /// The envelope, parsed. Errors: [`Error::Corrupt`] when the JSON is not an event.
    pub fn parse(&self) -> Result<Event> {
        serde_json::from_str(&self.json)
            .map_err(|e| Error::Corrupt(format!("event {}: {e}", self.seq)))
    }
}
