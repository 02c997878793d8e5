//! Property tests of the SSE-to-chunks path, for both formats (bounded: 64 cases each, a few
//! seconds in all). A random valid response (text pieces, tool calls whose JSON arguments
//! are cut at random places), framed with one random line ending, with harmless junk between
//! events (comments, keep-alives, blank lines, `retry:` and unknown fields) and fed in random
//! read sizes, always yields its text, every completed call exactly, and one finish, last.
//! Random bytes dropped anywhere never panic and still end with exactly one finish.

use agentd_events::{Chunk, FinishKind};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Value, json};

use crate::support::{Format, replay};

/// A response to frame: text pieces and `(name, arguments, cut points)` per call.
#[derive(Debug, Clone)]
struct Response {
    texts: Vec<String>,
    calls: Vec<(String, String, Vec<usize>)>,
}

fn response() -> impl Strategy<Value = Response> {
    let text = prop::collection::vec(any::<char>(), 1..10).prop_map(String::from_iter);
    let name = prop::collection::vec(prop::char::range('a', 'z'), 1..8).prop_map(String::from_iter);
    let call = (
        name,
        prop::collection::vec(any::<char>(), 0..12),
        any::<i32>(),
        prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    )
        .prop_map(|(name, value, n, cuts)| {
            let args = json!({"s": String::from_iter(value), "n": n}).to_string();
            let chars = args.chars().count();
            let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(chars)).collect();
            cuts.sort_unstable();
            cuts.dedup();
            (name, args, cuts)
        });
    (
        prop::collection::vec(text, 0..3),
        prop::collection::vec(call, 0..3),
    )
        .prop_map(|(texts, calls)| Response { texts, calls })
}

/// `args` cut at the given character positions.
fn fragments(args: &str, cuts: &[usize]) -> Vec<String> {
    let chars: Vec<char> = args.chars().collect();
    let mut pieces = Vec::new();
    let mut from = 0;
    for &cut in cuts.iter().chain([&chars.len()]) {
        pieces.push(chars[from..cut.max(from)].iter().collect());
        from = cut.max(from);
    }
    pieces
}

/// The response as SSE events `(event name, data)`.
fn events(format: Format, response: &Response) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let calls = !response.calls.is_empty();
    match format {
        Format::OpenAi => {
            let chunk = |delta: Value, reason: Option<&str>| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": reason}]});
            for text in &response.texts {
                out.push(chunk(json!({"content": text}), None));
            }
            for (i, (name, args, cuts)) in response.calls.iter().enumerate() {
                for (j, piece) in fragments(args, cuts).into_iter().enumerate() {
                    let mut f = json!({"index": i, "function": {"arguments": piece}});
                    if j == 0 {
                        f["id"] = json!(format!("call_{i}"));
                        f["function"]["name"] = json!(name);
                    }
                    out.push(chunk(json!({"tool_calls": [f]}), None));
                }
            }
            let reason = if calls { "tool_calls" } else { "stop" };
            out.push(chunk(json!({}), Some(reason)));
            let mut events: Vec<(String, Value)> =
                out.into_iter().map(|d| ("message".to_owned(), d)).collect();
            events.push(("message".to_owned(), json!("[DONE]")));
            events
        }
        Format::Anthropic => {
            out.push(json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}));
            let mut index = 0;
            for text in &response.texts {
                out.push(json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}));
                out.push(json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": text}}));
                out.push(json!({"type": "content_block_stop", "index": index}));
                index += 1;
            }
            for (i, (name, args, cuts)) in response.calls.iter().enumerate() {
                out.push(
                    json!({"type": "content_block_start", "index": index, "content_block":
                    {"type": "tool_use", "id": format!("call_{i}"), "name": name, "input": {}}}),
                );
                for piece in fragments(args, cuts) {
                    out.push(json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece}}));
                }
                out.push(json!({"type": "content_block_stop", "index": index}));
                index += 1;
            }
            let reason = if calls { "tool_use" } else { "end_turn" };
            out.push(
                json!({"type": "message_delta", "delta": {"stop_reason": reason},
                "usage": {"output_tokens": 2}}),
            );
            out.push(json!({"type": "message_stop"}));
            out.into_iter()
                .map(|d| (d["type"].as_str().unwrap_or("?").to_owned(), d))
                .collect()
        }
    }
}

