//! The Messages API stream state machine: SSE events in, [`Chunk`]s out. Synchronous and
//! pure except for handing thinking blocks to the [`ThinkingCache`].
//!
//! Rules (Anthropic "Streaming Messages" docs): text and thinking deltas pass through at once
//! as `text` and `reasoning` chunks; a `tool_use` block's `input_json_delta` pieces are
//! joined and the call is emitted at its `content_block_stop` (blank input means `{}`); a
//! block still open when the message ends (cut by `max_tokens`) is dropped, never emitted;
//! `signature_delta` replaces the block's signature; usage comes from `message_start`
//! (input, cache reads) and `message_delta` (cumulative output: replace, never add); the
//! single `finish` is emitted at `message_stop`, or at the end of the body once a
//! `stop_reason` arrived. `event: error` (e.g. `overloaded_error`) ends it with that error.

use std::sync::Arc;

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind, Usage};

use super::thinking::{ThinkingBlock, ThinkingCache};
use super::wire::{WireBlock, WireDelta, WireEvent};
use crate::Error;
use crate::drive::EventParser;
use crate::errors::{stream_event_error, truncate};
use crate::sse::SseEvent;

/// How much of a malformed `data:` line a `provider_bad_chunk` message shows, in bytes.
const BAD_CHUNK_PREVIEW_BYTES: usize = 200;

/// The state of one response.
#[derive(Debug, Default)]
pub(super) struct Parser {
    /// Open content blocks with their index, in the order they started.
    blocks: Vec<(u64, Block)>,
    usage: Option<Usage>,
    /// The `stop_reason` of `message_delta`; the response is complete once it is set.
    stop_reason: Option<String>,
    /// Ids of the tool calls emitted, in order.
    call_ids: Vec<String>,
    /// Completed thinking blocks of this message, in order.
    thinking: Vec<ThinkingBlock>,
    /// Where to keep the thinking of a tool-calling message; `None` in replay tests.
    cache: Option<Arc<ThinkingCache>>,
    finished: bool,
}

/// A content block being assembled.
#[derive(Debug)]
enum Block {
    Text,
    Tool {
        id: String,
        name: String,
        /// `input_json_delta` pieces, joined.
        json: String,
        /// The `input` of `content_block_start`, used when no delta came.
        input: serde_json::Value,
    },
    Thinking {
        text: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    Other,
}

impl Parser {
    /// A parser that keeps tool-calling messages' thinking in `cache`.
    pub(super) fn new(cache: Option<Arc<ThinkingCache>>) -> Self {
        Parser {
            cache,
            ..Parser::default()
        }
    }

    fn data(&mut self, data: &str, out: &mut Vec<Chunk>) {
        let event = match serde_json::from_str::<WireEvent>(data) {
            Ok(event) => event,
            Err(err) => {
                let preview = truncate(data.trim(), BAD_CHUNK_PREVIEW_BYTES);
                let message = format!("malformed stream event ({err}): {preview}");
                return self.fail(Error::Malformed(message).info(), out);
            }
        };
        match event {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.usage = usage.apply(self.usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block, out),
            WireEvent::ContentBlockDelta { index, delta } => self.delta(index, delta, out),
            WireEvent::ContentBlockStop { index } => self.stop(index, out),
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(usage) = usage {
                    self.usage = usage.apply(self.usage);
                }
                if let Some(reason) = delta.stop_reason.filter(|r| !r.is_empty()) {
                    self.stop_reason = Some(reason);
                }
            }
            WireEvent::MessageStop => self.complete(out),
            WireEvent::Error => self.fail(stream_event_error(data), out),
            WireEvent::Ping | WireEvent::Unknown => {}
        }
    }

    fn start(&mut self, index: u64, block: WireBlock, out: &mut Vec<Chunk>) {
        let block = match block {
            WireBlock::Text { text } => {
                push_text(out, text);
                Block::Text
            }
            WireBlock::ToolUse { id, name, input } => Block::Tool {
                id,
                name,
                json: String::new(),
                input,
            },
            WireBlock::Thinking {
                thinking,
                signature,
            } => {
                if !thinking.is_empty() {
                    out.push(Chunk::Reasoning {
                        content: thinking.clone(),
                    });
                }
                Block::Thinking {
                    text: thinking,
                    signature,
                }
            }
            WireBlock::RedactedThinking { data } => Block::Redacted { data },
            WireBlock::Unknown => Block::Other,
        };
        self.blocks.retain(|(i, _)| *i != index);
        self.blocks.push((index, block));
    }

