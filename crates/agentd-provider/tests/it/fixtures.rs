//! Every provider transcript in `../shared/fixtures` replayed through `openai_chunks` or
//! `anthropic_chunks`, whole and in 1-, 2-, 3-, 5-, 7- and 64-byte reads, against its
//! `.expected.json` (fields explained in the fixtures' README). `sse_framing_mixed.sse` is
//! checked in `framing.rs`.
//!
//! One deliberate difference: `anthropic_max_tokens_mid_args.expected.json` lists the
//! `tool_use` block cut by `max_tokens` (with `execute_tools: false`); we never emit a
//! block that did not reach `content_block_stop` (issue 3), so an expected call with
//! invalid JSON in a max-tokens Anthropic response is expected to be absent.

use std::collections::BTreeSet;

use agentd_events::{ErrorInfo, Finish, FinishKind, Usage};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{Format, Replay, fixture, fixtures_dir, replay, split_chunks};

/// The transcripts this module replays; `every_openai_fixture_is_replayed` keeps it complete.
const COVERED: [&str; 12] = [
    "openai_text.sse",
    "openai_tool_call_split.sse",
    "openai_parallel_tools.sse",
    "openai_max_tokens_mid_args.sse",
    "openai_stream_error.sse",
    "openai_http_429.http",
    "deepseek_chat_tool_call.sse",
    "deepseek_thinking_tool_call.sse",
    "anthropic_text.sse",
    "anthropic_tool_use_split.sse",
    "anthropic_parallel_tools.sse",
    "anthropic_max_tokens_mid_args.sse",
];

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

#[tokio::test]
async fn anthropic_text_with_ping_and_cumulative_output_usage_replays() {
    check("anthropic_text.sse").await;
}

#[tokio::test]
async fn anthropic_tool_use_with_input_json_split_replays() {
    check("anthropic_tool_use_split.sse").await;
}

#[tokio::test]
async fn anthropic_parallel_tool_use_blocks_with_cache_reads_replay() {
    check("anthropic_parallel_tools.sse").await;
}

#[tokio::test]
async fn anthropic_max_tokens_drops_the_open_tool_block() {
    check("anthropic_max_tokens_mid_args.sse").await;
}

#[test]
fn every_provider_fixture_is_replayed() {
    let present: BTreeSet<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("sse_") && !name.starts_with("README"))
        .filter(|name| !name.ends_with(".expected.json"))
        .collect();
    let covered: BTreeSet<String> = COVERED.iter().map(|s| s.to_string()).collect();
    assert_eq!(present, covered);
}

/// Replays `name` whole and split, against its expected JSON; every split yields exactly
/// the chunks of the whole body.
async fn check(name: &str) {
    let (status, body) = load(name);
    let format = match name.starts_with("anthropic_") {
        true => Format::Anthropic,
        false => Format::OpenAi,
    };
    let whole = split_chunks(format, status, &body).await;
    assert_eq!(replay(&whole), expected(name), "{name}");
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
    let cut_anthropic_block = |c: &&Value| {
        name.starts_with("anthropic_")
            && kind == FinishKind::MaxTokens
            && c["arguments_valid_json"] == false
    };
    let tool_calls = json["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !cut_anthropic_block(c))
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
