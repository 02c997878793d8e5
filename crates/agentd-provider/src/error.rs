//! The crate's error type: what can fail while building a provider or reading a response.
//!
//! Only the constructors ([`OpenAiProvider::new`](crate::OpenAiProvider::new),
//! [`AnthropicProvider::new`](crate::AnthropicProvider::new),
//! [`Providers::from_config`](crate::Providers::from_config)) return these as `Err`. Inside
//! a stream every failure is turned into `finish {kind: error}` with [`Error::info`]; a
//! stream never yields an `Err`. No variant's message ever contains an API key.

use agentd_events::ErrorInfo;

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong. Each variant's doc names its [`Error::code`] and whether the request is
/// retried (announced as [`ProviderEvent::Retry`](crate::ProviderEvent::Retry)); HTTP error
/// statuses are not variants: they are retried or reported by status (see `retry.rs`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configured base URL is not an absolute `http`/`https` URL. Code
    /// `provider_config_error`; only from `new`.
    #[error("invalid provider base URL {url:?}: {reason}")]
    BaseUrl {
        /// The base URL as configured.
        url: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The API key cannot be sent in an HTTP header (control characters, non-ASCII). Code
    /// `provider_config_error`; only from `new`. The key itself is never part of the message.
    #[error("the API key contains characters that cannot be sent in an HTTP header")]
    ApiKey,
    /// An extra header from the config has an invalid name or value. Code
    /// `provider_config_error`; only from constructors. The value is never part of the message.
    #[error("invalid header {name:?}: {reason}")]
    Header {
        /// The header name as configured.
        name: String,
        /// Why it was rejected.
        reason: String,
    },
    /// A provider configuration is unusable: unknown provider, missing environment variable
    /// for a key, bad timeout. Code `provider_config_error`; only from constructors.
    #[error("{0}")]
    Config(String),
    /// Building the HTTP client failed (TLS backend, system settings). Code
    /// `provider_config_error`; only from `new`.
    #[error("building the HTTP client failed: {0}")]
    Client(#[source] reqwest::Error),
    /// Connecting or sending the request failed before any response (refused, DNS, TLS,
    /// connect timeout). Code `provider_connect_error`. Retried.
    #[error("{0}")]
    Connect(String),
    /// No byte arrived for `idle_timeout`, or the request outlived `request_timeout`. Code
    /// `provider_timeout`. Not retried (the server may have started working on it).
    #[error("{0}")]
    Timeout(String),
    /// Reading the response body failed midway (connection reset, broken chunking). Code
    /// `provider_stream_incomplete`: the response was cut short. Not retried (streaming began).
    #[error("{0}")]
    Read(String),
    /// The body is not a readable event stream: malformed JSON in a `data:` line, or bytes
    /// that are not UTF-8. Code `provider_bad_chunk`. Not retried.
    #[error("{0}")]
    Malformed(String),
}

impl Error {
    /// The snake_case code carried by the `finish {kind: error}` this error becomes.
    pub fn code(&self) -> &'static str {
        match self {
            Error::BaseUrl { .. }
            | Error::ApiKey
            | Error::Header { .. }
            | Error::Config(_)
            | Error::Client(_) => "provider_config_error",
            Error::Connect(_) => "provider_connect_error",
            Error::Timeout(_) => "provider_timeout",
            Error::Read(_) => "provider_stream_incomplete",
            Error::Malformed(_) => "provider_bad_chunk",
        }
    }

    /// The error as carried by a `finish` chunk: its code and message, no HTTP status (there
    /// was no failed status for any of these).
    pub fn info(&self) -> ErrorInfo {
        ErrorInfo::new(self.code(), self.to_string())
    }

    /// Wraps a reqwest error raised while sending: a timeout, else a connect failure. The URL
    /// is left out (it may carry credentials); the message is the whole `source()` chain,
    /// which is where reqwest and hyper say what happened ("Connection refused").
    pub(crate) fn sending(err: reqwest::Error) -> Self {
        let timeout = err.is_timeout() && !err.is_connect();
        let message = format!("sending the request failed: {}", chain(&err.without_url()));
        if timeout {
            Error::Timeout(message)
        } else {
            Error::Connect(message)
        }
    }

    /// Wraps a reqwest error raised while reading the body.
    pub(crate) fn reading(err: reqwest::Error) -> Self {
        let timeout = err.is_timeout();
        let message = format!("reading the response failed: {}", chain(&err.without_url()));
        if timeout {
            Error::Timeout(message)
        } else {
            Error::Read(message)
        }
    }
}

/// A body that cannot fail, as in tests that replay a recorded stream.
impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

/// An I/O error while reading a body: a timeout if its kind says so, else a cut-short read.
impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        if err.kind() == std::io::ErrorKind::TimedOut {
            Error::Timeout(err.to_string())
        } else {
            Error::Read(format!("reading the response failed: {err}"))
        }
    }
}

/// `err` and its sources, joined by `": "`, skipping a source whose text its parent already
/// shows.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}
