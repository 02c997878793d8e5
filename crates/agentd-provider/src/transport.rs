//! [`Transport`]: the HTTP side every provider shares: one client, one endpoint, the headers
//! (credentials marked sensitive), the two clocks of [`Limits`], and retries before the
//! first byte (rules in [`crate::retry`]), each announced as [`ProviderEvent::Retry`] before
//! the wait. A 2xx response body goes to the format's parser; nothing after it is retried.

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use agentd_events::{Chunk, ErrorInfo, Finish, ProviderRetry};
use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};
use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use crate::drive::read_error_body;
use crate::retry::{self, RetryConfig};
use crate::timing::Limits;
use crate::{Error, ProviderEvent, ProviderStream, Result, errors};

/// A response body as the parser reads it, every read held to both clocks.
pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;
/// The chunks a format's parser makes of a 2xx body.
pub(crate) type ChunkStream = Pin<Box<dyn Stream<Item = Chunk> + Send>>;
/// A format's parser: a 2xx body in, chunks out (`openai_chunks`, `anthropic_chunks`).
pub(crate) type ParseFn = Arc<dyn Fn(BodyStream) -> ChunkStream + Send + Sync>;

/// The HTTP settings a provider config carries.
pub(crate) struct Settings<'a> {
    pub(crate) connect_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) request_timeout: Duration,
    pub(crate) retry: RetryConfig,
    /// Extra headers from the config, sent on every request after the provider's own.
    pub(crate) extra_headers: &'a BTreeMap<String, String>,
}

