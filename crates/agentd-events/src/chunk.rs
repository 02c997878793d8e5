//! Chunks: the pieces a provider turns a streamed model response into.

use serde::{Deserialize, Serialize};

/// One piece of a streamed model response, stored as the data of an `assistant/chunk` event.
///
/// JSON shapes (DESIGN.md §4):
/// `{"type":"text","content"}`, `{"type":"reasoning","content"}`,
/// `{"type":"tool-call","id","name","arguments"}`, `{"type":"finish","kind","usage"?,"error"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Chunk {
    /// A delta of the answer text, as it arrived.
    Text {
        /// The text fragment (UTF-8, never split inside a character).
        content: String,
    },
    /// A delta of the model's reasoning ("thinking"), kept apart from the answer text.
    Reasoning {
        /// The reasoning fragment.
        content: String,
    },
    /// One complete tool call, emitted once its arguments are complete.
    ToolCall {
        /// The provider's call id (never empty).
        id: String,
        /// The tool's name as the model wrote it.
        name: String,
        /// The raw argument text, fragments joined; may be invalid JSON.
        arguments: String,
    },
    /// The end of the response: exactly one per model request, always the last chunk.
    Finish(Finish),
}

/// How a model response ended, with its token usage and, for `error`, what went wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finish {
    /// Why the response ended.
    pub kind: FinishKind,
    /// Token counts, where the provider reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// For `kind: error`: the provider's status and message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
}

impl Finish {
    /// A `finish {kind: error}` carrying `error`.
    pub fn error(error: ErrorInfo) -> Self {
        Self {
            kind: FinishKind::Error,
            usage: None,
            error: Some(error),
        }
    }
}

/// Why a model response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FinishKind {
    /// The model answered (OpenAI `stop`, Anthropic `end_turn`).
    Completed,
    /// The model asked for tools (OpenAI `tool_calls`, Anthropic `tool_use`).
    ToolCalls,
    /// The output token limit cut the message (OpenAI `length`, Anthropic `max_tokens`).
    /// Tool calls of such a message are never run.
    MaxTokens,
    /// The request or the stream failed; see [`Finish::error`].
    Error,
}

/// Token counts of one model request, or summed over a turn or a session. Units: tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    #[serde(default)]
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default)]
    pub cache_read_tokens: u64,
    /// Completion tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds `other` into `self`, field by field (saturating).
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// What went wrong, as carried by `finish` chunks and `turn/end` events:
/// `{"code","message","status"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    /// A snake_case code, e.g. `provider_http_error`, `provider_stream_error`, `rate_limit_error`.
    pub code: String,
    /// A human-readable message, the provider's own where it gave one.
    pub message: String,
    /// The HTTP status of the failed request, where there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl ErrorInfo {
    /// An error without an HTTP status.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            status: None,
        }
    }
}
