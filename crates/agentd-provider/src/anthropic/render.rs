//! The Messages API request body, rendered from our OpenAI-shaped messages. Pure except for
//! reading the [`ThinkingCache`].
//!
//! Rules (Anthropic "Messages" and "Tool use" docs):
//! - System messages go to the top-level `system`, joined with a blank line.
//! - Roles alternate: consecutive messages of one role are merged into one, blocks in order.
//! - An assistant message becomes its thinking blocks (when kept, see below), a `text` block
//!   (left out when blank: the API rejects empty text blocks) and one `tool_use` block per
//!   call, `input` being the parsed arguments object (`{}` when they are not a JSON object).
//! - Tool messages become `tool_result` blocks of the next user message, so the results of
//!   parallel calls travel together, before any text of that message.
//! - Thinking: with `thinking_budget_tokens` set, `thinking` is enabled unless a
//!   tool-calling assistant message since the last user message has no kept blocks (the API
//!   requires them back unchanged, signature included, on that turn); then the request goes
//!   without thinking and without any thinking block, which the API accepts.

use agentd_events::{Message, ToolSpec};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::thinking::{ThinkingBlock, ThinkingCache};
use crate::ModelRequest;

/// What the body needs besides the request.
pub(super) struct Options<'a> {
    /// `max_tokens`, required by the API.
    pub max_tokens: u32,
    /// `thinking.budget_tokens`, when extended thinking is on.
    pub thinking_budget_tokens: Option<u32>,
    pub cache: &'a ThinkingCache,
}

/// `{"model","max_tokens","system"?,"messages","tools"?,"thinking"?,"stream":true}`.
pub(super) fn body(request: &ModelRequest, options: &Options<'_>) -> serde_json::Result<Vec<u8>> {
    let thinking = options
        .thinking_budget_tokens
        .filter(|_| loop_thinking_is_kept(&request.messages, options.cache));
    let system: Vec<&str> = request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::System { content } if !content.trim().is_empty() => Some(content.as_str()),
            _ => None,
        })
        .collect();
    let mut turns: Vec<Turn> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::System { .. } => continue,
            Message::User { content } => ("user", text_block(content).into_iter().collect()),
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let mut result = json!({"type": "tool_result", "tool_use_id": tool_call_id});
                if !content.is_empty() {
                    result["content"] = json!(content);
                }
                ("user", vec![result])
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut blocks = Vec::new();
                let first = tool_calls.first().map(|c| c.id.as_str());
                if let (Some(_), Some(first)) = (thinking, first) {
                    let kept = options.cache.get(first).unwrap_or_default();
                    blocks.extend(kept.iter().map(thinking_block));
                }
                blocks.extend(text_block(content));
                blocks.extend(tool_calls.iter().map(|call| {
                    json!({"type": "tool_use", "id": call.id, "name": call.function.name,
                        "input": input_object(&call.function.arguments)})
                }));
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ if blocks.is_empty() => {}
            _ => turns.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": options.max_tokens,
        "messages": turns,
        "stream": true,
    });
    if !system.is_empty() {
        body["system"] = json!(system.join("\n\n"));
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.iter().map(tool).collect());
    }
    if let Some(budget) = thinking {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    serde_json::to_vec(&body)
}

/// One message of the body.
#[derive(Serialize)]
struct Turn {
    role: &'static str,
    content: Vec<Value>,
}

/// Whether every tool-calling assistant message after the last user message has its
/// thinking blocks kept (vacuously true when there is none).
fn loop_thinking_is_kept(messages: &[Message], cache: &ThinkingCache) -> bool {
    let since_user = messages
        .iter()
        .rposition(|m| matches!(m, Message::User { .. }))
        .map_or(messages, |i| &messages[i + 1..]);
    since_user.iter().all(|m| match m {
        Message::Assistant { tool_calls, .. } => tool_calls
            .first()
            .is_none_or(|first| cache.get(&first.id).is_some()),
        _ => true,
    })
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

fn thinking_block(block: &ThinkingBlock) -> Value {
    serde_json::to_value(block).unwrap_or(Value::Null)
}

/// The arguments as the object `tool_use.input` must be.
fn input_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(object)) => Value::Object(object),
        _ => Value::Object(Map::new()),
    }
}

/// `{"name","description","input_schema"}`.
fn tool(spec: &ToolSpec) -> Value {
    json!({"name": spec.name, "description": spec.description, "input_schema": spec.parameters})
}
