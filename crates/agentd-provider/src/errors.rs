//! Reading a provider's own error reports into [`ErrorInfo`]: the body of an HTTP error
//! response, and an error object (or `event: error`) inside a stream. Pure; no IO.
//!
//! Shapes understood: `{"error":{"message","type","code"}}` (OpenAI, DeepSeek, llama.cpp,
//! Ollama; Anthropic wraps the same object as `{"type":"error","error":{..}}`),
//! `{"error":"text"}`, and vLLM's older top-level `{"object":"error","message","type"}`.
//! Anything else (an HTML error page from a proxy) is shown as text, cut to
//! [`MAX_MESSAGE_BYTES`].

use agentd_events::ErrorInfo;
use serde_json::{Map, Value};

/// Code of an HTTP error whose body names no usable error type.
const HTTP_ERROR: &str = "provider_http_error";
/// Code of an error reported inside a stream that names no usable error type.
const STREAM_ERROR: &str = "provider_stream_error";
/// How much of a provider's text an error message keeps, in bytes.
pub(crate) const MAX_MESSAGE_BYTES: usize = 1024;

/// An HTTP error response (`status` outside 2xx) as a finish error carrying `status`.
/// The code is the body's error `type` (or `code`) when snake_case, else
/// `provider_http_error`; the message is the body's, else its text trimmed and truncated to
/// [`MAX_MESSAGE_BYTES`], else the status line.
pub(crate) fn http_error(status: u16, body: &[u8]) -> ErrorInfo {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut info = match serde_json::from_str::<Value>(text)
        .ok()
        .as_ref()
        .and_then(reported)
    {
        Some(report) => report.info(HTTP_ERROR, text),
        None if text.is_empty() => ErrorInfo::new(HTTP_ERROR, status_line(status)),
        None => ErrorInfo::new(HTTP_ERROR, truncate(text, MAX_MESSAGE_BYTES)),
    };
    info.status = Some(status);
    info
}

/// The data of an SSE event named `error`, JSON or plain text.
pub(crate) fn stream_event_error(data: &str) -> ErrorInfo {
    let data = data.trim();
    match serde_json::from_str::<Value>(data)
        .ok()
        .as_ref()
        .and_then(reported)
    {
        Some(report) => report.info(STREAM_ERROR, data),
        None if data.is_empty() => ErrorInfo::new(STREAM_ERROR, "the provider sent an error event"),
        None => ErrorInfo::new(STREAM_ERROR, truncate(data, MAX_MESSAGE_BYTES)),
    }
}

/// The error a stream's `data:` object reports, if it reports one (a non-empty `error`
/// member, as the OpenAI SDKs check, or `"object":"error"`). `raw` is the data text, shown
/// when the object carries no message.
pub(crate) fn stream_data_error(value: &Value, raw: &str) -> Option<ErrorInfo> {
    reported(value).map(|report| report.info(STREAM_ERROR, raw))
}

/// `text` cut to at most `max` bytes at a character boundary, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// What a provider said about its error.
struct Report {
    /// Its error type, when snake_case (usable as our code as is).
    code: Option<String>,
    /// Its message.
    message: Option<String>,
}

impl Report {
    fn info(self, fallback_code: &str, raw: &str) -> ErrorInfo {
        ErrorInfo::new(
            self.code.unwrap_or_else(|| fallback_code.to_owned()),
            self.message
                .unwrap_or_else(|| truncate(raw, MAX_MESSAGE_BYTES)),
        )
    }
}

fn reported(value: &Value) -> Option<Report> {
    match value.get("error") {
        Some(Value::Object(error)) if !error.is_empty() => Some(report_of(error)),
        Some(Value::String(message)) if !message.is_empty() => Some(Report {
            code: None,
            message: Some(message.clone()),
        }),
        _ => match value.as_object() {
            Some(object) if object.get("object").and_then(Value::as_str) == Some("error") => {
                Some(report_of(object))
            }
            _ => None,
        },
    }
}

fn report_of(error: &Map<String, Value>) -> Report {
    let snake = |key: &str| {
        error
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| is_snake_case(s))
    };
    Report {
        code: snake("type").or_else(|| snake("code")).map(str::to_owned),
        message: error
            .get("message")
            .and_then(Value::as_str)
            .map(|m| truncate(m.trim(), MAX_MESSAGE_BYTES))
            .filter(|m| !m.is_empty()),
    }
}

/// `rate_limit_error` and `server_error` yes; `BadRequestError`, `invalid request` or a
/// 100-character string no.
fn is_snake_case(s: &str) -> bool {
    s.len() <= 64
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn status_line(status: u16) -> String {
    let reason = reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("error");
    format!("HTTP {status} {reason}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn truncation_never_splits_a_character() {
        assert_eq!(truncate("aé", 2), "a…");
        assert_eq!(truncate("aé", 3), "aé");
    }

    #[test]
    fn error_type_becomes_the_code_only_when_snake_case() {
        let info = |v: Value| stream_data_error(&v, "raw");
        assert_eq!(
            [
                info(json!({"error": {"message": "slow down", "type": "rate_limit_error"}})),
                info(json!({"object": "error", "message": "bad", "type": "BadRequestError"})),
                info(json!({"error": "plain"})),
                info(json!({"error": null, "choices": []})),
            ],
            [
                Some(ErrorInfo::new("rate_limit_error", "slow down")),
                Some(ErrorInfo::new(STREAM_ERROR, "bad")),
                Some(ErrorInfo::new(STREAM_ERROR, "plain")),
                None,
            ]
        );
    }
}
