//! The Messages API stream events as Anthropic documents them ("Streaming Messages"): only
//! the fields we read, unknown event, block and delta types accepted and ignored (the API
//! adds new ones, e.g. `citations_delta`, `server_tool_use`). No logic beyond usage mapping.

use agentd_events::Usage;
use serde::Deserialize;
use serde_json::Value;

/// One `data:` object, tagged by its `type` (always equal to the SSE `event:` name).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireEvent {
    /// The message opens; its `usage` carries the input tokens.
    MessageStart {
        /// The (empty) message.
        message: WireMessage,
    },
    /// A content block opens at `index`.
    ContentBlockStart {
        #[serde(default)]
        index: u64,
        content_block: WireBlock,
    },
    /// A piece of the block at `index`.
    ContentBlockDelta {
        #[serde(default)]
        index: u64,
        delta: WireDelta,
    },
    /// The block at `index` is complete.
    ContentBlockStop {
        #[serde(default)]
        index: u64,
    },
    /// The stop reason and the cumulative usage so far.
    MessageDelta {
        delta: WireMessageDelta,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    /// The end of the message.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// An error inside the stream (`overloaded_error`, `api_error`); read as raw JSON.
    Error,
    /// An event type this code does not know.
    #[serde(other)]
    Unknown,
}

/// `message_start.message`.
#[derive(Debug, Deserialize)]
pub(super) struct WireMessage {
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// `content_block_start.content_block`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireBlock {
    /// Answer text, usually starting empty.
    Text {
        #[serde(default)]
        text: String,
    },
    /// A client tool call; `input` is `{}` and the arguments follow as `input_json_delta`.
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Extended thinking; the text follows as `thinking_delta`, the signature as
    /// `signature_delta`.
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    /// Thinking the safety system encrypted: opaque `data`, returned as is.
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    /// Server tools and anything newer: not ours to run.
    #[serde(other)]
    Unknown,
}

/// `content_block_delta.delta`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireDelta {
    TextDelta {
        #[serde(default)]
        text: String,
    },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    ThinkingDelta {
        #[serde(default)]
        thinking: String,
    },
    /// The whole signature of the thinking block (it replaces, it does not append).
    SignatureDelta {
        #[serde(default)]
        signature: String,
    },
    #[serde(other)]
    Unknown,
}

/// `message_delta.delta`.
#[derive(Debug, Deserialize)]
pub(super) struct WireMessageDelta {
    /// `end_turn`, `tool_use`, `max_tokens`, `stop_sequence`, `pause_turn`, `refusal`, ...
    #[serde(default)]
    pub stop_reason: Option<String>,
}

/// `usage`, counts in tokens. In `message_delta` the counts are cumulative: they replace.
#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// `usage` with every counter this object carries replaced. `input_tokens` is
    /// Anthropic's own count (it excludes cache reads, which go to `cache_read_tokens`).
    pub(super) fn apply(&self, usage: Option<Usage>) -> Option<Usage> {
        let counters = [
            self.input_tokens,
            self.output_tokens,
            self.cache_read_input_tokens,
        ];
        if counters.iter().all(Option::is_none) {
            return usage;
        }
        let mut usage = usage.unwrap_or_default();
        if let Some(n) = self.input_tokens {
            usage.input_tokens = n;
        }
        if let Some(n) = self.output_tokens {
            usage.output_tokens = n;
        }
        if let Some(n) = self.cache_read_input_tokens {
            usage.cache_read_tokens = n;
        }
        Some(usage)
    }
}
