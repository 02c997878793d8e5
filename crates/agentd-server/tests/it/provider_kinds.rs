//! Every OpenAI-compatible stream quirk of issue 3, through the real server: a turn whose
//! first model reply is the quirky tool-call stream and whose second is plain text. The
//! request after the tool call must pass `validate_openai_request` (OpenAI's message rules:
//! every call answered once, in order, `content` a string, ids non-empty and equal), and the
//! loop's invariants hold: no tool runs from a `length` message, invalid JSON arguments give
//! an error result, generated ids match between the tool result and the next request.

use std::time::Duration;

use agentd_testkit::{Reply, validate_openai_request};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{Seen, TestApp, spawn_app};

/// An SSE reply of these raw frames, sent as they are.
fn raw(frames: &[&str]) -> Reply {
    Reply::Sse {
        events: frames.iter().map(|f| (*f).to_owned()).collect(),
        delay: Duration::ZERO,
    }
}

/// A `data:` frame of one chunk with `delta` and `finish_reason`.
fn chunk(delta: Value, finish: Option<&str>) -> String {
    let chunk = json!({"object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn calls(fragments: Value) -> String {
    chunk(json!({ "tool_calls": fragments }), None)
}

fn sse(frames: Vec<String>) -> Reply {
    let mut events = frames;
    events.push("data: [DONE]\n\n".to_owned());
    Reply::Sse {
        events,
        delay: Duration::ZERO,
    }
}

/// Runs one turn: `first` then a text answer. Returns the app and the turn's events.
async fn turn(first: Reply) -> (TestApp, Vec<Seen>) {
    let app = spawn_app(vec![first, Reply::text("Done.")]).await;
    let session = app.create_session(json!({})).await;
    let seen = app.run_turn(&session, "Go.").await;
    (app, seen)
}

fn of_type<'a>(seen: &'a [Seen], kind: &str) -> Vec<&'a Value> {
    seen.iter()
        .filter(|s| s.event == kind)
        .map(|s| &s.data["data"])
        .collect()
}