    fn delta(&mut self, index: u64, delta: WireDelta, out: &mut Vec<Chunk>) {
        let Some((_, block)) = self.blocks.iter_mut().rev().find(|(i, _)| *i == index) else {
            tracing::debug!(index, "delta for a block that never started; ignored");
            return;
        };
        match (block, delta) {
            (Block::Text, WireDelta::TextDelta { text }) => push_text(out, text),
            (Block::Tool { json, .. }, WireDelta::InputJsonDelta { partial_json }) => {
                json.push_str(&partial_json);
            }
            (Block::Thinking { text, .. }, WireDelta::ThinkingDelta { thinking }) => {
                if !thinking.is_empty() {
                    text.push_str(&thinking);
                    out.push(Chunk::Reasoning { content: thinking });
                }
            }
            (Block::Thinking { signature, .. }, WireDelta::SignatureDelta { signature: new }) => {
                *signature = new;
            }
            _ => tracing::debug!(index, "delta of another type than its block; ignored"),
        }
    }

    fn stop(&mut self, index: u64, out: &mut Vec<Chunk>) {
        let Some(position) = self.blocks.iter().rposition(|(i, _)| *i == index) else {
            return;
        };
        match self.blocks.remove(position).1 {
            Block::Tool {
                id,
                name,
                json,
                input,
            } => {
                let arguments = if !json.trim().is_empty() {
                    json
                } else if input.as_object().is_some_and(|o| !o.is_empty()) {
                    input.to_string()
                } else {
                    "{}".to_owned()
                };
                let id = if id.is_empty() {
                    format!("toolu_{}", uuid::Uuid::new_v4().simple())
                } else {
                    id
                };
                self.call_ids.push(id.clone());
                out.push(Chunk::ToolCall {
                    id,
                    name,
                    arguments,
                });
            }
            Block::Thinking { text, signature } => self.thinking.push(ThinkingBlock::Thinking {
                thinking: text,
                signature,
            }),
            Block::Redacted { data } => {
                self.thinking.push(ThinkingBlock::RedactedThinking { data });
            }
            Block::Text | Block::Other => {}
        }
    }

    /// `message_stop`, or the end of the body: the finish its `stop_reason` says. Blocks
    /// still open (a tool call cut by `max_tokens`) are dropped.
    fn complete(&mut self, out: &mut Vec<Chunk>) {
        let Some(reason) = self.stop_reason.clone() else {
            let error = ErrorInfo::new(
                "provider_stream_incomplete",
                "the stream ended before the model finished (no stop_reason)",
            );
            return self.fail(error, out);
        };
        if !self.blocks.is_empty() {
            tracing::debug!(open = self.blocks.len(), %reason, "dropping unfinished blocks");
        }
        let calls = match self.call_ids.is_empty() {
            true => FinishKind::Completed,
            false => FinishKind::ToolCalls,
        };
        let (kind, error) = match reason.as_str() {
            "tool_use" => (FinishKind::ToolCalls, None),
            "max_tokens" | "model_context_window_exceeded" => (FinishKind::MaxTokens, None),
            "refusal" => (
                FinishKind::Error,
                Some(ErrorInfo::new(
                    "refusal",
                    "the model declined to answer (stop_reason refusal)",
                )),
            ),
            // end_turn, stop_sequence, pause_turn and anything newer.
            _ => (calls, None),
        };
        if let (Some(cache), Some(first), false) =
            (&self.cache, self.call_ids.first(), self.thinking.is_empty())
        {
            cache.insert(first.clone(), std::mem::take(&mut self.thinking));
        }
        self.finish(kind, error, out);
    }

    /// Ends the response with an error; the calls already emitted stay, open blocks drop.
    fn fail(&mut self, error: ErrorInfo, out: &mut Vec<Chunk>) {
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

impl EventParser for Parser {
    /// One SSE event. The JSON `type` decides (the `event:` name always equals it); an
    /// `event: error` or a non-standard `error:` field ends the response with that error.
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Chunk>) {
        if self.finished {
            return;
        }
        if let Some(error) = &event.error {
            return self.fail(stream_event_error(error), out);
        }
        let data = event.data.trim();
        if event.event == "error" {
            return self.fail(stream_event_error(data), out);
        }
        if !data.is_empty() {
            self.data(data, out);
        }
    }

    /// The body ended cleanly (`None`) or failed. Once the `stop_reason` arrived the message
    /// is complete either way (only `message_stop` was missing).
    fn end(&mut self, failure: Option<Error>, out: &mut Vec<Chunk>) {
        match failure {
            Some(err) if self.stop_reason.is_none() => self.fail(err.info(), out),
            _ => self.complete(out),
        }
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

fn push_text(out: &mut Vec<Chunk>, text: String) {
    if !text.is_empty() {
        out.push(Chunk::Text { content: text });
    }
}
