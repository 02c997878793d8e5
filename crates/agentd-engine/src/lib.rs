//! agentd's engine: the turn loop, the per-session live bus, cancellation, crash recovery.
//!
//! Owns what happens between "a user message arrived" and "the turn ended": one tokio task per
//! turn (DESIGN.md §1), events stored first and published second, a stop switch per running
//! turn, and closing turns a previous process left open. It sees the store, the provider and
//! the tools only through their traits; it must not know HTTP or pick concrete types.

mod bus;
mod control;
mod conversations;
mod error;
mod feed;
mod recover;
mod turn;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agentd_events::{DerivedMessages, EventData, Message, TurnEndKind, Usage, derive_messages};
use agentd_provider::Provider;
use agentd_store::{BeginTurn, EventStore, NewSession, Session, Turn};
use agentd_tools::{Toolbox, Workspaces};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

pub use error::{Error, Result};
pub use feed::EventFeed;

use bus::Bus;
use control::TurnControl;
use conversations::Conversations;
use turn::TurnRun;

/// Server-wide defaults a session may override.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    /// The model for sessions that name none, e.g. `deepseek-chat`.
    pub model: String,
    /// The system prompt for sessions that set none.
    pub system_prompt: Option<String>,
    /// Model requests per turn at most, for sessions that set no `max_steps`.
    pub max_steps: u32,
    /// Events a live subscriber may fall behind before it catches up from the store (1024).
    pub live_buffer: usize,
    /// How long a running turn's lease lasts without renewal (30 s). This process renews its
    /// turns' leases every third of it; a turn whose lease lapsed (its process died) is closed
    /// `interrupted` by any process on the same database.
    pub turn_lease: Duration,
    /// Sessions whose conversation is kept in memory between turns (64), so that a turn
    /// need not read its whole history from the store; when more sessions have run turns,
    /// the one whose last turn ended longest ago is dropped. 0: always read the store.
    pub cached_conversations: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            model: "deepseek-chat".to_owned(),
            system_prompt: None,
            max_steps: 50,
            live_buffer: 1024,
            turn_lease: Duration::from_secs(30),
            cached_conversations: 64,
        }
    }
}

/// What [`Engine::start_turn`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum StartTurn {
    /// A new turn runs.
    Started(Turn),
    /// The idempotency key named an existing turn; nothing new runs.
    Existing(Turn),
}

/// Runs turns and serves their events. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn EventStore>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) tools: Toolbox,
    pub(crate) workspaces: Workspaces,
    pub(crate) bus: Bus,
    /// Conversations kept between turns. A turn takes its session's out when it starts and
    /// puts it back after its `turn/end` is stored; `delete_session` drops it.
    pub(crate) conversations: Conversations,
    pub(crate) config: EngineConfig,
    /// Running turns by turn id. Inserted by `start_turn` before the task spawns, removed by
    /// the task after its `turn/end` is stored; read by cancel, delete and shutdown.
    running: Mutex<HashMap<Uuid, Arc<TurnControl>>>,
    /// Every turn task, so shutdown can wait for them.
    tasks: TaskTracker,
    /// Set once shutdown begins; no turn starts after it.
    draining: AtomicBool,
}

