//! Every OpenAI and DeepSeek transcript in `../shared/fixtures` replayed through
//! `openai_chunks`, whole and in 1-, 2-, 3-, 7- and 64-byte reads, against its
//! `.expected.json` (fields explained in the fixtures' README).
//!
//! Not covered yet (Anthropic Messages is a later issue): `anthropic_text.sse`,
//! `anthropic_tool_use_split.sse`, `anthropic_parallel_tools.sse`,
//! `anthropic_max_tokens_mid_args.sse`. `sse_framing_mixed.sse` is checked in `framing.rs`.

use std::collections::BTreeSet;

use agentd_events::{ErrorInfo, Finish, FinishKind, Usage};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Replay, chunks_of, fixture, fixtures_dir, replay};

/// The transcripts this module replays; `every_openai_fixture_is_replayed` keeps it complete.
const COVERED: [&str; 8] = [
    "openai_text.sse",
    "openai_tool_call_split.sse",
    "openai_parallel_tools.sse",
    "openai_max_tokens_mid_args.sse",
    "openai_stream_error.sse",
    "openai_http_429.http",
    "deepseek_chat_tool_call.sse",
    "deepseek_thinking_tool_call.sse",
];

/// Read sizes each transcript is also fed in, besides whole.
const READ_SIZES: [usize; 5] = [1, 2, 3, 7, 64];

#[tokio::test]
async fn openai_text_with_split_utf8_and_trailing_usage_chunk_replays() {
    check("openai_text.sse").await;
}

#[tokio::test]
async fn openai_tool_call_with_a_fragment_ending_in_a_backslash_replays() {
    check("openai_tool_call_split.sse").await;
}

#[tokio::test]
async fn openai_parallel_tool_calls_by_index_replay() {
    check("openai_parallel_tools.sse").await;
}

#[tokio::test]
async fn openai_length_finish_mid_arguments_replays_as_max_tokens() {
    check("openai_max_tokens_mid_args.sse").await;
}

#[tokio::test]
async fn openai_error_object_after_http_200_replays_with_the_partial_text() {
    check("openai_stream_error.sse").await;
}

#[tokio::test]
async fn openai_http_429_replays_as_an_error_finish_with_status() {
    check("openai_http_429.http").await;
}

#[tokio::test]
async fn deepseek_tool_call_with_usage_on_the_finish_chunk_replays() {
    check("deepseek_chat_tool_call.sse").await;
}

#[tokio::test]
async fn deepseek_reasoning_then_tool_call_replays() {
    check("deepseek_thinking_tool_call.sse").await;
}

#[test]
fn every_openai_and_deepseek_fixture_is_replayed() {
    let present: BTreeSet<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("openai_") || name.starts_with("deepseek_"))
        .filter(|name| !name.ends_with(".expected.json"))
        .collect();
    let covered: BTreeSet<String> = COVERED.iter().map(|s| s.to_string()).collect();
    assert_eq!(present, covered);
}

/// Replays `name` whole and split, against its expected JSON; every split yields exactly
/// the chunks of the whole body.
async fn check(name: &str) {
    let (status, body) = load(name);
    let whole = chunks_of(status, &body, usize::MAX).await;
    assert_eq!(replay(&whole), expected(name), "{name}, whole");
    for size in READ_SIZES {
        let split = chunks_of(status, &body, size).await;
        assert_eq!(split, whole, "{name} in {size}-byte reads");
    }
}

/// The status and body of a fixture: 200 and the file for `.sse`; for `.http`, the status
/// line's code and what follows the blank line.
fn load(name: &str) -> (u16, Vec<u8>) {
    let bytes = fixture(name);
    if !name.ends_with(".http") {
        return (200, bytes);
    }
    let text = String::from_utf8(bytes).unwrap();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .or_else(|| text.split_once("\n\n"))
        .unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, body.as_bytes().to_vec())
}

/// `NAME.expected.json` as the [`Replay`] our chunks must fold into.
fn expected(name: &str) -> Replay {
    let stem = name.rsplit_once('.').unwrap().0;
    let json: Value = serde_json::from_slice(&fixture(&format!("{stem}.expected.json"))).unwrap();
    let str_of = |v: &Value| v.as_str().unwrap().to_owned();
    let status = json["http_status"].as_u64().unwrap() as u16;
    let error = (!json["error"].is_null()).then(|| ErrorInfo {
        code: str_of(&json["error"]["type"]),
        message: str_of(&json["error"]["message"]),
        status: (status != 200).then_some(status),
    });
    let kind = match json["finish"]["kind"].as_str().unwrap() {
        "stop" => FinishKind::Completed,
        "tool-calls" => FinishKind::ToolCalls,
        "max-tokens" => FinishKind::MaxTokens,
        "error" => FinishKind::Error,
        other => panic!("{name}: finish kind {other} has no mapping in this test yet"),
    };
    let count = |key: &str| json["usage"][key].as_u64().unwrap_or(0);
    let usage = (!json["usage"].is_null()).then(|| Usage {
        input_tokens: count("input_tokens"),
        output_tokens: count("output_tokens"),
        cache_read_tokens: count("cache_read_tokens"),
        reasoning_tokens: count("reasoning_tokens"),
    });
    let tool_calls = json["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                str_of(&c["id"]),
                str_of(&c["name"]),
                str_of(&c["arguments"]),
            )
        })
        .collect();
    Replay {
        text: str_of(&json["text"]),
        reasoning: str_of(&json["reasoning"]),
        tool_calls,
        finish: Finish { kind, usage, error },
    }
}
