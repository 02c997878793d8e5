//! Dev-only test helpers for agentd: [`ScriptedModel`], an OpenAI-compatible chat-completions
//! server on `127.0.0.1:0` that answers each request with the next scripted [`Reply`] and
//! records what it was asked, so tests drive the real provider client over real HTTP; and
//! [`Workload`], the benchmark's answers that the `scripted-model` binary serves.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod postgres;
mod reply;
mod validate;
mod workload;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;

pub use postgres::{TestDb, admin_url};
pub use reply::Reply;
pub use validate::validate_openai_request;
pub use workload::{Answer, Script, Workload, now_nanos, send_stamp};

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<serde_json::Value>>,
}

/// A scripted model server. Each `POST /v1/chat/completions` takes the next [`Reply`]; when
/// the script is exhausted it answers HTTP 500 `script exhausted`. Stops when dropped.
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedModel {
    /// Starts the server on `127.0.0.1:0` with `replies` queued in order.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let shared = Arc::new(Shared::default());
        shared.replies.lock().unwrap().extend(replies);
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, shared, task }
    }

    /// The base URL to configure the provider with: `http://127.0.0.1:<port>/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues another reply.
    pub fn push(&self, reply: Reply) {
        self.shared.replies.lock().unwrap().push_back(reply);
    }

    /// How many replies are still queued.
    pub fn pending(&self) -> usize {
        self.shared.replies.lock().unwrap().len()
    }

    /// Drops the next queued reply.
    pub fn skip(&self) {
        self.shared.replies.lock().unwrap().pop_front();
    }

    /// The JSON bodies of the requests received so far, in order.
    pub fn requests(&self) -> Vec<serde_json::Value> {
        self.shared.requests.lock().unwrap().clone()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn complete(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    shared.requests.lock().unwrap().push(request);
    let reply = shared.replies.lock().unwrap().pop_front();
    match reply {
        None => (StatusCode::INTERNAL_SERVER_ERROR, "script exhausted").into_response(),
        Some(Reply::Http { status, body }) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Some(Reply::Sse { events, delay }) => {
            let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
            tokio::spawn(async move {
                for event in events {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    if tx.send(Bytes::from(event)).await.is_err() {
                        return;
                    }
                }
            });
            let body = Body::from_stream(ReceiverStream::new(rx).map(Ok::<_, Infallible>));
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(body)
                .unwrap()
        }
    }
}
