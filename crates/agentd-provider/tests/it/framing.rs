//! The SSE layer the parsers stand on (`agentd_provider::sse`), checked against
//! `sse_framing_mixed.sse`: CRLF, LF and CR line ends, `data:` without a space, one leading
//! space removed, bare `data` and `id` lines, ignored fields (`retry`), an event without
//! data not dispatched, and an unterminated last event discarded, in reads of every size.
//!
//! Not checked: the expected `reconnection_time_ms` (2500): we never reconnect a model
//! stream, so the decoder ignores `retry:`.

use agentd_provider::sse::{SseDecoder, SseEvent};
use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{fixture, reads};

/// `(type, data, last_event_id)` of each dispatched event.
type Seen = Vec<(String, String, String)>;

#[test]
fn sse_layer_frames_mixed_line_endings_whole_and_split() {
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
    for size in sizes.into_iter().chain([usize::MAX]) {
        let mut decoder = SseDecoder::new();
        let mut events: Vec<SseEvent> = Vec::new();
        for read in reads(&body, size) {
            decoder.push(&read, &mut events).unwrap();
        }
        let seen: Seen = events
            .into_iter()
            .map(|e| (e.event, e.data, e.id))
            .collect();
        assert_eq!(seen, expected, "{size}-byte reads");
        assert_eq!(
            decoder.last_event_id(),
            text(&json["final_last_event_id"]),
            "{size}-byte reads"
        );
    }
}

#[test]
fn bom_comments_keep_alives_and_every_line_ending_frame_the_same_events() {
    let body = "\u{feff}: keep-alive\r\n\r\ndata:{\"a\":1}\rdata: two\r\n\r\n: c\n\nevent: x\rdata: 3\n\r\n";
    let expected = vec![
        SseEvent {
            event: "message".into(),
            data: "{\"a\":1}\ntwo".into(),
            ..SseEvent::default()
        },
        SseEvent {
            event: "x".into(),
            data: "3".into(),
            ..SseEvent::default()
        },
    ];
    for size in [1, 2, 3, 5, 7, 64, usize::MAX] {
        let mut decoder = SseDecoder::new();
        let mut events = Vec::new();
        for read in reads(body.as_bytes(), size) {
            decoder.push(&read, &mut events).unwrap();
        }
        assert_eq!(events, expected, "{size}-byte reads");
    }
}
