//! The load client: agentd's HTTP API as the benchmark uses it.
//!
//! Owns the requests and what is measured on each streamed turn (latency, relay, chunk
//! counts, seq order). It keeps per-event work small (no JSON parse but for chunks and the
//! `turn/end`), because it shares the cores with the server it measures.

use std::time::{Duration, Instant};

use agentd_testkit::{now_nanos, send_stamp};
use anyhow::{Context, bail, ensure};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::ACCEPT;
use serde_json::{Value, json};

/// One agentd server, through one connection pool.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
}

/// What one streamed turn showed.
#[derive(Debug, Clone, Default)]
pub struct TurnRecord {
    /// From sending the POST to receiving the `turn/end` frame.
    pub latency: Duration,
    /// For each stamped text chunk: receipt minus the model's send timestamp, in ns.
    pub relay_ns: Vec<i64>,
    /// `assistant/chunk` events of type `text`.
    pub text_chunks: u32,
    /// `assistant/chunk` events of type `finish`.
    pub finish_chunks: u32,
    /// Every event of the turn, `user/message` to `turn/end`.
    pub events: u32,
    /// The `turn/end` kind (`completed` when all is well).
    pub end_kind: String,
}

/// Chunk counts of one session's stored events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredCounts {
    /// All events.
    pub events: u32,
    /// `assistant/chunk` of type `text`.
    pub text_chunks: u32,
    /// `assistant/chunk` of type `finish`.
    pub finish_chunks: u32,
}

/// A pool large enough for every concurrent session, with `TCP_NODELAY` like the server.
pub fn http_client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(120))
        .build()?)
}

impl Api {
    /// The API at `base` (`http://127.0.0.1:PORT`).
    pub fn new(http: reqwest::Client, base: &str) -> Self {
        Self {
            http,
            base: base.to_owned(),
        }
    }

    /// `GET /healthz` as JSON.
    pub async fn health(&self) -> anyhow::Result<Value> {
        let response = self.http.get(format!("{}/healthz", self.base)).send();
        Ok(response.await?.error_for_status()?.json().await?)
    }

    /// Creates a session (with `model`, else the server's default) and returns its id.
    pub async fn create_session(&self, model: Option<&str>) -> anyhow::Result<String> {
        let body = match model {
            Some(model) => json!({ "title": "bench", "model": model }),
            None => json!({ "title": "bench" }),
        };
        let response = self
            .http
            .post(format!("{}/sessions", self.base))
            .json(&body)
            .send()
            .await?
            .error_for_status()?;
        let session: Value = response.json().await?;
        session["id"]
            .as_str()
            .map(str::to_owned)
            .context("session without id")
    }

    /// Runs one turn with `Accept: text/event-stream` and reads it to its `turn/end`.
    pub async fn turn(&self, session: &str) -> anyhow::Result<TurnRecord> {
        let started = Instant::now();
        let response = self
            .http
            .post(format!("{}/sessions/{session}/turns", self.base))
            .header(ACCEPT, "text/event-stream")
            .json(&json!({ "content": "bench turn" }))
            .send()
            .await?;
        let status = response.status();
        if status != 200 {
            let body = response.text().await.unwrap_or_default();
            bail!("POST turns: {status} {body}");
        }
        let mut record = TurnRecord::default();
        let mut last_seq = None::<u64>;
        let mut stream = response.bytes_stream().eventsource();
        while let Some(event) = stream.next().await {
            let event = event.context("reading the turn's stream")?;
            let received = now_nanos();
            let seq: u64 = event.id.parse().context("frame without a numeric id")?;
            ensure!(
                last_seq.is_none_or(|last| seq == last + 1),
                "seq {seq} after {last_seq:?}"
            );
            last_seq = Some(seq);
            record.events += 1;
            match event.event.as_str() {
                "assistant/chunk" => {
                    let envelope: Value = serde_json::from_str(&event.data)?;
                    let chunk = &envelope["data"];
                    match chunk["type"].as_str() {
                        Some("text") => {
                            record.text_chunks += 1;
                            let stamp = chunk["content"].as_str().and_then(send_stamp);
                            if let Some(sent) = stamp {
                                let relay = i128::from(received) - i128::from(sent);
                                record
                                    .relay_ns
                                    .push(relay.clamp(0, i128::from(i64::MAX)) as i64);
                            }
                        }
                        Some("finish") => record.finish_chunks += 1,
                        _ => {}
                    }
                }
                "turn/end" => {
                    record.latency = started.elapsed();
                    let envelope: Value = serde_json::from_str(&event.data)?;
                    record.end_kind = envelope["data"]["kind"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned();
                    return Ok(record);
                }
                _ => {}
            }
        }
        bail!("the turn's stream closed before turn/end")
    }

    /// Counts the session's stored events, replayed over SSE with `?follow=false`, and
    /// checks their seqs run 1, 2, 3 … without gaps or repeats.
    pub async fn stored_counts(&self, session: &str) -> anyhow::Result<StoredCounts> {
        let response = self
            .http
            .get(format!(
                "{}/sessions/{session}/events?follow=false",
                self.base
            ))
            .header(ACCEPT, "text/event-stream")
            .send()
            .await?
            .error_for_status()?;
        let mut counts = StoredCounts::default();
        let mut stream = response.bytes_stream().eventsource();
        while let Some(event) = stream.next().await {
            let event = event.context("reading the replay")?;
            counts.events += 1;
            let seq: u64 = event.id.parse().context("frame without a numeric id")?;
            ensure!(
                seq == u64::from(counts.events),
                "stored seq {seq} at position {}",
                counts.events
            );
            if event.event == "assistant/chunk" {
                let envelope: Value = serde_json::from_str(&event.data)?;
                match envelope["data"]["type"].as_str() {
                    Some("text") => counts.text_chunks += 1,
                    Some("finish") => counts.finish_chunks += 1,
                    _ => {}
                }
            }
        }
        Ok(counts)
    }
}
