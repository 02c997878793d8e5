//! [`derive_messages`]: the model request's messages, rebuilt from the event log, and
//! [`DerivedMessages`], the same kept up to date as the log grows.

use std::collections::HashMap;

use crate::event::{Event, EventData};
use crate::message::{Message, ToolCall};

/// The text of the tool message synthesised for a tool call that has no result in the log
/// (the turn was cut off, cancelled or crashed before it ran).
pub const NOT_EXECUTED: &str = "error: this tool call was not executed";

/// Rebuilds the messages of the next model request from a session's events, in the OpenAI
/// Chat Completions shape.
///
/// - `system`, when given, comes first.
/// - `user/message` → a user message; `assistant/message` → its message; `tool/result` → a
///   tool message. Chunks and every other event type are skipped, so callers may pass only
///   the message-bearing events.
/// - Every tool call of an assistant message is answered by exactly one tool message, in
///   call order, right after that message (OpenAI's rule; DESIGN.md invariant 5). A call
///   without a result before the next user or assistant message gets [`NOT_EXECUTED`]; a
///   second result for one call is dropped.
/// - Call arguments that are empty or not valid JSON are sent as `"{}"` (the raw text stays in
///   the chunk events), because strict servers reject a request that carries them.
/// - `reasoning_content` is kept only on assistant messages with tool calls (DeepSeek's
///   thinking mode requires it there and needs it nowhere else).
pub fn derive_messages(system: Option<&str>, events: &[Event]) -> Vec<Message> {
    let mut derived = DerivedMessages::default();
    for event in events {
        derived.push(&event.data);
    }
    derived.into_messages(system)
}

/// [`derive_messages`] kept up to date one event at a time, for a conversation that grows:
/// [`DerivedMessages::push`] does the work for one event only, and
/// [`DerivedMessages::messages`] returns what `derive_messages` would over every event pushed
/// so far, without deriving them again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DerivedMessages {
    /// Every message so far, but for the tool messages of the last assistant message's calls.
    messages: Vec<Message>,
    /// The last assistant message's calls, answered when the next user or assistant message
    /// arrives (or when messages are taken).
    open: OpenCalls,
}

impl DerivedMessages {
    /// Adds one event (those that carry no message are skipped).
    pub fn push(&mut self, data: &EventData) {
        match data {
            EventData::UserMessage { text } => {
                self.open.close_into(&mut self.messages);
                self.messages.push(Message::User {
                    content: text.clone(),
                });
            }
            EventData::AssistantMessage { message } => {
                self.open.close_into(&mut self.messages);
                self.messages.push(replayable(message, &mut self.open));
            }
            EventData::ToolResult(result) => {
                self.open
                    .results
                    .entry(result.call_id.clone())
                    .or_insert_with(|| result.text.clone());
            }
            _ => {}
        }
    }

    /// The messages of a model request now, `system` (when given) first; a copy, so more
    /// events can be pushed afterwards.
    pub fn messages(&self, system: Option<&str>) -> Vec<Message> {
        let mut messages = with_system(system, self.messages.len() + self.open.ids.len());
        messages.extend_from_slice(&self.messages);
        messages.extend(self.open.answers());
        messages
    }

    /// The messages of a model request, `system` (when given) first, moved out, not copied.
    pub fn into_messages(mut self, system: Option<&str>) -> Vec<Message> {
        let mut messages = with_system(system, self.messages.len() + self.open.ids.len());
        messages.append(&mut self.messages);
        self.open.close_into(&mut messages);
        messages
    }
}

/// An empty message list with room for `more` after the system prompt, which comes first.
fn with_system(system: Option<&str>, more: usize) -> Vec<Message> {
    let mut messages = Vec::with_capacity(more + 1);
    if let Some(system) = system.filter(|s| !s.is_empty()) {
        messages.push(Message::System {
            content: system.to_owned(),
        });
    }
    messages
}

/// Tool calls of the last assistant message, waiting for their results.
#[derive(Debug, Clone, Default, PartialEq)]
struct OpenCalls {
    ids: Vec<String>,
    results: HashMap<String, String>,
}

impl OpenCalls {
    /// One tool message per call, in call order, and no call is open any more.
    fn close_into(&mut self, messages: &mut Vec<Message>) {
        for id in self.ids.drain(..) {
            let content = self
                .results
                .remove(&id)
                .unwrap_or_else(|| NOT_EXECUTED.to_owned());
            messages.push(Message::Tool {
                tool_call_id: id,
                content,
            });
        }
        self.results.clear();
    }

    /// The tool messages `close_into` would add, leaving the calls open.
    fn answers(&self) -> impl Iterator<Item = Message> + '_ {
        self.ids.iter().map(|id| Message::Tool {
            tool_call_id: id.clone(),
            content: self
                .results
                .get(id)
                .map_or_else(|| NOT_EXECUTED.to_owned(), String::clone),
        })
    }
}

fn replayable(message: &Message, open: &mut OpenCalls) -> Message {
    let Message::Assistant {
        content,
        tool_calls,
        reasoning_content,
    } = message
    else {
        return message.clone();
    };
    let tool_calls: Vec<ToolCall> = tool_calls
        .iter()
        .map(|call| {
            open.ids.push(call.id.clone());
            let mut call = call.clone();
            if serde_json::from_str::<serde_json::Value>(&call.function.arguments).is_err() {
                call.function.arguments = "{}".to_owned();
            }
            call
        })
        .collect();
    let reasoning_content = if tool_calls.is_empty() {
        None
    } else {
        reasoning_content.clone()
    };
    Message::Assistant {
        content: content.clone(),
        tool_calls,
        reasoning_content,
    }
}

#[cfg(test)]
mod tests;
