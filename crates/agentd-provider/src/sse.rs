//! [`SseDecoder`]: bytes of a `text/event-stream` body in, [`SseEvent`]s out, fed in reads
//! of any size. Pure and synchronous; it knows nothing of chat formats.
//!
//! Follows the WHATWG HTML "event stream interpretation" rules: a leading BOM is skipped;
//! lines end with CRLF, LF or CR (also when a read ends between CR and LF); `:` starts a
//! comment (DeepSeek's `: keep-alive`); one space after `field:` is removed and `data:`
//! without a space works too; `data` lines are joined with `\n`; a blank line dispatches; an
//! event without data is not dispatched; an unterminated event at the end of the body is
//! discarded. One deviation, for model servers: a non-standard `error:` field (some
//! OpenAI-compatible proxies send one instead of `data:`) is kept in [`SseEvent::error`], and
//! an event that has one is dispatched even without data.

use crate::Error;

/// The longest line the decoder buffers, in bytes. A body that sends more without a line
/// break is not an event stream (and must not grow memory without bound).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` name, `message` when the event had none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id seen so far in the stream (`id:` field), `""` for none.
    pub id: String,
    /// The value of a non-standard `error:` field, lines joined with `\n`.
    pub error: Option<String>,
}

/// The decoder's state between reads.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the line not yet ended (kept as bytes: a read may end inside a character).
    line: Vec<u8>,
    /// The last byte ended a line with CR: an LF right after it is part of that line end.
    after_cr: bool,
    /// Whether a line was completed already (a BOM is only skipped on the first one).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
    error: Option<String>,
    last_id: String,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next read; appends the events it completes to `out`.
    ///
    /// # Errors
    /// [`Error::Malformed`] when a line is not UTF-8 or longer than [`MAX_LINE_BYTES`]; the
    /// events completed before that line are in `out`. The stream is broken after an error.
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), Error> {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if rest[0] == b'\n' {
                    rest = &rest[1..];
                    continue;
                }
            }
            match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                Some(end) => {
                    self.extend_line(&rest[..end])?;
                    self.after_cr = rest[end] == b'\r';
                    rest = &rest[end + 1..];
                    self.end_line(out)?;
                }
                None => {
                    self.extend_line(rest)?;
                    rest = &[];
                }
            }
        }
        Ok(())
    }

    /// The last event id seen (`id:` field), `""` for none.
    pub fn last_event_id(&self) -> &str {
        &self.last_id
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if self.line.len() + bytes.len() > MAX_LINE_BYTES {
            return Err(Error::Malformed(format!(
                "unreadable event stream: a line longer than {MAX_LINE_BYTES} bytes"
            )));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) -> Result<(), Error> {
        let bytes = std::mem::take(&mut self.line);
        let line = String::from_utf8(bytes).map_err(|err| {
            Error::Malformed(format!("unreadable event stream: not UTF-8 ({err})"))
        })?;
        let line = match self.started {
            true => line.as_str(),
            false => line.strip_prefix('\u{feff}').unwrap_or(&line),
        };
        self.started = true;
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(()); // A comment, e.g. `: keep-alive`.
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = value.to_owned(),
            "error" => {
                let error = self.error.get_or_insert_with(String::new);
                if !error.is_empty() {
                    error.push('\n');
                }
                error.push_str(value);
            }
            _ => {} // `retry` and unknown fields: nothing a model stream needs.
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        let mut data = std::mem::take(&mut self.data);
        let error = self.error.take();
        if !std::mem::take(&mut self.has_data) && error.is_none() {
            return;
        }
        if data.ends_with('\n') {
            data.pop();
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data,
            id: self.last_id.clone(),
            error,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn decode(reads: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for read in reads {
            decoder.push(read, &mut out).unwrap();
        }
        out
    }

    fn message(data: &str) -> SseEvent {
        SseEvent {
            event: "message".into(),
            data: data.into(),
            ..SseEvent::default()
        }
    }

    #[test]
    fn bom_split_across_reads_and_cr_lf_split_across_reads_are_handled() {
        let events = decode(&[b"\xEF", b"\xBB", b"\xBFdata:a\r", b"\n\r", b"\ndata: b\r\r"]);
        assert_eq!(events, [message("a"), message("b")]);
    }

    #[test]
    fn error_field_dispatches_without_data() {
        let events = decode(&[b"error: {\"message\":\"boom\"}\n\n"]);
        assert_eq!(
            events,
            [SseEvent {
                error: Some("{\"message\":\"boom\"}".into()),
                ..message("")
            }]
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_after_the_events_before_it() {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        let result = decoder.push(b"data: ok\n\ndata: \xff\n", &mut out);
        assert!(matches!(result, Err(Error::Malformed(_))), "{result:?}");
        assert_eq!(out, [message("ok")]);
    }
}