/// `{base_url}/{path}`, with one trailing slash of `base_url` dropped.
///
/// # Errors
/// [`Error::BaseUrl`] unless the result is an absolute `http`/`https` URL.
pub(crate) fn endpoint(base_url: &str, path: &str) -> Result<Url> {
    let base = base_url.strip_suffix('/').unwrap_or(base_url);
    let reject = |reason: String| Error::BaseUrl {
        url: base_url.to_owned(),
        reason,
    };
    let url = Url::parse(&format!("{base}/{path}")).map_err(|e| reject(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(reject(format!("scheme {other:?} is not http or https"))),
    }
}

/// One endpoint and how to reach it. Shared by all requests of a provider.
pub(crate) struct Transport {
    client: reqwest::Client,
    url: Url,
    /// Every header of a request; credential values are marked sensitive.
    headers: HeaderMap,
    idle_timeout: Duration,
    request_timeout: Duration,
    retry: RetryConfig,
}

impl Transport {
    /// Builds the client. `headers` are the provider's own (auth, version); the config's
    /// extra headers are added after them (replacing a same-named one) and marked sensitive,
    /// since they often carry credentials too.
    pub(crate) fn new(url: Url, mut headers: HeaderMap, settings: Settings<'_>) -> Result<Self> {
        for (name, value) in settings.extra_headers {
            let reject = |reason: &str| Error::Header {
                name: name.clone(),
                reason: reason.to_owned(),
            };
            let header = HeaderName::try_from(name.as_str())
                .map_err(|_| reject("not a valid header name"))?;
            let mut value = HeaderValue::try_from(value.as_str())
                .map_err(|_| reject("the value cannot be sent in an HTTP header"))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .tcp_nodelay(true)
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(Error::Client)?;
        Ok(Transport {
            client,
            url,
            headers,
            idle_timeout: settings.idle_timeout,
            request_timeout: settings.request_timeout,
            retry: settings.retry,
        })
    }

    /// Sends `body` (retrying as allowed) and streams what `parse` makes of the response.
    /// A `body` that could not be built is reported as the single finish error it carries.
    pub(crate) fn stream(
        self: &Arc<Self>,
        body: std::result::Result<Vec<u8>, ErrorInfo>,
        parse: ParseFn,
    ) -> ProviderStream {
        let body = match body {
            Ok(body) => Bytes::from(body),
            Err(error) => return Box::pin(stream::iter([finish_error(error)])),
        };
        let run = Run {
            transport: Arc::clone(self),
            body,
            parse,
            step: Step::Attempt(1),
        };
        Box::pin(stream::unfold(run, Run::next))
    }

    /// One attempt: send, wait for the headers; a 2xx body is handed to `parse`, an error
    /// status is read (bounded) and either retried or reported.
    async fn attempt(&self, body: &Bytes, attempt: u32, parse: &ParseFn) -> Outcome {
        let limits = Limits::start(self.request_timeout, self.idle_timeout);
        let post = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .body(body.clone());
        let response = match limits.within(post.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(err)) => {
                let err = Error::sending(err);
                let connect = matches!(err, Error::Connect(_));
                return self.after_failure(attempt, None, err.info(), connect);
            }
            Err(timeout) => return Outcome::Failed(timeout.info()),
        };
        let status = response.status().as_u16();
        tracing::debug!(status, attempt, "model response");
        if response.status().is_success() {
            return Outcome::Stream(parse(Box::pin(limits.body(response.bytes_stream()))));
        }
        let headers = response.headers().clone();
        let text = read_error_body(limits.body(response.bytes_stream())).await;
        let info = errors::http_error(status, &text);
        let retryable = retry::retryable_status(status, &headers, &text);
        self.after_failure(attempt, Some(&headers), info, retryable)
    }

    fn after_failure(
        &self,
        attempt: u32,
        headers: Option<&HeaderMap>,
        info: ErrorInfo,
        retryable: bool,
    ) -> Outcome {
        if !retryable || !self.retry.allows_another(attempt) {
            return Outcome::Failed(info);
        }
        let now = SystemTime::now();
        let Some(delay) = self.retry.delay(attempt, headers, now, fastrand::f64()) else {
            tracing::debug!("the provider asked to wait longer than max_delay; not retrying");
            return Outcome::Failed(info);
        };
        let retry = ProviderRetry {
            attempt: attempt + 1,
            status: info.status,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            message: info.message,
        };
        tracing::warn!(attempt = retry.attempt, status = ?retry.status, delay_ms = retry.delay_ms,
            message = %retry.message, "model request failed; retrying");
        Outcome::Retry(retry, delay)
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("Transport")
            .field("url", &self.url.as_str())
            .field("headers", &names)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// How one attempt ended.
enum Outcome {
    /// A 2xx response: its chunks.
    Stream(ChunkStream),
    /// Try again after the delay; the event announces it.
    Retry(ProviderRetry, Duration),
    /// Give up with this error.
    Failed(ErrorInfo),
}

/// Where one request stands.
enum Step {
    /// Send attempt number n (1-based).
    Attempt(u32),
    /// Wait, then send attempt number n.
    Wait(u32, Duration),
    /// Streaming the response: no retry from here on.
    Body(ChunkStream),
    /// The finish was yielded.
    Done,
}

/// The state of one request's stream.
struct Run {
    transport: Arc<Transport>,
    body: Bytes,
    parse: ParseFn,
    step: Step,
}

impl Run {
    async fn next(mut self) -> Option<(ProviderEvent, Run)> {
        loop {
            match std::mem::replace(&mut self.step, Step::Done) {
                Step::Done => return None,
                Step::Body(mut chunks) => {
                    let chunk = chunks.next().await?;
                    self.step = Step::Body(chunks);
                    return Some((ProviderEvent::Chunk(chunk), self));
                }
                Step::Wait(attempt, delay) => {
                    tokio::time::sleep(delay).await;
                    self.step = Step::Attempt(attempt);
                }
                Step::Attempt(attempt) => {
                    match self
                        .transport
                        .attempt(&self.body, attempt, &self.parse)
                        .await
                    {
                        Outcome::Stream(chunks) => self.step = Step::Body(chunks),
                        Outcome::Retry(retry, delay) => {
                            self.step = Step::Wait(retry.attempt, delay);
                            return Some((ProviderEvent::Retry(retry), self));
                        }
                        Outcome::Failed(error) => return Some((finish_error(error), self)),
                    }
                }
            }
        }
    }
}

fn finish_error(error: ErrorInfo) -> ProviderEvent {
    tracing::warn!(code = %error.code, message = %error.message, "model request failed");
    ProviderEvent::Chunk(Chunk::Finish(Finish::error(error)))
}
