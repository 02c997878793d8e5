//! One test per kind of deviation that issue 3 lists for OpenAI-compatible streams, each
//! replayed whole and in 1-, 2-, 3-, 5-, 7- and 64-byte reads (`openai_split`). Kinds that
//! `cases.rs` already shows are named there: all-at-index-0 parallel calls, missing id and
//! index, finish reasons, usage placement, errors after HTTP 200, HTTP error bodies; the
//! idle timeout and the overall deadline are in `http.rs`.

use agentd_events::{Chunk, FinishKind};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    Format, call, delta, failed, finish, is_generated, openai_split, split_chunks, sse,
    sse_without_done, text, usage,
};

fn calls(fragments: Vec<Value>) -> Value {
    delta(json!({ "tool_calls": fragments }), None)
}

#[tokio::test]
async fn kind1_arguments_split_inside_an_escape_and_between_multibyte_characters_join() {
    let body = sse(&[
        calls(vec![json!({"index": 0, "id": "c1", "type": "function",
            "function": {"name": "write_file", "arguments": "{\"text\":\"a\\"}})]),
        calls(vec![
            json!({"index": 0, "function": {"arguments": "u00e9 \\\"q"}}),
        ]),
        calls(vec![
            json!({"index": 0, "function": {"arguments": "\\\" 日"}}),
        ]),
        calls(vec![
            json!({"index": 0, "function": {"arguments": "本\"}"}}),
        ]),
        delta(json!({}), Some("tool_calls")),
    ]);
    let expected_args = r#"{"text":"a\u00e9 \"q\" 日本"}"#;
    assert_eq!(
        openai_split(&body).await,
        [
            call("c1", "write_file", expected_args),
            finish(FinishKind::ToolCalls, None)
        ]
    );
    let parsed: Value = serde_json::from_str(expected_args).unwrap();
    assert_eq!(parsed, json!({"text": "aé \"q\" 日本"}));
}

