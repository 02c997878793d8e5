//! The conversations an engine keeps between a session's turns: used only while nothing else
//! was appended, and then asking the model exactly what reading the store would.

use agentd_events::{EventData, Message, derive_messages};
use agentd_store::EventStore;
use pretty_assertions::assert_eq;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Harness, answer, calls, harness};

/// The messages derived from the store for the session's last turn's first request.
async fn derived_from_store(h: &Harness, session: Uuid) -> Vec<Message> {
    let conversation = h.store.inner.load_conversation(session).await.unwrap();
    let last_user = conversation
        .iter()
        .rposition(|event| matches!(event.data, EventData::UserMessage { .. }))
        .unwrap();
    derive_messages(Some("You are a test."), &conversation[..=last_user])
}

#[tokio::test]
async fn a_sessions_next_turn_asks_from_its_kept_conversation_without_reading_the_store() {
    let h = harness(vec![
        calls(&[("a", "echo", json!({"text": "one"}))]),
        answer("first"),
        answer("second"),
    ])
    .await;
    let session = h.session().await;
    h.turn(session, "hi").await;
    h.turn(session, "again").await;

    assert_eq!(h.store.conversation_loads(), 0);
    let requests = h.provider.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].messages, derived_from_store(&h, session).await);
}

#[tokio::test]
async fn a_turn_after_another_replica_appended_reads_the_store() {
    let h = harness(vec![
        answer("one"),
        answer("two"),
        answer("three"),
        answer("four"),
    ])
    .await;
    let other = h.replica();
    let session = h.session().await;
    h.turn(session, "first").await;
    h.turn_on(&other, session, "second").await;
    assert_eq!(
        h.store.conversation_loads(),
        1,
        "the other replica kept nothing"
    );

    h.turn(session, "third").await;
    assert_eq!(
        h.store.conversation_loads(),
        2,
        "what this one kept is stale"
    );
    let requests = h.provider.requests();
    assert_eq!(requests[2].messages, derived_from_store(&h, session).await);

    h.turn(session, "fourth").await;
    assert_eq!(
        h.store.conversation_loads(),
        2,
        "kept again after the third turn"
    );
    let requests = h.provider.requests();
    assert_eq!(requests[3].messages, derived_from_store(&h, session).await);
}
