//! The store's operations as plain SQL on one `rusqlite` connection. The writes run on the
//! writer thread inside a savepoint of a group commit ([`super::writer`]); the reads on a
//! pooled read-only connection. Statements are prepared once per connection and cached.

use agentd_events::{Event, EventData, TurnEnd, format_time};
use chrono::Utc;
use rusqlite::{Connection, OptionalExtension, Params, Row, params};
use uuid::Uuid;

use crate::error::{Error, Result};
use crate::model::{BeginTurn, NewSession, Session, StoredEvent, Turn};
use crate::rows::{self, SESSION_COLUMNS, TURN_COLUMNS, to_json};

/// Every row of `sql` with `params`, mapped.
fn all<T, P: Params>(
    connection: &Connection,
    sql: &str,
    params: P,
    map: impl Fn(&Row<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row)?);
    }
    Ok(out)
}

/// The first row of `sql` with `params`, mapped; `None` when there is none.
fn first<T, P: Params>(
    connection: &Connection,
    sql: &str,
    params: P,
    map: impl Fn(&Row<'_>) -> Result<T>,
) -> Result<Option<T>> {
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(params)?;
    rows.next()?.map(map).transpose()
}

pub(super) fn create_session(connection: &Connection, new: &NewSession) -> Result<Session> {
    let id = Uuid::now_v7();
    let now = format_time(&Utc::now());
    let tools = new.tools.as_ref().map(to_json).transpose()?;
    connection
        .prepare_cached(
            "INSERT INTO sessions (id, title, model, system, tools, max_steps, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            id.to_string(),
            new.title,
            new.model,
            new.system,
            tools,
            new.max_steps.map(i64::from),
            now,
            now,
        ])?;
    session(connection, id)
}

pub(super) fn session(connection: &Connection, id: Uuid) -> Result<Session> {
    first(
        connection,
        &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?"),
        [id.to_string()],
        |row| rows::session(row),
    )?
    .ok_or(Error::SessionNotFound(id))
}

pub(super) fn list_sessions(
    connection: &Connection,
    limit: u32,
    before: Option<Uuid>,
) -> Result<Vec<Session>> {
    match before {
        None => all(
            connection,
            &format!(
                "SELECT {SESSION_COLUMNS} FROM sessions ORDER BY created_at DESC, id DESC LIMIT ?"
            ),
            [i64::from(limit)],
            |row| rows::session(row),
        ),
        Some(cursor) => {
            let cursor = session(connection, cursor)?;
            all(
                connection,
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM sessions WHERE (created_at, id) < (?, ?) \
                     ORDER BY created_at DESC, id DESC LIMIT ?"
                ),
                params![
                    format_time(&cursor.created_at),
                    cursor.id.to_string(),
                    i64::from(limit)
                ],
                |row| rows::session(row),
            )
        }
    }
}

pub(super) fn delete_session(connection: &Connection, id: Uuid) -> Result<()> {
    let deleted = connection
        .prepare_cached("DELETE FROM sessions WHERE id = ?")?
        .execute([id.to_string()])?;
    if deleted == 0 {
        return Err(Error::SessionNotFound(id));
    }
    Ok(())
}

/// A session's turn lock, cursor and usage, read inside the write transaction.
fn head(connection: &Connection, session_id: Uuid) -> Result<rows::SessionHead> {
    first(
        connection,
        "SELECT active_turn_id, last_seq, usage FROM sessions WHERE id = ?",
        [session_id.to_string()],
        |row| rows::head(row),
    )?
    .ok_or(Error::SessionNotFound(session_id))
}

/// Inserts `data` as events `after + 1 …` of the session and returns them as stored.
fn insert_events(
    connection: &Connection,
    session_id: Uuid,
    turn_id: Uuid,
    after: u64,
    data: &[EventData],
) -> Result<Vec<StoredEvent>> {
    let stored = rows::encode_events(session_id, turn_id, after, data);
    let (session, turn) = (session_id.to_string(), turn_id.to_string());
    let mut insert = connection.prepare_cached(
        "INSERT INTO events (session_id, seq, turn_id, type, body) VALUES (?, ?, ?, ?, ?)",
    )?;
    for event in &stored {
        insert.execute(params![
            session,
            event.seq as i64,
            turn,
            &*event.event_type,
            &*event.json
        ])?;
    }
    Ok(stored)
}

