//! `Harness`: an engine over SQLite in a temp dir, with a store that records its writes and
//! conversation loads, a provider that answers from a script and records its requests, and
//! two tools: `echo` (answers its `text` argument) and `wait` (returns once the turn stops).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agentd_engine::{Engine, EngineConfig, StartTurn};
use agentd_events::{Chunk, Event, EventData, Finish, FinishKind, ToolSpec, TurnEnd};
use agentd_provider::{ModelRequest, Provider, ProviderEvent, ProviderStream};
use agentd_store::{
    BeginTurn, ChangeStream, EventStore, NewSession, Session, SqliteStore, StoredEvent, Turn,
};
use agentd_tools::{Tool, ToolContext, ToolOutput, Toolbox, Workspaces};
use async_trait::async_trait;
use serde_json::{Value, json};
use tempfile::TempDir;
use uuid::Uuid;

/// An engine and what it talks to.
pub struct Harness {
    pub engine: Engine,
    pub store: Arc<RecordingStore>,
    pub provider: Arc<ScriptedProvider>,
    /// Holds the database and the workspaces.
    dir: TempDir,
}

/// A harness whose model gives `replies` in order, one per request.
pub async fn harness(replies: Vec<Vec<Chunk>>) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("agentd.db").display());
    let store = Arc::new(RecordingStore {
        inner: SqliteStore::open(&url).await.unwrap(),
        writes: Mutex::new(Vec::new()),
        conversation_loads: AtomicUsize::new(0),
    });
    let provider = Arc::new(ScriptedProvider {
        replies: Mutex::new(replies.into()),
        requests: Mutex::new(Vec::new()),
    });
    let engine = replica(&store, &provider, &dir);
    Harness {
        engine,
        store,
        provider,
        dir,
    }
}

/// An engine on `store`, `provider` and the tools, with its workspaces in `dir`.
fn replica(store: &Arc<RecordingStore>, provider: &Arc<ScriptedProvider>, dir: &TempDir) -> Engine {
    Engine::new(
        store.clone(),
        provider.clone(),
        Toolbox::new(vec![Arc::new(Echo), Arc::new(Wait)]),
        Workspaces::new(dir.path().join("workspaces")),
        EngineConfig {
            system_prompt: Some("You are a test.".into()),
            ..EngineConfig::default()
        },
    )
}

impl Harness {
    /// Another engine on the same database, model and tools: what a second replica is.
    pub fn replica(&self) -> Engine {
        replica(&self.store, &self.provider, &self.dir)
    }

    pub async fn session(&self) -> Uuid {
        self.engine
            .create_session(NewSession::default())
            .await
            .unwrap()
            .id
    }

    /// Starts a turn on `engine` and returns it as started.
    pub async fn start(&self, engine: &Engine, session: Uuid, text: &str) -> Turn {
        match engine.start_turn(session, text, None).await.unwrap() {
            StartTurn::Started(turn) => turn,
            StartTurn::Existing(turn) => panic!("no new turn: {turn:?}"),
        }
    }

    /// Runs a turn on `engine` to its end.
    pub async fn turn_on(&self, engine: &Engine, session: Uuid, text: &str) {
        let turn = self.start(engine, session, text).await;
        wait_for(engine, session, turn.first_seq - 1, "turn/end").await;
    }

    /// Runs a turn on this harness's engine to its end.
    pub async fn turn(&self, session: Uuid, text: &str) {
        self.turn_on(&self.engine, session, text).await;
    }

    /// The session's stored events, parsed.
    pub async fn log(&self, session: Uuid) -> Vec<Event> {
        let stored = self.store.inner.load(session, 0, None).await.unwrap();
        stored.iter().map(|event| event.parse().unwrap()).collect()
    }
}

/// Follows the session on `engine` after `after` until an event of `event_type` is stored.
pub async fn wait_for(engine: &Engine, session: Uuid, after: u64, event_type: &str) {
    let mut feed = engine.follow(session, after, true);
    tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = feed.next().await.unwrap() {
            if &*event.event_type == event_type {
                return;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {event_type} within 10 s"));
}

/// A model answer: `text`, then `finish {kind: completed}`.
pub fn answer(text: &str) -> Vec<Chunk> {
    vec![
        Chunk::Text {
            content: text.into(),
        },
        finish(FinishKind::Completed),
    ]
}

/// A model answer calling tools: one `tool-call` chunk per `(id, name, arguments)`, then
/// `finish {kind: tool-calls}`.
pub fn calls(calls: &[(&str, &str, Value)]) -> Vec<Chunk> {
    let mut chunks: Vec<Chunk> = calls
        .iter()
        .map(|(id, name, arguments)| Chunk::ToolCall {
            id: (*id).into(),
            name: (*name).into(),
            arguments: arguments.to_string(),
        })
        .collect();
    chunks.push(finish(FinishKind::ToolCalls));
    chunks
}

fn finish(kind: FinishKind) -> Chunk {
    Chunk::Finish(Finish {
        kind,
        usage: None,
        error: None,
    })
}

/// The `type` of each event, and the tool call id of tool events (`tool/start a`).
pub fn outline(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|event| match &event.data {
            EventData::ToolStart(start) => format!("tool/start {}", start.call_id),
            EventData::ToolResult(result) => format!("tool/result {}", result.call_id),
            data => data.type_name().to_owned(),
        })
        .collect()
}

/// The SQLite store, recording the event types of each write transaction and counting
/// `load_conversation` calls.
pub struct RecordingStore {
    pub inner: SqliteStore,
    writes: Mutex<Vec<Vec<&'static str>>>,
    conversation_loads: AtomicUsize,
}

impl RecordingStore {
    /// The event types stored by each write so far (`begin_turn`, `append`, `end_turn`).
    pub fn writes(&self) -> Vec<Vec<&'static str>> {
        self.writes.lock().unwrap().clone()
    }

    /// How often `load_conversation` was called.
    pub fn conversation_loads(&self) -> usize {
        self.conversation_loads.load(Ordering::SeqCst)
    }

    fn record(&self, types: Vec<&'static str>) {
        self.writes.lock().unwrap().push(types);
    }
}

