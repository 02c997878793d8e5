//! The Chat Completions request: its URL and its JSON body. Pure; no IO.

use agentd_events::{Message, ToolSpec};
use reqwest::Url;
use serde::Serialize;

use crate::{Error, ModelRequest, Result};

/// `{base_url}/chat/completions`, with one trailing slash of `base_url` dropped. Fails unless
/// the result is an absolute `http`/`https` URL.
pub(super) fn endpoint(base_url: &str) -> Result<Url> {
    let base = base_url.strip_suffix('/').unwrap_or(base_url);
    let reject = |reason: String| Error::BaseUrl {
        url: base_url.to_owned(),
        reason,
    };
    let url = Url::parse(&format!("{base}/chat/completions")).map_err(|e| reject(e.to_string()))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(reject(format!("scheme {other:?} is not http or https"))),
    }
}

/// The request body:
/// `{"model","messages","tools"?,"stream":true,"stream_options":{"include_usage":true}}`.
/// `messages` are serialised as they are (they already have the OpenAI shape); `tools` is
/// left out when empty because some servers reject `"tools": []`.
pub(super) fn body(request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&ChatRequest {
        model: &request.model,
        messages: &request.messages,
        tools: request.tools.iter().map(Tool::function).collect(),
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
    })
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [Message],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    stream: bool,
    stream_options: StreamOptions,
}

/// Asks for a last chunk with the token usage (OpenAI, DeepSeek, vLLM, llama.cpp, Ollama).
#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `{"type":"function","function":{"name","description","parameters"}}`.
#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: &'a ToolSpec,
}

impl<'a> Tool<'a> {
    fn function(spec: &'a ToolSpec) -> Self {
        Tool {
            kind: "function",
            function: spec,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn endpoint_drops_one_trailing_slash_and_rejects_other_schemes() {
        let ok = |base: &str| endpoint(base).map(|u| u.to_string()).ok();
        assert_eq!(
            [
                ok("https://api.deepseek.com"),
                ok("http://127.0.0.1:8080/v1/"),
                ok("ftp://example.com"),
                ok("not a url"),
            ],
            [
                Some("https://api.deepseek.com/chat/completions".to_owned()),
                Some("http://127.0.0.1:8080/v1/chat/completions".to_owned()),
                None,
                None,
            ]
        );
    }
}