impl Inner {
    pub(crate) fn lock_running(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<TurnControl>>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Engine {
    /// An engine over these parts.
    pub fn new(
        store: Arc<dyn EventStore>,
        provider: Arc<dyn Provider>,
        tools: Toolbox,
        workspaces: Workspaces,
        config: EngineConfig,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                store,
                provider,
                tools,
                workspaces,
                bus: Bus::new(config.live_buffer),
                conversations: Conversations::new(config.cached_conversations),
                config,
                running: Mutex::new(HashMap::new()),
                tasks: TaskTracker::new(),
                draining: AtomicBool::new(false),
            }),
        }
    }

    /// The event store, for reads.
    pub fn store(&self) -> &Arc<dyn EventStore> {
        &self.inner.store
    }

    /// The names of the tools this server offers.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.tools.names()
    }

    /// Creates a session. Errors: [`Error::Invalid`] for an unknown tool name or
    /// `max_steps: 0`.
    pub async fn create_session(&self, new: NewSession) -> Result<Session> {
        if let Some(names) = &new.tools {
            let offered = self.tool_names();
            if let Some(unknown) = names.iter().find(|name| !offered.contains(name)) {
                return Err(Error::Invalid(format!(
                    "unknown tool {unknown:?}; the tools are: {}",
                    offered.join(", ")
                )));
            }
        }
        if new.max_steps == Some(0) {
            return Err(Error::Invalid("max_steps must be at least 1".to_owned()));
        }
        Ok(self.inner.store.create_session(new).await?)
    }

    /// Stops the session's running turn (if any), then deletes its events and workspace and
    /// ends its live streams in this process.
    /// Errors: [`Error::Store`] (`SessionNotFound`), [`Error::Workspace`].
    pub async fn delete_session(&self, session_id: Uuid) -> Result<()> {
        let session = self.inner.store.session(session_id).await?;
        if let Some(turn_id) = session.active_turn_id {
            self.stop_and_wait(turn_id, TurnEndKind::Cancelled).await;
        }
        self.inner.store.delete_session(session_id).await?;
        self.inner.bus.close(session_id);
        self.inner.conversations.forget(session_id);
        self.inner.workspaces.remove(session_id).await?;
        Ok(())
    }

    /// Starts a turn with the user's `text` and runs it in the background.
    /// Errors: [`Error::Invalid`] for empty text, [`Error::ShuttingDown`], and from the store
    /// `SessionNotFound` and `TurnInProgress` (with the running turn's id).
    pub async fn start_turn(
        &self,
        session_id: Uuid,
        text: &str,
        idempotency_key: Option<&str>,
    ) -> Result<StartTurn> {
        if text.trim().is_empty() {
            return Err(Error::Invalid("content must not be empty".to_owned()));
        }
        if self.inner.draining.load(Ordering::SeqCst) {
            return Err(Error::ShuttingDown);
        }
        let session = self.inner.store.session(session_id).await?;
        let turn_id = Uuid::now_v7();
        let begun = self
            .inner
            .store
            .begin_turn(
                session_id,
                turn_id,
                text,
                idempotency_key,
                self.inner.config.turn_lease,
            )
            .await?;
        let (turn, event) = match begun {
            BeginTurn::Existing(turn) => return Ok(StartTurn::Existing(turn)),
            BeginTurn::Started(turn, event) => (turn, event),
        };
        let first_seq = event.seq;
        self.inner.bus.publish(session_id, &[Arc::new(event)]);
        let control = Arc::new(TurnControl::new());
        self.lock_running().insert(turn_id, control.clone());
        let run = TurnRun {
            inner: self.inner.clone(),
            session,
            turn_id,
            control,
            first_seq,
            user_message: EventData::UserMessage {
                text: text.to_owned(),
            },
            conversation: DerivedMessages::default(),
            usage: Usage::default(),
        };
        let inner = self.inner.clone();
        self.inner.tasks.spawn(async move {
            run.run().await;
            inner
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&turn_id);
        });
        Ok(StartTurn::Started(turn))
    }

    /// Cancels a running turn: it ends with `turn/end {kind: cancelled}`, its tool's process
    /// tree is killed and its model request dropped. Returns the turn as it is now.
    /// Errors: `TurnNotFound` from the store, [`Error::NotRunning`].
    pub async fn cancel_turn(&self, session_id: Uuid, turn_id: Uuid) -> Result<Turn> {
        let turn = self.inner.store.turn(session_id, turn_id).await?;
        let control = self.lock_running().get(&turn_id).cloned();
        match control {
            Some(control) => control.stop(TurnEndKind::Cancelled),
            None => return Err(Error::NotRunning(turn_id)),
        }
        Ok(turn)
    }

    /// The session's events with `seq > after`: stored ones, then (with `live`) new ones as
    /// they are stored. The session is not checked here; the first read reports a missing one.
    pub fn follow(&self, session_id: Uuid, after: u64, live: bool) -> EventFeed {
        let receiver = live.then(|| self.inner.bus.subscribe(session_id));
        EventFeed::new(self.inner.store.clone(), session_id, after, receiver)
    }

    /// The messages the session's next model request would carry (system prompt first).
    /// Errors: `SessionNotFound` from the store.
    pub async fn messages(&self, session_id: Uuid) -> Result<Vec<Message>> {
        let session = self.inner.store.session(session_id).await?;
        let history = self.inner.store.load_conversation(session_id).await?;
        let system = session
            .system
            .or_else(|| self.inner.config.system_prompt.clone());
        Ok(derive_messages(system.as_deref(), &history))
    }

    /// Closes every turn a previous process left running (crash or kill): each tool call
    /// without a result gets an error result, then the turn ends `interrupted`. Call once at
    /// start-up, before serving. Returns how many turns it closed.
    pub async fn recover(&self) -> Result<usize> {
        recover::close_orphaned_turns(&self.inner).await
    }

    /// Starts the background work of a serving engine, until `stop` is cancelled: renewing the
    /// leases of this process's running turns, closing turns whose lease lapsed, and (where
    /// the store has a change channel) waking live followers when other processes append.
    pub fn start_background(&self, stop: CancellationToken) {
        let inner = self.inner.clone();
        let leases = stop.clone();
        tokio::spawn(async move { recover::keep_leases(&inner, leases).await });
        let inner = self.inner.clone();
        tokio::spawn(async move { recover::relay_changes(&inner, stop).await });
    }

    /// Stops starting turns, lets running ones finish for up to `grace`, then stops the rest
    /// as `interrupted` and waits (bounded) for their `turn/end` to be stored.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.draining.store(true, Ordering::SeqCst);
        self.inner.tasks.close();
        if tokio::time::timeout(grace, self.inner.tasks.wait())
            .await
            .is_ok()
        {
            return;
        }
        let controls: Vec<_> = self.lock_running().values().cloned().collect();
        for control in controls {
            control.stop(TurnEndKind::Interrupted);
        }
        let _ = tokio::time::timeout(Duration::from_secs(10), self.inner.tasks.wait()).await;
    }

    async fn stop_and_wait(&self, turn_id: Uuid, kind: TurnEndKind) {
        let control = self.lock_running().get(&turn_id).cloned();
        let Some(control) = control else { return };
        control.stop(kind);
        for _ in 0..1000 {
            if !self.lock_running().contains_key(&turn_id) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn lock_running(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<TurnControl>>> {
        self.inner.lock_running()
    }
}
