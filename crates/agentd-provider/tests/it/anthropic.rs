//! The Anthropic Messages format beyond the shared fixtures: thinking and signatures, errors
//! in the stream, usage replacement, and `AnthropicProvider` against the scripted server
//! (headers, the rendered request, thinking blocks returned on tool turns, 529 retried).

use std::time::Duration;

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind, Message, ToolCall, ToolSpec};
use agentd_provider::{
    AnthropicConfig, AnthropicProvider, ModelRequest, Provider, ProviderEvent, RetryConfig, Secret,
};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::server::{ok_sse, serve, status};
use crate::support::{Format, call, finish, split_chunks, text, usage};

/// An SSE body of Anthropic events: `event:` named after each object's `type`.
fn events(items: &[Value]) -> Vec<u8> {
    let mut body = String::new();
    for item in items {
        body += &format!(
            "event: {}\ndata: {item}\n\n",
            item["type"].as_str().unwrap()
        );
    }
    body.into_bytes()
}

fn start(input: u64, cached: u64) -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
        "role": "assistant", "content": [], "usage": {"input_tokens": input,
        "cache_read_input_tokens": cached, "output_tokens": 1}}})
}

fn block(index: u64, content_block: Value) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": content_block})
}

fn delta(index: u64, delta: Value) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": delta})
}

fn stop(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn message_delta(reason: &str, output: u64) -> Value {
    json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": output}})
}

/// An error finish after `start(5, 0)`: the input usage is kept.
fn failed_after_start(code: &str, message: &str) -> Chunk {
    Chunk::Finish(Finish {
        kind: FinishKind::Error,
        usage: Some(usage(5, 1, 0, 0)),
        error: Some(ErrorInfo::new(code, message)),
    })
}

fn reasoning(content: &str) -> Chunk {
    Chunk::Reasoning {
        content: content.to_owned(),
    }
}

/// A thinking block (signature sent in two deltas: the last replaces), then a tool call.
fn thinking_then_tool() -> Vec<u8> {
    events(&[
        start(20, 0),
        block(
            0,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": "List "})),
        delta(0, json!({"type": "thinking_delta", "thinking": "first."})),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "partial"}),
        ),
        delta(
            0,
            json!({"type": "signature_delta", "signature": "sig-final"}),
        ),
        stop(0),
        block(
            1,
            json!({"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {}}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": "{\"command\""}),
        ),
        delta(
            1,
            json!({"type": "input_json_delta", "partial_json": ": \"ls\"}"}),
        ),
        stop(1),
        message_delta("tool_use", 30),
        json!({"type": "message_stop"}),
    ])
}

#[tokio::test]
async fn thinking_deltas_are_reasoning_and_the_tool_call_follows_its_block_stop() {
    assert_eq!(
        split_chunks(Format::Anthropic, 200, &thinking_then_tool()).await,
        [
            reasoning("List "),
            reasoning("first."),
            call("toolu_1", "bash", r#"{"command": "ls"}"#),
            finish(FinishKind::ToolCalls, Some(usage(20, 30, 0, 0))),
        ]
    );
}

#[tokio::test]
async fn overloaded_error_event_keeps_the_partial_text_and_ends_with_the_error() {
    let mut body = events(&[
        start(5, 0),
        block(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "Half"})),
    ]);
    body.extend_from_slice(
        b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    );
    assert_eq!(
        split_chunks(Format::Anthropic, 200, &body).await,
        [
            text("Half"),
            failed_after_start("overloaded_error", "Overloaded")
        ]
    );
}

