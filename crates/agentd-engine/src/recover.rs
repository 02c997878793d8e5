//! Closing turns that a previous process left running (DESIGN.md invariant 4).

use std::sync::Arc;

use agentd_events::{EventData, Message, ToolResult, TurnEnd, TurnEndKind, Usage};

use crate::Inner;
use crate::error::Result;

/// The result given to a tool call whose turn died with the server.
pub(crate) const INTERRUPTED: &str =
    "error: interrupted by server restart; the command was not run again";

/// Closes every running turn in the store; returns how many.
pub(crate) async fn close_orphaned_turns(inner: &Inner) -> Result<usize> {
    let turns = inner.store.running_turns().await?;
    for turn in &turns {
        let history = inner.store.load_conversation(turn.session_id).await?;
        let mine: Vec<_> = history.iter().filter(|e| e.turn_id == turn.id).collect();
        let mut dangling = Vec::new();
        for event in &mine {
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
        let stored = inner
            .store
            .append(turn.session_id, turn.id, &results)
            .await?;
        let stored: Vec<_> = stored.into_iter().map(Arc::new).collect();
        inner.bus.publish(turn.session_id, &stored);
        let end = TurnEnd {
            kind: TurnEndKind::Interrupted,
            error: None,
            usage: Usage::default(),
        };
        let event = inner.store.end_turn(turn.session_id, turn.id, &end).await?;
        inner.bus.publish(turn.session_id, &[Arc::new(event)]);
        tracing::warn!(session = %turn.session_id, turn = %turn.id, "closed a turn left running by a previous process");
    }
    Ok(turns.len())
}
