//! The Chat Completions stream state machine: SSE events in, [`Chunk`]s out. Synchronous and
//! pure (no IO, no clock); [`super::stream`] drives it from a byte stream.
//!
//! It owns the rules of the wire format: text and reasoning deltas pass through at once;
//! tool-call fragments are joined per call and emitted when the `finish_reason` arrives;
//! the single `finish` is emitted at `data: [DONE]` or when the body ends, because usage may
//! still follow the finish chunk. Whatever ends the response, the calls seen so far are
//! emitted first and `finish` is the last chunk; after it the parser ignores everything.

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind, Usage};
use serde_json::Value;

use super::wire::{WireChunk, WireDelta, WireToolCall};
use crate::Error;
use crate::drive::EventParser;
use crate::errors::{stream_data_error, stream_event_error, truncate};
use crate::sse::SseEvent;

/// How much of a malformed `data:` line a `provider_bad_chunk` message shows, in bytes.
const BAD_CHUNK_PREVIEW_BYTES: usize = 200;

/// The state of one response.
#[derive(Debug, Default)]
pub(super) struct Parser {
    /// Calls being assembled, in the order they started.
    calls: Vec<PartialCall>,
    /// How many tool-call chunks were emitted (when the `finish_reason` arrived).
    calls_emitted: usize,
    /// The first `finish_reason` seen; the response is complete once it is set.
    finish_reason: Option<String>,
    /// The last non-empty usage seen.
    usage: Option<Usage>,
    /// Set once the `finish` chunk was emitted.
    finished: bool,
}

/// One tool call being assembled from fragments.
#[derive(Debug, Default)]
struct PartialCall {
    /// The call's `index`, or its position in the fragment array when a server omits it.
    index: u64,
    /// The first non-empty id; empty until one arrives.
    id: String,
    /// The first non-empty name.
    name: String,
    /// The raw argument fragments, joined; parsed by nobody here.
    arguments: String,
}

impl PartialCall {
    /// Whether a fragment bringing `id` and `name` continues this call: its id is none, or
    /// this call has none yet, or they are the same; and it does not bring a name while this
    /// call already has one and complete JSON arguments (servers that send each call of a
    /// batch whole, without index nor id, at position 0).
    fn takes(&self, id: Option<&str>, name: Option<&str>) -> bool {
        let same_id = id.is_none_or(|id| self.id.is_empty() || self.id == id);
        let next_call = id.is_none()
            && name.is_some_and(|n| !n.is_empty())
            && !self.name.is_empty()
            && serde_json::from_str::<serde::de::IgnoredAny>(&self.arguments).is_ok();
        same_id && !next_call
    }
}

