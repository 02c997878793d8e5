//! The native Anthropic Messages API provider: `POST {base_url}/v1/messages` with
//! `x-api-key`, `anthropic-version` and `"stream": true`.
//!
//! This module owns the config and the headers; `render` builds the body from our
//! OpenAI-shaped messages, [`anthropic_chunks`] (over `parse`) owns the stream format, and
//! [`crate::transport`] sends with retries (Anthropic's 529 `overloaded_error` is a 5xx).

mod parse;
mod render;
mod thinking;
mod wire;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentd_events::{Chunk, ErrorInfo};
use bytes::Bytes;
use futures_util::future::Either;
use futures_util::{Stream, stream};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::drive::{http_error_chunk, sse_chunks};
use crate::retry::RetryConfig;
use crate::transport::{BodyStream, ChunkStream, ParseFn, Settings, Transport, endpoint};
use crate::{Error, ModelRequest, Provider, ProviderStream, Result, Secret};
use parse::Parser;
use thinking::ThinkingCache;

/// Where and how to reach the Anthropic Messages API. `Default` (and
/// [`AnthropicConfig::new`]) point at `https://api.anthropic.com`, version `2023-06-01`,
/// 8192 max tokens, no thinking, the usual timeouts and 3 attempts. `Debug` never shows the
/// key nor extra header values.
#[derive(Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// The API root; requests go to `{base_url}/v1/messages` (or `{base_url}/messages` when
    /// it already ends in `/v1`).
    pub base_url: String,
    /// Sent as `x-api-key`.
    pub api_key: Option<Secret>,
    /// Sent as `anthropic-version`. Default `2023-06-01`.
    pub version: String,
    /// `max_tokens` of every request (the API requires one), in tokens. Default 8192.
    pub max_tokens: u32,
    /// Enables extended thinking with this budget, in tokens (must be below `max_tokens`
    /// and at least 1024, Anthropic's rules). Default off.
    pub thinking_budget_tokens: Option<u32>,
    /// Extra headers sent on every request (e.g. `anthropic-beta`); values are treated as
    /// secrets.
    pub headers: BTreeMap<String, String>,
    /// The longest a TCP (and TLS) connect may take. Default 10 s.
    pub connect_timeout: Duration,
    /// The longest gap between bytes (headers, then each read). Default 300 s.
    pub idle_timeout: Duration,
    /// The longest one attempt may take, sending to last byte. Default 600 s.
    pub request_timeout: Duration,
    /// Retries before the first byte of a response. Default 3 attempts in all.
    pub retry: RetryConfig,
}

impl AnthropicConfig {
    /// The defaults, with `api_key`.
    pub fn new(api_key: Option<Secret>) -> Self {
        AnthropicConfig {
            base_url: "https://api.anthropic.com".to_owned(),
            api_key,
            version: "2023-06-01".to_owned(),
            max_tokens: 8192,
            thinking_budget_tokens: None,
            headers: BTreeMap::new(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            request_timeout: Duration::from_secs(600),
            retry: RetryConfig::default(),
        }
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        AnthropicConfig::new(None)
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("version", &self.version)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget_tokens", &self.thinking_budget_tokens)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// A [`Provider`] speaking Anthropic's streamed Messages API. Cheap to clone (shared client,
/// connection pool and thinking cache).
#[derive(Clone)]
pub struct AnthropicProvider {
    transport: Arc<Transport>,
    parse: ParseFn,
    /// Thinking blocks of recent tool-calling messages: written by this provider's streams,
    /// read when it renders the next request.
    cache: Arc<ThinkingCache>,
    max_tokens: u32,
    thinking_budget_tokens: Option<u32>,
}

impl AnthropicProvider {
    /// Checks the config and builds the HTTP client.
    ///
    /// # Errors
    /// [`Error::BaseUrl`] for a base URL that is not absolute `http(s)`, [`Error::ApiKey`]
    /// for a key or version that cannot go into a header, [`Error::Header`] for a bad extra
    /// header, [`Error::Client`] if the client cannot be built.
    pub fn new(config: AnthropicConfig) -> Result<Self> {
        let path = match config.base_url.trim_end_matches('/').ends_with("/v1") {
            true => "messages",
            false => "v1/messages",
        };
        let url = endpoint(&config.base_url, path)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let version =
            HeaderValue::try_from(config.version.as_str()).map_err(|_| Error::Header {
                name: "anthropic-version".to_owned(),
                reason: "the value cannot be sent in an HTTP header".to_owned(),
            })?;
        headers.insert("anthropic-version", version);
        if let Some(key) = &config.api_key {
            let mut value = HeaderValue::try_from(key.expose()).map_err(|_| Error::ApiKey)?;
            value.set_sensitive(true);
            headers.insert("x-api-key", value);
        }
        let settings = Settings {
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
            request_timeout: config.request_timeout,
            retry: config.retry,
            extra_headers: &config.headers,
        };
        let cache = Arc::new(ThinkingCache::default());
        let kept = Arc::clone(&cache);
        let parse: ParseFn = Arc::new(move |body: BodyStream| -> ChunkStream {
            Box::pin(sse_chunks(body, Parser::new(Some(Arc::clone(&kept)))))
        });
        Ok(AnthropicProvider {
            transport: Arc::new(Transport::new(url, headers, settings)?),
            parse,
            cache,
            max_tokens: config.max_tokens,
            thinking_budget_tokens: config.thinking_budget_tokens,
        })
    }
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("transport", &self.transport)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget_tokens", &self.thinking_budget_tokens)
            .finish_non_exhaustive()
    }
}

impl Provider for AnthropicProvider {
    /// Sends `POST /v1/messages` and streams the chunks of its response (see
    /// [`anthropic_chunks`]), after a `retry` event for each retried attempt.
    fn stream(&self, request: ModelRequest) -> ProviderStream {
        tracing::debug!(
            model = %request.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "anthropic model request"
        );
        let options = render::Options {
            max_tokens: self.max_tokens,
            thinking_budget_tokens: self.thinking_budget_tokens,
            cache: &self.cache,
        };
        let body = render::body(&request, &options).map_err(|err| {
            let message = format!("serialising the request failed: {err}");
            ErrorInfo::new("provider_request_error", message)
        });
        self.transport.stream(body, Arc::clone(&self.parse))
    }
}

/// Turns one Messages API response into chunks: its HTTP `status` and its `body` in reads of
/// any size. The same contract as [`openai_chunks`](crate::openai_chunks): a non-2xx status
/// gives one `finish {kind: error}` with the body's message (`{"type":"error","error":
/// {"type","message"}}`); a 2xx body gives `text`/`reasoning` chunks as they arrive, one
/// `tool-call` per completed `tool_use` block, and exactly one `finish`, last. A `tool_use`
/// block still open when the message ends (`max_tokens`) is never emitted.
pub fn anthropic_chunks<S, E>(status: u16, body: S) -> impl Stream<Item = Chunk>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: Into<Error>,
{
    if (200..300).contains(&status) {
        Either::Right(sse_chunks(body, Parser::new(None)))
    } else {
        Either::Left(stream::once(http_error_chunk(status, body)))
    }
}
