//! Retries before the first byte, against the scripted raw server: which failures are
//! retried, the `retry` events announcing each wait, the server's wait hints, the attempt
//! limit, and nothing retried once a 2xx body started. Delays are real but a few
//! milliseconds (`base_delay` is configurable), except one test honouring `Retry-After: 1`.

use std::time::{Duration, Instant};

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind, Message, ProviderRetry};
use agentd_provider::{
    ModelRequest, OpenAiConfig, OpenAiProvider, Provider, ProviderEvent, RetryConfig,
};
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::server::{Reply, ok_sse, serve, status};
use crate::support::{delta, sse, text};

const FAST: RetryConfig = RetryConfig {
    max_attempts: 3,
    base_delay: Duration::from_millis(4),
    max_delay: Duration::from_secs(2),
};

fn hello() -> Reply {
    ok_sse(&sse(&[delta(json!({"content": "hello"}), Some("stop"))]))
}

fn rate_limited(headers: &[(&str, &str)]) -> Reply {
    let body = json!({"error": {"message": "slow down", "type": "rate_limit_error"}});
    status(429, headers, &body.to_string())
}

fn request() -> ModelRequest {
    ModelRequest {
        model: "m".to_owned(),
        messages: vec![Message::User {
            content: "hi".to_owned(),
        }],
        tools: vec![],
    }
}

/// Runs one request against `replies` and returns its events and how many requests the
/// server saw.
async fn run(retry: RetryConfig, replies: Vec<Reply>) -> (Vec<ProviderEvent>, usize) {
    let (base_url, server) = serve(replies).await;
    let provider = OpenAiProvider::new(OpenAiConfig {
        retry,
        ..OpenAiConfig::new(base_url)
    })
    .unwrap();
    let events: Vec<ProviderEvent> = provider.stream(request()).collect().await;
    (events, server.count())
}

fn retry(attempt: u32, status: Option<u16>, delay_ms: u64, message: &str) -> ProviderEvent {
    ProviderEvent::Retry(ProviderRetry {
        attempt,
        status,
        delay_ms,
        message: message.to_owned(),
    })
}

fn chunk(chunk: Chunk) -> ProviderEvent {
    ProviderEvent::Chunk(chunk)
}

fn done() -> ProviderEvent {
    chunk(Chunk::Finish(Finish {
        kind: FinishKind::Completed,
        usage: None,
        error: None,
    }))
}

fn http_failure(code: &str, message: &str, status: u16) -> ProviderEvent {
    chunk(Chunk::Finish(Finish::error(ErrorInfo {
        code: code.to_owned(),
        message: message.to_owned(),
        status: Some(status),
    })))
}

#[tokio::test]
async fn rate_limit_with_retry_after_ms_is_announced_then_retried() {
    let replies = vec![rate_limited(&[("retry-after-ms", "15")]), hello()];
    let (events, _) = run(FAST, replies).await;
    assert_eq!(
        events,
        [
            retry(2, Some(429), 15, "slow down"),
            chunk(text("hello")),
            done()
        ]
    );
}

#[tokio::test]
async fn retry_after_in_seconds_is_honoured() {
    let started = Instant::now();
    let (events, _) = run(FAST, vec![rate_limited(&[("retry-after", "1")]), hello()]).await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(events[0], retry(2, Some(429), 1000, "slow down"));
    assert_eq!(events.last(), Some(&done()));
}

#[tokio::test]
async fn server_errors_back_off_exponentially_with_jitter_up_to_the_attempt_limit() {
    let page = "<html><body>502 Bad Gateway</body></html>";
    let replies = vec![
        status(503, &[], "busy"),
        status(502, &[("content-type", "text/html")], page),
        status(500, &[], "still broken"),
        hello(),
    ];
    let (events, seen) = run(FAST, replies).await;
    let delays: Vec<(u32, Option<u16>, u64)> = events
        .iter()
        .filter_map(|e| match e {
            ProviderEvent::Retry(r) => Some((r.attempt, r.status, r.delay_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(delays.len(), 2, "{events:?}");
    assert_eq!((delays[0].0, delays[0].1), (2, Some(503)));
    assert_eq!((delays[1].0, delays[1].1), (3, Some(502)));
    assert!((3..=4).contains(&delays[0].2), "{delays:?}"); // 4 ms, jitter up to -25 %.
    assert!((6..=8).contains(&delays[1].2), "{delays:?}"); // 8 ms.
    assert_eq!(
        events.last(),
        Some(&http_failure("provider_http_error", "still broken", 500))
    );
    assert_eq!(seen, 3);
}

#[tokio::test]
async fn client_errors_quota_exhaustion_and_should_retry_false_are_never_retried() {
    let quota = json!({"error": {"message": "You exceeded your current quota.",
        "type": "insufficient_quota", "code": "insufficient_quota"}});
    let cases = [
        (status(400, &[], "bad"), 400),
        (status(401, &[], "who?"), 401),
        (status(403, &[], "no"), 403),
        (status(404, &[], "gone"), 404),
        (status(422, &[], "invalid"), 422),
        (status(429, &[], &quota.to_string()), 429),
        (status(503, &[("x-should-retry", "false")], "down"), 503),
        (rate_limited(&[("retry-after", "3600")]), 429),
    ];
    for (reply, code) in cases {
        let (events, seen) = run(FAST, vec![reply, hello()]).await;
        assert_eq!((events.len(), seen), (1, 1), "{code}: {events:?}");
        let ProviderEvent::Chunk(Chunk::Finish(finish)) = &events[0] else {
            panic!("{code}: {events:?}");
        };
        assert_eq!(finish.error.as_ref().and_then(|e| e.status), Some(code));
    }
}

#[tokio::test]
async fn connection_errors_are_retried_then_reported() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let provider = OpenAiProvider::new(OpenAiConfig {
        retry: RetryConfig {
            max_attempts: 2,
            ..FAST
        },
        ..OpenAiConfig::new(base_url)
    })
    .unwrap();
    let events: Vec<ProviderEvent> = provider.stream(request()).collect().await;
    let [
        ProviderEvent::Retry(retry),
        ProviderEvent::Chunk(Chunk::Finish(finish)),
    ] = events.as_slice()
    else {
        panic!("{events:#?}");
    };
    assert_eq!((retry.attempt, retry.status), (2, None));
    assert!(retry.message.contains("refused"), "{}", retry.message);
    let error = finish.error.as_ref().unwrap();
    assert_eq!(error.code, "provider_connect_error");
}

#[tokio::test]
async fn a_body_cut_after_streaming_began_is_not_retried() {
    let mut bytes = crate::server::SSE_HEAD.as_bytes().to_vec();
    bytes.extend_from_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hal\"}}]}\n\n");
    let (events, seen) = run(FAST, vec![Reply::Bytes(bytes), hello()]).await;
    assert_eq!(
        events,
        [
            chunk(text("Hal")),
            chunk(Chunk::Finish(Finish::error(ErrorInfo::new(
                "provider_stream_incomplete",
                "the stream ended before the model finished (no finish_reason)"
            ))))
        ]
    );
    assert_eq!(seen, 1);
}
