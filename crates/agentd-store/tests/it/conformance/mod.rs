//! Checks every `EventStore` implementation must pass, written once against the trait.

mod concurrency;

pub use concurrency::*;

use agentd_events::{
    Chunk, ErrorInfo, EventData, FinishKind, Message, ToolCall, ToolResult, TurnEnd, TurnEndKind,
    Usage,
};
use agentd_store::{BeginTurn, Error, EventStore, NewSession, SessionStatus, TurnStatus};
use std::time::Duration;

use pretty_assertions::assert_eq;
use uuid::Uuid;

/// A lease long enough never to lapse during a test.
pub(crate) const LEASE: Duration = Duration::from_secs(600);

pub(crate) fn text(s: &str) -> EventData {
    EventData::AssistantChunk(Chunk::Text { content: s.into() })
}

pub(crate) fn end(kind: TurnEndKind, input: u64, output: u64) -> TurnEnd {
    TurnEnd {
        kind,
        error: None,
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
    }
}

pub(crate) async fn new_session(store: &dyn EventStore) -> Uuid {
    store
        .create_session(NewSession::default())
        .await
        .unwrap()
        .id
}

async fn begin(store: &dyn EventStore, session_id: Uuid, text: &str) -> Uuid {
    let turn_id = Uuid::new_v4();
    match store
        .begin_turn(session_id, turn_id, text, None, LEASE)
        .await
        .unwrap()
    {
        BeginTurn::Started(turn, event) => {
            assert_eq!(turn.id, turn_id);
            assert_eq!(turn.first_seq, event.seq);
        }
        BeginTurn::Existing(_) => panic!("no key was given"),
    }
    turn_id
}

/// A session holding one finished turn of five events; returns its id.
pub async fn session_with_finished_turn(store: &dyn EventStore) -> Uuid {
    let session_id = new_session(store).await;
    let turn_id = begin(store, session_id, "hi").await;
    store
        .append(session_id, turn_id, &[text("Hel"), text("lo")])
        .await
        .unwrap();
    store
        .append(
            session_id,
            turn_id,
            &[EventData::AssistantMessage {
                message: Message::Assistant {
                    content: "Hello".into(),
                    tool_calls: vec![],
                    reasoning_content: None,
                },
            }],
        )
        .await
        .unwrap();
    store
        .end_turn(session_id, turn_id, &end(TurnEndKind::Completed, 1, 2))
        .await
        .unwrap();
    session_id
}

/// The seqs of every stored event of `session_id`, in order.
pub async fn seqs(store: &dyn EventStore, session_id: Uuid) -> Vec<u64> {
    all_events(store, session_id)
        .await
        .iter()
        .map(|e| e.0)
        .collect()
}

/// (seq, type, json) of every event of the session.
pub async fn all_events(store: &dyn EventStore, session_id: Uuid) -> Vec<(u64, String, String)> {
    store
        .load(session_id, 0, None)
        .await
        .unwrap()
        .into_iter()
        .map(|e| (e.seq, e.event_type.to_string(), e.json.to_string()))
        .collect()
}

pub async fn session_is_created_listed_and_deleted(store: &dyn EventStore) {
    let created = store
        .create_session(NewSession {
            title: Some("t".into()),
            model: Some("m".into()),
            system: Some("s".into()),
            tools: Some(vec!["bash".into()]),
            max_steps: Some(3),
        })
        .await
        .unwrap();
    assert_eq!(created.title.as_deref(), Some("t"));
    assert_eq!(created.tools, Some(vec!["bash".to_owned()]));
    assert_eq!(created.max_steps, Some(3));
    assert_eq!(created.status, SessionStatus::Idle);
    assert_eq!(created.last_seq, 0);
    assert_eq!(store.session(created.id).await.unwrap(), created);

    let second = new_session(store).await;
    let third = new_session(store).await;
    let page: Vec<Uuid> = store
        .list_sessions(2, None)
        .await
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(page, vec![third, second]);
    let next: Vec<Uuid> = store
        .list_sessions(2, Some(second))
        .await
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(next, vec![created.id]);

    store.delete_session(created.id).await.unwrap();
    assert!(matches!(
        store.session(created.id).await,
        Err(Error::SessionNotFound(id)) if id == created.id
    ));
    assert!(matches!(
        store.delete_session(created.id).await,
        Err(Error::SessionNotFound(_))
    ));
}

