//! [`Reply`]: one scripted answer, with builders for the common shapes.

use std::time::Duration;

use serde_json::{Value, json};

/// One scripted answer of the model server.
#[derive(Debug, Clone)]
pub enum Reply {
    /// An SSE body: each entry is sent as is (a whole `data: …\n\n` frame), `delay` before each.
    Sse {
        /// Raw SSE text pieces.
        events: Vec<String>,
        /// Pause before each piece.
        delay: Duration,
    },
    /// A plain HTTP response (errors).
    Http {
        /// HTTP status.
        status: u16,
        /// Body text.
        body: String,
    },
}

fn data(value: Value) -> String {
    format!("data: {value}\n\n")
}

/// One `chat.completion.chunk` frame with `delta` and `finish_reason`.
pub(crate) fn delta(delta: Value, finish: Option<&str>) -> String {
    data(json!({
        "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
        "model": "scripted", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    }))
}

fn usage(input: u64, output: u64) -> String {
    data(json!({
        "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
        "model": "scripted", "choices": [],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    }))
}

impl Reply {
    /// An answer streamed as one text chunk per piece, finishing `stop`, with usage 10 in / 5 out.
    pub fn text_chunks(pieces: &[&str]) -> Self {
        let mut events = vec![delta(json!({"role": "assistant", "content": ""}), None)];
        events.extend(pieces.iter().map(|p| delta(json!({"content": p}), None)));
        events.push(delta(json!({}), Some("stop")));
        events.push(usage(10, 5));
        events.push("data: [DONE]\n\n".to_owned());
        Self::Sse {
            events,
            delay: Duration::ZERO,
        }
    }

    /// An answer of one text chunk.
    pub fn text(text: &str) -> Self {
        Self::text_chunks(&[text])
    }

    /// One call of `name` with `arguments` (a JSON value sent as its text), finishing
    /// `tool_calls`, with usage 20 in / 7 out. The arguments arrive in two fragments.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::tool_calls(&[(id, name, arguments)])
    }

    /// Several calls in one message (parallel tool calls), each split in two fragments.
    pub fn tool_calls(calls: &[(&str, &str, Value)]) -> Self {
        Self::text_and_tool_calls(&[], calls)
    }

    /// Text chunks first, then tool calls, in one message (finishing `tool_calls`).
    pub fn text_and_tool_calls(pieces: &[&str], calls: &[(&str, &str, Value)]) -> Self {
        let mut events = vec![delta(json!({"role": "assistant", "content": null}), None)];
        events.extend(pieces.iter().map(|p| delta(json!({"content": p}), None)));
        for (index, (id, name, arguments)) in calls.iter().enumerate() {
            let text = arguments.to_string();
            let (head, tail) = text.split_at(text.len() / 2);
            events.push(delta(
                json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": head}}]}),
                None,
            ));
            events.push(delta(
                json!({"tool_calls": [{"index": index, "function": {"arguments": tail}}]}),
                None,
            ));
        }
        events.push(delta(json!({}), Some("tool_calls")));
        events.push(usage(20, 7));
        events.push("data: [DONE]\n\n".to_owned());
        Self::Sse {
            events,
            delay: Duration::ZERO,
        }
    }

    /// A call cut off by the token limit: arguments are incomplete JSON, finish `length`.
    pub fn max_tokens_tool_call(id: &str, name: &str, partial_arguments: &str) -> Self {
        let events = vec![
            delta(json!({"role": "assistant", "content": null}), None),
            delta(
                json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                    "function": {"name": name, "arguments": partial_arguments}}]}),
                None,
            ),
            delta(json!({}), Some("length")),
            "data: [DONE]\n\n".to_owned(),
        ];
        Self::Sse {
            events,
            delay: Duration::ZERO,
        }
    }

    /// An HTTP error with an OpenAI-style JSON body `{"error":{"message","type"}}`.
    pub fn http_error(status: u16, kind: &str, message: &str) -> Self {
        Self::Http {
            status,
            body: json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
                .to_string(),
        }
    }

    /// The same reply with `delay` before each SSE piece (for live-streaming and cancel tests).
    pub fn with_delay(self, delay: Duration) -> Self {
        match self {
            Self::Sse { events, .. } => Self::Sse { events, delay },
            other => other,
        }
    }
}
