//! Starting the real binary on a data dir, against a scripted model in this process.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A running `agentd serve`.
pub struct Server {
    pub child: Child,
    pub base: String,
    pub client: reqwest::Client,
}

impl Server {
    /// Starts the binary on `127.0.0.1:0` over `data_dir`, pointed at `model_url`, and waits
    /// until it listens (reads the address from its log).
    pub async fn start(data_dir: &Path, model_url: &str, grace_secs: u64) -> Self {
        Self::start_with(data_dir, model_url, grace_secs, &[]).await
    }

    /// [`Server::start`] with extra environment variables (e.g. the database URL).
    pub async fn start_with(
        data_dir: &Path,
        model_url: &str,
        grace_secs: u64,
        extra: &[(&str, String)],
    ) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_agentd"));
        command.env_clear();
        let mut child = command
            .arg("serve")
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("AGENTD_ADDR", "127.0.0.1:0")
            .env("AGENTD_DATA_DIR", data_dir)
            .env("AGENTD_BASE_URL", model_url)
            .env("AGENTD_MODEL", "scripted")
            .env("AGENTD_SHUTDOWN_GRACE_SECS", grace_secs.to_string())
            .env("AGENTD_SANDBOX", "none")
            .env("RUST_LOG", "info")
            .envs(extra.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let addr = tokio::time::timeout(Duration::from_secs(20), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split("addr=").nth(1) {
                    return rest.split_whitespace().next().unwrap().to_owned();
                }
            }
            panic!("agentd exited before listening");
        })
        .await
        .expect("agentd did not start");
        // Keep draining the log so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            child,
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub async fn create_session(&self) -> String {
        let body: Value = self
            .client
            .post(self.url("/sessions"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        body["id"].as_str().unwrap().to_owned()
    }

    /// Posts a turn (202) and returns its id.
    pub async fn post_turn(&self, session: &str, content: &str) -> String {
        let response = self
            .client
            .post(self.url(&format!("/sessions/{session}/turns")))
            .json(&json!({ "content": content }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
        response.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// All events of the session as (seq, type, envelope).
    pub async fn events(&self, session: &str) -> Vec<(u64, String, Value)> {
        let page: Value = self
            .client
            .get(self.url(&format!("/sessions/{session}/events?limit=5000")))
            .header("accept", "application/json")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["seq"].as_u64().unwrap(),
                    e["type"].as_str().unwrap().to_owned(),
                    e.clone(),
                )
            })
            .collect()
    }

    /// Follows the session's SSE stream in the background, collecting (id, envelope) until
    /// the stream breaks.
    pub fn follow(&self, session: &str) -> tokio::task::JoinHandle<Vec<(u64, Value)>> {
        let request = self
            .client
            .get(self.url(&format!("/sessions/{session}/events")))
            .header("accept", "text/event-stream");
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let Ok(response) = request.send().await else {
                return seen;
            };
            let mut stream = response.bytes_stream().eventsource();
            while let Some(Ok(event)) = stream.next().await {
                if let Ok(data) = serde_json::from_str(&event.data) {
                    seen.push((event.id.parse().unwrap(), data));
                }
            }
            seen
        })
    }
}

impl Server {
    /// Reads the session's SSE stream from `after` until the first `turn/end`, as (id, type).
    pub async fn follow_until_turn_end(&self, session: &str, after: u64) -> Vec<(u64, String)> {
        self.follow_live_until_turn_end(session, after)
            .await
            .unwrap()
    }

    /// [`Server::follow_until_turn_end`] in the background, started now.
    pub fn follow_live_until_turn_end(
        &self,
        session: &str,
        after: u64,
    ) -> tokio::task::JoinHandle<Vec<(u64, String)>> {
        let request = self
            .client
            .get(self.url(&format!("/sessions/{session}/events?after={after}")))
            .header("accept", "text/event-stream");
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let response = request.send().await.unwrap();
            let mut stream = response.bytes_stream().eventsource();
            while let Some(Ok(event)) = stream.next().await {
                let end = event.event == "turn/end";
                seen.push((event.id.parse().unwrap(), event.event));
                if end {
                    break;
                }
            }
            seen
        })
    }
}

/// Every tool call of an assistant message is answered once, right after it, in order.
pub fn assert_valid_request(request: &Value) {
    let messages = request["messages"].as_array().unwrap();
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        assert!(
            message["role"] != "tool",
            "tool message without a call at {i}: {request}"
        );
        if message["role"] == "assistant" {
            assert!(message["content"].is_string(), "null content at {i}");
            let calls = message["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for (k, call) in calls.iter().enumerate() {
                let answer = &messages[i + 1 + k];
                assert_eq!(answer["role"], "tool", "call {k} of message {i} unanswered");
                assert_eq!(answer["tool_call_id"], call["id"]);
                let arguments = call["function"]["arguments"].as_str().unwrap();
                serde_json::from_str::<Value>(arguments).unwrap();
            }
            i += calls.len();
        }
        i += 1;
    }
}