pub async fn seq_rises_by_one_per_event_without_gaps(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let mut appended = Vec::new();
    for round in 0..3 {
        let turn_id = begin(store, session_id, &format!("turn {round}")).await;
        for i in 0..5 {
            let batch: Vec<EventData> = (0..i).map(|j| text(&format!("{j}"))).collect();
            appended.extend(store.append(session_id, turn_id, &batch).await.unwrap());
        }
        store
            .end_turn(session_id, turn_id, &end(TurnEndKind::Completed, 0, 0))
            .await
            .unwrap();
    }
    let seqs = seqs(store, session_id).await;
    // Per turn: user/message, 0+1+2+3+4 chunks, turn/end.
    let expected: Vec<u64> = (1..=3 * 12).collect();
    assert_eq!(seqs, expected);
    assert_eq!(store.session(session_id).await.unwrap().last_seq, 36);
    let loaded = store.load(session_id, 0, None).await.unwrap();
    for event in &loaded {
        assert_eq!(event.parse().unwrap().seq, event.seq);
    }
    // What append returned (and was published) is byte for byte what a replay reads.
    for event in appended {
        assert_eq!(loaded[event.seq as usize - 1], event);
    }
}

pub async fn only_one_turn_runs_per_session(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let first = begin(store, session_id, "one").await;
    let refused = store
        .begin_turn(session_id, Uuid::new_v4(), "two", None, LEASE)
        .await;
    assert!(
        matches!(refused, Err(Error::TurnInProgress { active_turn_id }) if active_turn_id == first)
    );
    let session = store.session(session_id).await.unwrap();
    assert_eq!(session.status, SessionStatus::Running);
    assert_eq!(session.active_turn_id, Some(first));
    // The refused turn left nothing behind.
    assert_eq!(all_events(store, session_id).await.len(), 1);
    assert_eq!(store.list_turns(session_id).await.unwrap().len(), 1);
}

pub async fn appending_to_a_turn_that_is_not_running_is_refused(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let stranger = Uuid::new_v4();
    assert!(matches!(
        store.append(session_id, stranger, &[text("x")]).await,
        Err(Error::TurnNotRunning(id)) if id == stranger
    ));
    let turn_id = begin(store, session_id, "go").await;
    store
        .end_turn(session_id, turn_id, &end(TurnEndKind::Completed, 0, 0))
        .await
        .unwrap();
    assert!(matches!(
        store.append(session_id, turn_id, &[text("late")]).await,
        Err(Error::TurnNotRunning(_))
    ));
    assert!(matches!(
        store
            .end_turn(session_id, turn_id, &end(TurnEndKind::Completed, 0, 0))
            .await,
        Err(Error::TurnNotRunning(_))
    ));
    assert_eq!(all_events(store, session_id).await.len(), 2);
}

pub async fn ending_a_turn_records_kind_usage_and_frees_the_session(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let first = begin(store, session_id, "one").await;
    store
        .end_turn(session_id, first, &end(TurnEndKind::Completed, 10, 5))
        .await
        .unwrap();
    let second = begin(store, session_id, "two").await;
    store
        .append(session_id, second, &[text("x")])
        .await
        .unwrap();
    let running = store.turn(session_id, second).await.unwrap();
    assert_eq!(running.status, TurnStatus::Running);
    assert_eq!((running.first_seq, running.last_seq), (3, 4));
    let error = ErrorInfo {
        code: "rate_limit_error".into(),
        message: "slow down".into(),
        status: Some(429),
    };
    let ended = store
        .end_turn(
            session_id,
            second,
            &TurnEnd {
                kind: TurnEndKind::Error,
                error: Some(error.clone()),
                usage: Usage {
                    input_tokens: 1,
                    output_tokens: 2,
                    cache_read_tokens: 3,
                    reasoning_tokens: 4,
                },
            },
        )
        .await
        .unwrap();
    assert_eq!((ended.seq, &*ended.event_type), (5, "turn/end"));
    let turn = store.turn(session_id, second).await.unwrap();
    assert_eq!(turn.status, TurnStatus::Ended);
    assert_eq!(turn.end_kind, Some(TurnEndKind::Error));
    assert_eq!(turn.error, Some(error));
    assert_eq!((turn.first_seq, turn.last_seq), (3, 5));
    assert!(turn.ended_at.is_some());
    let session = store.session(session_id).await.unwrap();
    assert_eq!(session.status, SessionStatus::Idle);
    assert_eq!(session.active_turn_id, None);
    assert_eq!(
        session.usage,
        Usage {
            input_tokens: 11,
            output_tokens: 7,
            cache_read_tokens: 3,
            reasoning_tokens: 4
        }
    );
    let turns: Vec<Uuid> = store
        .list_turns(session_id)
        .await
        .unwrap()
        .iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(turns, vec![first, second]);
}

