//! Turns: the loop end to end over HTTP, its errors and its limits.

use std::time::Duration;

use agentd_testkit::Reply;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{ids_and_types, spawn_app, types};

fn without_duration(mut data: Value) -> Value {
    data.as_object_mut().unwrap().remove("duration_ms");
    data
}

#[tokio::test]
async fn a_turn_runs_bash_in_the_workspace_and_streams_every_step() {
    let app = spawn_app(vec![
        Reply::tool_call(
            "call_1",
            "bash",
            json!({"command": "touch one.txt two.txt && ls | wc -l"}),
        ),
        Reply::text_chunks(&["There are ", "2 files."]),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let seen = app.run_turn(&session, "How many files?").await;

    assert_eq!(
        types(&seen),
        vec![
            "user/message",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "tool/start",
            "tool/result",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "turn/end",
        ]
    );
    let ids: Vec<String> = seen.iter().map(|s| s.id.clone()).collect();
    let expected: Vec<String> = (1..=11).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
    for s in &seen {
        assert_eq!(s.data["session_id"], json!(session));
        assert_eq!(s.data["type"], json!(s.event));
        assert_eq!(s.data["seq"].to_string(), s.id);
    }
    let arguments = r#"{"command":"touch one.txt two.txt && ls | wc -l"}"#;
    assert_eq!(seen[0].data["data"], json!({"text": "How many files?"}));
    assert_eq!(
        seen[1].data["data"],
        json!({"type": "tool-call", "id": "call_1", "name": "bash", "arguments": arguments})
    );
    assert_eq!(
        seen[3].data["data"],
        json!({"message": {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": arguments}}
        ]}})
    );
    assert_eq!(
        seen[4].data["data"],
        json!({"call_id": "call_1", "name": "bash", "arguments": arguments})
    );
    assert_eq!(
        without_duration(seen[5].data["data"].clone()),
        json!({"call_id": "call_1", "name": "bash", "text": "2\n", "is_error": false, "exit_code": 0})
    );
    assert_eq!(
        seen[6].data["data"],
        json!({"type": "text", "content": "There are "})
    );
    assert_eq!(
        seen[9].data["data"],
        json!({"message": {"role": "assistant", "content": "There are 2 files."}})
    );
    assert_eq!(
        seen[10].data["data"],
        json!({"kind": "completed", "usage": {
            "input_tokens": 30, "output_tokens": 12, "cache_read_tokens": 0, "reasoning_tokens": 0
        }})
    );

    // The second model request carried the tool result right after its call.
    let requests = app.model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["model"], json!("scripted-model"));
    assert_eq!(requests[0]["tools"][0]["function"]["name"], json!("bash"));
    assert_eq!(
        requests[1]["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "How many files?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": arguments}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "2\n"},
        ])
    );

    // The files are in the session's workspace.
    let workspace = app.dir.path().join("workspaces").join(&session);
    assert!(workspace.join("one.txt").exists());

    let session_json: Value = app.get_json(&format!("/sessions/{session}")).await;
    assert_eq!(session_json["status"], json!("idle"));
    assert_eq!(session_json["last_seq"], json!(11));
    assert_eq!(session_json["usage"]["input_tokens"], json!(30));
}

