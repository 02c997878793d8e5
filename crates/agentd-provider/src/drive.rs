//! The loop shared by every wire format: a response body (bytes, in reads of any size) through
//! [`SseDecoder`] into a format's [`EventParser`], out as [`Chunk`]s; and the one-chunk answer
//! to an HTTP error status. Knows nothing of sockets or clocks (timeouts arrive as body
//! errors) and nothing of any one format.

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};

use crate::Error;
use crate::errors::{self};
use crate::sse::{SseDecoder, SseEvent};
use agentd_events::{Chunk, Finish};

/// How much of an HTTP error body is read, in bytes. The message keeps at most
/// [`errors::MAX_MESSAGE_BYTES`] of it; the rest only has to hold the JSON around it.
pub(crate) const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A wire format's state machine over SSE events. Implementations are synchronous and pure,
/// emit exactly one [`Chunk::Finish`] (last), and ignore everything after it.
pub(crate) trait EventParser {
    /// One dispatched SSE event.
    fn event(&mut self, event: &SseEvent, out: &mut Vec<Chunk>);
    /// The body ended cleanly (`None`) or failed (`Some`): emit the finish.
    fn end(&mut self, failure: Option<Error>, out: &mut Vec<Chunk>);
    /// True once the finish was emitted; the body is not read any further.
    fn is_finished(&self) -> bool;
}

/// What the unfold below carries from one step to the next.
struct State<S, P> {
    body: std::pin::Pin<Box<S>>,
    decoder: SseDecoder,
    parser: P,
    /// Chunks produced but not yet yielded, oldest first.
    pending: std::vec::IntoIter<Chunk>,
}

/// Runs `parser` over the SSE events of `body` (a 2xx response).
pub(crate) fn sse_chunks<S, E, P>(body: S, parser: P) -> impl Stream<Item = Chunk>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: Into<Error>,
    P: EventParser,
{
    let state = State {
        body: Box::pin(body),
        decoder: SseDecoder::new(),
        parser,
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
            match state.body.next().await {
                Some(Ok(bytes)) => {
                    let mut events = Vec::new();
                    let decoded = state.decoder.push(&bytes, &mut events);
                    for event in &events {
                        state.parser.event(event, &mut out);
                    }
                    if let Err(err) = decoded {
                        state.parser.end(Some(err), &mut out);
                    }
                }
                Some(Err(err)) => state.parser.end(Some(err.into()), &mut out),
                None => state.parser.end(None, &mut out),
            }
            state.pending = out.into_iter();
        }
    })
}

/// The single `finish {kind: error}` of an HTTP error response: reads up to
/// [`MAX_ERROR_BODY_BYTES`] of `body` (a failing read ends it early: the status is the news).
pub(crate) async fn http_error_chunk<S, E>(status: u16, body: S) -> Chunk
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let text = read_error_body(body).await;
    Chunk::Finish(Finish::error(errors::http_error(status, &text)))
}

/// Up to [`MAX_ERROR_BODY_BYTES`] of an error response's body.
pub(crate) async fn read_error_body<S, E>(body: S) -> Vec<u8>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut body = std::pin::pin!(body);
    let mut text = Vec::new();
    while let Some(Ok(bytes)) = body.next().await {
        text.extend_from_slice(&bytes);
        if text.len() >= MAX_ERROR_BODY_BYTES {
            text.truncate(MAX_ERROR_BODY_BYTES);
            break;
        }
    }
    text
}
