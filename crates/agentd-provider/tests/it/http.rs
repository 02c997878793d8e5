//! `OpenAiProvider` against a real HTTP server: a raw `TcpListener` on `127.0.0.1:0` that
//! captures one request and plays a scripted response (or silence).

use std::time::{Duration, Instant};

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind, Message, ToolSpec, Usage};
use agentd_provider::{
    Error, ModelRequest, OpenAiConfig, OpenAiProvider, Provider, ProviderEvent, RetryConfig,
};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::server::{Reply, SSE_HEAD, Server, ok_sse, serve};
use crate::support::{delta, fixture, sse};

/// Serves one reply; returns the base URL and the server.
async fn serve_once(reply: Reply) -> (String, Server) {
    serve(vec![reply]).await
}

fn request(tools: Vec<ToolSpec>) -> ModelRequest {
    ModelRequest {
        model: "deepseek-chat".to_owned(),
        messages: vec![
            Message::System {
                content: "Be brief.".to_owned(),
            },
            Message::User {
                content: "List files.".to_owned(),
            },
        ],
        tools,
    }
}

/// Runs one request and returns its chunks (every event must be a chunk: no retries here).
async fn run(config: OpenAiConfig, request: ModelRequest) -> Vec<Chunk> {
    let config = OpenAiConfig {
        retry: RetryConfig {
            max_attempts: 1,
            ..config.retry
        },
        ..config
    };
    let provider = OpenAiProvider::new(config).unwrap();
    let events: Vec<ProviderEvent> = provider.stream(request).collect().await;
    events
        .into_iter()
        .map(|e| match e {
            ProviderEvent::Chunk(chunk) => chunk,
            other => panic!("unexpected {other:?}"),
        })
        .collect()
}

fn error_finish(code: &str, message: &str, status: Option<u16>) -> Vec<Chunk> {
    vec![Chunk::Finish(Finish::error(ErrorInfo {
        code: code.to_owned(),
        message: message.to_owned(),
        status,
    }))]
}