#[tokio::test]
async fn posting_without_event_stream_returns_202_with_the_turn() {
    let app = spawn_app(vec![Reply::text("hi")]).await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .json(&json!({"content": "hello"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let turn: Value = response.json().await.unwrap();
    let turn_id = turn["id"].as_str().unwrap();
    assert_eq!(location, format!("/sessions/{session}/turns/{turn_id}"));
    assert_eq!(turn["first_seq"], json!(1));
    app.wait_idle(&session).await;
    let turn: Value = app.get_json(&location).await;
    assert_eq!(turn["status"], json!("ended"));
    assert_eq!(turn["end_kind"], json!("completed"));
    assert_eq!(
        (turn["first_seq"].clone(), turn["last_seq"].clone()),
        (json!(1), json!(5))
    );
    let turns: Value = app.get_json(&format!("/sessions/{session}/turns")).await;
    assert_eq!(turns["turns"][0]["id"], json!(turn_id));
}

#[tokio::test]
async fn a_second_turn_while_one_runs_is_409_with_the_active_turn() {
    let app = spawn_app(vec![
        Reply::text_chunks(&["slow", " answer"]).with_delay(Duration::from_millis(300)),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let url = app.url(&format!("/sessions/{session}/turns"));
    let first: Value = app
        .client
        .post(&url)
        .json(&json!({"content": "one"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let response = app
        .client
        .post(&url)
        .json(&json!({"content": "two"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], json!("turn_in_progress"));
    assert_eq!(body["error"]["active_turn_id"], first["id"]);
    let session_json = app.wait_idle(&session).await;
    assert_eq!(session_json["active_turn_id"], Value::Null);
}

#[tokio::test]
async fn max_tokens_finish_never_runs_tools() {
    let app = spawn_app(vec![Reply::max_tokens_tool_call(
        "call_cut",
        "bash",
        r#"{"command":"touch ran.txt && echo do"#,
    )])
    .await;
    let session = app.create_session(json!({})).await;
    let seen = app.run_turn(&session, "write a file").await;
    assert_eq!(
        types(&seen),
        vec![
            "user/message",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "turn/end"
        ]
    );
    assert_eq!(seen[2].data["data"]["kind"], json!("max-tokens"));
    assert_eq!(seen[4].data["data"]["kind"], json!("max-tokens"));
    assert!(
        !app.dir
            .path()
            .join("workspaces")
            .join(&session)
            .join("ran.txt")
            .exists()
    );
    // The next request is valid: the cut call is answered and its arguments are JSON.
    let messages: Value = app.get_json(&format!("/sessions/{session}/messages")).await;
    assert_eq!(
        messages["messages"],
        json!([
            {"role": "system", "content": "You are a test."},
            {"role": "user", "content": "write a file"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_cut", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_cut", "content": agentd_events::NOT_EXECUTED},
        ])
    );
}

#[tokio::test]
async fn a_failed_model_request_ends_the_turn_with_status_and_message() {
    let limited = || Reply::http_error(429, "rate_limit_error", "Rate limit reached for requests");
    let app = spawn_app(vec![limited(), limited(), limited()]).await;
    let session = app.create_session(json!({})).await;
    let seen = app.run_turn(&session, "hi").await;
    // Three attempts in all: two retries, each announced, then the error.
    let retries: Vec<_> = seen
        .iter()
        .filter(|s| s.event == "provider/retry")
        .collect();
    assert_eq!(retries.len(), 2);
    assert_eq!(retries[0].data["data"]["attempt"], json!(2));
    assert_eq!(retries[0].data["data"]["status"], json!(429));
    assert_eq!(app.model.requests().len(), 3);
    let end = &seen.last().unwrap().data["data"];
    assert_eq!(end["kind"], json!("error"));
    assert_eq!(end["error"]["status"], json!(429));
    assert_eq!(
        end["error"]["message"],
        json!("Rate limit reached for requests")
    );
    let turn_id = seen[0].data["turn_id"].as_str().unwrap();
    let turn: Value = app
        .get_json(&format!("/sessions/{session}/turns/{turn_id}"))
        .await;
    assert_eq!(turn["end_kind"], json!("error"));
    assert_eq!(turn["error"]["status"], json!(429));
}

#[tokio::test]
async fn bad_tool_calls_become_error_results_the_model_reads() {
    let app = spawn_app(vec![
        Reply::tool_calls(&[
            ("c1", "no_such_tool", json!({})),
            ("c2", "bash", json!({"cmd": "ls"})),
        ]),
        Reply::text("sorry"),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let seen = app.run_turn(&session, "go").await;
    let results: Vec<Value> = seen
        .iter()
        .filter(|s| s.event == "tool/result")
        .map(|s| s.data["data"].clone())
        .collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["is_error"], json!(true));
    assert!(
        results[0]["text"]
            .as_str()
            .unwrap()
            .contains("unknown tool \"no_such_tool\"")
    );
    assert_eq!(results[1]["is_error"], json!(true));
    assert!(results[1]["text"].as_str().unwrap().contains("command"));
    assert_eq!(
        seen.last().unwrap().data["data"]["kind"],
        json!("completed")
    );
}

#[tokio::test]
async fn max_steps_ends_a_turn_that_keeps_calling_tools() {
    let call = || Reply::tool_call("c", "bash", json!({"command": "true"}));
    let app = spawn_app(vec![call(), call(), call()]).await;
    let session = app.create_session(json!({"max_steps": 2})).await;
    let seen = app.run_turn(&session, "loop").await;
    let starts = seen.iter().filter(|s| s.event == "tool/start").count();
    assert_eq!(starts, 2);
    assert_eq!(
        seen.last().unwrap().data["data"]["kind"],
        json!("max-steps")
    );
    assert_eq!(app.model.requests().len(), 2);
}

#[tokio::test]
async fn an_idempotency_key_repeated_returns_the_same_turn() {
    let app = spawn_app(vec![Reply::text("once"), Reply::text("twice")]).await;
    let session = app.create_session(json!({})).await;
    let post = || {
        app.client
            .post(app.url(&format!("/sessions/{session}/turns")))
            .header("idempotency-key", "abc-123")
            .json(&json!({"content": "hello"}))
            .send()
    };
    let first = post().await.unwrap();
    assert_eq!(first.status(), 202);
    let first: Value = first.json().await.unwrap();
    app.wait_idle(&session).await;
    let again = post().await.unwrap();
    assert_eq!(again.status(), 200);
    let again: Value = again.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(app.model.requests().len(), 1);
}

#[tokio::test]
async fn cancel_ends_a_streaming_turn_as_cancelled() {
    let pieces: Vec<String> = (0..50).map(|i| format!("w{i} ")).collect();
    let pieces: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let app = spawn_app(vec![
        Reply::text_chunks(&pieces).with_delay(Duration::from_millis(50)),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let turn: Value = app
        .post_json(
            &format!("/sessions/{session}/turns"),
            &json!({"content": "talk"}),
        )
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let turn_id = turn["id"].as_str().unwrap();
    let cancel = app
        .client
        .post(app.url(&format!("/sessions/{session}/turns/{turn_id}/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 202);
    app.wait_idle(&session).await;
    let seen = app.replay(&session, "", None).await;
    let end = seen.last().unwrap();
    assert_eq!(end.event, "turn/end");
    assert_eq!(end.data["data"]["kind"], json!("cancelled"));
    // What streamed before the cancel is kept as the assistant message.
    assert_eq!(seen[seen.len() - 2].event, "assistant/message");
    let ids: Vec<u64> = ids_and_types(&seen)
        .iter()
        .map(|(id, _)| id.parse().unwrap())
        .collect();
    assert_eq!(ids, (1..=seen.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn cancel_kills_a_running_tool() {
    let app = spawn_app(vec![
        Reply::tool_call("c1", "bash", json!({"command": "sleep 30; touch late.txt"})),
        Reply::text("unused"),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let turn: Value = app
        .post_json(
            &format!("/sessions/{session}/turns"),
            &json!({"content": "sleep"}),
        )
        .await;
    let turn_id = turn["id"].as_str().unwrap().to_owned();
    // Wait for the tool to start.
    for _ in 0..200 {
        let seen = app.replay(&session, "", None).await;
        if seen.iter().any(|s| s.event == "tool/start") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let started = std::time::Instant::now();
    app.client
        .post(app.url(&format!("/sessions/{session}/turns/{turn_id}/cancel")))
        .send()
        .await
        .unwrap();
    app.wait_idle(&session).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "cancel took {:?}",
        started.elapsed()
    );
    let seen = app.replay(&session, "", None).await;
    let result = seen.iter().find(|s| s.event == "tool/result").unwrap();
    assert_eq!(result.data["data"]["is_error"], json!(true));
    assert_eq!(
        seen.last().unwrap().data["data"]["kind"],
        json!("cancelled")
    );
    assert_eq!(app.model.requests().len(), 1);
}