pub async fn idempotency_key_returns_the_same_turn(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let turn_id = Uuid::new_v4();
    let first = store
        .begin_turn(session_id, turn_id, "go", Some("key-1"), LEASE)
        .await
        .unwrap();
    assert!(matches!(first, BeginTurn::Started(..)));
    // Repeated while running and after it ended: the same turn, nothing new stored.
    for _ in 0..2 {
        match store
            .begin_turn(session_id, Uuid::new_v4(), "go", Some("key-1"), LEASE)
            .await
            .unwrap()
        {
            BeginTurn::Existing(turn) => assert_eq!(turn.id, turn_id),
            BeginTurn::Started(..) => panic!("a repeated key started a second turn"),
        }
        if store
            .session(session_id)
            .await
            .unwrap()
            .active_turn_id
            .is_some()
        {
            store
                .end_turn(session_id, turn_id, &end(TurnEndKind::Completed, 0, 0))
                .await
                .unwrap();
        }
    }
    assert_eq!(all_events(store, session_id).await.len(), 2);
    // Keys are per session.
    let other = new_session(store).await;
    assert!(matches!(
        store
            .begin_turn(other, Uuid::new_v4(), "go", Some("key-1"), LEASE)
            .await
            .unwrap(),
        BeginTurn::Started(..)
    ));
}

pub async fn load_after_returns_exactly_the_later_events(store: &dyn EventStore) {
    let session_id = session_with_finished_turn(store).await;
    let all = all_events(store, session_id).await;
    assert_eq!(all.len(), 5);
    for k in 0..=5u64 {
        let later = store.load(session_id, k, None).await.unwrap();
        let seqs: Vec<u64> = later.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, (k + 1..=5).collect::<Vec<_>>());
    }
    let page: Vec<u64> = store
        .load(session_id, 1, Some(2))
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(page, vec![2, 3]);
    let types: Vec<&str> = all.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(
        types,
        vec![
            "user/message",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "turn/end"
        ]
    );
}

pub async fn conversation_skips_chunks(store: &dyn EventStore) {
    let session_id = new_session(store).await;
    let turn_id = begin(store, session_id, "list").await;
    let call = ToolCall::new("c1", "bash", r#"{"command":"ls"}"#);
    store
        .append(
            session_id,
            turn_id,
            &[
                EventData::AssistantChunk(Chunk::ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }),
                EventData::AssistantChunk(Chunk::Finish(agentd_events::Finish {
                    kind: FinishKind::ToolCalls,
                    usage: None,
                    error: None,
                })),
                EventData::AssistantMessage {
                    message: Message::Assistant {
                        content: String::new(),
                        tool_calls: vec![call],
                        reasoning_content: None,
                    },
                },
                EventData::ToolStart(agentd_events::ToolStart {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }),
                EventData::ToolResult(ToolResult {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    text: "a b".into(),
                    is_error: false,
                    exit_code: Some(0),
                    truncated: false,
                    duration_ms: 4,
                }),
            ],
        )
        .await
        .unwrap();
    let conversation = store.load_conversation(session_id).await.unwrap();
    let kinds: Vec<(u64, &str)> = conversation
        .iter()
        .map(|e| (e.seq, e.data.type_name()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (1, "user/message"),
            (4, "assistant/message"),
            (6, "tool/result")
        ]
    );
}

pub async fn running_turns_lists_unfinished_turns(store: &dyn EventStore) {
    let done = session_with_finished_turn(store).await;
    let busy = new_session(store).await;
    let turn_id = begin(store, busy, "work").await;
    let running: Vec<(Uuid, Uuid)> = store
        .running_turns()
        .await
        .unwrap()
        .iter()
        .map(|t| (t.session_id, t.id))
        .collect();
    assert_eq!(running, vec![(busy, turn_id)]);
    assert_ne!(done, busy);
}

pub async fn unknown_ids_are_not_found(store: &dyn EventStore) {
    let nobody = Uuid::new_v4();
    assert!(matches!(
        store.session(nobody).await,
        Err(Error::SessionNotFound(_))
    ));
    assert!(matches!(
        store.load(nobody, 0, None).await,
        Err(Error::SessionNotFound(_))
    ));
    assert!(matches!(
        store.list_turns(nobody).await,
        Err(Error::SessionNotFound(_))
    ));
    assert!(matches!(
        store
            .begin_turn(nobody, Uuid::new_v4(), "x", None, LEASE)
            .await,
        Err(Error::SessionNotFound(_))
    ));
    let session_id = new_session(store).await;
    assert!(matches!(
        store.turn(session_id, nobody).await,
        Err(Error::TurnNotFound(_))
    ));
    assert_eq!(store.load(session_id, 0, None).await.unwrap(), vec![]);
    store.ping().await.unwrap();
}