/// Frames `events` with line ending `eol`, junk item `junk[i]` (if any) before event i.
fn frame(events: &[(String, Value)], eol: &str, junk: &[Option<usize>]) -> Vec<u8> {
    const JUNK: [&str; 5] = [": keep-alive", ": x", "", "retry: 100", "foo: bar"];
    let mut body = String::from("\u{feff}");
    for (i, (name, data)) in events.iter().enumerate() {
        if let Some(Some(j)) = junk.get(i) {
            body += JUNK[j % JUNK.len()];
            body += eol;
            body += eol;
        }
        if name != "message" {
            body += &format!("event: {name}{eol}");
        }
        let data = match data {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        body += &format!("data: {data}{eol}{eol}");
    }
    body.into_bytes()
}

/// Runs the parser of `format` over `body` cut after each size of `sizes` (cycled).
fn run(format: Format, body: &[u8], sizes: &[usize]) -> Vec<Chunk> {
    let mut reads = Vec::new();
    let (mut at, mut n) = (0, 0);
    while at < body.len() {
        let size = sizes
            .get(n % sizes.len().max(1))
            .copied()
            .unwrap_or(body.len());
        let end = (at + size.max(1)).min(body.len());
        reads.push(bytes::Bytes::copy_from_slice(&body[at..end]));
        (at, n) = (end, n + 1);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let body =
            futures_util::stream::iter(reads.into_iter().map(Ok::<_, std::convert::Infallible>));
        match format {
            Format::OpenAi => agentd_provider::openai_chunks(200, body).collect().await,
            Format::Anthropic => agentd_provider::anthropic_chunks(200, body).collect().await,
        }
    })
}

use futures_util::StreamExt;

fn config() -> Config {
    Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    }
}

fn format() -> impl Strategy<Value = Format> {
    prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn valid_streams_with_junk_and_random_reads_lose_nothing(
        format in format(),
        response in response(),
        eol in prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
        junk in prop::collection::vec(prop::option::of(0usize..5), 0..40),
        sizes in prop::collection::vec(1usize..24, 1..8),
    ) {
        let body = frame(&events(format, &response), eol, &junk);
        let chunks = run(format, &body, &sizes);
        let folded = replay(&chunks); // Exactly one finish, last.
        let expected_calls: Vec<(String, String, String)> = response
            .calls
            .iter()
            .enumerate()
            .map(|(i, (name, args, _))| (format!("call_{i}"), name.clone(), args.clone()))
            .collect();
        let kind = if expected_calls.is_empty() { FinishKind::Completed } else { FinishKind::ToolCalls };
        prop_assert_eq!(folded.text, response.texts.concat());
        prop_assert_eq!(folded.tool_calls, expected_calls);
        prop_assert_eq!(folded.finish.kind, kind);
    }

    #[test]
    fn random_bytes_anywhere_never_panic_and_end_with_one_finish(
        format in format(),
        response in response(),
        garbage in prop::collection::vec((any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..12)), 1..6),
        sizes in prop::collection::vec(1usize..24, 1..8),
    ) {
        let mut body = frame(&events(format, &response), "\n", &[]);
        for (at, bytes) in garbage {
            let at = at.index(body.len() + 1);
            body.splice(at..at, bytes);
        }
        let chunks = run(format, &body, &sizes);
        let finishes = chunks.iter().filter(|c| matches!(c, Chunk::Finish(_))).count();
        prop_assert_eq!(finishes, 1);
        prop_assert!(matches!(chunks.last(), Some(Chunk::Finish(_))));
    }
}
