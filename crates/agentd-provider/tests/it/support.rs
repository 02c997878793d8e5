//! Shared helpers: feeding bodies to `openai_chunks` / `anthropic_chunks` in reads of a given
//! size (and checking every split gives the same chunks), building SSE bodies, folding chunks
//! into one comparable value, and locating the shared fixtures.

use std::convert::Infallible;
use std::path::PathBuf;

use agentd_events::{Chunk, ErrorInfo, Finish, FinishKind, Usage};
use agentd_provider::{anthropic_chunks, openai_chunks};
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

/// Read sizes every body is also fed in, besides whole.
pub const READ_SIZES: [usize; 6] = [1, 2, 3, 5, 7, 64];

/// Which parser a body is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    OpenAi,
    Anthropic,
}

/// What the parser for `format` yields for `body` with `status`, in `size`-byte reads.
pub async fn chunks_in(format: Format, status: u16, body: &[u8], size: usize) -> Vec<Chunk> {
    let body = stream::iter(reads(body, size).into_iter().map(Ok::<_, Infallible>));
    match format {
        Format::OpenAi => openai_chunks(status, body).collect().await,
        Format::Anthropic => anthropic_chunks(status, body).collect().await,
    }
}

/// The chunks of `body` read whole, after checking that every read size of [`READ_SIZES`]
/// gives the same chunks (generated call ids aside: they differ per run, so they are
/// compared by position).
pub async fn split_chunks(format: Format, status: u16, body: &[u8]) -> Vec<Chunk> {
    let whole = chunks_in(format, status, body, usize::MAX).await;
    for size in READ_SIZES {
        let split = chunks_in(format, status, body, size).await;
        assert_eq!(
            without_generated_ids(&split),
            without_generated_ids(&whole),
            "{size}-byte reads differ from the whole body"
        );
    }
    whole
}

/// `split_chunks` for a Chat Completions body with HTTP 200.
pub async fn openai_split(body: &[u8]) -> Vec<Chunk> {
    split_chunks(Format::OpenAi, 200, body).await
}

/// Whether `id` is one the parser made up (`call_` or `toolu_` and 32 hex digits).
pub fn is_generated(id: &str) -> bool {
    let suffix = id
        .strip_prefix("call_")
        .or_else(|| id.strip_prefix("toolu_"))
        .unwrap_or_default();
    suffix.len() == 32 && suffix.chars().all(|c| c.is_ascii_hexdigit())
}

/// `chunks` with every generated call id replaced by `<generated>`.
pub fn without_generated_ids(chunks: &[Chunk]) -> Vec<Chunk> {
    chunks
        .iter()
        .map(|chunk| match chunk {
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } if is_generated(id) => Chunk::ToolCall {
                id: "<generated>".to_owned(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
            other => other.clone(),
        })
        .collect()
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

/// Chunk builders, for whole-value assertions.
pub fn text(content: &str) -> Chunk {
    Chunk::Text {
        content: content.to_owned(),
    }
}

pub fn call(id: &str, name: &str, arguments: &str) -> Chunk {
    Chunk::ToolCall {
        id: id.to_owned(),
        name: name.to_owned(),
        arguments: arguments.to_owned(),
    }
}

pub fn finish(kind: FinishKind, usage: Option<Usage>) -> Chunk {
    Chunk::Finish(Finish {
        kind,
        usage,
        error: None,
    })
}

pub fn failed(code: &str, message: &str) -> Chunk {
    Chunk::Finish(Finish::error(ErrorInfo::new(code, message)))
}

pub fn usage(input: u64, output: u64, cached: u64, reasoning: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cached,
        reasoning_tokens: reasoning,
    }
}
