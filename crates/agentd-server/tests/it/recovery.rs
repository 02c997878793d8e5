//! Crash recovery: turns a dead process left running are closed at start-up.

use std::sync::Arc;

use agentd_events::{EventData, Message, ToolCall};
use agentd_store::{EventStore, NewSession, SqliteStore};
use agentd_testkit::Reply;
use pretty_assertions::assert_eq;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{spawn_app_in, types};

#[tokio::test]
async fn a_turn_left_running_by_a_crash_ends_interrupted_and_the_session_goes_on() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    // What a process killed mid-tool leaves behind: a running turn whose call has no result.
    let url = format!("sqlite://{}", dir.path().join("agentd.db").display());
    let session_id = {
        let store = SqliteStore::open(&url).await.unwrap();
        let session = store.create_session(NewSession::default()).await.unwrap();
        let turn_id = Uuid::new_v4();
        store
            .begin_turn(
                session.id,
                turn_id,
                "run it",
                None,
                std::time::Duration::from_secs(60),
            )
            .await
            .unwrap();
        let call = ToolCall::new("call_9", "bash", r#"{"command":"sleep 100"}"#);
        store
            .append(
                session.id,
                turn_id,
                &[EventData::AssistantMessage {
                    message: Message::Assistant {
                        content: String::new(),
                        tool_calls: vec![call],
                        reasoning_content: None,
                    },
                }],
            )
            .await
            .unwrap();
        session.id
    };

    let app = spawn_app_in(dir, vec![Reply::text("fresh start")]).await;
    let session = session_id.to_string();
    let seen = app.replay(&session, "", None).await;
    assert_eq!(
        types(&seen),
        vec![
            "user/message",
            "assistant/message",
            "tool/result",
            "turn/end"
        ]
    );
    assert_eq!(
        seen[2].data["data"],
        json!({"call_id": "call_9", "name": "bash", "is_error": true, "duration_ms": 0,
               "text": "error: interrupted by server restart; the command was not run again"})
    );
    assert_eq!(seen[3].data["data"]["kind"], json!("interrupted"));

    // The next turn runs, and its request answers the interrupted call.
    let next = app.run_turn(&session, "again").await;
    assert_eq!(
        next.last().unwrap().data["data"]["kind"],
        json!("completed")
    );
    let request = &app.model.requests()[0];
    assert_eq!(
        request["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_9",
               "content": "error: interrupted by server restart; the command was not run again"})
    );
}
