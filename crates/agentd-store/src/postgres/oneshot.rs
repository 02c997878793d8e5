//! The Postgres store's common writes, each one statement (one round trip, no explicit
//! transaction): an append, a turn's start without an idempotency key, and a turn's end
//! after an unlocked read. Each statement's first sub-statement takes the session row's
//! lock, as the transactional paths in `super` do with `SELECT … FOR UPDATE`; when the
//! statement finds the session not as expected it changes nothing, and the caller says why
//! or falls back to the transactional path.

use std::time::Duration;

use agentd_events::{
    EventData, SEQ_PREFIX, TurnEnd, envelope_json, envelope_tail, envelope_with_seq, format_time,
};
use chrono::Utc;
use uuid::Uuid;

use super::{CHANNEL, PgStore};
use crate::EventStore;
use crate::error::{Error, Result};
use crate::model::{BeginTurn, StoredEvent};
use crate::rows::{self, lease_until, to_json};

/// [`EventStore::begin_turn`] without an idempotency key, in one statement: takes the turn
/// lock if the session is idle (its row lock serialising racing begins), claims the seq,
/// inserts the turn and its `user/message` (envelope completed by its seq, as in
/// [`APPEND`]) and queues the notification. No row back: busy or gone, which the
/// transactional path then tells apart. `$1` session, `$2` turn, `$3` time, `$4` lease end,
/// `$5` the envelope's opening up to its seq, `$6` envelope tail, `$7` channel.
pub(super) const BEGIN: &str = "\
WITH head AS (
    UPDATE sessions SET active_turn_id = $2, last_seq = last_seq + 1, updated_at = $3
    WHERE id = $1 AND active_turn_id IS NULL
    RETURNING last_seq
), turn AS (
    INSERT INTO turns (id, session_id, status, started_at, first_seq, last_seq, lease_expires_at)
    SELECT $2, $1, 'running', $3, last_seq, last_seq, $4 FROM head
), event AS (
    INSERT INTO events (session_id, seq, turn_id, type, body)
    SELECT $1, last_seq, $2, 'user/message', $5 || last_seq || $6 FROM head
)
SELECT last_seq, pg_notify($7, $1 || ':' || last_seq) FROM head";

/// [`EventStore::end_turn`] in one statement, after an unlocked read of the session: frees
/// the session only if the turn still holds it and nothing was appended since the read (so
/// the `turn/end`'s seq `$3` and the session's new usage `$4` are right), records the turn's
/// end and inserts the event. No row back: the read is stale, and the transactional path
/// runs instead. `$1` session, `$2` turn, `$3` seq, `$4` session usage, `$5` time,
/// `$6` end kind, `$7` turn usage, `$8` error, `$9` envelope, `$10` channel.
pub(super) const END: &str = "\
WITH session AS (
    UPDATE sessions SET active_turn_id = NULL, last_seq = $3, usage = $4, updated_at = $5
    WHERE id = $1 AND active_turn_id = $2 AND last_seq = $3 - 1
    RETURNING id
), turn AS (
    UPDATE turns SET status = 'ended', end_kind = $6, ended_at = $5, last_seq = $3, usage = $7,
        error = $8
    WHERE id = $2 AND EXISTS (SELECT 1 FROM session)
), event AS (
    INSERT INTO events (session_id, seq, turn_id, type, body)
    SELECT $1, $3, $2, 'turn/end', $9 FROM session
)
SELECT pg_notify($10, $1 || ':' || $3) FROM session";

/// [`EventStore::append`] in one statement, so one round trip and no explicit transaction:
/// the `UPDATE` locks the session's row (serialising appends across replicas), checks the
/// turn lock and claims the seqs; the rows go in with each envelope completed by its seq
/// (`$7 || seq || tail`, see `agentd_events::envelope_tail`); the notification is queued.
/// No row back: the turn is not running. `$1` count, `$2` time, `$3` session, `$4` turn,
/// `$5` types, `$6` envelope tails, `$7` the envelope's opening up to its seq, `$8` channel.
pub(super) const APPEND: &str = "\
WITH claimed AS (
    UPDATE sessions SET last_seq = last_seq + $1, updated_at = $2
    WHERE id = $3 AND active_turn_id = $4
    RETURNING last_seq - $1 AS after
), inserted AS (
    INSERT INTO events (session_id, seq, turn_id, type, body)
    SELECT $3, claimed.after + e.n, $4, e.type, $7 || (claimed.after + e.n) || e.tail
    FROM claimed, unnest($5::text[], $6::text[]) WITH ORDINALITY AS e(type, tail, n)
)
SELECT after, pg_notify($8, $3 || ':' || (after + $1)) FROM claimed";

