//! The OpenAI-compatible Chat Completions provider: OpenAI, DeepSeek, vLLM, llama.cpp,
//! LM Studio and Ollama all speak it.
//!
//! This module owns the config and the request headers; [`crate::transport`] sends (with
//! retries before the first byte) and hands the response to [`openai_chunks`], which owns
//! the wire format. `request` renders the body from our messages.

mod parse;
mod request;
mod stream;
mod wire;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentd_events::ErrorInfo;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};

pub use stream::openai_chunks;

use crate::retry::RetryConfig;
use crate::transport::{BodyStream, ChunkStream, ParseFn, Settings, Transport};
use crate::{Error, ModelRequest, Provider, ProviderStream, Result};

/// Where and how to reach an OpenAI-compatible server.
///
/// [`OpenAiConfig::new`] fills the rest with defaults; so does `Default`, which points at
/// `https://api.openai.com/v1`. `Debug` never shows the API key nor extra header values.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The API root, requests go to `{base_url}/chat/completions` (one trailing `/` is
    /// dropped), e.g. `https://api.deepseek.com` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set; local servers usually need none.
    pub api_key: Option<String>,
    /// Extra headers sent on every request (e.g. `OpenAI-Organization`,
    /// `HTTP-Referer`); values are treated as secrets. Default none.
    pub headers: BTreeMap<String, String>,
    /// The longest a TCP (and TLS) connect may take. Default 10 s.
    pub connect_timeout: Duration,
    /// The longest gap between bytes: from sending the request to its response headers, and
    /// between two reads of the body (a `: keep-alive` comment counts as bytes). Default
    /// 300 s (a local model may think for minutes).
    pub idle_timeout: Duration,
    /// The longest one attempt may take, from sending to the last byte, however steadily
    /// bytes arrive. Default 600 s.
    pub request_timeout: Duration,
    /// Retries before the first byte of a response. Default 3 attempts in all.
    pub retry: RetryConfig,
}

impl OpenAiConfig {
    /// A config for `base_url`, without API key, with the defaults.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            headers: BTreeMap::new(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            request_timeout: Duration::from_secs(600),
            retry: RetryConfig::default(),
        }
    }
}

impl Default for OpenAiConfig {
    /// OpenAI's API (`https://api.openai.com/v1`), no key, default timeouts.
    fn default() -> Self {
        OpenAiConfig::new("https://api.openai.com/v1")
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// A [`Provider`] speaking OpenAI's streamed Chat Completions. Cheap to clone (shared client
/// and connection pool). `Debug` never shows the API key.
#[derive(Clone)]
pub struct OpenAiProvider {
    transport: Arc<Transport>,
    parse: ParseFn,
}

impl OpenAiProvider {
    /// Checks the config and builds the HTTP client.
    ///
    /// # Errors
    /// [`Error::BaseUrl`] if `base_url` is not an absolute `http(s)` URL, [`Error::ApiKey`]
    /// if the key cannot go into a header, [`Error::Header`] for a bad extra header,
    /// [`Error::Client`] if the client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let url = request::endpoint(&config.base_url)?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(key) = &config.api_key {
            let mut value =
                HeaderValue::try_from(format!("Bearer {key}")).map_err(|_| Error::ApiKey)?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        let settings = Settings {
            connect_timeout: config.connect_timeout,
            idle_timeout: config.idle_timeout,
            request_timeout: config.request_timeout,
            retry: config.retry,
            extra_headers: &config.headers,
        };
        let parse: ParseFn =
            Arc::new(|body: BodyStream| -> ChunkStream { Box::pin(openai_chunks(200, body)) });
        Ok(OpenAiProvider {
            transport: Arc::new(Transport::new(url, headers, settings)?),
            parse,
        })
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("transport", &self.transport)
            .finish()
    }
}

impl Provider for OpenAiProvider {
    /// Sends `POST {base_url}/chat/completions` and streams the chunks of its response (see
    /// [`openai_chunks`]), after a `retry` event for each retried attempt. Failures to
    /// connect or to get headers in time become a single `finish {kind: error}`
    /// (`provider_connect_error`, `provider_timeout`).
    fn stream(&self, request: ModelRequest) -> ProviderStream {
        tracing::debug!(
            model = %request.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "openai model request"
        );
        let body = request::body(&request).map_err(|err| {
            let message = format!("serialising the request failed: {err}");
            ErrorInfo::new("provider_request_error", message)
        });
        self.transport.stream(body, Arc::clone(&self.parse))
    }
}
