//! [`openai_chunks`]: an HTTP status and a byte stream in, chunks out. The provider uses it
//! on a live response and tests on recorded ones; it knows nothing of sockets or clocks
//! (timeouts arrive as body errors).

use bytes::Bytes;
use futures_util::future::Either;
use futures_util::{Stream, stream};

use super::parse::Parser;
use crate::Error;
use crate::drive::{http_error_chunk, sse_chunks};
use agentd_events::Chunk;

/// Turns one Chat Completions response into chunks: its HTTP `status` and its `body` as it
/// arrives, in reads of any size (split anywhere, also inside a UTF-8 character or a CRLF).
///
/// A status outside 2xx yields a single `finish {kind: error}` with that status and the
/// body's message (JSON error object, or the text of an HTML page, cut to 1 KiB), without
/// parsing the body as SSE. A 2xx body is parsed as SSE ([`crate::sse`]): `text` and
/// `reasoning` chunks as their deltas arrive, one `tool-call` chunk per call when the
/// `finish_reason` arrives, and one `finish` at `data: [DONE]` or at the end of the body,
/// carrying the last usage seen. Every failure (an error object, `event: error` or an
/// `error:` field in the stream, malformed JSON, a body error from `body`, a stream without
/// `finish_reason`) becomes `finish {kind: error}` after the chunks already emitted. The
/// `finish` chunk is always the last item and appears exactly once; the body is not polled
/// after it.
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
        Either::Right(sse_chunks(body, Parser::default()))
    } else {
        Either::Left(stream::once(http_error_chunk(status, body)))
    }
}