#[tokio::test]
async fn cumulative_usage_replaces_server_tools_are_ignored_and_blank_input_is_empty() {
    let body = events(&[
        start(100, 40),
        block(
            0,
            json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search"}),
        ),
        stop(0),
        block(
            1,
            json!({"type": "tool_use", "id": "toolu_2", "name": "ls", "input": {}}),
        ),
        delta(1, json!({"type": "input_json_delta", "partial_json": ""})),
        stop(1),
        json!({"type": "ping"}),
        json!({"type": "message_delta", "delta": {"stop_reason": null}, "usage": {"output_tokens": 10}}),
        message_delta("tool_use", 25),
        json!({"type": "message_stop"}),
    ]);
    assert_eq!(
        split_chunks(Format::Anthropic, 200, &body).await,
        [
            call("toolu_2", "ls", "{}"),
            finish(FinishKind::ToolCalls, Some(usage(100, 25, 40, 0)))
        ]
    );
}

#[tokio::test]
async fn a_stream_cut_before_stop_reason_is_incomplete_and_http_errors_carry_the_status() {
    let cut = events(&[start(5, 0), block(0, json!({"type": "text", "text": "Hi"}))]);
    assert_eq!(
        split_chunks(Format::Anthropic, 200, &cut).await,
        [
            text("Hi"),
            failed_after_start(
                "provider_stream_incomplete",
                "the stream ended before the model finished (no stop_reason)"
            )
        ]
    );
    let body = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let chunks = split_chunks(Format::Anthropic, 529, body).await;
    let [Chunk::Finish(finish)] = chunks.as_slice() else {
        panic!("{chunks:?}")
    };
    let error = finish.error.clone().unwrap();
    assert_eq!(
        (error.code.as_str(), error.message.as_str(), error.status),
        ("overloaded_error", "Overloaded", Some(529))
    );
}

fn config(base_url: String, thinking: Option<u32>) -> AnthropicConfig {
    AnthropicConfig {
        base_url,
        thinking_budget_tokens: thinking,
        retry: RetryConfig {
            base_delay: Duration::from_millis(2),
            ..RetryConfig::default()
        },
        ..AnthropicConfig::new(Some(Secret::new("sk-ant-test")))
    }
}

async fn collect(provider: &AnthropicProvider, request: ModelRequest) -> Vec<ProviderEvent> {
    provider.stream(request).collect().await
}

/// A conversation after one parallel tool turn: two results, then the user again.
fn conversation() -> ModelRequest {
    ModelRequest {
        model: "claude-test".to_owned(),
        messages: vec![
            Message::System {
                content: "Be brief.".to_owned(),
            },
            Message::User {
                content: "Look around.".to_owned(),
            },
            Message::User {
                content: "Please.".to_owned(),
            },
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![
                    ToolCall::new("toolu_a", "read_file", r#"{"path":"README.md"}"#),
                    ToolCall::new("toolu_b", "bash", "not json"),
                ],
                reasoning_content: None,
            },
            Message::Tool {
                tool_call_id: "toolu_a".to_owned(),
                content: "# demo".to_owned(),
            },
            Message::Tool {
                tool_call_id: "toolu_b".to_owned(),
                content: "error: arguments are not valid JSON".to_owned(),
            },
            Message::User {
                content: "And now?".to_owned(),
            },
        ],
        tools: vec![ToolSpec {
            name: "bash".to_owned(),
            description: "Run a command.".to_owned(),
            parameters: json!({"type": "object"}),
        }],
    }
}

#[tokio::test]
async fn request_has_the_headers_and_the_anthropic_rendering_of_the_conversation() {
    let done = events(&[
        start(1, 0),
        message_delta("end_turn", 1),
        json!({"type": "message_stop"}),
    ]);
    let (base_url, server) = serve(vec![ok_sse(&done)]).await;
    let provider = AnthropicProvider::new(config(base_url, None)).unwrap();
    collect(&provider, conversation()).await;
    let request = server.take(0);
    assert_eq!(
        (
            request.request_line.as_str(),
            request.header("x-api-key"),
            request.header("anthropic-version"),
        ),
        (
            "POST /v1/messages HTTP/1.1",
            Some("sk-ant-test"),
            Some("2023-06-01")
        )
    );
    assert_eq!(
        request.json(),
        json!({
            "model": "claude-test",
            "max_tokens": 8192,
            "stream": true,
            "system": "Be brief.",
            "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "Look around."},
                    {"type": "text", "text": "Please."},
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_a", "name": "read_file",
                        "input": {"path": "README.md"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "bash", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "# demo"},
                    {"type": "tool_result", "tool_use_id": "toolu_b",
                        "content": "error: arguments are not valid JSON"},
                    {"type": "text", "text": "And now?"},
                ]},
            ],
            "tools": [{"name": "bash", "description": "Run a command.",
                "input_schema": {"type": "object"}}],
        })
    );
}

