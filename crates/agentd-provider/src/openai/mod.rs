//! The OpenAI-compatible Chat Completions provider: OpenAI, DeepSeek, vLLM, llama.cpp and
//! Ollama all speak it.
//!
//! This module owns the HTTP side (client, headers, timeouts) and hands the response to
//! [`openai_chunks`], which owns the wire format. It does not retry yet: a later issue adds
//! retries before the first byte, announced as [`ProviderEvent::Retry`]; `send` below is the
//! one place that will loop. Per-provider config files are a later issue too.

mod errors;
mod parse;
mod request;
mod stream;
mod timing;
mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use agentd_events::{Chunk, ErrorInfo, Finish};
use futures_util::future::Either;
use futures_util::{Stream, StreamExt};
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};

pub use stream::openai_chunks;
use timing::Limits;

use crate::{Error, ModelRequest, Provider, ProviderEvent, ProviderStream, Result};

/// Where and how to reach an OpenAI-compatible server.
///
/// [`OpenAiConfig::new`] fills the timeouts with their defaults; so does `Default`, which
/// points at `https://api.openai.com/v1`. `Debug` never shows the API key.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The API root, requests go to `{base_url}/chat/completions` (one trailing `/` is
    /// dropped), e.g. `https://api.deepseek.com` or `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set; local servers usually need none.
    pub api_key: Option<String>,
    /// The longest a TCP (and TLS) connect may take. Default 10 s.
    pub connect_timeout: Duration,
    /// The longest gap between bytes: from sending the request to its response headers, and
    /// between two reads of the body. Default 300 s (a local model may think for minutes).
    pub idle_timeout: Duration,
    /// The longest one request may take, from sending to the last byte. Default 600 s.
    pub request_timeout: Duration,
}

impl OpenAiConfig {
    /// A config for `base_url`, without API key, with the default timeouts.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiConfig {
            base_url: base_url.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            request_timeout: Duration::from_secs(600),
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
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .finish()
    }
}

/// A [`Provider`] speaking OpenAI's streamed Chat Completions. Cheap to clone (shared client
/// and connection pool). `Debug` never shows the API key.
#[derive(Clone)]
pub struct OpenAiProvider {
    inner: Arc<Inner>,
}

struct Inner {
    client: reqwest::Client,
    /// `{base_url}/chat/completions`.
    endpoint: Url,
    /// `Bearer <key>`, marked sensitive so that hyper and reqwest never print it.
    authorization: Option<HeaderValue>,
    idle_timeout: Duration,
    request_timeout: Duration,
}

impl OpenAiProvider {
    /// Checks the config and builds the HTTP client.
    ///
    /// # Errors
    /// [`Error::BaseUrl`] if `base_url` is not an absolute `http(s)` URL, [`Error::ApiKey`]
    /// if the key cannot go into a header, [`Error::Client`] if the client cannot be built.
    pub fn new(config: OpenAiConfig) -> Result<Self> {
        let endpoint = request::endpoint(&config.base_url)?;
        let authorization = match &config.api_key {
            Some(key) => {
                let mut value =
                    HeaderValue::try_from(format!("Bearer {key}")).map_err(|_| Error::ApiKey)?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(Error::Client)?;
        Ok(OpenAiProvider {
            inner: Arc::new(Inner {
                client,
                endpoint,
                authorization,
                idle_timeout: config.idle_timeout,
                request_timeout: config.request_timeout,
            }),
        })
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &self.inner;
        f.debug_struct("OpenAiProvider")
            .field("endpoint", &inner.endpoint.as_str())
            .field(
                "api_key",
                &inner.authorization.as_ref().map(|_| "<redacted>"),
            )
            .field("idle_timeout", &inner.idle_timeout)
            .field("request_timeout", &inner.request_timeout)
            .finish_non_exhaustive()
    }
}

impl Provider for OpenAiProvider {
    /// Sends `POST {base_url}/chat/completions` and streams the chunks of its response
    /// (see [`openai_chunks`]). Failures to connect or to get headers in time become a single
    /// `finish {kind: error}` (`provider_connect_error`, `provider_timeout`).
    fn stream(&self, request: ModelRequest) -> ProviderStream {
        let inner = Arc::clone(&self.inner);
        let response = async move { inner.send(request).await };
        Box::pin(
            futures_util::stream::once(response)
                .flatten()
                .map(ProviderEvent::Chunk),
        )
    }
}

impl Inner {
    /// One attempt: send, wait for the headers, then parse the body as it arrives.
    async fn send(&self, request: ModelRequest) -> impl Stream<Item = Chunk> + use<> {
        let limits = Limits::start(self.request_timeout, self.idle_timeout);
        let body = match request::body(&request) {
            Ok(body) => body,
            Err(err) => {
                let message = format!("serialising the request failed: {err}");
                return failed(ErrorInfo::new("provider_request_error", message));
            }
        };
        tracing::debug!(
            endpoint = %self.endpoint,
            model = %request.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "model request"
        );
        let mut post = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        if let Some(authorization) = &self.authorization {
            post = post.header(AUTHORIZATION, authorization.clone());
        }
        let response = match limits.within(post.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(err)) => return failed(Error::sending(err).info()),
            Err(timeout) => return failed(timeout.info()),
        };
        let status = response.status().as_u16();
        tracing::debug!(status, "model response");
        Either::Right(openai_chunks(status, limits.body(response.bytes_stream())))
    }
}

/// The stream of a request that failed before any response: one `finish {kind: error}`.
fn failed<R>(
    error: ErrorInfo,
) -> Either<futures_util::stream::Iter<std::array::IntoIter<Chunk, 1>>, R> {
    tracing::warn!(code = %error.code, message = %error.message, "model request failed");
    Either::Left(futures_util::stream::iter([Chunk::Finish(Finish::error(
        error,
    ))]))
}
