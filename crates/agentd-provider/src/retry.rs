//! When and how long to wait before trying a failed model request again. Pure (the clock and
//! the random source come in as arguments); [`crate::transport`] does the waiting.
//!
//! Rules, from the OpenAI and Anthropic API docs and their official SDKs (`_should_retry`,
//! `_calculate_retry_timeout`):
//! - Only failures before the first byte of a 2xx response are retried: connection errors,
//!   HTTP 408, 429 and 5xx (Anthropic's 529 `overloaded_error` included). Never 400, 401,
//!   403, 404, 422, never a 429 whose error is `insufficient_quota` (OpenAI: the account is
//!   out of credit, waiting does not help), never anything once streaming began.
//! - A server's `x-should-retry: true|false` header (both APIs send it) overrides the status.
//! - The wait is the server's `retry-after-ms` (milliseconds, OpenAI) or `Retry-After`
//!   (seconds or an HTTP date, RFC 9110 §10.2.3) when given, else exponential backoff:
//!   `base_delay * 2^(retry - 1)`, capped at `max_delay`, times a random factor in
//!   [0.75, 1] (jitter, so that clients rate limited together do not retry together).
//! - A server asking for a longer wait than `max_delay` is not retried: the error is
//!   reported at once rather than retried too early.

use std::time::{Duration, SystemTime};

use reqwest::header::{HeaderMap, RETRY_AFTER};

/// How often and how patiently a provider retries. `Default`: 3 attempts in all, 500 ms base
/// delay, 30 s cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryConfig {
    /// Attempts in all, the first included; `1` (or `0`) never retries. Default 3.
    pub max_attempts: u32,
    /// The wait before the first retry when the server names none; doubled for each later
    /// one. Default 500 ms.
    pub base_delay: Duration,
    /// The longest wait, computed or asked for by the server. Default 30 s.
    pub max_delay: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryConfig {
    /// Whether an attempt numbered `attempt` (1 for the first) may be followed by another.
    pub(crate) fn allows_another(&self, attempt: u32) -> bool {
        attempt < self.max_attempts
    }

    /// The wait after failed attempt `attempt` (1-based): the server's hint from `headers`
    /// when there is one, else backoff with jitter `random` in [0, 1). `None` when the
    /// server asks for more than `max_delay` (do not retry).
    pub(crate) fn delay(
        &self,
        attempt: u32,
        headers: Option<&HeaderMap>,
        now: SystemTime,
        random: f64,
    ) -> Option<Duration> {
        if let Some(hint) = headers.and_then(|h| server_hint(h, now)) {
            return (hint <= self.max_delay).then_some(hint);
        }
        let exponent = attempt.saturating_sub(1).min(30);
        let backoff = self
            .base_delay
            .saturating_mul(1 << exponent)
            .min(self.max_delay);
        Some(backoff.mul_f64(1.0 - 0.25 * random.clamp(0.0, 1.0)))
    }
}

/// Whether an HTTP error response may be retried: by `x-should-retry` when the server sent
/// it, else by status (408, 429, 5xx) unless the error is `insufficient_quota`.
pub(crate) fn retryable_status(status: u16, headers: &HeaderMap, body: &[u8]) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => return true,
        Some("false") => return false,
        _ => {}
    }
    match status {
        408 | 500..=599 => true,
        429 => !contains(body, b"insufficient_quota"),
        _ => false,
    }
}

/// The wait a server asks for: `retry-after-ms` first, then `Retry-After` in seconds
/// (decimals accepted) or as an HTTP date (a date in the past means now).
fn server_hint(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text(RETRY_AFTER.as_str())?;
    if let Ok(seconds) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_static(value));
        }
        map
    }

    const CONFIG: RetryConfig = RetryConfig {
        max_attempts: 3,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(30),
    };

    #[test]
    fn backoff_doubles_is_capped_and_jitter_takes_off_at_most_a_quarter() {
        let now = SystemTime::UNIX_EPOCH;
        let delay = |attempt, random| CONFIG.delay(attempt, None, now, random);
        assert_eq!(
            [
                delay(1, 0.0),
                delay(2, 0.0),
                delay(3, 0.999),
                delay(40, 0.0)
            ],
            [
                Some(Duration::from_millis(500)),
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(2).mul_f64(1.0 - 0.25 * 0.999)),
                Some(Duration::from_secs(30)),
            ]
        );
    }

    #[test]
    fn server_hints_win_in_ms_seconds_or_http_date_and_too_long_means_no_retry() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        let delay = |pairs: &[(&'static str, &'static str)]| {
            CONFIG.delay(1, Some(&headers(pairs)), now, 0.5)
        };
        assert_eq!(
            [
                delay(&[("retry-after-ms", "250"), ("retry-after", "9")]),
                delay(&[("retry-after", "2")]),
                delay(&[("retry-after", "1.5")]),
                delay(&[("retry-after", "Wed, 21 Oct 2026 07:28:07 GMT")]),
                delay(&[("retry-after", "Wed, 21 Oct 2026 07:27:00 GMT")]),
                delay(&[("retry-after", "3600")]),
                delay(&[("retry-after", "soon")]),
            ],
            [
                Some(Duration::from_millis(250)),
                Some(Duration::from_secs(2)),
                Some(Duration::from_millis(1500)),
                Some(Duration::from_secs(7)),
                Some(Duration::ZERO),
                None,
                Some(Duration::from_millis(500).mul_f64(0.875)),
            ]
        );
    }

    #[test]
    fn statuses_quota_and_should_retry_header_decide_retries() {
        let none = HeaderMap::new();
        let quota = br#"{"error":{"type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let cases = [
            (429, &none, &b"{}"[..], true),
            (429, &none, &quota[..], false),
            (500, &none, b"", true),
            (502, &none, b"<html>", true),
            (529, &none, b"", true),
            (408, &none, b"", true),
            (400, &none, b"", false),
            (401, &none, b"", false),
            (403, &none, b"", false),
            (404, &none, b"", false),
            (422, &none, b"", false),
        ];
        for (status, headers, body, expected) in cases {
            assert_eq!(
                retryable_status(status, headers, body),
                expected,
                "{status}"
            );
        }
        let never = headers(&[("x-should-retry", "false")]);
        let always = headers(&[("x-should-retry", "true")]);
        assert!(!retryable_status(503, &never, b""));
        assert!(retryable_status(409, &always, b""));
    }

    #[test]
    fn attempts_are_counted_from_one() {
        assert!(CONFIG.allows_another(2));
        assert!(!CONFIG.allows_another(3));
        let once = RetryConfig {
            max_attempts: 0,
            ..CONFIG
        };
        assert!(!once.allows_another(1));
    }
}