#[tokio::test]
async fn thinking_blocks_go_back_unchanged_on_the_tool_turn_and_are_dropped_without_them() {
    let done = events(&[
        start(1, 0),
        message_delta("end_turn", 1),
        json!({"type": "message_stop"}),
    ]);
    let (base_url, server) = serve(vec![
        ok_sse(&thinking_then_tool()),
        ok_sse(&done),
        ok_sse(&done),
    ])
    .await;
    let provider = AnthropicProvider::new(config(base_url, Some(2048))).unwrap();
    let user = Message::User {
        content: "List files.".to_owned(),
    };
    let first = ModelRequest {
        model: "claude-test".to_owned(),
        messages: vec![user.clone()],
        tools: vec![],
    };
    collect(&provider, first).await;
    let tool_turn = |id: &str| {
        vec![
            user.clone(),
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall::new(id, "bash", r#"{"command": "ls"}"#)],
                reasoning_content: Some("List first.".to_owned()),
            },
            Message::Tool {
                tool_call_id: id.to_owned(),
                content: "a.txt".to_owned(),
            },
        ]
    };
    for id in ["toolu_1", "toolu_unknown"] {
        let request = ModelRequest {
            model: "claude-test".to_owned(),
            messages: tool_turn(id),
            tools: vec![],
        };
        collect(&provider, request).await;
    }
    let [first, kept, lost] = [0, 1, 2].map(|n| server.take(n).json());
    assert_eq!(
        first["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(kept["thinking"], first["thinking"]);
    assert_eq!(
        kept["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "List first.", "signature": "sig-final"},
            {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
        ])
    );
    assert_eq!(lost.get("thinking"), None);
    assert_eq!(
        lost["messages"][1]["content"],
        json!([{"type": "tool_use", "id": "toolu_unknown", "name": "bash",
            "input": {"command": "ls"}}])
    );
}

#[tokio::test]
async fn overloaded_529_is_retried_and_announced() {
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let done = events(&[
        start(1, 0),
        block(0, json!({"type": "text", "text": ""})),
        delta(0, json!({"type": "text_delta", "text": "ok"})),
        stop(0),
        message_delta("end_turn", 2),
        json!({"type": "message_stop"}),
    ]);
    let (base_url, server) = serve(vec![status(529, &[], overloaded), ok_sse(&done)]).await;
    let provider = AnthropicProvider::new(config(base_url, None)).unwrap();
    let events = collect(&provider, conversation()).await;
    let [ProviderEvent::Retry(retry), rest @ ..] = events.as_slice() else {
        panic!("{events:#?}")
    };
    assert_eq!(
        (retry.attempt, retry.status, retry.message.as_str()),
        (2, Some(529), "Overloaded")
    );
    assert_eq!(
        rest,
        [
            ProviderEvent::Chunk(text("ok")),
            ProviderEvent::Chunk(finish(FinishKind::Completed, Some(usage(1, 2, 0, 0))))
        ]
    );
    assert_eq!(server.count(), 2);
}

#[test]
fn debug_output_never_shows_the_key() {
    let config = config("https://api.anthropic.com".to_owned(), None);
    let provider = AnthropicProvider::new(config.clone()).unwrap();
    let shown = format!("{config:?} {provider:?}");
    assert!(!shown.contains("sk-ant-test"), "{shown}");
}