#[async_trait]
impl EventStore for RecordingStore {
    async fn create_session(&self, new: NewSession) -> agentd_store::Result<Session> {
        self.inner.create_session(new).await
    }

    async fn session(&self, id: Uuid) -> agentd_store::Result<Session> {
        self.inner.session(id).await
    }

    async fn list_sessions(
        &self,
        limit: u32,
        before: Option<Uuid>,
    ) -> agentd_store::Result<Vec<Session>> {
        self.inner.list_sessions(limit, before).await
    }

    async fn delete_session(&self, id: Uuid) -> agentd_store::Result<()> {
        self.inner.delete_session(id).await
    }

    async fn begin_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        text: &str,
        idempotency_key: Option<&str>,
        lease: Duration,
    ) -> agentd_store::Result<BeginTurn> {
        let begun = self
            .inner
            .begin_turn(session_id, turn_id, text, idempotency_key, lease)
            .await?;
        if matches!(begun, BeginTurn::Started(..)) {
            self.record(vec!["user/message"]);
        }
        Ok(begun)
    }

    async fn renew_lease(&self, turn_id: Uuid, lease: Duration) -> agentd_store::Result<()> {
        self.inner.renew_lease(turn_id, lease).await
    }

    async fn expired_turns(&self) -> agentd_store::Result<Vec<Turn>> {
        self.inner.expired_turns().await
    }

    async fn listen(&self) -> agentd_store::Result<Option<ChangeStream>> {
        self.inner.listen().await
    }

    async fn append(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        data: &[EventData],
    ) -> agentd_store::Result<Vec<StoredEvent>> {
        let stored = self.inner.append(session_id, turn_id, data).await?;
        self.record(data.iter().map(EventData::type_name).collect());
        Ok(stored)
    }

    async fn end_turn(
        &self,
        session_id: Uuid,
        turn_id: Uuid,
        end: &TurnEnd,
    ) -> agentd_store::Result<StoredEvent> {
        let stored = self.inner.end_turn(session_id, turn_id, end).await?;
        self.record(vec!["turn/end"]);
        Ok(stored)
    }

    async fn load(
        &self,
        session_id: Uuid,
        after: u64,
        limit: Option<u32>,
    ) -> agentd_store::Result<Vec<StoredEvent>> {
        self.inner.load(session_id, after, limit).await
    }

    async fn load_conversation(&self, session_id: Uuid) -> agentd_store::Result<Vec<Event>> {
        self.conversation_loads.fetch_add(1, Ordering::SeqCst);
        self.inner.load_conversation(session_id).await
    }

    async fn turn(&self, session_id: Uuid, turn_id: Uuid) -> agentd_store::Result<Turn> {
        self.inner.turn(session_id, turn_id).await
    }

    async fn list_turns(&self, session_id: Uuid) -> agentd_store::Result<Vec<Turn>> {
        self.inner.list_turns(session_id).await
    }

    async fn running_turns(&self) -> agentd_store::Result<Vec<Turn>> {
        self.inner.running_turns().await
    }

    async fn ping(&self) -> agentd_store::Result<()> {
        self.inner.ping().await
    }
}

/// A model that answers each request with the next scripted reply (a `finish {kind: error}`
/// once they run out) and keeps every request.
pub struct ScriptedProvider {
    replies: Mutex<VecDeque<Vec<Chunk>>>,
    requests: Mutex<Vec<ModelRequest>>,
}

impl ScriptedProvider {
    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Provider for ScriptedProvider {
    fn stream(&self, request: ModelRequest) -> ProviderStream {
        self.requests.lock().unwrap().push(request);
        let reply = self.replies.lock().unwrap().pop_front().unwrap_or_else(|| {
            vec![Chunk::Finish(Finish::error(agentd_events::ErrorInfo::new(
                "script_ended",
                "the scripted model has no more replies",
            )))]
        });
        Box::pin(futures_util::stream::iter(
            reply.into_iter().map(ProviderEvent::Chunk),
        ))
    }
}

/// `echo {"text"}`: answers `text`.
struct Echo;

#[async_trait]
impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "echo".into(),
            description: "Answers its text.".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}}),
        }
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> ToolOutput {
        ToolOutput {
            text: arguments["text"].as_str().unwrap_or_default().to_owned(),
            is_error: false,
            exit_code: None,
            truncated: false,
        }
    }
}

/// `wait {}`: returns once the turn is stopped (at most after 10 s).
struct Wait;

#[async_trait]
impl Tool for Wait {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "wait".into(),
            description: "Waits until the turn is stopped.".into(),
            parameters: json!({"type": "object"}),
        }
    }

    async fn call(&self, ctx: &ToolContext, _arguments: Value) -> ToolOutput {
        let _ = tokio::time::timeout(Duration::from_secs(10), ctx.cancel.cancelled()).await;
        ToolOutput::error("stopped")
    }
}