/// What [`crate::EventStore::begin_turn`] does, in the writer's transaction.
pub(super) fn begin_turn(
    connection: &Connection,
    session_id: Uuid,
    turn_id: Uuid,
    text: &str,
    idempotency_key: Option<&str>,
    lease_expires_at: &str,
) -> Result<BeginTurn> {
    let head = head(connection, session_id)?;
    if let Some(key) = idempotency_key {
        let existing = first(
            connection,
            &format!(
                "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
                 WHERE t.session_id = ? AND t.idempotency_key = ?"
            ),
            params![session_id.to_string(), key],
            |row| rows::turn(row),
        )?;
        if let Some(turn) = existing {
            return Ok(BeginTurn::Existing(turn));
        }
    }
    if let Some(active_turn_id) = head.active_turn_id {
        return Err(Error::TurnInProgress { active_turn_id });
    }
    let seq = head.last_seq + 1;
    let now = format_time(&Utc::now());
    connection
        .prepare_cached(
            "INSERT INTO turns (id, session_id, status, started_at, first_seq, last_seq, \
             idempotency_key, lease_expires_at) VALUES (?, ?, 'running', ?, ?, ?, ?, ?)",
        )?
        .execute(params![
            turn_id.to_string(),
            session_id.to_string(),
            now,
            seq as i64,
            seq as i64,
            idempotency_key,
            lease_expires_at,
        ])?;
    let data = [EventData::UserMessage {
        text: text.to_owned(),
    }];
    let mut stored = insert_events(connection, session_id, turn_id, head.last_seq, &data)?;
    connection
        .prepare_cached(
            "UPDATE sessions SET active_turn_id = ?, last_seq = ?, updated_at = ? WHERE id = ?",
        )?
        .execute(params![
            turn_id.to_string(),
            seq as i64,
            now,
            session_id.to_string()
        ])?;
    let event = stored.pop().ok_or(Error::TurnNotFound(turn_id))?;
    let turn = rows::started_turn(session_id, turn_id, seq, &now)?;
    Ok(BeginTurn::Started(turn, event))
}

/// What [`crate::EventStore::append`] does: one statement claims the seqs and checks the turn
/// lock, then the rows go in.
pub(super) fn append(
    connection: &Connection,
    session_id: Uuid,
    turn_id: Uuid,
    data: &[EventData],
) -> Result<Vec<StoredEvent>> {
    let claimed: Option<i64> = connection
        .prepare_cached(
            "UPDATE sessions SET last_seq = last_seq + ?, updated_at = ? \
             WHERE id = ? AND active_turn_id = ? RETURNING last_seq",
        )?
        .query_row(
            params![
                data.len() as i64,
                format_time(&Utc::now()),
                session_id.to_string(),
                turn_id.to_string()
            ],
            |row| row.get(0),
        )
        .optional()?;
    let Some(last) = claimed else {
        return Err(not_running(connection, session_id, turn_id));
    };
    let after = rows::seq(last).saturating_sub(data.len() as u64);
    insert_events(connection, session_id, turn_id, after, data)
}

/// Why a write for `turn_id` found no running turn: the session is gone, or the turn is not
/// (or no longer) its running one.
fn not_running(connection: &Connection, session_id: Uuid, turn_id: Uuid) -> Error {
    match session(connection, session_id) {
        Ok(_) => Error::TurnNotRunning(turn_id),
        Err(error) => error,
    }
}

