use super::*;
use crate::event::ToolResult;
use chrono::Utc;
use pretty_assertions::assert_eq;
use uuid::Uuid;

fn log(data: Vec<EventData>) -> Vec<Event> {
    data.into_iter()
        .enumerate()
        .map(|(i, data)| Event {
            seq: i as u64 + 1,
            session_id: Uuid::nil(),
            turn_id: Uuid::nil(),
            at: Utc::now(),
            data,
        })
        .collect()
}

fn user(text: &str) -> EventData {
    EventData::UserMessage { text: text.into() }
}

fn assistant(content: &str, calls: Vec<ToolCall>, reasoning: Option<&str>) -> EventData {
    EventData::AssistantMessage {
        message: Message::Assistant {
            content: content.into(),
            tool_calls: calls,
            reasoning_content: reasoning.map(str::to_owned),
        },
    }
}

fn result(call_id: &str, text: &str) -> EventData {
    EventData::ToolResult(ToolResult {
        call_id: call_id.into(),
        name: "bash".into(),
        text: text.into(),
        is_error: false,
        exit_code: Some(0),
        truncated: false,
        duration_ms: 1,
    })
}

fn tool(id: &str, content: &str) -> Message {
    Message::Tool {
        tool_call_id: id.into(),
        content: content.into(),
    }
}

fn assistant_msg(content: &str, calls: Vec<ToolCall>, reasoning: Option<&str>) -> Message {
    Message::Assistant {
        content: content.into(),
        tool_calls: calls,
        reasoning_content: reasoning.map(str::to_owned),
    }
}

#[test]
fn tool_results_follow_their_call_in_call_order() {
    let calls = vec![
        ToolCall::new("a", "bash", r#"{"command":"ls"}"#),
        ToolCall::new("b", "bash", r#"{"command":"pwd"}"#),
    ];
    let events = log(vec![
        user("hi"),
        EventData::AssistantChunk(crate::Chunk::Text {
            content: "ignored".into(),
        }),
        assistant("", calls.clone(), None),
        result("b", "/w"),
        result("a", "x y"),
        assistant("done", vec![], None),
    ]);
    assert_eq!(
        derive_messages(Some("be brief"), &events),
        vec![
            Message::System {
                content: "be brief".into()
            },
            Message::User {
                content: "hi".into()
            },
            assistant_msg("", calls, None),
            tool("a", "x y"),
            tool("b", "/w"),
            assistant_msg("done", vec![], None),
        ]
    );
}

#[test]
fn missing_results_are_synthesised_as_not_executed() {
    let calls = vec![
        ToolCall::new("a", "bash", "{}"),
        ToolCall::new("b", "bash", "{}"),
    ];
    let events = log(vec![
        user("go"),
        assistant("", calls.clone(), None),
        result("a", "ran"),
        user("next"),
    ]);
    assert_eq!(
        derive_messages(None, &events),
        vec![
            Message::User {
                content: "go".into()
            },
            assistant_msg("", calls, None),
            tool("a", "ran"),
            tool("b", NOT_EXECUTED),
            Message::User {
                content: "next".into()
            },
        ]
    );
}

#[test]
fn trailing_calls_without_results_are_closed_too() {
    let calls = vec![ToolCall::new("a", "bash", "{}")];
    let events = log(vec![user("go"), assistant("", calls.clone(), None)]);
    assert_eq!(
        derive_messages(None, &events),
        vec![
            Message::User {
                content: "go".into()
            },
            assistant_msg("", calls, None),
            tool("a", NOT_EXECUTED),
        ]
    );
}

#[test]
fn duplicate_and_stray_results_are_dropped() {
    let calls = vec![ToolCall::new("a", "bash", "{}")];
    let events = log(vec![
        user("go"),
        result("zz", "stray before any call"),
        assistant("", calls.clone(), None),
        result("a", "first"),
        result("a", "second"),
        result("unknown", "stray"),
    ]);
    assert_eq!(
        derive_messages(None, &events),
        vec![
            Message::User {
                content: "go".into()
            },
            assistant_msg("", calls, None),
            tool("a", "first"),
        ]
    );
}

#[test]
fn reused_call_ids_in_later_messages_get_their_own_results() {
    let calls = vec![ToolCall::new("call_0", "bash", "{}")];
    let events = log(vec![
        user("1"),
        assistant("", calls.clone(), None),
        result("call_0", "one"),
        assistant("", calls.clone(), None),
        result("call_0", "two"),
    ]);
    assert_eq!(
        derive_messages(None, &events),
        vec![
            Message::User {
                content: "1".into()
            },
            assistant_msg("", calls.clone(), None),
            tool("call_0", "one"),
            assistant_msg("", calls, None),
            tool("call_0", "two"),
        ]
    );
}

#[test]
fn invalid_or_empty_arguments_are_replayed_as_an_empty_object() {
    let events = log(vec![
        user("go"),
        assistant(
            "",
            vec![
                ToolCall::new("a", "bash", r#"{"command":"cat > x <<'EOF'\n# Pl"#),
                ToolCall::new("b", "bash", ""),
            ],
            None,
        ),
    ]);
    assert_eq!(
        derive_messages(None, &events),
        vec![
            Message::User {
                content: "go".into()
            },
            assistant_msg(
                "",
                vec![
                    ToolCall::new("a", "bash", "{}"),
                    ToolCall::new("b", "bash", "{}")
                ],
                None
            ),
            tool("a", NOT_EXECUTED),
            tool("b", NOT_EXECUTED),
        ]
    );
}

#[test]
fn reasoning_is_kept_only_on_tool_calling_messages() {
    let calls = vec![ToolCall::new("a", "bash", "{}")];
    let events = log(vec![
        user("go"),
        assistant("", calls.clone(), Some("need to look")),
        result("a", "ok"),
        assistant("answer", vec![], Some("now answer")),
    ]);
    assert_eq!(
        derive_messages(Some(""), &events),
        vec![
            Message::User {
                content: "go".into()
            },
            assistant_msg("", calls, Some("need to look")),
            tool("a", "ok"),
            assistant_msg("answer", vec![], None),
        ]
    );
}

#[test]
fn derived_messages_pushed_one_event_at_a_time_match_derive_messages_after_every_event() {
    let calls = vec![
        ToolCall::new("a", "bash", r#"{"command":"ls"}"#),
        ToolCall::new("b", "bash", "not json"),
    ];
    let events = log(vec![
        user("hi"),
        result("zz", "stray before any call"),
        assistant("", calls.clone(), Some("need to look")),
        EventData::AssistantChunk(crate::Chunk::Text {
            content: "ignored".into(),
        }),
        result("b", "/w"),
        result("b", "second result for b"),
        result("a", "x y"),
        assistant("", calls.clone(), None),
        result("a", "only a"),
        user("next"),
        assistant("", calls, None),
        assistant("done", vec![], Some("dropped")),
    ]);
    let mut derived = DerivedMessages::default();
    assert_eq!(
        derived.messages(Some("be brief")),
        derive_messages(Some("be brief"), &[])
    );
    for seen in 1..=events.len() {
        derived.push(&events[seen - 1].data);
        assert_eq!(
            derived.messages(Some("be brief")),
            derive_messages(Some("be brief"), &events[..seen]),
            "after {seen} events"
        );
        assert_eq!(
            derived.clone().into_messages(None),
            derive_messages(None, &events[..seen]),
            "after {seen} events, without a system prompt"
        );
    }
}