impl PgStore {
    /// [`APPEND`]: what `append` does, one round trip.
    pub(super) async fn append_one(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        data: &[EventData],
    ) -> Result<Vec<StoredEvent>> {
        let at = Utc::now();
        let types: Vec<&str> = data.iter().map(EventData::type_name).collect();
        let tails: Vec<String> = data
            .iter()
            .map(|data| envelope_tail(session_id, turn_id, &at, data))
            .collect();
        let count = data.len() as i64;
        let claimed = sqlx::query(APPEND)
            .bind(count)
            .bind(format_time(&at))
            .bind(session_id.to_string())
            .bind(turn_id.to_string())
            .bind(&types)
            .bind(&tails)
            .bind(SEQ_PREFIX)
            .bind(CHANNEL)
            .fetch_optional(&self.appends)
            .await?;
        let Some(claimed) = claimed else {
            return Err(match self.session(session_id).await {
                Ok(_) => Error::TurnNotRunning(turn_id),
                Err(error) => error,
            });
        };
        let after = rows::seq(sqlx::Row::try_get(&claimed, 0)?);
        Ok((after + 1..)
            .zip(types.into_iter().zip(tails))
            .map(|(seq, (event_type, tail))| StoredEvent {
                seq,
                event_type: event_type.into(),
                json: envelope_with_seq(seq, &tail).into(),
            })
            .collect())
    }

    /// [`BEGIN`]: the common case of `begin_turn`, one round trip; `None` when the session
    /// is busy or gone.
    pub(super) async fn begin_idle(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        text: &str,
        lease: Duration,
    ) -> Result<Option<BeginTurn>> {
        let at = Utc::now();
        let now = format_time(&at);
        let data = EventData::UserMessage {
            text: text.to_owned(),
        };
        let tail = envelope_tail(session_id, turn_id, &at, &data);
        let row = sqlx::query(BEGIN)
            .bind(session_id.to_string())
            .bind(turn_id.to_string())
            .bind(&now)
            .bind(lease_until(lease))
            .bind(SEQ_PREFIX)
            .bind(&tail)
            .bind(CHANNEL)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let seq = rows::seq(sqlx::Row::try_get(&row, 0)?);
        let event = StoredEvent {
            seq,
            event_type: data.type_name().into(),
            json: envelope_with_seq(seq, &tail).into(),
        };
        let turn = rows::started_turn(session_id, turn_id, seq, &now)?;
        Ok(Some(BeginTurn::Started(turn, event)))
    }

    /// [`END`]: the common case of `end_turn`, two round trips; `None` when the session
    /// changed after it was read (the caller then takes the lock).
    pub(super) async fn end_unlocked(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        end: &TurnEnd,
    ) -> Result<Option<StoredEvent>> {
        let row = sqlx::query("SELECT active_turn_id, last_seq, usage FROM sessions WHERE id = $1")
            .bind(session_id.to_string())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::SessionNotFound(session_id))?;
        let mut head = rows::head(&row)?;
        if head.active_turn_id != Some(turn_id) {
            return Err(Error::TurnNotRunning(turn_id));
        }
        let at = Utc::now();
        let seq = head.last_seq + 1;
        let data = EventData::TurnEnd(end.clone());
        let json = envelope_json(seq, session_id, turn_id, &at, &data);
        head.usage.add(&end.usage);
        let done = sqlx::query(END)
            .bind(session_id.to_string())
            .bind(turn_id.to_string())
            .bind(seq as i64)
            .bind(to_json(&head.usage)?)
            .bind(format_time(&at))
            .bind(end.kind.as_str())
            .bind(to_json(&end.usage)?)
            .bind(end.error.as_ref().map(to_json).transpose()?)
            .bind(&json)
            .bind(CHANNEL)
            .fetch_optional(&self.pool)
            .await?;
        Ok(done.map(|_| StoredEvent {
            seq,
            event_type: data.type_name().into(),
            json: json.into(),
        }))
    }
}
