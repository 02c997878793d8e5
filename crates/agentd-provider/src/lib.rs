//! agentd's model providers: one streamed HTTP request per step, turned into [`Chunk`]s.
//!
//! A provider only translates: it sends the messages and the tools menu, and turns the
//! streamed fragments into `text` and `reasoning` deltas as they arrive, one `tool-call`
//! chunk per call once its arguments are complete, and exactly one `finish` chunk, always
//! last. Failures before the first byte of a response may be retried (each announced as a
//! [`ProviderEvent::Retry`]); every other failure (HTTP status, error inside the stream, a
//! stream cut short, a timeout) becomes `finish {kind: error}` with the status and the
//! provider's message; a provider never returns `Err` and never panics. It must not store,
//! run tools or know about sessions.
//!
//! Formats: [`OpenAiProvider`] (Chat Completions: OpenAI, DeepSeek, vLLM, llama.cpp,
//! LM Studio, Ollama) and [`AnthropicProvider`] (Messages API). [`Providers`] routes
//! `NAME/model` to named providers built from a [`ProvidersConfig`].

mod anthropic;
mod config;
mod drive;
mod error;
mod errors;
mod openai;
mod registry;
mod retry;
mod secret;
pub mod sse;
mod timing;
mod transport;

pub use anthropic::{AnthropicConfig, AnthropicProvider, anthropic_chunks};
pub use config::{ProviderConfig, ProviderKind, ProvidersConfig, TimeoutsConfig};
pub use error::{Error, Result};
pub use openai::{OpenAiConfig, OpenAiProvider, openai_chunks};
pub use registry::Providers;
pub use retry::RetryConfig;
pub use secret::Secret;

use std::pin::Pin;

use agentd_events::{Chunk, Message, ProviderRetry, ToolSpec};
use futures_util::Stream;

/// What a provider's stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    /// A chunk of the response. The last item of every stream is a [`Chunk::Finish`].
    Chunk(Chunk),
    /// The request failed before any byte of a response and will be tried again after
    /// `delay_ms`; yielded before the wait, so a client can show why nothing streams.
    Retry(ProviderRetry),
}

/// One model request: the derived messages and the tools menu.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// The model name the provider expects, e.g. `deepseek-chat`; through [`Providers`] also
    /// `NAME/model` to pick the provider named NAME.
    pub model: String,
    /// The conversation, system prompt first (OpenAI shape; other formats render from it).
    pub messages: Vec<Message>,
    /// The tools the model may call; empty for none.
    pub tools: Vec<ToolSpec>,
}

/// The stream of one model request. Dropping it aborts the HTTP request.
pub type ProviderStream = Pin<Box<dyn Stream<Item = ProviderEvent> + Send>>;

/// A model API. Implementations must end every stream with exactly one `finish` chunk and
/// report failures as `finish {kind: error}`, never by panicking or ending early.
pub trait Provider: Send + Sync {
    /// Starts the request and streams its response.
    fn stream(&self, request: ModelRequest) -> ProviderStream;
}
