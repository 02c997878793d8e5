//! Server-Sent Events: a session's events as `id:`/`event:`/`data:` frames (DESIGN.md §3).
//!
//! Each stream is one task that reads an `EventFeed` and writes frames into a small bounded
//! channel that is the response body. A slow client fills the channel, the task waits, its
//! feed falls behind the live bus and later catches up from the store: memory stays bounded
//! and nothing is skipped. A client that goes away closes the channel and ends the task; the
//! turn goes on.

use std::convert::Infallible;
use std::time::Duration;

use agentd_store::StoredEvent;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::Response;
use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::ReceiverStream;
use uuid::Uuid;

use crate::AppState;

/// How long a client waits before reconnecting after a dropped stream (the `retry:` field), ms.
const RETRY_MS: u64 = 3000;
/// Frames buffered per stream before the task waits for the client.
const BUFFER: usize = 64;

/// When a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamUntil {
    /// Never on its own: replay, then follow live (`GET /events`).
    Forever,
    /// Once the stored events are sent (`?follow=false`).
    CaughtUp,
    /// After the first `turn/end` (`POST /turns` with `Accept: text/event-stream`).
    TurnEnd,
}

/// Whether the client asked for `text/event-stream`.
pub(crate) fn wants_event_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"))
}

/// The SSE response of `session_id`'s events with `seq > after`.
pub(crate) fn stream(
    state: &AppState,
    session_id: Uuid,
    after: u64,
    until: StreamUntil,
) -> Response {
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER);
    let feed = state
        .engine
        .follow(session_id, after, until != StreamUntil::CaughtUp);
    let pump = Pump {
        feed,
        tx,
        until,
        keep_alive: state.keep_alive,
        shutdown: state.shutdown.clone(),
    };
    tokio::spawn(pump.run());
    let body = Body::from_stream(ReceiverStream::new(rx).map(Ok::<_, Infallible>));
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

struct Pump {
    feed: agentd_engine::EventFeed,
    tx: mpsc::Sender<Bytes>,
    until: StreamUntil,
    keep_alive: Duration,
    shutdown: tokio_util::sync::CancellationToken,
}

impl Pump {
    async fn run(mut self) {
        if !self.send(format!("retry: {RETRY_MS}\n\n").into()).await {
            return;
        }
        let mut quiet_until = Instant::now() + self.keep_alive;
        loop {
            let next = tokio::select! {
                () = self.shutdown.cancelled() => return,
                () = self.tx.closed() => return,
                () = tokio::time::sleep_until(quiet_until) => {
                    if !self.send(Bytes::from_static(b": keep-alive\n\n")).await {
                        return;
                    }
                    quiet_until = Instant::now() + self.keep_alive;
                    continue;
                }
                next = self.feed.next() => next,
            };
            match next {
                Ok(Some(event)) => {
                    if !self.send(frame(&event)).await {
                        return;
                    }
                    quiet_until = Instant::now() + self.keep_alive;
                    if self.until == StreamUntil::TurnEnd && &*event.event_type == "turn/end" {
                        return;
                    }
                }
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "event stream failed");
                    let data = serde_json::json!({"error": {"code": "stream_failed", "message": error.to_string()}});
                    self.send(format!("event: error\ndata: {data}\n\n").into())
                        .await;
                    return;
                }
            }
        }
    }

    /// Sends one frame; false once the client is gone.
    async fn send(&self, bytes: Bytes) -> bool {
        self.tx.send(bytes).await.is_ok()
    }
}

/// `id: <seq>` / `event: <type>` / `data: <envelope JSON>`, blank line.
fn frame(event: &StoredEvent) -> Bytes {
    let mut out = String::with_capacity(event.json.len() + event.event_type.len() + 32);
    out.push_str("id: ");
    out.push_str(&event.seq.to_string());
    out.push_str("\nevent: ");
    out.push_str(&event.event_type);
    out.push_str("\ndata: ");
    out.push_str(&event.json);
    out.push_str("\n\n");
    Bytes::from(out)
}
