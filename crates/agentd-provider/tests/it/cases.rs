//! Hand-written streams for the quirks the fixtures do not show: errors after HTTP 200,
//! streams cut short, usage placement, tool-call indexing, finish reasons, bad chunks.

use std::io;

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind};
use agentd_provider::openai_chunks;
use bytes::Bytes;
use futures_util::{StreamExt, stream};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{
    Format, call, delta, failed, finish, openai_split, split_chunks, sse, sse_without_done, text,
    usage,
};

#[tokio::test]
async fn error_object_after_http_200_keeps_the_partial_text() {
    let mut body = sse_without_done(&[delta(json!({"content": "Half an"}), None)]);
    body += r#"data: {"error":{"message":"overloaded","type":"server_error","code":null}}"#;
    body += "\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"never seen\"}}]}\n\n";
    assert_eq!(
        openai_split(body.as_bytes()).await,
        [text("Half an"), failed("server_error", "overloaded")]
    );
}

#[tokio::test]
async fn event_named_error_finishes_with_its_message_even_as_plain_text() {
    let mut body = sse_without_done(&[delta(json!({"content": "Hi"}), None)]);
    body += "event: error\ndata: upstream went away\n\n";
    assert_eq!(
        openai_split(body.as_bytes()).await,
        [
            text("Hi"),
            failed("provider_stream_error", "upstream went away")
        ]
    );
}

#[tokio::test]
async fn stream_ending_without_finish_reason_is_incomplete_with_or_without_done() {
    let incomplete = failed(
        "provider_stream_incomplete",
        "the stream ended before the model finished (no finish_reason)",
    );
    let events = [delta(json!({"content": "Hello"}), None)];
    assert_eq!(
        openai_split(sse_without_done(&events).as_bytes()).await,
        [text("Hello"), incomplete.clone()]
    );
    assert_eq!(
        openai_split(&sse(&events)).await,
        [text("Hello"), incomplete]
    );
}

#[tokio::test]
async fn finish_reason_then_end_of_body_without_done_finishes_normally() {
    let body = sse_without_done(&[
        delta(json!({"content": "Done."}), None),
        delta(json!({}), Some("stop")),
    ]);
    assert_eq!(
        openai_split(body.as_bytes()).await,
        [text("Done."), finish(FinishKind::Completed, None)]
    );
}

#[tokio::test]
async fn usage_in_a_final_chunk_without_choices_and_empty_usage_objects_are_handled() {
    let body = sse(&[
        json!({"choices": [{"delta": {"content": "ok"}, "finish_reason": null}], "usage": {}}),
        json!({"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": null}),
        json!({"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 2,
            "prompt_cache_hit_tokens": 3}}),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            text("ok"),
            finish(FinishKind::Completed, Some(usage(7, 2, 3, 0)))
        ]
    );
}

#[tokio::test]
async fn usage_on_every_chunk_reports_the_last_one() {
    let with_usage = |d, reason, out| {
        let mut chunk = delta(d, reason);
        chunk["usage"] = json!({"prompt_tokens": 10, "completion_tokens": out,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 1}});
        chunk
    };
    let body = sse(&[
        with_usage(json!({"content": "a"}), None, 1),
        with_usage(json!({"content": "b"}), Some("stop"), 2),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            text("a"),
            text("b"),
            finish(FinishKind::Completed, Some(usage(10, 2, 4, 1)))
        ]
    );
}

