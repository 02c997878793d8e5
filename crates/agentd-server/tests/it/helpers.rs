//! `spawn_app()`: one server per test on `127.0.0.1:0`, with its own temp data dir.

use std::sync::Arc;
use std::time::Duration;

use agentd_engine::{Engine, EngineConfig};
use agentd_provider::{OpenAiConfig, OpenAiProvider, RetryConfig};
use agentd_server::AppState;
use agentd_store::SqliteStore;
use agentd_testkit::{Reply, ScriptedModel};
use agentd_tools::{BashConfig, Workspaces, default_toolbox};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// A running server and what it talks to.
pub struct TestApp {
    /// `http://127.0.0.1:<port>`
    pub base: String,
    pub client: reqwest::Client,
    pub model: ScriptedModel,
    pub dir: Arc<TempDir>,
    pub engine: Engine,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// One SSE event as a client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub id: String,
    pub event: String,
    pub data: Value,
}

pub async fn spawn_app(replies: Vec<Reply>) -> TestApp {
    spawn_app_in(Arc::new(tempfile::tempdir().unwrap()), replies).await
}

/// A server over an existing data dir (to test restarts).
pub async fn spawn_app_in(dir: Arc<TempDir>, replies: Vec<Reply>) -> TestApp {
    spawn_app_with(dir, replies, |_, _| {}).await
}

/// A server whose state `configure` adjusts (keep-alive, perimeter) once the address is known.
pub async fn spawn_app_with(
    dir: Arc<TempDir>,
    replies: Vec<Reply>,
    configure: impl FnOnce(&mut AppState, std::net::SocketAddr),
) -> TestApp {
    let model = ScriptedModel::start(replies).await;
    let url = format!("sqlite://{}", dir.path().join("agentd.db").display());
    let store = Arc::new(SqliteStore::open(&url).await.unwrap());
    let provider = Arc::new(
        OpenAiProvider::new(OpenAiConfig {
            // Retries wait milliseconds here, not the default half second.
            retry: RetryConfig {
                base_delay: Duration::from_millis(5),
                ..RetryConfig::default()
            },
            ..OpenAiConfig::new(model.base_url())
        })
        .unwrap(),
    );
    let tools = default_toolbox(BashConfig {
        timeout: Duration::from_secs(20),
        ..BashConfig::default()
    });
    let engine = Engine::new(
        store,
        provider,
        tools,
        Workspaces::new(dir.path().join("workspaces")),
        EngineConfig {
            model: "scripted-model".into(),
            system_prompt: Some("You are a test.".into()),
            max_steps: 5,
            // Small, so slow-client tests exercise the catch-up from the store.
            live_buffer: 16,
            ..EngineConfig::default()
        },
    );
    engine.recover().await.unwrap();
    let shutdown = CancellationToken::new();
    engine.start_background(shutdown.child_token());
    let mut state = AppState::new(engine.clone(), shutdown.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    configure(&mut state, addr);
    let base = format!("http://{addr}");
    let server = tokio::spawn(async move {
        agentd_server::serve(listener, state).await.unwrap();
    });
    TestApp {
        base,
        client: reqwest::Client::new(),
        model,
        dir,
        engine,
        shutdown,
        server,
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Stops the server and waits until it has let go of its listener.
    pub async fn stop(mut self) -> Arc<TempDir> {
        self.shutdown.cancel();
        self.engine.shutdown(Duration::from_secs(5)).await;
        (&mut self.server).await.unwrap();
        self.dir.clone()
    }

    /// `GET path` asking for JSON (`accept: application/json`, which `/events` needs to
    /// answer with a page) and its JSON body, whatever the status.
    pub async fn get_json(&self, path: &str) -> Value {
        let response = self
            .client
            .get(self.url(path))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    }

    /// `POST path` with a JSON body, and the JSON answer, whatever the status.
    pub async fn post_json(&self, path: &str, body: &Value) -> Value {
        let response = self
            .client
            .post(self.url(path))
            .json(body)
            .send()
            .await
            .unwrap();
        response.json().await.unwrap()
    }

    /// Creates a session with `body` and returns its id.
    pub async fn create_session(&self, body: Value) -> String {
        let response = self
            .client
            .post(self.url("/sessions"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        response.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Posts a turn with `Accept: text/event-stream` and collects the stream to its end.
    pub async fn run_turn(&self, session: &str, content: &str) -> Vec<Seen> {
        let response = self
            .client
            .post(self.url(&format!("/sessions/{session}/turns")))
            .header("accept", "text/event-stream")
            .json(&json!({ "content": content }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        collect(response).await
    }

    /// `GET /sessions/{id}/events` as SSE with extra query and headers, collected to its end.
    pub async fn replay(
        &self,
        session: &str,
        query: &str,
        last_event_id: Option<u64>,
    ) -> Vec<Seen> {
        let mut request = self
            .client
            .get(self.url(&format!("/sessions/{session}/events?follow=false{query}")))
            .header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        collect(response).await
    }

    /// Waits until the session is idle (its turn ended), bounded.
    pub async fn wait_idle(&self, session: &str) -> Value {
        for _ in 0..500 {
            let session = self.get_json(&format!("/sessions/{session}")).await;
            if session["status"] == "idle" {
                return session;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("session {session} did not become idle");
    }
}

/// Reads an SSE response until it closes (bounded to 30 s).
pub async fn collect(response: reqwest::Response) -> Vec<Seen> {
    let mut stream = response.bytes_stream().eventsource();
    let mut seen = Vec::new();
    let read = async {
        while let Some(event) = stream.next().await {
            let event = event.unwrap();
            seen.push(Seen {
                id: event.id,
                event: event.event,
                data: serde_json::from_str(&event.data).unwrap(),
            });
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the stream did not end");
    seen
}

/// The `type`s of the events, in order.
pub fn types(seen: &[Seen]) -> Vec<String> {
    seen.iter().map(|s| s.event.clone()).collect()
}

/// (id, type) pairs.
pub fn ids_and_types(seen: &[Seen]) -> Vec<(String, String)> {
    seen.iter()
        .map(|s| (s.id.clone(), s.event.clone()))
        .collect()
}
