//! Streams under stress: many chunks with tools interleaved, slow and vanishing clients,
//! concurrent submits, keep-alive during a silent tool.

use std::time::Duration;

use agentd_testkit::Reply;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{ids_and_types, spawn_app, spawn_app_with};

fn pieces(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("c{i} ")).collect()
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A 500-chunk turn with tool results between its chunks.
fn long_script() -> Vec<Reply> {
    let first = pieces(200);
    let second = pieces(200);
    let third = pieces(100);
    vec![
        Reply::text_and_tool_calls(
            &refs(&first),
            &[("a", "bash", json!({"command": "echo one"}))],
        ),
        Reply::text_and_tool_calls(
            &refs(&second),
            &[("b", "bash", json!({"command": "echo two"}))],
        ),
        Reply::text_chunks(&refs(&third)),
    ]
}

#[tokio::test]
async fn a_live_client_and_a_replay_see_the_same_500_chunk_turn() {
    let app = spawn_app(long_script()).await;
    let session = app.create_session(json!({})).await;
    let live = app.run_turn(&session, "long").await;
    let chunks = live.iter().filter(|s| s.event == "assistant/chunk").count();
    assert!(chunks >= 500, "{chunks}");
    assert_eq!(live.iter().filter(|s| s.event == "tool/result").count(), 2);
    let replay = app.replay(&session, "", None).await;
    assert_eq!(ids_and_types(&live), ids_and_types(&replay));
    assert_eq!(live, replay);
}

#[tokio::test]
async fn a_slow_client_gets_every_event_in_order() {
    let app = spawn_app(long_script()).await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .get(app.url(&format!("/sessions/{session}/events")))
        .send()
        .await
        .unwrap();
    app.client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .json(&json!({"content": "long"}))
        .send()
        .await
        .unwrap();
    // Read nothing until the turn is over: the server must buffer boundedly and catch up.
    app.wait_idle(&session).await;
    let mut stream = response.bytes_stream().eventsource();
    let mut ids = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
    {
        let event = event.unwrap();
        ids.push(event.id.parse::<u64>().unwrap());
        if event.event == "turn/end" {
            break;
        }
        // Slow: a pause now and then while reading.
        if ids.len() % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected);
    let last: Value = app.get_json(&format!("/sessions/{session}")).await;
    assert_eq!(last["last_seq"], json!(ids.len()));
}

