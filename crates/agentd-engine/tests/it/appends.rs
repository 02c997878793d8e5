//! How a turn's events are grouped into store transactions, and that the grouping never
//! changes the log's order.

use agentd_events::EventData;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{answer, calls, harness, outline, wait_for};

#[tokio::test]
async fn tool_events_share_appends_with_their_neighbours_in_log_order() {
    let h = harness(vec![
        calls(&[
            ("a", "echo", json!({"text": "one"})),
            ("b", "echo", json!({"text": "two"})),
        ]),
        answer("done"),
    ])
    .await;
    let session = h.session().await;
    h.turn(session, "hi").await;

    assert_eq!(
        h.store.writes(),
        vec![
            vec!["user/message"],
            vec!["assistant/chunk"; 3],
            vec!["assistant/message", "tool/start"],
            vec!["tool/result", "tool/start"],
            vec!["tool/result"],
            vec!["assistant/chunk"; 2],
            vec!["assistant/message"],
            vec!["turn/end"],
        ]
    );
    assert_eq!(
        outline(&h.log(session).await),
        [
            "user/message",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "tool/start a",
            "tool/result a",
            "tool/start b",
            "tool/result b",
            "assistant/chunk",
            "assistant/chunk",
            "assistant/message",
            "turn/end",
        ]
    );
}

#[tokio::test]
async fn a_call_reached_after_cancel_gets_a_not_executed_result_and_no_start() {
    let h = harness(vec![calls(&[
        ("a", "wait", json!({})),
        ("b", "echo", json!({"text": "never"})),
    ])])
    .await;
    let session = h.session().await;
    let turn = h.start(&h.engine, session, "hi").await;
    wait_for(&h.engine, session, 0, "tool/start").await;
    h.engine.cancel_turn(session, turn.id).await.unwrap();
    wait_for(&h.engine, session, 0, "turn/end").await;

    assert_eq!(
        h.store.writes(),
        vec![
            vec!["user/message"],
            vec!["assistant/chunk"; 3],
            vec!["assistant/message", "tool/start"],
            vec!["tool/result", "tool/result"],
            vec!["turn/end"],
        ]
    );
    let log = h.log(session).await;
    assert_eq!(
        outline(&log[4..]),
        [
            "assistant/message",
            "tool/start a",
            "tool/result a",
            "tool/result b",
            "turn/end",
        ]
    );
    let EventData::ToolResult(skipped) = &log[7].data else {
        panic!("not a tool result: {:?}", log[7]);
    };
    assert_eq!(
        (skipped.text.as_str(), skipped.is_error, skipped.duration_ms),
        (
            "error: not executed: the turn was stopped before this call ran",
            true,
            0
        )
    );
}