#[tokio::test]
async fn kind1_last_fragment_in_the_finish_chunk_and_a_first_fragment_without_arguments() {
    let mut last = calls(vec![
        json!({"index": 0, "function": {"arguments": "\"ls\"}"}}),
    ]);
    last["choices"][0]["finish_reason"] = json!("tool_calls");
    let body = sse(&[
        calls(vec![
            json!({"index": 0, "id": "c1", "function": {"name": "bash"}}),
        ]),
        calls(vec![
            json!({"index": 0, "function": {"arguments": "{\"command\":"}}),
        ]),
        last,
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            call("c1", "bash", r#"{"command":"ls"}"#),
            finish(FinishKind::ToolCalls, None)
        ]
    );
}

#[tokio::test]
async fn kind1_fragments_without_index_use_their_position_in_the_array() {
    let body = sse(&[
        calls(vec![
            json!({"id": "a", "function": {"name": "ls", "arguments": "{\"p\":"}}),
            json!({"id": "b", "function": {"name": "cat", "arguments": "{\"f\":"}}),
        ]),
        calls(vec![
            json!({"function": {"arguments": "1}"}}),
            json!({"function": {"arguments": "2}"}}),
        ]),
        delta(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            call("a", "ls", r#"{"p":1}"#),
            call("b", "cat", r#"{"f":2}"#),
            finish(FinishKind::ToolCalls, None)
        ]
    );
}

#[tokio::test]
async fn kind2_parallel_calls_interleaved_by_index_come_out_in_index_order() {
    let fragment = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut f = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            f["id"] = json!(id);
            f["function"]["name"] = json!(name);
        }
        calls(vec![f])
    };
    let body = sse(&[
        fragment(1, Some("b"), Some("cat"), "{\"f\""),
        fragment(0, Some("a"), Some("ls"), "{\"p\""),
        fragment(1, None, None, ":2}"),
        fragment(0, None, None, ":1}"),
        delta(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            call("a", "ls", r#"{"p":1}"#),
            call("b", "cat", r#"{"f":2}"#),
            finish(FinishKind::ToolCalls, None)
        ]
    );
}

#[tokio::test]
async fn kind2_whole_calls_without_index_or_id_at_position_zero_stay_apart() {
    let body = sse(&[
        calls(vec![
            json!({"function": {"name": "ls", "arguments": "{\"p\":1}"}}),
        ]),
        calls(vec![
            json!({"function": {"name": "cat", "arguments": "{\"f\":2}"}}),
        ]),
        delta(json!({}), Some("stop")),
    ]);
    let chunks = openai_split(&body).await;
    let names: Vec<(&str, &str)> = chunks
        .iter()
        .filter_map(|c| match c {
            Chunk::ToolCall {
                name, arguments, ..
            } => Some((name.as_str(), arguments.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(names, [("ls", r#"{"p":1}"#), ("cat", r#"{"f":2}"#)]);
}

#[tokio::test]
async fn kind3_empty_ids_are_generated_unique_across_responses() {
    let body = sse(&[
        calls(vec![
            json!({"index": 0, "id": "", "function": {"name": "ls", "arguments": "{}"}}),
        ]),
        delta(json!({}), Some("tool_calls")),
    ]);
    let first = openai_split(&body).await;
    let second = openai_split(&body).await;
    let id = |chunks: &[Chunk]| match &chunks[0] {
        Chunk::ToolCall { id, .. } => id.clone(),
        other => panic!("{other:?}"),
    };
    assert!(is_generated(&id(&first)), "{first:?}");
    assert_ne!(id(&first), id(&second));
}

#[tokio::test]
async fn kind4_blank_arguments_are_an_empty_object_and_invalid_json_stays_raw() {
    let body = sse(&[
        calls(vec![
            json!({"index": 0, "id": "a", "function": {"name": "ls", "arguments": ""}}),
            json!({"index": 1, "id": "b", "function": {"name": "pwd", "arguments": " \n "}}),
            json!({"index": 2, "id": "c", "function": {"name": "cat", "arguments": "{\"f\": oops"}}),
        ]),
        delta(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [
            call("a", "ls", "{}"),
            call("b", "pwd", "{}"),
            call("c", "cat", "{\"f\": oops"),
            finish(FinishKind::ToolCalls, None)
        ]
    );
}

#[tokio::test]
async fn kind5_length_finish_with_a_complete_call_is_max_tokens() {
    let body = sse(&[
        calls(vec![
            json!({"index": 0, "id": "a", "function": {"name": "ls", "arguments": "{}"}}),
        ]),
        delta(json!({}), Some("length")),
    ]);
    assert_eq!(
        openai_split(&body).await,
        [call("a", "ls", "{}"), finish(FinishKind::MaxTokens, None)]
    );
}

#[tokio::test]
async fn kind6_error_object_followed_by_done_and_an_error_field_end_with_the_error() {
    let error = r#"{"error":{"message":"upstream timed out","type":"server_error"}}"#;
    let mut with_done = sse_without_done(&[delta(json!({"content": "Part"}), None)]);
    with_done += &format!("data: {error}\n\ndata: [DONE]\n\n");
    let mut error_field = sse_without_done(&[delta(json!({"content": "Part"}), None)]);
    error_field += &format!("error: {error}\n\n");
    let expected = [text("Part"), failed("server_error", "upstream timed out")];
    assert_eq!(openai_split(with_done.as_bytes()).await, expected);
    assert_eq!(openai_split(error_field.as_bytes()).await, expected);
}

#[tokio::test]
async fn kind6_html_502_and_504_pages_and_json_bodies_carry_status_and_at_most_1_kib() {
    let page = format!("<html><body>{}</body></html>", "Bad gateway. ".repeat(200));
    let page = &page;
    let html = |status| async move {
        let chunks = split_chunks(Format::OpenAi, status, page.as_bytes()).await;
        let [Chunk::Finish(finish)] = chunks.as_slice() else {
            panic!("{chunks:?}")
        };
        let error = finish.error.clone().unwrap();
        assert!(error.message.starts_with("<html><body>Bad gateway."));
        assert!(
            error.message.len() <= 1024 + '…'.len_utf8(),
            "{}",
            error.message.len()
        );
        (finish.kind, error.code, error.status)
    };
    let bad_gateway = html(502).await;
    let timeout = html(504).await;
    assert_eq!(
        [bad_gateway, timeout],
        [
            (
                FinishKind::Error,
                "provider_http_error".to_owned(),
                Some(502)
            ),
            (
                FinishKind::Error,
                "provider_http_error".to_owned(),
                Some(504)
            ),
        ]
    );
    let long = json!({"error": {"message": "x".repeat(5000), "type": "invalid_request_error"}});
    let chunks = split_chunks(Format::OpenAi, 400, long.to_string().as_bytes()).await;
    let Chunk::Finish(finish) = &chunks[0] else {
        panic!("{chunks:?}")
    };
    let error = finish.error.clone().unwrap();
    assert_eq!(
        (error.code.as_str(), error.status, error.message.len()),
        ("invalid_request_error", Some(400), 1024 + '…'.len_utf8())
    );
}

#[tokio::test]
async fn kind7_no_usage_at_all_finishes_without_usage_and_openai_details_map() {
    let none = sse(&[delta(json!({"content": "hi"}), Some("stop"))]);
    assert_eq!(
        openai_split(&none).await,
        [text("hi"), finish(FinishKind::Completed, None)]
    );
    let mut last = delta(json!({}), Some("stop"));
    last["usage"] = json!({"prompt_tokens": 100, "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 64},
        "completion_tokens_details": {"reasoning_tokens": 12}});
    assert_eq!(
        openai_split(&sse(&[last])).await,
        [finish(FinishKind::Completed, Some(usage(100, 20, 64, 12)))]
    );
}

#[tokio::test]
async fn kind8_crlf_cr_mixed_endings_bom_no_space_comments_and_keep_alives_frame_alike() {
    let body = "\u{feff}: keep-alive\r\n\r\n\
        data:{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\r\n\r\n\
        : keep-alive\r\r\
        data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\r\r\
        : comment\n\n\
        data: {\"choices\":[{\"delta\":{\"content\":\"c\"},\"finish_reason\":\"stop\"}]}\n\r\n\
        data:[DONE]\r\n\r\n";
    assert_eq!(
        openai_split(body.as_bytes()).await,
        [
            text("a"),
            text("b"),
            text("c"),
            finish(FinishKind::Completed, None)
        ]
    );
}

#[tokio::test]
async fn reasoning_content_and_ollama_reasoning_become_reasoning_chunks_never_text() {
    let body = sse(&[
        delta(
            json!({"role": "assistant", "reasoning_content": "Think.", "content": null}),
            None,
        ),
        delta(json!({"reasoning": " More."}), None),
        delta(json!({"content": "Answer."}), Some("stop")),
    ]);
    let reasoning = |s: &str| Chunk::Reasoning {
        content: s.to_owned(),
    };
    assert_eq!(
        openai_split(&body).await,
        [
            reasoning("Think."),
            reasoning(" More."),
            text("Answer."),
            finish(FinishKind::Completed, None)
        ]
    );
}