#[tokio::test]
async fn a_client_that_disconnects_mid_turn_does_not_stop_it_and_can_resume() {
    let app = spawn_app(vec![
        Reply::text_chunks(&["a ", "b ", "c ", "d ", "e ", "f "])
            .with_delay(Duration::from_millis(50)),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .header("accept", "text/event-stream")
        .json(&json!({"content": "go"}))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream().eventsource();
    let mut last_id = 0u64;
    for _ in 0..2 {
        let event = stream.next().await.unwrap().unwrap();
        last_id = event.id.parse().unwrap();
    }
    drop(stream);
    let done = app.wait_idle(&session).await;
    assert_eq!(done["status"], json!("idle"));
    let rest = app.replay(&session, "", Some(last_id)).await;
    assert_eq!(rest.first().unwrap().id, (last_id + 1).to_string());
    assert_eq!(
        rest.last().unwrap().data["data"]["kind"],
        json!("completed")
    );
    // Resuming again with the same id loses and duplicates nothing.
    assert_eq!(app.replay(&session, "", Some(last_id)).await, rest);
}

#[tokio::test]
async fn fifty_concurrent_posts_start_exactly_one_turn() {
    let app = spawn_app(vec![Reply::text("only one")]).await;
    let session = app.create_session(json!({})).await;
    let url = app.url(&format!("/sessions/{session}/turns"));
    let posts = (0..50).map(|i| {
        let request = app
            .client
            .post(&url)
            .json(&json!({"content": format!("try {i}")}));
        async move { request.send().await.unwrap() }
    });
    let responses = futures_util::future::join_all(posts).await;
    let mut accepted = Vec::new();
    let mut conflicts = Vec::new();
    for response in responses {
        let status = response.status().as_u16();
        let body: Value = response.json().await.unwrap();
        match status {
            202 => accepted.push(body["id"].clone()),
            409 => conflicts.push(body["error"]["active_turn_id"].clone()),
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    assert_eq!(accepted.len(), 1);
    assert_eq!(conflicts.len(), 49);
    assert!(conflicts.iter().all(|id| *id == accepted[0]));
    app.wait_idle(&session).await;
    let seen = app.replay(&session, "", None).await;
    assert_eq!(seen.iter().filter(|s| s.event == "user/message").count(), 1);
}

#[tokio::test]
async fn keep_alive_comments_flow_during_a_silent_tool_call() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let app = spawn_app_with(
        dir,
        vec![
            Reply::tool_call("s", "bash", json!({"command": "sleep 2"})),
            Reply::text("done"),
        ],
        |state, _| state.keep_alive = Duration::from_millis(400),
    )
    .await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .header("accept", "text/event-stream")
        .json(&json!({"content": "wait"}))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    let start = body.find("event: tool/start").unwrap();
    let result = body.find("event: tool/result").unwrap();
    let comments = body[start..result].matches(": keep-alive\n\n").count();
    assert!(
        comments >= 3,
        "{comments} keep-alives during a 2 s tool call:\n{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_sessions_streaming_300_chunks_at_once_lose_and_repeat_nothing() {
    let chunks = pieces(300);
    let script: Vec<Reply> = (0..20)
        .map(|_| Reply::text_chunks(&refs(&chunks)))
        .collect();
    let app = spawn_app(script).await;
    let mut sessions = Vec::new();
    for _ in 0..20 {
        sessions.push(app.create_session(json!({})).await);
    }
    let started = std::time::Instant::now();
    let turns = sessions
        .iter()
        .map(|session| app.run_turn(session, "stream"));
    let streams = futures_util::future::join_all(turns).await;
    println!("20 x 300 chunks over SSE in {:?}", started.elapsed());
    for (session, seen) in sessions.iter().zip(&streams) {
        let texts = seen
            .iter()
            .filter(|s| s.event == "assistant/chunk" && s.data["data"]["type"] == "text")
            .count();
        assert_eq!(texts, 300, "delivered once each");
        let ids: Vec<u64> = seen.iter().map(|s| s.id.parse().unwrap()).collect();
        assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
        assert_eq!(
            seen.last().unwrap().data["data"]["kind"],
            json!("completed")
        );
        let stored = app.replay(session, "", None).await;
        assert_eq!(&stored, seen, "stored once each, as delivered");
    }
}

#[tokio::test]
async fn keep_alive_comments_flow_during_a_20_second_silent_tool_call() {
    // The one real 20 s wait: the default 15 s keep-alive must fire during the tool.
    let app = spawn_app(vec![
        Reply::tool_call("s", "bash", json!({"command": "sleep 20"})),
        Reply::text("done"),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .header("accept", "text/event-stream")
        .json(&json!({"content": "wait"}))
        .send()
        .await
        .unwrap();
    let body = tokio::time::timeout(Duration::from_secs(60), response.text())
        .await
        .unwrap()
        .unwrap();
    let start = body.find("event: tool/start").unwrap();
    let result = body.find("event: tool/result").unwrap();
    assert_eq!(
        body[start..result].matches(": keep-alive\n\n").count(),
        1,
        "{body}"
    );
}

#[tokio::test]
async fn a_resume_that_drops_before_any_new_event_can_resume_again_with_the_same_id() {
    let app = spawn_app(vec![
        Reply::text_chunks(&["a ", "b ", "c ", "d ", "e ", "f ", "g ", "h "])
            .with_delay(Duration::from_millis(80)),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    app.client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .json(&json!({"content": "go"}))
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let now: Value = app.get_json(&format!("/sessions/{session}")).await;
    let k = now["last_seq"].as_u64().unwrap();
    assert!(k >= 1);
    let resume = || {
        app.client
            .get(app.url(&format!("/sessions/{session}/events")))
            .header("accept", "text/event-stream")
            .header("last-event-id", k.to_string())
            .send()
    };
    // Connect and drop at once, before the next event could arrive.
    drop(resume().await.unwrap());
    let response = resume().await.unwrap();
    let mut stream = response.bytes_stream().eventsource();
    let mut ids = Vec::new();
    while let Some(event) = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
    {
        let event = event.unwrap();
        ids.push(event.id.parse::<u64>().unwrap());
        if event.event == "turn/end" {
            break;
        }
    }
    let last: Value = app.get_json(&format!("/sessions/{session}")).await;
    let n = last["last_seq"].as_u64().unwrap();
    assert_eq!(ids, (k + 1..=n).collect::<Vec<_>>());
}