#[tokio::test]
async fn parallel_calls_all_at_index_zero_are_told_apart_by_their_ids() {
    let fragment = |id: Option<&str>, name: Option<&str>, args: &str| {
        let mut f = json!({"index": 0, "function": {"arguments": args}});
        if let Some(id) = id {
            f["id"] = json!(id);
        }
        if let Some(name) = name {
            f["function"]["name"] = json!(name);
        }
        delta(json!({"tool_calls": [f]}), None)
    };
    let body = sse(&[
        fragment(Some("call_a"), Some("read_file"), "{\"path\":"),
        fragment(None, None, "\"a.txt\"}"),
        fragment(Some("call_b"), Some("bash"), "{\"command\":"),
        fragment(Some("call_b"), None, "\"ls\"}"),
        delta(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            call("call_a", "read_file", r#"{"path":"a.txt"}"#),
            call("call_b", "bash", r#"{"command":"ls"}"#),
            finish(FinishKind::ToolCalls, None),
        ]
    );
}

#[tokio::test]
async fn calls_without_id_or_index_get_generated_ids_positions_and_empty_objects() {
    let body = sse(&[
        delta(
            json!({"tool_calls": [
                {"function": {"name": "list", "arguments": "  "}},
                {"function": {"name": "read_file", "arguments": {"path": "x"}}},
            ]}),
            None,
        ),
        delta(json!({}), Some("stop")),
    ]);
    let chunks = openai_split(&body).await;
    let ids: Vec<String> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCall { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    for id in &ids {
        let suffix = id.strip_prefix("call_").unwrap_or_default();
        assert!(
            suffix.len() == 32 && suffix.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
    }
    assert_ne!(ids[0], ids[1]);
    assert_eq!(
        chunks,
        [
            call(&ids[0], "list", "{}"),
            call(&ids[1], "read_file", r#"{"path":"x"}"#),
            finish(FinishKind::ToolCalls, None),
        ]
    );
}

#[tokio::test]
async fn finish_reasons_map_to_finish_kinds() {
    let cases = [
        ("stop", false, finish(FinishKind::Completed, None)),
        ("stop", true, finish(FinishKind::ToolCalls, None)),
        ("tool_calls", true, finish(FinishKind::ToolCalls, None)),
        ("function_call", true, finish(FinishKind::ToolCalls, None)),
        ("length", true, finish(FinishKind::MaxTokens, None)),
        ("eos", false, finish(FinishKind::Completed, None)),
        ("eos", true, finish(FinishKind::ToolCalls, None)),
        (
            "content_filter",
            false,
            failed(
                "content_filter",
                "the provider's content filter stopped the response",
            ),
        ),
        (
            "insufficient_system_resource",
            false,
            failed(
                "insufficient_system_resource",
                "the provider ran out of resources and cut the response short",
            ),
        ),
    ];
    for (reason, with_call, expected) in cases {
        let mut events = Vec::new();
        if with_call {
            events.push(delta(
                json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "ls", "arguments": "{}"}}]}),
                None,
            ));
        }
        events.push(delta(json!({}), Some(reason)));
        let chunks = openai_split(&sse(&events)).await;
        assert_eq!(
            chunks.last(),
            Some(&expected),
            "{reason}, call: {with_call}"
        );
    }
}

#[tokio::test]
async fn reasoning_comes_from_either_field_and_never_twice() {
    let body = sse(&[
        delta(json!({"reasoning_content": "deep", "content": null}), None),
        delta(json!({"reasoning": "olla"}), None),
        delta(
            json!({"reasoning_content": "both", "reasoning": "both"}),
            None,
        ),
        delta(json!({"content": ""}), Some("stop")),
    ]);
    let reasoning = |content: &str| Chunk::Reasoning {
        content: content.to_owned(),
    };
    assert_eq!(
        openai_split(&body).await,
        [
            reasoning("deep"),
            reasoning("olla"),
            reasoning("both"),
            finish(FinishKind::Completed, None)
        ]
    );
}

#[tokio::test]
async fn malformed_json_finishes_with_bad_chunk_showing_the_first_200_bytes() {
    let garbage = format!("{{\"choices\": [{}", "x".repeat(300));
    let body = format!(
        "data: {{\"choices\":[{{\"delta\":{{\"content\":\"a\"}}}}]}}\n\ndata: {garbage}\n\n"
    );
    let chunks = openai_split(body.as_bytes()).await;
    let message = format!(
        "malformed stream chunk (expected value at line 1 column 14): {}…",
        &garbage[..200]
    );
    assert_eq!(chunks, [text("a"), failed("provider_bad_chunk", &message)]);
}

#[tokio::test]
async fn body_errors_finish_as_incomplete_or_timeout_and_are_ignored_after_finish_reason() {
    let read = |items: Vec<Result<&'static str, io::Error>>| {
        stream::iter(
            items
                .into_iter()
                .map(|r| r.map(|s| Bytes::from_static(s.as_bytes()))),
        )
    };
    let reset = || io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "no data for 1s");
    let start = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    let done = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";

    let cut: Vec<Chunk> = openai_chunks(200, read(vec![Ok(start), Err(reset())]))
        .collect()
        .await;
    let slow: Vec<Chunk> = openai_chunks(200, read(vec![Ok(start), Err(timed_out())]))
        .collect()
        .await;
    let late: Vec<Chunk> = openai_chunks(200, read(vec![Ok(start), Ok(done), Err(reset())]))
        .collect()
        .await;
    assert_eq!(
        [cut, slow, late],
        [
            vec![
                text("a"),
                failed(
                    "provider_stream_incomplete",
                    "reading the response failed: reset by peer"
                )
            ],
            vec![text("a"), failed("provider_timeout", "no data for 1s")],
            vec![text("a"), finish(FinishKind::Completed, None)],
        ]
    );
}

#[tokio::test]
async fn http_error_bodies_give_their_message_or_text_and_the_status() {
    let error = |code: &str, message: &str, status| {
        Chunk::Finish(Finish::error(ErrorInfo {
            code: code.to_owned(),
            message: message.to_owned(),
            status: Some(status),
        }))
    };
    let vllm =
        br#"{"object":"error","message":"model not found","type":"NotFoundError","code":404}"#;
    let long_html = format!("<html>{}</html>", "é".repeat(600));
    assert_eq!(
        [
            split_chunks(Format::OpenAi, 404, vllm).await,
            split_chunks(Format::OpenAi, 502, b"").await,
            split_chunks(Format::OpenAi, 500, long_html.as_bytes()).await,
        ],
        [
            vec![error("provider_http_error", "model not found", 404)],
            vec![error("provider_http_error", "HTTP 502 Bad Gateway", 502)],
            vec![error(
                "provider_http_error",
                &format!("<html>{}…", "é".repeat(509)),
                500
            )],
        ]
    );
}
