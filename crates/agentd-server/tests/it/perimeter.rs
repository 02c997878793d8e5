//! The perimeter: token auth, `Host` and `Origin` checks, body limit.

use std::sync::Arc;

use agentd_server::Perimeter;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app_with};

const TOKEN: &str = "s3cret-token-for-tests";

async fn guarded_app(origins: &[&str]) -> TestApp {
    let origins: Vec<String> = origins.iter().map(|o| o.to_string()).collect();
    spawn_app_with(
        Arc::new(tempfile::tempdir().unwrap()),
        vec![],
        move |state, addr| {
            state.perimeter =
                Arc::new(Perimeter::new(addr, Some(TOKEN.to_owned()), &[], &origins).unwrap());
        },
    )
    .await
}

async fn code(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    (status, body["error"]["code"].clone())
}

#[tokio::test]
async fn every_route_but_healthz_needs_the_token() {
    let app = guarded_app(&[]).await;
    let health = app.client.get(app.url("/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["auth"], json!("token"));

    for (status, token) in [
        (401, None),
        (401, Some("wrong")),
        (401, Some("s3cret-token-for-test")),
    ] {
        let mut request = app.client.get(app.url("/sessions"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert_eq!(code(response).await, (status, json!("unauthorized")));
    }
    let ok = app
        .client
        .get(app.url("/sessions"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let created = app
        .client
        .post(app.url("/sessions"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let id = created.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // EventSource cannot set headers: the SSE route takes ?access_token=, other routes do not.
    let sse = app
        .client
        .get(app.url(&format!(
            "/sessions/{id}/events?follow=false&access_token={TOKEN}"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    let other = app
        .client
        .get(app.url(&format!("/sessions/{id}?access_token={TOKEN}")))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 401);
}

#[tokio::test]
async fn a_foreign_host_is_refused() {
    let app = guarded_app(&[]).await;
    let port = app.base.rsplit(':').next().unwrap().to_owned();
    for host in [
        "evil.example:80",
        &format!("attacker.test:{port}"),
        "localhost:1",
    ] {
        let response = app
            .client
            .get(app.url("/healthz"))
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(
            code(response).await,
            (403, json!("host_not_allowed")),
            "{host}"
        );
    }
    let local = app
        .client
        .get(app.url("/healthz"))
        .header("host", format!("localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(local.status(), 200);
}

#[tokio::test]
async fn cors_allows_only_listed_origins() {
    let app = guarded_app(&["https://ui.example"]).await;
    let preflight = |origin: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, app.url("/sessions"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "authorization, content-type",
            )
            .send()
    };
    let allowed = preflight("https://ui.example").await.unwrap();
    assert_eq!(allowed.status(), 200);
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://ui.example"
    );

    let refused = preflight("https://evil.example").await.unwrap();
    assert!(
        refused
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    assert_eq!(code(refused).await, (403, json!("origin_not_allowed")));

    let from_page = app
        .client
        .get(app.url("/sessions"))
        .header("origin", "https://evil.example")
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(code(from_page).await, (403, json!("origin_not_allowed")));

    let listed = app
        .client
        .get(app.url("/sessions"))
        .header("origin", "https://ui.example")
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    assert_eq!(
        listed.headers()["access-control-allow-origin"],
        "https://ui.example"
    );
}

#[tokio::test]
async fn a_two_mib_body_is_refused_with_413() {
    let app = guarded_app(&[]).await;
    let body = json!({"title": "x".repeat(2 << 20)});
    let response = app
        .client
        .post(app.url("/sessions"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(code(response).await, (413, json!("payload_too_large")));
}

/// A client that announces a body and never sends it gets a 408 once the body has stalled
/// for the body timeout, instead of holding the connection forever.
#[tokio::test]
async fn a_body_that_never_arrives_is_refused_with_408() {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let app = spawn_app_with(
        Arc::new(tempfile::tempdir().unwrap()),
        vec![],
        |state, _| state.body_timeout = Duration::from_millis(300),
    )
    .await;
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /sessions HTTP/1.1\r\nHost: {address}\r\ncontent-type: application/json\r\n\
         content-length: 500\r\n\r\n{{\"title\": "
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    let mut response = vec![0; 4096];
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut response))
        .await
        .expect("no response to a stalled body")
        .unwrap();
    let response = String::from_utf8_lossy(&response[..read]).into_owned();
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(
        response.contains("\"code\":\"request_timeout\""),
        "{response}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
