//! The event envelope and every event payload (DESIGN.md §4).

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use uuid::Uuid;

use crate::chunk::{Chunk, ErrorInfo, Usage};
use crate::message::Message;

/// One entry of a session's append-only log, stored and streamed alike:
/// `{"seq","session_id","turn_id","type","at","data"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the session's log: 1, 2, 3, … with no gaps. Also the SSE `id`.
    pub seq: u64,
    /// The session this event belongs to.
    pub session_id: Uuid,
    /// The turn that produced it.
    pub turn_id: Uuid,
    /// When it was appended, UTC, serialised as RFC 3339 with milliseconds.
    #[serde(serialize_with = "serialize_time")]
    pub at: DateTime<Utc>,
    /// `type` and `data`.
    #[serde(flatten)]
    pub data: EventData,
}

/// An event's `type` and `data`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum EventData {
    /// The user's message that starts a turn: `{"text"}`.
    #[serde(rename = "user/message")]
    UserMessage {
        /// What the user wrote.
        text: String,
    },
    /// One streamed piece of the model's response.
    #[serde(rename = "assistant/chunk")]
    AssistantChunk(Chunk),
    /// The assembled assistant message of one step: `{"message"}` in the OpenAI shape.
    #[serde(rename = "assistant/message")]
    AssistantMessage {
        /// Always a [`Message::Assistant`].
        message: Message,
    },
    /// A tool call is about to run.
    #[serde(rename = "tool/start")]
    ToolStart(ToolStart),
    /// A tool call's result, which the model sees.
    #[serde(rename = "tool/result")]
    ToolResult(ToolResult),
    /// A model request is retried after a transient failure.
    #[serde(rename = "provider/retry")]
    ProviderRetry(ProviderRetry),
    /// The turn is over; exactly one per turn.
    #[serde(rename = "turn/end")]
    TurnEnd(TurnEnd),
}

impl EventData {
    /// The event's `type` string, e.g. `"assistant/chunk"`.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventData::UserMessage { .. } => "user/message",
            EventData::AssistantChunk(_) => "assistant/chunk",
            EventData::AssistantMessage { .. } => "assistant/message",
            EventData::ToolStart(_) => "tool/start",
            EventData::ToolResult(_) => "tool/result",
            EventData::ProviderRetry(_) => "provider/retry",
            EventData::TurnEnd(_) => "turn/end",
        }
    }
}

/// Data of `tool/start`: `{"call_id","name","arguments"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolStart {
    /// The tool call's id, as in the assistant message.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// The raw argument text.
    pub arguments: String,
}

/// Data of `tool/result`:
/// `{"call_id","name","text","is_error","exit_code"?,"truncated"?,"duration_ms"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The tool call's id, as in the assistant message.
    pub call_id: String,
    /// The tool's name.
    pub name: String,
    /// What the model reads as the result.
    pub text: String,
    /// Whether the call failed (bad arguments, unknown tool, non-zero exit, timeout, …).
    pub is_error: bool,
    /// The process exit code, for tools that run one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Whether `text` was cut to the output cap.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// Wall-clock time of the call, in milliseconds.
    pub duration_ms: u64,
}

/// Data of `provider/retry`: `{"attempt","status"?,"delay_ms","message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderRetry {
    /// The attempt that is about to start (2 for the first retry).
    pub attempt: u32,
    /// The HTTP status of the failed attempt, where there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// How long agentd waits before the attempt, in milliseconds.
    pub delay_ms: u64,
    /// Why the previous attempt failed.
    pub message: String,
}

/// Data of `turn/end`: `{"kind","error"?,"usage"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnEnd {
    /// How the turn ended.
    pub kind: TurnEndKind,
    /// For `error` (and `interrupted`/`cancelled` where useful): what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorInfo>,
    /// Token usage summed over the turn's model requests.
    #[serde(default)]
    pub usage: Usage,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TurnEndKind {
    /// The model answered without calling a tool.
    Completed,
    /// A model request failed.
    Error,
    /// The model's message was cut by the token limit; its tools did not run.
    MaxTokens,
    /// The turn hit its step limit.
    MaxSteps,
    /// A client cancelled the turn.
    Cancelled,
    /// The server stopped or crashed while the turn ran.
    Interrupted,
}

impl TurnEndKind {
    /// The kebab-case name, as in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnEndKind::Completed => "completed",
            TurnEndKind::Error => "error",
            TurnEndKind::MaxTokens => "max-tokens",
            TurnEndKind::MaxSteps => "max-steps",
            TurnEndKind::Cancelled => "cancelled",
            TurnEndKind::Interrupted => "interrupted",
        }
    }
}

