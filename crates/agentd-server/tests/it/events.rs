//! The event stream: replay, resume, live follow, persistence across restarts.

use std::time::Duration;

use agentd_testkit::Reply;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{collect, ids_and_types, spawn_app, spawn_app_in, spawn_app_with};

fn two_step_script() -> Vec<Reply> {
    vec![
        Reply::tool_call("call_1", "bash", json!({"command": "echo hi"})),
        Reply::text_chunks(&["It ", "said ", "hi."]),
    ]
}

#[tokio::test]
async fn replay_and_every_resume_point_return_exactly_the_later_events() {
    let app = spawn_app(two_step_script()).await;
    let session = app.create_session(json!({})).await;
    let live = app.run_turn(&session, "say hi").await;
    let all = app.replay(&session, "", None).await;
    assert_eq!(all, live);
    let n = all.len() as u64;
    for k in 0..=n {
        let by_header = app.replay(&session, "", Some(k)).await;
        assert_eq!(by_header, all[k as usize..].to_vec(), "Last-Event-ID {k}");
        let by_query = app.replay(&session, &format!("&after={k}"), None).await;
        assert_eq!(by_query, all[k as usize..].to_vec(), "after={k}");
    }
}

#[tokio::test]
async fn events_page_as_json() {
    let app = spawn_app(two_step_script()).await;
    let session = app.create_session(json!({})).await;
    let live = app.run_turn(&session, "say hi").await;
    let page = app
        .get_json(&format!("/sessions/{session}/events?after=2&limit=3"))
        .await;
    let expected: Vec<Value> = live[2..5].iter().map(|s| s.data.clone()).collect();
    assert_eq!(page["events"], json!(expected));
    assert_eq!(page["last_seq"], json!(5));

    // Past the end the page is empty and its cursor stays where it was asked, so a client
    // polling with `after = last_seq` neither re-reads the log nor skips what comes next.
    let end = live.len();
    let page = app
        .get_json(&format!("/sessions/{session}/events?after={end}"))
        .await;
    assert_eq!(page, json!({"events": [], "last_seq": end}));
}

#[tokio::test]
async fn a_live_follower_sees_what_a_replay_shows() {
    let app = spawn_app(vec![
        Reply::tool_call("call_1", "bash", json!({"command": "echo hi"})),
        Reply::text_chunks(&["a", "b", "c", "d"]).with_delay(Duration::from_millis(20)),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .get(app.url(&format!("/sessions/{session}/events")))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_eq!(response.headers()["cache-control"], "no-cache");
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    let follower = tokio::spawn(async move {
        let mut stream = response.bytes_stream().eventsource();
        let mut seen = Vec::new();
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            let done = event.event == "turn/end";
            seen.push((event.id, event.event));
            if done {
                break;
            }
        }
        seen
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    app.client
        .post(app.url(&format!("/sessions/{session}/turns")))
        .json(&json!({"content": "go"}))
        .send()
        .await
        .unwrap();
    let live = tokio::time::timeout(Duration::from_secs(20), follower)
        .await
        .unwrap()
        .unwrap();
    let replay = app.replay(&session, "", None).await;
    assert_eq!(live, ids_and_types(&replay));
}

#[tokio::test]
async fn the_stream_starts_with_retry_and_keeps_alive_when_quiet() {
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let app = spawn_app_with(dir, vec![], |state, _| {
        state.keep_alive = Duration::from_millis(300);
    })
    .await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .get(app.url(&format!("/sessions/{session}/events")))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut body = response.bytes_stream();
    let first = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&first[..], b"retry: 3000\n\n");
    let started = std::time::Instant::now();
    let second = tokio::time::timeout(Duration::from_secs(5), body.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(&second[..], b": keep-alive\n\n");
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn events_survive_a_restart() {
    let app = spawn_app(two_step_script()).await;
    let session = app.create_session(json!({})).await;
    let live = app.run_turn(&session, "say hi").await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, vec![]).await;
    assert_eq!(app.replay(&session, "", None).await, live);
    assert_eq!(app.replay(&session, "", Some(4)).await, live[4..].to_vec());
}

#[tokio::test]
async fn the_turn_stream_of_an_idempotent_repeat_replays_that_turn() {
    let app = spawn_app(vec![Reply::text("once")]).await;
    let session = app.create_session(json!({})).await;
    let post = || {
        app.client
            .post(app.url(&format!("/sessions/{session}/turns")))
            .header("accept", "text/event-stream")
            .header("idempotency-key", "k")
            .json(&json!({"content": "hello"}))
            .send()
    };
    let first = collect(post().await.unwrap()).await;
    let again = collect(post().await.unwrap()).await;
    assert_eq!(first, again);
    assert_eq!(first.last().unwrap().event, "turn/end");
}

#[tokio::test]
async fn a_follower_of_a_deleted_session_sees_its_stream_end() {
    let app = spawn_app(vec![
        Reply::tool_call("call_1", "bash", json!({"command": "sleep 30"})),
        Reply::text("never"),
    ])
    .await;
    let session = app.create_session(json!({})).await;
    let response = app
        .client
        .get(app.url(&format!("/sessions/{session}/events")))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let follower = tokio::spawn(collect(response));
    app.post_json(
        &format!("/sessions/{session}/turns"),
        &json!({"content": "go"}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let deleted = app
        .client
        .delete(app.url(&format!("/sessions/{session}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    // The stream carries the turn's end, then closes (`collect` fails the test after 30 s).
    let seen = tokio::time::timeout(Duration::from_secs(5), follower)
        .await
        .expect("the follower's stream stayed open after the session was deleted")
        .unwrap();
    assert_eq!(seen.last().map(|s| s.event.as_str()), Some("turn/end"));
    assert_eq!(
        seen.last().unwrap().data["data"]["kind"],
        json!("cancelled")
    );
}