#[tokio::test]
async fn request_carries_model_messages_tools_stream_options_and_the_bearer_key() {
    let body = sse(&[
        delta(json!({"role": "assistant", "content": "Sure"}), None),
        delta(json!({}), Some("stop")),
        json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 1}}),
    ]);
    let (base_url, server) = serve_once(ok_sse(&body)).await;
    let config = OpenAiConfig {
        api_key: Some("sk-test-123".to_owned()),
        ..OpenAiConfig::new(base_url)
    };
    let bash = ToolSpec {
        name: "bash".to_owned(),
        description: "Run a command.".to_owned(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    };
    let chunks = run(config, request(vec![bash])).await;
    let captured = server.take(0);

    assert_eq!(
        chunks,
        [
            Chunk::Text {
                content: "Sure".to_owned()
            },
            Chunk::Finish(Finish {
                kind: FinishKind::Completed,
                usage: Some(Usage {
                    input_tokens: 12,
                    output_tokens: 1,
                    ..Usage::default()
                }),
                error: None,
            }),
        ]
    );
    assert_eq!(
        (
            captured.request_line.as_str(),
            captured.header("authorization"),
            captured.header("content-type"),
            captured.header("accept"),
        ),
        (
            "POST /v1/chat/completions HTTP/1.1",
            Some("Bearer sk-test-123"),
            Some("application/json"),
            Some("text/event-stream"),
        )
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&captured.body).unwrap(),
        json!({
            "model": "deepseek-chat",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "List files."},
            ],
            "tools": [{"type": "function", "function": {
                "name": "bash",
                "description": "Run a command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            }}],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn request_without_tools_or_key_sends_neither() {
    let body = sse(&[delta(json!({"content": "Hi"}), Some("stop"))]);
    let (base_url, server) = serve_once(ok_sse(&body)).await;
    run(OpenAiConfig::new(base_url), request(vec![])).await;
    let captured = server.take(0);
    let body: Value = serde_json::from_slice(&captured.body).unwrap();
    assert_eq!(
        (captured.header("authorization"), body.get("tools")),
        (None, None)
    );
}

#[tokio::test]
async fn recorded_http_429_response_finishes_with_its_status_and_message() {
    let (base_url, _server) = serve_once(Reply::Bytes(fixture("openai_http_429.http"))).await;
    let chunks = run(OpenAiConfig::new(base_url), request(vec![])).await;
    assert_eq!(
        chunks,
        error_finish(
            "rate_limit_error",
            "Rate limit reached for requests (fixture).",
            Some(429)
        )
    );
}

#[tokio::test]
async fn http_500_with_an_html_body_finishes_with_its_text() {
    let html = "<html><body><h1>500 Internal Server Error</h1></body></html>\n";
    let reply =
        format!("HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/html\r\n\r\n{html}");
    let (base_url, _server) = serve_once(Reply::Bytes(reply.into_bytes())).await;
    let chunks = run(OpenAiConfig::new(base_url), request(vec![])).await;
    assert_eq!(
        chunks,
        error_finish("provider_http_error", html.trim(), Some(500))
    );
}

#[tokio::test]
async fn refused_connection_finishes_with_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener); // Nothing listens there any more.
    let chunks = run(OpenAiConfig::new(base_url), request(vec![])).await;
    let [
        Chunk::Finish(Finish {
            kind,
            usage,
            error: Some(error),
        }),
    ] = chunks.as_slice()
    else {
        panic!("expected one error finish, got {chunks:#?}");
    };
    assert_eq!(
        (*kind, *usage, error.code.as_str(), error.status),
        (FinishKind::Error, None, "provider_connect_error", None)
    );
    assert!(error.message.contains("refused"), "{}", error.message);
}

#[tokio::test]
async fn headers_then_silence_hit_the_idle_timeout() {
    let (base_url, _server) = serve_once(Reply::Stall(SSE_HEAD)).await;
    let config = OpenAiConfig {
        idle_timeout: Duration::from_millis(200),
        ..OpenAiConfig::new(base_url)
    };
    let started = Instant::now();
    let chunks = run(config, request(vec![])).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(
        chunks,
        error_finish(
            "provider_timeout",
            "no data from the provider for 200ms (idle_timeout)",
            None
        )
    );
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_idle_timeout_before_headers() {
    let (base_url, _server) = serve_once(Reply::Stall("")).await;
    let config = OpenAiConfig {
        idle_timeout: Duration::from_millis(200),
        ..OpenAiConfig::new(base_url)
    };
    assert_eq!(
        run(config, request(vec![])).await,
        error_finish(
            "provider_timeout",
            "no data from the provider for 200ms (idle_timeout)",
            None
        )
    );
}

#[tokio::test]
async fn a_response_that_keeps_trickling_hits_the_overall_deadline() {
    let (base_url, _server) = serve_once(Reply::Trickle {
        head: SSE_HEAD.to_owned(),
        piece: ": keep-alive\n\n",
        every: Duration::from_millis(20),
    })
    .await;
    let config = OpenAiConfig {
        idle_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_millis(300),
        ..OpenAiConfig::new(base_url)
    };
    assert_eq!(
        run(config, request(vec![])).await,
        error_finish(
            "provider_timeout",
            "the request took longer than 300ms (request_timeout)",
            None
        )
    );
}

#[test]
fn debug_output_never_shows_the_api_key() {
    let config = OpenAiConfig {
        api_key: Some("sk-secret-value".to_owned()),
        ..OpenAiConfig::new("https://api.deepseek.com")
    };
    let provider = OpenAiProvider::new(config.clone()).unwrap();
    let shown = format!("{config:?} {provider:?} {config:#?} {provider:#?}");
    assert!(!shown.contains("sk-secret"), "{shown}");
    assert!(shown.contains("<redacted>"), "{shown}");
}

#[test]
fn new_rejects_a_base_url_that_is_not_http() {
    let err = OpenAiProvider::new(OpenAiConfig::new("localhost:8080")).unwrap_err();
    assert!(matches!(err, Error::BaseUrl { .. }), "{err:?}");
    assert_eq!(err.code(), "provider_config_error");
}
