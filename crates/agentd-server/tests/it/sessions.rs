//! Sessions, and how the API answers bad requests.

use agentd_testkit::Reply;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::spawn_app;

#[tokio::test]
async fn a_session_is_created_read_listed_and_deleted() {
    let app = spawn_app(vec![Reply::text("hi")]).await;
    let response = app
        .client
        .post(app.url("/sessions"))
        .json(
            &json!({"title": "t", "model": "m", "system": "s", "tools": ["bash"], "max_steps": 7}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let location = response.headers()["location"].to_str().unwrap().to_owned();
    let created: Value = response.json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(location, format!("/sessions/{id}"));
    for (field, value) in [
        ("title", json!("t")),
        ("model", json!("m")),
        ("system", json!("s")),
        ("tools", json!(["bash"])),
        ("max_steps", json!(7)),
        ("status", json!("idle")),
        ("active_turn_id", Value::Null),
        ("last_seq", json!(0)),
    ] {
        assert_eq!(created[field], value, "{field}");
    }
    let read: Value = app.get_json(&location).await;
    assert_eq!(read, created);

    // An empty POST creates a session with defaults.
    let bare = app.client.post(app.url("/sessions")).send().await.unwrap();
    assert_eq!(bare.status(), 201);
    let bare: Value = bare.json().await.unwrap();

    let list: Value = app.get_json("/sessions?limit=1").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(list["sessions"][0]["id"], bare["id"]);
    let next = list["next_before"].as_str().unwrap();
    let page: Value = app
        .get_json(&format!("/sessions?limit=1&before={next}"))
        .await;
    assert_eq!(page["sessions"][0]["id"], json!(id));

    let deleted = app.client.delete(app.url(&location)).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    let gone = app.client.get(app.url(&location)).send().await.unwrap();
    assert_eq!(gone.status(), 404);
}

async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (status, body["error"].clone())
}

#[tokio::test]
async fn bad_requests_get_json_errors() {
    let app = spawn_app(vec![]).await;
    let session = app.create_session(json!({})).await;
    let turns = app.url(&format!("/sessions/{session}/turns"));

    let (status, error) = error_of(
        app.client
            .post(&turns)
            .header("content-type", "application/json")
            .body("{not json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (400, json!("invalid_json"))
    );
    assert!(error["message"].as_str().unwrap().len() > 5);

    let (status, error) = error_of(
        app.client
            .post(&turns)
            .json(&json!({"text": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (400, json!("invalid_json"))
    );

    let (status, error) = error_of(
        app.client
            .post(&turns)
            .json(&json!({"content": "  "}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (400, json!("invalid_request"))
    );

    let (status, error) = error_of(
        app.client
            .post(&turns)
            .body("{\"content\":\"x\"}")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (415, json!("unsupported_media_type"))
    );

    let (status, error) = error_of(
        app.client
            .get(app.url("/sessions/not-a-uuid"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, error["code"].clone()), (400, json!("invalid_id")));

    let (status, error) = error_of(
        app.client
            .get(app.url("/sessions/../../etc/passwd"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert!(status == 400 || status == 404, "{status}");
    assert!(error["code"].is_string());

    let unknown = uuid::Uuid::new_v4();
    for path in [
        format!("/sessions/{unknown}"),
        format!("/sessions/{unknown}/events"),
        format!("/sessions/{unknown}/turns"),
        format!("/sessions/{unknown}/messages"),
        format!("/sessions/{session}/turns/{unknown}"),
    ] {
        let (status, error) = error_of(app.client.get(app.url(&path)).send().await.unwrap()).await;
        assert_eq!(
            (status, error["code"].clone()),
            (404, json!("not_found")),
            "{path}"
        );
    }
    let (status, _) = error_of(
        app.client
            .post(app.url(&format!("/sessions/{unknown}/turns")))
            .json(&json!({"content": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 404);

    let (status, error) = error_of(
        app.client
            .post(app.url("/sessions"))
            .json(&json!({"tools": ["rm_rf"]}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (400, json!("invalid_request"))
    );

    let (status, error) = error_of(app.client.get(app.url("/nope")).send().await.unwrap()).await;
    assert_eq!((status, error["code"].clone()), (404, json!("not_found")));

    let (status, error) =
        error_of(app.client.put(app.url("/sessions")).send().await.unwrap()).await;
    assert_eq!(
        (status, error["code"].clone()),
        (405, json!("method_not_allowed"))
    );

    let (status, error) = error_of(
        app.client
            .get(app.url(&format!("/sessions/{session}/events?follow=false")))
            .header("last-event-id", "abc")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (400, json!("invalid_last_event_id"))
    );

    let big = "x".repeat(2 << 20);
    let (status, error) = error_of(
        app.client
            .post(&turns)
            .json(&json!({"content": big}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, error["code"].clone()),
        (413, json!("payload_too_large"))
    );
}

#[tokio::test]
async fn health_and_openapi_answer() {
    let app = spawn_app(vec![]).await;
    let health: Value = app.get_json("/healthz").await;
    assert_eq!(health["status"], json!("ok"));
    let ready = app.client.get(app.url("/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 200);
    let spec = app
        .client
        .get(app.url("/openapi.yaml"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        spec.starts_with("openapi: 3."),
        "{}",
        &spec[..spec.len().min(40)]
    );
}
