//! Closing turns that a previous process left running (DESIGN.md invariant 4).

use std::sync::Arc;
use std::time::Duration;

use agentd_events::{EventData, Message, ToolResult, TurnEnd, TurnEndKind, Usage};
use agentd_store::{Change, Turn};
use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::Inner;
use crate::error::Result;

/// The result given to a tool call whose turn died with the server.
pub(crate) const INTERRUPTED: &str =
    "error: interrupted by server restart; the command was not run again";

/// Closes every running turn in the store; returns how many.
pub(crate) async fn close_orphaned_turns(inner: &Inner) -> Result<usize> {
    let turns = inner.store.running_turns().await?;
    for turn in &turns {
        close(inner, turn).await?;
    }
    Ok(turns.len())
}

/// Renews this process's leases every third of the lease, and closes turns whose lease
/// lapsed, until `stop`.
pub(crate) async fn keep_leases(inner: &Inner, stop: CancellationToken) {
    let lease = inner.config.turn_lease;
    let mut tick = tokio::time::interval((lease / 3).max(Duration::from_millis(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let mine: Vec<Uuid> = inner.lock_running().keys().copied().collect();
        for turn_id in mine {
            match inner.store.renew_lease(turn_id, lease).await {
                // It ended between the snapshot and now.
                Ok(()) | Err(agentd_store::Error::TurnNotRunning(_)) => {}
                Err(error) => {
                    tracing::warn!(turn = %turn_id, %error, "could not renew a turn's lease")
                }
            }
        }
        match inner.store.expired_turns().await {
            Ok(expired) => {
                for turn in expired
                    .iter()
                    .filter(|t| !inner.lock_running().contains_key(&t.id))
                {
                    if let Err(error) = close(inner, turn).await {
                        tracing::warn!(turn = %turn.id, %error, "could not close an expired turn");
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "could not list expired turns"),
        }
    }
}

/// Wakes live followers when other processes append (stores with a change channel), until
/// `stop`.
pub(crate) async fn relay_changes(inner: &Inner, stop: CancellationToken) {
    let mut changes = match inner.store.listen().await {
        Ok(Some(changes)) => changes,
        Ok(None) => return,
        Err(error) => {
            tracing::error!(%error, "cannot listen for changes from other replicas");
            return;
        }
    };
    loop {
        let change = tokio::select! {
            () = stop.cancelled() => return,
            change = changes.next() => change,
        };
        match change {
            Some(Change::Appended { session_id, seq }) => inner.bus.wake(session_id, seq),
            Some(Change::Resync) => inner.bus.wake_all(),
            None => return,
        }
    }
}

/// Closes one turn a dead process left running: error results for its unanswered tool
/// calls, then `turn/end {kind: interrupted}`. Losing a race to another closer is fine.
async fn close(inner: &Inner, turn: &Turn) -> Result<()> {
    let history = inner.store.load_conversation(turn.session_id).await?;
    let mut dangling = Vec::new();
    for event in history.iter().filter(|e| e.turn_id == turn.id) {
        match &event.data {
            EventData::AssistantMessage {
                message: Message::Assistant { tool_calls, .. },
            } => {
                dangling = tool_calls
                    .iter()
                    .map(|c| (c.id.clone(), c.function.name.clone()))
                    .collect();
            }
            EventData::ToolResult(result) => dangling.retain(|(id, _)| *id != result.call_id),
            _ => {}
        }
    }
    let results: Vec<EventData> = dangling
        .into_iter()
        .map(|(call_id, name)| {
            EventData::ToolResult(ToolResult {
                call_id,
                name,
                text: INTERRUPTED.to_owned(),
                is_error: true,
                exit_code: None,
                truncated: false,
                duration_ms: 0,
            })
        })
        .collect();
    let stored = match inner.store.append(turn.session_id, turn.id, &results).await {
        Err(agentd_store::Error::TurnNotRunning(_)) => return Ok(()),
        other => other?,
    };
    let stored: Vec<_> = stored.into_iter().map(Arc::new).collect();
    inner.bus.publish(turn.session_id, &stored);
    let end = TurnEnd {
        kind: TurnEndKind::Interrupted,
        error: None,
        usage: Usage::default(),
    };
    let event = match inner.store.end_turn(turn.session_id, turn.id, &end).await {
        Err(agentd_store::Error::TurnNotRunning(_)) => return Ok(()),
        other => other?,
    };
    inner.bus.publish(turn.session_id, &[Arc::new(event)]);
    tracing::warn!(session = %turn.session_id, turn = %turn.id, "closed a turn whose process died, as interrupted");
    Ok(())
}
