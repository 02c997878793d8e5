//! [`openai_chunks`]: an HTTP status and a byte stream in, chunks out. The provider uses it
//! on a live response and tests on recorded ones; it knows nothing of sockets or clocks
//! (timeouts arrive as body errors).

use bytes::Bytes;
use eventsource_stream::{EventStream, EventStreamError};
use futures_util::future::Either;
use futures_util::{Stream, StreamExt, stream};

use super::errors::{self, MAX_MESSAGE_BYTES};
use super::parse::Parser;
use crate::Error;
use agentd_events::{Chunk, Finish};

/// How much of an HTTP error body is read, in bytes. The message keeps at most
/// [`MAX_MESSAGE_BYTES`] of it; the rest only has to hold the JSON around the message.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// Turns one Chat Completions response into chunks: its HTTP `status` and its `body` as it
/// arrives, in reads of any size (split anywhere, also inside a UTF-8 character or a CRLF).
///
/// A status outside 2xx yields a single `finish {kind: error}` with that status and the
/// body's message, without parsing the body as SSE. A 2xx body is parsed as SSE
/// (`eventsource-stream`): `text` and `reasoning` chunks as their deltas arrive, one
/// `tool-call` chunk per call when the `finish_reason` arrives, and one `finish` at
/// `data: [DONE]` or at the end of the body, carrying the last usage seen. Every failure
/// (an error object or `event: error` in the stream, malformed JSON, a body error from
/// `body`, a stream without `finish_reason`) becomes `finish {kind: error}` after the chunks
/// already emitted. The `finish` chunk is always the last item and appears exactly once; the
/// body is not polled after it.
///
/// Body errors are converted into [`Error`] and reported with its [`Error::code`]:
/// [`Error::Timeout`] gives `provider_timeout`, [`Error::Read`] `provider_stream_incomplete`.
/// A body error after the `finish_reason` arrived is not a failure: the response was
/// complete, so it finishes normally.
pub fn openai_chunks<S, E>(status: u16, body: S) -> impl Stream<Item = Chunk>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Into<Error>,
{
    if (200..300).contains(&status) {
        Either::Right(sse_chunks(body))
    } else {
        Either::Left(stream::once(http_error(status, body)))
    }
}

/// Reads up to [`MAX_ERROR_BODY_BYTES`] of an error response (a failing read ends it early:
/// the status is the news) into a `finish` error.
async fn http_error<S, E>(status: u16, body: S) -> Chunk
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut body = std::pin::pin!(body);
    let mut text = Vec::new();
    while let Some(Ok(bytes)) = body.next().await {
        text.extend_from_slice(&bytes);
        if text.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    Chunk::Finish(Finish::error(errors::http_error(status, &text)))
}

/// What the unfold below carries from one step to the next.
struct State<S> {
    /// The SSE events of the body. Not polled again once the parser finished.
    events: EventStream<S>,
    parser: Parser,
    /// Chunks produced but not yet yielded, oldest first.
    pending: std::vec::IntoIter<Chunk>,
}

fn sse_chunks<S, E>(body: S) -> impl Stream<Item = Chunk>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Into<Error>,
{
    let state = State {
        events: EventStream::new(Box::pin(body)),
        parser: Parser::default(),
        pending: Vec::new().into_iter(),
    };
    stream::unfold(state, |mut state| async move {
        loop {
            if let Some(chunk) = state.pending.next() {
                return Some((chunk, state));
            }
            if state.parser.is_finished() {
                return None;
            }
            let mut out = Vec::new();
            match state.events.next().await {
                Some(Ok(event)) => state.parser.event(&event.event, &event.data, &mut out),
                Some(Err(err)) => state.parser.end(Some(event_error(err)), &mut out),
                None => state.parser.end(None, &mut out),
            }
            state.pending = out.into_iter();
        }
    })
}

/// A failure of the SSE layer: the body's own error, or bytes that are not UTF-8 text.
fn event_error<E: Into<Error>>(err: EventStreamError<E>) -> Error {
    let detail = match err {
        EventStreamError::Transport(err) => return err.into(),
        EventStreamError::Utf8(err) => err.to_string(),
        EventStreamError::Parser(err) => err.to_string(),
    };
    Error::Malformed(format!(
        "unreadable event stream: {}",
        errors::truncate(&detail, MAX_MESSAGE_BYTES)
    ))
}
