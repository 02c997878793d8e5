//! The Chat Completions request: its URL and its JSON body. Pure; no IO.
//!
//! Messages are rendered into this module's own wire structs rather than serialised as they
//! are, so that only fields OpenAI's chat API defines (plus DeepSeek's `reasoning_content`)
//! ever reach a server, whatever `agentd-events` adds to [`Message`] later.

use agentd_events::{Message, ToolSpec};
use reqwest::Url;
use serde::Serialize;

use crate::{ModelRequest, Result};

/// `{base_url}/chat/completions`, with one trailing slash of `base_url` dropped. Fails unless
/// the result is an absolute `http`/`https` URL.
pub(super) fn endpoint(base_url: &str) -> Result<Url> {
    crate::transport::endpoint(base_url, "chat/completions")
}

/// The request body:
/// `{"model","messages","tools"?,"stream":true,"stream_options":{"include_usage":true}}`.
/// `tools` is left out when empty because some servers reject `"tools": []`.
pub(super) fn body(request: &ModelRequest) -> serde_json::Result<Vec<u8>> {
    serde_json::to_vec(&ChatRequest {
        model: &request.model,
        messages: request.messages.iter().map(WireMessage::of).collect(),
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
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    stream: bool,
    stream_options: StreamOptions,
}

/// A message as OpenAI's chat API defines it. Assistant `content` is always a string (`""`,
/// never null: several compatible servers reject null); `reasoning_content` is DeepSeek's
/// (its thinking mode answers 400 when a tool-calling turn's reasoning is not sent back).
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum WireMessage<'a> {
    System {
        content: &'a str,
    },
    User {
        content: &'a str,
    },
    Assistant {
        content: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<WireToolCall<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<&'a str>,
    },
    Tool {
        tool_call_id: &'a str,
        content: &'a str,
    },
}

impl<'a> WireMessage<'a> {
    fn of(message: &'a Message) -> Self {
        match message {
            Message::System { content } => WireMessage::System { content },
            Message::User { content } => WireMessage::User { content },
            Message::Assistant {
                content,
                tool_calls,
                reasoning_content,
            } => WireMessage::Assistant {
                content,
                tool_calls: tool_calls
                    .iter()
                    .map(|call| WireToolCall {
                        id: &call.id,
                        kind: "function",
                        function: WireFunction {
                            name: &call.function.name,
                            arguments: json_or_empty(&call.function.arguments),
                        },
                    })
                    .collect(),
                reasoning_content: reasoning_content.as_deref(),
            },
            Message::Tool {
                tool_call_id,
                content,
            } => WireMessage::Tool {
                tool_call_id,
                content,
            },
        }
    }
}

/// Arguments as sent back: the text when it is JSON, else `{}` (strict servers reject a
/// request whose history carries invalid JSON arguments; the raw text stays in the log).
fn json_or_empty(arguments: &str) -> &str {
    match serde_json::from_str::<serde::de::IgnoredAny>(arguments) {
        Ok(_) => arguments,
        Err(_) => "{}",
    }
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
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
    use agentd_events::ToolCall;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

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

    #[test]
    fn invalid_json_arguments_are_sent_as_an_empty_object_and_reasoning_kept() {
        let request = ModelRequest {
            model: "m".into(),
            messages: vec![Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall::new("c1", "bash", "{\"cut"),
                    ToolCall::new("c2", "ls", " {} "),
                ],
                reasoning_content: Some("hmm".into()),
            }],
            tools: vec![],
        };
        let body: Value = serde_json::from_slice(&body(&request).unwrap()).unwrap();
        assert_eq!(
            body["messages"],
            json!([{"role": "assistant", "content": "", "reasoning_content": "hmm", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": " {} "}},
            ]}])
        );
    }
}