/// Serialises an envelope from its parts, exactly as [`Event`] would serialise, without
/// cloning `data`: `{"seq","session_id","turn_id","at","type","data"}` on one line.
pub fn envelope_json(
    seq: u64,
    session_id: Uuid,
    turn_id: Uuid,
    at: &DateTime<Utc>,
    data: &EventData,
) -> String {
    envelope_with_seq(seq, &envelope_tail(session_id, turn_id, at, data))
}

/// The envelope of [`envelope_json`] without its seq: everything after `{"seq":N`, from
/// `,"session_id":…` to the closing `}`. For a store that learns the seq only inside its
/// insert statement; [`envelope_with_seq`] puts the two together.
pub fn envelope_tail(
    session_id: Uuid,
    turn_id: Uuid,
    at: &DateTime<Utc>,
    data: &EventData,
) -> String {
    #[derive(Serialize)]
    struct Envelope<'a> {
        seq: u8,
        session_id: Uuid,
        turn_id: Uuid,
        at: String,
        #[serde(flatten)]
        data: &'a EventData,
    }
    let envelope = Envelope {
        seq: 0,
        session_id,
        turn_id,
        at: format_time(at),
        data,
    };
    // Serialising these types cannot fail: every map key is a string.
    let json = serde_json::to_string(&envelope).unwrap_or_default();
    json.strip_prefix(SEQ_PREFIX_ZERO)
        .map(str::to_owned)
        .unwrap_or_default()
}

/// The envelope whose seq is `seq` and the rest `tail` (from [`envelope_tail`]).
pub fn envelope_with_seq(seq: u64, tail: &str) -> String {
    format!("{SEQ_PREFIX}{seq}{tail}")
}

/// How every envelope begins, up to its seq's digits.
pub const SEQ_PREFIX: &str = "{\"seq\":";
const SEQ_PREFIX_ZERO: &str = "{\"seq\":0";

/// Formats a timestamp the way events carry it: RFC 3339, UTC, milliseconds, `Z`.
pub fn format_time(at: &DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn serialize_time<S: Serializer>(at: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_time(at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn envelope_serialises_as_designed_and_round_trips() {
        let event = Event {
            seq: 7,
            session_id: Uuid::nil(),
            turn_id: Uuid::nil(),
            at: DateTime::parse_from_rfc3339("2026-11-30T08:00:00.123456Z")
                .unwrap()
                .with_timezone(&Utc),
            data: EventData::AssistantChunk(Chunk::Text {
                content: "hi".into(),
            }),
        };
        let value = serde_json::to_value(&event).unwrap();
        assert_eq!(
            value,
            json!({
                "seq": 7,
                "session_id": "00000000-0000-0000-0000-000000000000",
                "turn_id": "00000000-0000-0000-0000-000000000000",
                "at": "2026-11-30T08:00:00.123Z",
                "type": "assistant/chunk",
                "data": {"type": "text", "content": "hi"}
            })
        );
        let back: Event = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(back.data, event.data);
        let built = envelope_json(7, Uuid::nil(), Uuid::nil(), &event.at, &event.data);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&built).unwrap(),
            value
        );
        // Byte for byte what serde writes for the event, also when put together from a
        // tail (as Postgres does in its insert statement).
        assert_eq!(built, serde_json::to_string(&event).unwrap());
        for seq in [1, 7, 10, u64::MAX] {
            let tail = envelope_tail(Uuid::nil(), Uuid::nil(), &event.at, &event.data);
            assert!(tail.starts_with(",\"session_id\":"), "{tail}");
            assert_eq!(
                envelope_with_seq(seq, &tail),
                serde_json::to_string(&Event {
                    seq,
                    ..event.clone()
                })
                .unwrap()
            );
        }
    }

    #[test]
    fn tool_result_omits_false_truncated_and_missing_exit_code() {
        let data = EventData::ToolResult(ToolResult {
            call_id: "c1".into(),
            name: "bash".into(),
            text: "ok".into(),
            is_error: false,
            exit_code: None,
            truncated: false,
            duration_ms: 3,
        });
        assert_eq!(
            serde_json::to_value(&data).unwrap(),
            json!({"type": "tool/result", "data": {
                "call_id": "c1", "name": "bash", "text": "ok", "is_error": false, "duration_ms": 3
            }})
        );
    }

    #[test]
    fn turn_end_kinds_are_kebab_case() {
        let end = TurnEnd {
            kind: TurnEndKind::MaxTokens,
            error: None,
            usage: Usage::default(),
        };
        assert_eq!(
            serde_json::to_value(&end).unwrap()["kind"],
            json!("max-tokens")
        );
        assert_eq!(TurnEndKind::MaxSteps.as_str(), "max-steps");
    }
}