/// The common checks of a turn whose tool calls ran: it completed, the second request is
/// valid, and each tool result's call id is the id the second request carries, in order.
fn check_tool_turn(app: &TestApp, seen: &[Seen], calls: usize) -> Vec<Value> {
    let end = of_type(seen, "turn/end");
    assert_eq!(end[0]["kind"], json!("completed"), "{end:?}");
    let requests = app.model.requests();
    assert_eq!(requests.len(), 2);
    if let Err(problem) = validate_openai_request(&requests[1]) {
        panic!("{problem}\n{:#}", requests[1]["messages"]);
    }
    let results = of_type(seen, "tool/result");
    assert_eq!(results.len(), calls);
    let messages = requests[1]["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|m| m["role"] == "assistant").unwrap();
    let sent: Vec<&Value> = assistant["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    let ran: Vec<&Value> = results.iter().map(|r| &r["call_id"]).collect();
    assert_eq!(sent, ran);
    results.into_iter().cloned().collect()
}

#[tokio::test]
async fn kind1_fragments_split_anywhere_without_arguments_key_or_index() {
    let mut last = calls(json!([{"index": 0, "function": {"arguments": "o hi\"}"}}]));
    last = last.replace("\"finish_reason\":null", "\"finish_reason\":\"tool_calls\"");
    let (app, seen) = turn(sse(vec![
        calls(json!([{"id": "c0", "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}}])),
        calls(json!([{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash"}}])),
        calls(json!([{"index": 0, "function": {"arguments": "{\"command\":\"ech"}}])),
        last,
    ]))
    .await;
    let results = check_tool_turn(&app, &seen, 2);
    assert_eq!(results[1]["call_id"], json!("c1"));
    assert_eq!(results[1]["text"].as_str().map(str::trim), Some("hi"));
}

#[tokio::test]
async fn kind2_parallel_calls_by_index_and_all_at_index_zero_with_distinct_ids() {
    for same_index in [false, true] {
        let index = |i: u64| if same_index { 0 } else { i };
        let (app, seen) = turn(sse(vec![
            calls(json!([{"index": index(0), "id": "a", "function": {"name": "bash", "arguments": "{\"command\":"}}])),
            calls(json!([{"index": index(0), "id": "a", "function": {"arguments": "\"echo a\"}"}}])),
            calls(json!([{"index": index(1), "id": "b", "function": {"name": "bash", "arguments": "{\"command\":\"echo b\"}"}}])),
            chunk(json!({}), Some("tool_calls")),
        ]))
        .await;
        let results = check_tool_turn(&app, &seen, 2);
        let texts: Vec<&str> = results
            .iter()
            .map(|r| r["text"].as_str().unwrap().trim())
            .collect();
        assert_eq!(texts, ["a", "b"], "same index: {same_index}");
    }
}

#[tokio::test]
async fn kind3_missing_and_empty_ids_are_generated_and_reused_everywhere() {
    let (app, seen) = turn(sse(vec![
        calls(json!([
            {"index": 0, "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}},
            {"index": 1, "id": "", "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}},
        ])),
        chunk(json!({}), Some("tool_calls")),
    ]))
    .await;
    let results = check_tool_turn(&app, &seen, 2);
    let chunk_ids: Vec<&Value> = of_type(&seen, "assistant/chunk")
        .into_iter()
        .filter(|c| c["type"] == "tool-call")
        .map(|c| &c["id"])
        .collect();
    let result_ids: Vec<&Value> = results.iter().map(|r| &r["call_id"]).collect();
    assert_eq!(chunk_ids, result_ids);
    assert_ne!(result_ids[0], result_ids[1]);
    let request = &app.model.requests()[1];
    let tool_ids: Vec<&Value> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| &m["tool_call_id"])
        .collect();
    assert_eq!(tool_ids, result_ids);
}

#[tokio::test]
async fn kind4_blank_arguments_are_empty_objects_and_invalid_json_is_an_error_result() {
    let (app, seen) = turn(sse(vec![
        calls(json!([
            {"index": 0, "id": "blank", "function": {"name": "bash", "arguments": "  "}},
            {"index": 1, "id": "bad", "function": {"name": "bash", "arguments": "{\"command\": ec"}},
        ])),
        chunk(json!({}), Some("tool_calls")),
    ]))
    .await;
    let results = check_tool_turn(&app, &seen, 2);
    assert_eq!(results[1]["is_error"], json!(true));
    let text = results[1]["text"].as_str().unwrap();
    assert!(text.contains("arguments are not valid JSON"), "{text}");
    let request = &app.model.requests()[1];
    let sent: Vec<&Value> = request["messages"][2]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["function"]["arguments"])
        .collect();
    assert_eq!(sent, [&json!("{}"), &json!("{}")]);
}

#[tokio::test]
async fn kind5_stop_runs_complete_calls_and_length_runs_none() {
    let (app, seen) = turn(sse(vec![
        calls(json!([{"index": 0, "id": "s", "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}}])),
        chunk(json!({}), Some("stop")),
    ]))
    .await;
    check_tool_turn(&app, &seen, 1);

    for (reason, end) in [
        ("length", "max-tokens"),
        ("insufficient_system_resource", "error"),
    ] {
        let (app, seen) = turn(sse(vec![
            calls(json!([{"index": 0, "id": "l", "function": {"name": "bash", "arguments": "{\"command\":\"touch ran\"}"}}])),
            chunk(json!({}), Some(reason)),
        ]))
        .await;
        assert_eq!(of_type(&seen, "tool/start").len(), 0, "{reason}");
        assert_eq!(
            of_type(&seen, "turn/end")[0]["kind"],
            json!(end),
            "{reason}"
        );
        assert_eq!(app.model.requests().len(), 1, "{reason}");
    }
}

#[tokio::test]
async fn kind6_errors_in_stream_and_http_errors_end_the_turn_with_status_and_message() {
    let error = r#"{"error":{"message":"upstream failed","type":"server_error"}}"#;
    let in_stream = [
        raw(&[
            "data: {\"choices\":[{\"delta\":{\"content\":\"Par\"}}]}\n\n",
            &format!("data: {error}\n\n"),
            "data: [DONE]\n\n",
        ]),
        raw(&[
            "data: {\"choices\":[{\"delta\":{\"content\":\"Par\"}}]}\n\n",
            &format!("error: {error}\n\n"),
        ]),
    ];
    for reply in in_stream {
        let (_app, seen) = turn(reply).await;
        let end = of_type(&seen, "turn/end")[0].clone();
        assert_eq!(
            (&end["kind"], &end["error"]["message"]),
            (&json!("error"), &json!("upstream failed"))
        );
        let text: Vec<&Value> = of_type(&seen, "assistant/chunk")
            .into_iter()
            .filter(|c| c["type"] == "text")
            .collect();
        assert_eq!(text[0]["content"], json!("Par"));
    }
    let html = format!(
        "<html><body>{}</body></html>",
        "Gateway Timeout ".repeat(200)
    );
    let app = spawn_app(vec![
        Reply::Http {
            status: 504,
            body: html.clone(),
        },
        Reply::Http {
            status: 504,
            body: html.clone(),
        },
        Reply::Http {
            status: 504,
            body: html,
        },
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let seen = app.run_turn(&session, "Go.").await;
    assert_eq!(of_type(&seen, "provider/retry").len(), 2);
    let end = of_type(&seen, "turn/end")[0].clone();
    assert_eq!(
        (&end["kind"], &end["error"]["status"]),
        (&json!("error"), &json!(504))
    );
    assert!(end["error"]["message"].as_str().unwrap().len() <= 1024 + 3);
}

#[tokio::test]
async fn kind7_usage_in_every_place_is_summed_into_the_turn() {
    let mut with_usage = chunk(json!({}), Some("tool_calls"));
    with_usage = with_usage.replace("\"object\"", "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1,\"prompt_cache_hit_tokens\":2},\"object\"");
    let (app, seen) = turn(sse(vec![
        calls(json!([{"index": 0, "id": "u", "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}}])),
        with_usage,
        "data: {\"choices\":[],\"usage\":{}}\n\n".to_owned(),
    ]))
    .await;
    check_tool_turn(&app, &seen, 1);
    let end = of_type(&seen, "turn/end")[0].clone();
    // 5 + 10 in, 1 + 5 out (Reply::text reports 10 in / 5 out), 2 cache reads.
    assert_eq!(
        end["usage"],
        json!({"input_tokens": 15, "output_tokens": 6, "cache_read_tokens": 2, "reasoning_tokens": 0})
    );
}

#[tokio::test]
async fn kind8_crlf_cr_bom_no_space_comments_and_keep_alives_in_a_tool_call_stream() {
    let (app, seen) = turn(raw(&[
        "\u{feff}: keep-alive\r\n\r\n",
        "data:{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"f\",\"function\":{\"name\":\"bash\",\"arguments\":\"{\\\"command\\\":\"}}]}}]}\r\r",
        ": keep-alive\r",
        "\r",
        "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"true\\\"}\"}}]}}]}\r\n\r\n",
        "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\r\n\r\n",
    ]))
    .await;
    check_tool_turn(&app, &seen, 1);
}

#[tokio::test]
async fn deepseek_reasoning_is_replayed_on_the_tool_calling_message() {
    let (app, seen) = turn(sse(vec![
        chunk(json!({"reasoning_content": "Look first."}), None),
        calls(json!([{"index": 0, "id": "r", "function": {"name": "bash", "arguments": "{\"command\":\"true\"}"}}])),
        chunk(json!({}), Some("tool_calls")),
    ]))
    .await;
    check_tool_turn(&app, &seen, 1);
    let request = &app.model.requests()[1];
    assert_eq!(
        request["messages"][2]["reasoning_content"],
        json!("Look first.")
    );
}