/// What [`crate::EventStore::end_turn`] does, in the writer's transaction.
pub(super) fn end_turn(
    connection: &Connection,
    session_id: Uuid,
    turn_id: Uuid,
    end: &TurnEnd,
) -> Result<StoredEvent> {
    let mut head = head(connection, session_id)?;
    if head.active_turn_id != Some(turn_id) {
        return Err(Error::TurnNotRunning(turn_id));
    }
    let data = [EventData::TurnEnd(end.clone())];
    let mut stored = insert_events(connection, session_id, turn_id, head.last_seq, &data)?;
    let seq = (head.last_seq + 1) as i64;
    let now = format_time(&Utc::now());
    connection
        .prepare_cached(
            "UPDATE turns SET status = 'ended', end_kind = ?, ended_at = ?, last_seq = ?, \
             usage = ?, error = ? WHERE id = ?",
        )?
        .execute(params![
            end.kind.as_str(),
            now,
            seq,
            to_json(&end.usage)?,
            end.error.as_ref().map(to_json).transpose()?,
            turn_id.to_string()
        ])?;
    head.usage.add(&end.usage);
    connection
        .prepare_cached(
            "UPDATE sessions SET active_turn_id = NULL, last_seq = ?, usage = ?, updated_at = ? \
             WHERE id = ?",
        )?
        .execute(params![
            seq,
            to_json(&head.usage)?,
            now,
            session_id.to_string()
        ])?;
    stored.pop().ok_or(Error::TurnNotFound(turn_id))
}

pub(super) fn renew_lease(connection: &Connection, turn_id: Uuid, until: &str) -> Result<()> {
    let renewed = connection
        .prepare_cached(
            "UPDATE turns SET lease_expires_at = ? WHERE id = ? AND status = 'running'",
        )?
        .execute(params![until, turn_id.to_string()])?;
    if renewed == 0 {
        return Err(Error::TurnNotRunning(turn_id));
    }
    Ok(())
}

pub(super) fn load(
    connection: &Connection,
    session_id: Uuid,
    after: u64,
    limit: Option<u32>,
) -> Result<Vec<StoredEvent>> {
    let events = all(
        connection,
        "SELECT seq, type, body FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        params![
            session_id.to_string(),
            i64::try_from(after).unwrap_or(i64::MAX),
            limit.map_or(-1, i64::from)
        ],
        |row| rows::event(row),
    )?;
    if events.is_empty() {
        // Tell an empty page of a real session from a session that does not exist.
        session(connection, session_id)?;
    }
    Ok(events)
}

pub(super) fn load_conversation(connection: &Connection, session_id: Uuid) -> Result<Vec<Event>> {
    all(
        connection,
        // The partial index holds exactly these rows; without the hint SQLite walks the
        // primary key through every chunk of the session.
        "SELECT seq, type, body FROM events INDEXED BY events_conversation \
         WHERE session_id = ? \
         AND type IN ('user/message', 'assistant/message', 'tool/result') ORDER BY seq",
        [session_id.to_string()],
        |row| rows::event(row)?.parse(),
    )
}

pub(super) fn turn(connection: &Connection, session_id: Uuid, turn_id: Uuid) -> Result<Turn> {
    first(
        connection,
        &format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.session_id = ? AND t.id = ?"
        ),
        params![session_id.to_string(), turn_id.to_string()],
        |row| rows::turn(row),
    )?
    .ok_or(Error::TurnNotFound(turn_id))
}

pub(super) fn list_turns(connection: &Connection, session_id: Uuid) -> Result<Vec<Turn>> {
    let turns = all(
        connection,
        &format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.session_id = ? ORDER BY t.first_seq"
        ),
        [session_id.to_string()],
        |row| rows::turn(row),
    )?;
    if turns.is_empty() {
        session(connection, session_id)?;
    }
    Ok(turns)
}

pub(super) fn running_turns(connection: &Connection) -> Result<Vec<Turn>> {
    all(
        connection,
        &format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.status = 'running' ORDER BY t.started_at"
        ),
        [],
        |row| rows::turn(row),
    )
}

pub(super) fn expired_turns(connection: &Connection) -> Result<Vec<Turn>> {
    all(
        connection,
        &format!(
            "SELECT {TURN_COLUMNS} FROM turns t JOIN sessions s ON s.id = t.session_id \
             WHERE t.status = 'running' AND t.lease_expires_at < ? ORDER BY t.started_at"
        ),
        [format_time(&Utc::now())],
        |row| rows::turn(row),
    )
}
