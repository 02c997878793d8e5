//! The SSE layer the parser stands on (`eventsource-stream`), checked against
//! `sse_framing_mixed.sse`: CRLF, LF and CR line ends, `data:` without a space, one leading
//! space removed, bare `data` and `id` lines, ignored fields, an event without data not
//! dispatched, and an unterminated last event discarded, in reads of every size.
//!
//! Not checked: the expected `reconnection_time_ms` (2500). `eventsource-stream` keeps
//! `retry:` only on the event it arrives with and drops it with that data-less event; we
//! never reconnect a model stream, so nothing depends on it.

use std::convert::Infallible;

use eventsource_stream::Eventsource;
use futures_util::{StreamExt, stream};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{fixture, reads};

/// `(type, data, last_event_id)` of each dispatched event.
type Seen = Vec<(String, String, String)>;

#[tokio::test]
async fn sse_layer_frames_mixed_line_endings_whole_and_split() {
    let body = fixture("sse_framing_mixed.sse");
    let json: Value = serde_json::from_slice(&fixture("sse_framing_mixed.expected.json")).unwrap();
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    let expected: Seen = json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                text(&e["type"]),
                text(&e["data"]),
                text(&e["last_event_id"]),
            )
        })
        .collect();
    let sizes: Vec<usize> = json["feed_chunk_sizes_to_test"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    assert!(!sizes.is_empty());
    for size in sizes {
        let mut events =
            stream::iter(reads(&body, size).into_iter().map(Ok::<_, Infallible>)).eventsource();
        let mut seen = Seen::new();
        while let Some(event) = events.next().await {
            let event = event.unwrap();
            seen.push((event.event, event.data, event.id));
        }
        assert_eq!(seen, expected, "{size}-byte reads");
        assert_eq!(
            events.last_event_id(),
            text(&json["final_last_event_id"]),
            "{size}-byte reads"
        );
    }
}