impl EventParser for Parser {
    /// One SSE event: `message` events carry the chunks; `event: error` or a non-standard
    /// `error:` field end the response with that error; other event names are ignored.
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Chunk>) {
        if self.finished {
            return;
        }
        if let Some(error) = &event.error {
            return self.fail(stream_event_error(error), out);
        }
        match event.event.as_str() {
            "message" => self.data(&event.data, out),
            "error" => self.fail(stream_event_error(&event.data), out),
            other => tracing::debug!(event = other, "ignoring an SSE event of unknown type"),
        }
    }

    /// The body ended cleanly (`None`) or with a read error or timeout. A response whose
    /// `finish_reason` already arrived is complete either way.
    fn end(&mut self, failure: Option<Error>, out: &mut Vec<Chunk>) {
        match failure {
            Some(err) if self.finish_reason.is_none() => self.fail(err.info(), out),
            Some(err) => {
                tracing::debug!(error = %err, "body failed after the finish chunk; finishing");
                self.complete(out);
            }
            None => self.complete(out),
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

impl Parser {
    fn data(&mut self, data: &str, out: &mut Vec<Chunk>) {
        let data = data.trim();
        if data.starts_with("[DONE]") {
            return self.complete(out);
        }
        if data.is_empty() {
            return;
        }
        let value = match serde_json::from_str::<Value>(data) {
            Ok(value) => value,
            Err(err) => return self.bad_chunk(&err, data, out),
        };
        if let Some(error) = stream_data_error(&value, data) {
            return self.fail(error, out);
        }
        match serde_json::from_value::<WireChunk>(value) {
            Ok(chunk) => self.chunk(chunk, out),
            Err(err) => self.bad_chunk(&err, data, out),
        }
    }

    fn chunk(&mut self, chunk: WireChunk, out: &mut Vec<Chunk>) {
        if let Some(usage) = chunk.usage.as_ref().and_then(|u| u.to_usage()) {
            self.usage = Some(usage);
        }
        let Some(choice) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return;
        };
        if self.finish_reason.is_some() {
            return; // Only usage may follow the finish chunk.
        }
        if let Some(delta) = choice.delta {
            self.delta(delta, out);
        }
        if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
            self.emit_calls(out);
        }
    }

    fn delta(&mut self, delta: WireDelta, out: &mut Vec<Chunk>) {
        // Servers that send both names send the same text twice: take one.
        let reasoning = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find(|r| !r.is_empty());
        if let Some(content) = reasoning {
            out.push(Chunk::Reasoning { content });
        }
        if let Some(content) = delta.content.filter(|c| !c.is_empty()) {
            out.push(Chunk::Text { content });
        }
        for (position, fragment) in delta.tool_calls.into_iter().flatten().enumerate() {
            self.tool_fragment(position as u64, fragment);
        }
    }

    /// Adds a fragment to its call: the last call at the same index, unless the fragment
    /// brings a different id (servers that put every call at index 0).
    fn tool_fragment(&mut self, position: u64, fragment: WireToolCall) {
        let index = fragment.index.unwrap_or(position);
        let id = fragment.id.filter(|id| !id.is_empty());
        let name = fragment.function.as_ref().and_then(|f| f.name.as_deref());
        let last = self.calls.iter().rposition(|call| call.index == index);
        let slot = match last {
            Some(i) if self.calls[i].takes(id.as_deref(), name) => i,
            _ => {
                self.calls.push(PartialCall {
                    index,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[slot];
        if let (true, Some(id)) = (call.id.is_empty(), id) {
            call.id = id;
        }
        let Some(function) = fragment.function else {
            return;
        };
        if let (true, Some(name)) = (call.name.is_empty(), function.name) {
            call.name = name;
        }
        match function.arguments {
            Some(Value::String(piece)) => call.arguments.push_str(&piece),
            None | Some(Value::Null) => {}
            Some(other) => call.arguments.push_str(&other.to_string()),
        }
    }

    /// Emits the assembled calls in index order (arrival order within one index), each
    /// with an id (generated when the server sent none) and `{}` for blank arguments.
    fn emit_calls(&mut self, out: &mut Vec<Chunk>) {
        let mut calls = std::mem::take(&mut self.calls);
        calls.sort_by_key(|call| call.index); // Stable: keeps arrival order within an index.
        self.calls_emitted += calls.len();
        out.extend(calls.into_iter().map(|call| Chunk::ToolCall {
            id: if call.id.is_empty() {
                format!("call_{}", uuid::Uuid::new_v4().simple())
            } else {
                call.id
            },
            name: call.name,
            arguments: if call.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                call.arguments
            },
        }));
    }

    /// The response is over (`[DONE]` or end of body): the finish its `finish_reason` says.
    fn complete(&mut self, out: &mut Vec<Chunk>) {
        let Some(reason) = self.finish_reason.clone() else {
            let error = ErrorInfo::new(
                "provider_stream_incomplete",
                "the stream ended before the model finished (no finish_reason)",
            );
            return self.fail(error, out);
        };
        let calls = if self.calls_emitted > 0 {
            FinishKind::ToolCalls
        } else {
            FinishKind::Completed
        };
        let (kind, error) = match reason.as_str() {
            "stop" => (calls, None),
            "tool_calls" | "function_call" => (FinishKind::ToolCalls, None),
            "length" => (FinishKind::MaxTokens, None),
            "content_filter" => (
                FinishKind::Error,
                Some(ErrorInfo::new(
                    "content_filter",
                    "the provider's content filter stopped the response",
                )),
            ),
            "insufficient_system_resource" => (
                FinishKind::Error,
                Some(ErrorInfo::new(
                    "insufficient_system_resource",
                    "the provider ran out of resources and cut the response short",
                )),
            ),
            other => {
                tracing::debug!(finish_reason = other, "unknown finish_reason");
                (calls, None)
            }
        };
        self.finish(kind, error, out);
    }

    fn bad_chunk(&mut self, err: &serde_json::Error, data: &str, out: &mut Vec<Chunk>) {
        let preview = truncate(data, BAD_CHUNK_PREVIEW_BYTES);
        let message = format!("malformed stream chunk ({err}): {preview}");
        self.fail(Error::Malformed(message).info(), out);
    }

    /// Ends the response with an error, after the calls seen so far.
    fn fail(&mut self, error: ErrorInfo, out: &mut Vec<Chunk>) {
        self.emit_calls(out);
        self.finish(FinishKind::Error, Some(error), out);
    }

    fn finish(&mut self, kind: FinishKind, error: Option<ErrorInfo>, out: &mut Vec<Chunk>) {
        if self.finished {
            return;
        }
        self.finished = true;
        out.push(Chunk::Finish(Finish {
            kind,
            usage: self.usage,
            error,
        }));
    }
}
