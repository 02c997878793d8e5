//! Shared helpers: feeding bodies to `openai_chunks` in reads of a given size, building SSE
//! bodies, folding chunks into one comparable value, and locating the shared fixtures.

use std::convert::Infallible;
use std::path::PathBuf;

use agentd_events::{Chunk, Finish};
use agentd_provider::openai_chunks;
use bytes::Bytes;
use futures_util::{StreamExt, stream};

/// `../shared/fixtures` beside the repository (CI clones `shared/` there too).
pub fn fixtures_dir() -> PathBuf {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/fixtures"
    ));
    assert!(
        dir.is_dir(),
        "fixture folder {} is missing: the provider tests replay the shared transcripts \
         and must not pass without them (clone `shared/` beside the repository)",
        dir.display()
    );
    dir
}

/// The bytes of fixture `name`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = fixtures_dir().join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// `body` cut into reads of `size` bytes (the last one shorter).
pub fn reads(body: &[u8], size: usize) -> Vec<Bytes> {
    body.chunks(size.max(1))
        .map(Bytes::copy_from_slice)
        .collect()
}

/// Everything `openai_chunks` yields for `body` with `status`, fed in `size`-byte reads.
pub async fn chunks_of(status: u16, body: &[u8], size: usize) -> Vec<Chunk> {
    let body = stream::iter(reads(body, size).into_iter().map(Ok::<_, Infallible>));
    openai_chunks(status, body).collect().await
}

/// An SSE body of `data:` events, one per item, then `data: [DONE]`.
pub fn sse(events: &[serde_json::Value]) -> Vec<u8> {
    (sse_without_done(events) + "data: [DONE]\n\n").into_bytes()
}

/// An SSE body of `data:` events, one per item, with no `[DONE]`.
pub fn sse_without_done(events: &[serde_json::Value]) -> String {
    events.iter().map(|e| format!("data: {e}\n\n")).collect()
}

/// A `chat.completion.chunk` with one choice carrying `delta` and `finish_reason`.
pub fn delta(delta: serde_json::Value, finish_reason: Option<&str>) -> serde_json::Value {
    serde_json::json!({
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// A response folded into one value: what a correct provider layer assembles.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    pub text: String,
    pub reasoning: String,
    /// `(id, name, arguments)` in emission order.
    pub tool_calls: Vec<(String, String, String)>,
    pub finish: Finish,
}

/// Folds `chunks`, checking that exactly one `finish` came and that it came last.
pub fn replay(chunks: &[Chunk]) -> Replay {
    let finishes = chunks
        .iter()
        .filter(|c| matches!(c, Chunk::Finish(_)))
        .count();
    assert_eq!(finishes, 1, "exactly one finish chunk in {chunks:#?}");
    let Some(Chunk::Finish(finish)) = chunks.last() else {
        panic!("the last chunk is not the finish: {chunks:#?}");
    };
    let mut replay = Replay {
        text: String::new(),
        reasoning: String::new(),
        tool_calls: Vec::new(),
        finish: finish.clone(),
    };
    for chunk in chunks {
        match chunk {
            Chunk::Text { content } => replay.text.push_str(content),
            Chunk::Reasoning { content } => replay.reasoning.push_str(content),
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } => replay
                .tool_calls
                .push((id.clone(), name.clone(), arguments.clone())),
            Chunk::Finish(_) => {}
        }
    }
    replay
}
