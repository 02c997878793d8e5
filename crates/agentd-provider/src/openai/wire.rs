//! The streamed Chat Completions chunk as servers send it: only the fields we read, all
//! optional, `null` accepted wherever a server has been seen to send it. No logic beyond
//! mapping the usage counters.

use agentd_events::Usage;
use serde::Deserialize;
use serde_json::Value;

/// One `data:` JSON object (`chat.completion.chunk`).
#[derive(Debug, Deserialize)]
pub(super) struct WireChunk {
    /// Usually one choice; `[]` (or `null`) on the usage-only chunk after the finish chunk.
    #[serde(default)]
    pub choices: Option<Vec<WireChoice>>,
    /// Present on the last chunk, on the finish chunk or on every chunk, depending on the
    /// server; `null` or `{}` means none.
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

/// `choices[i]`.
#[derive(Debug, Deserialize)]
pub(super) struct WireChoice {
    /// The new fragments; `{}` on the finish chunk.
    #[serde(default)]
    pub delta: Option<WireDelta>,
    /// `stop`, `tool_calls`, `length`, ... on the finish chunk, else `null`.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// `choices[i].delta`.
#[derive(Debug, Deserialize)]
pub(super) struct WireDelta {
    /// Answer text.
    #[serde(default)]
    pub content: Option<String>,
    /// Reasoning text (DeepSeek, vLLM before 0.10, llama.cpp).
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// Reasoning text (Ollama, newer vLLM; some send it next to `reasoning_content`).
    #[serde(default)]
    pub reasoning: Option<String>,
    /// Tool-call fragments.
    #[serde(default)]
    pub tool_calls: Option<Vec<WireToolCall>>,
}

/// `delta.tool_calls[j]`: the first fragment of a call usually carries `id` and `name`, the
/// later ones only `index` and a piece of `arguments`.
#[derive(Debug, Deserialize)]
pub(super) struct WireToolCall {
    /// Which call this fragment belongs to; missing on some servers.
    #[serde(default)]
    pub index: Option<u64>,
    /// The call id, usually only on the first fragment.
    #[serde(default)]
    pub id: Option<String>,
    /// Name and arguments fragment.
    #[serde(default)]
    pub function: Option<WireFunction>,
}

/// `delta.tool_calls[j].function`.
#[derive(Debug, Deserialize)]
pub(super) struct WireFunction {
    /// The tool name, usually only on the first fragment.
    #[serde(default)]
    pub name: Option<String>,
    /// A piece of the argument text. A string everywhere we know of; a server that sends a
    /// whole JSON object instead gets it appended as its JSON text.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// `usage`, counts in tokens.
#[derive(Debug, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    /// Our [`Usage`], or `None` when the object carries no counter at all (`{}`).
    pub(super) fn to_usage(&self) -> Option<Usage> {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .or(self.prompt_cache_hit_tokens);
        let reasoning = self
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens);
        let counters = [
            self.prompt_tokens,
            self.completion_tokens,
            cached,
            reasoning,
        ];
        if counters.iter().all(Option::is_none) {
            return None;
        }
        Some(Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached.unwrap_or(0),
            reasoning_tokens: reasoning.unwrap_or(0),
        })
    }
}
