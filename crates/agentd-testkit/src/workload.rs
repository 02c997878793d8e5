//! [`Workload`]: the benchmark's scripted model answers (issue 7), pre-rendered once, and the
//! send timestamps its text chunks carry so a client can measure relay latency.
//!
//! Owns the wire bytes of the `scripted-model` binary and how a request picks its answer.
//! It must stay cheap: the model shares the machine with the server and the load client, so
//! every answer is a copy of pre-rendered bytes plus one clock read per text chunk. It does
//! no IO; the binary serves it.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::json;

use crate::reply::{Reply, delta};

/// Placeholder split out of a rendered text chunk; the send timestamp goes in its place.
const STAMP: &str = "@@stamp@@";

/// Which answers a model request gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// Issue 7's turn: when the last message is the user's, one `bash` call
    /// `{"command":"echo hi"}`; otherwise (a tool result) an answer of 20 text chunks.
    Bench,
    /// Issue 5's load: every request is answered with 300 text chunks, no tool call.
    Stream300,
}

impl Script {
    /// The script's name, as `--script` and the request's `model` spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bench => "bench",
            Self::Stream300 => "stream300",
        }
    }

    /// The script named `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::Bench, Self::Stream300]
            .into_iter()
            .find(|script| script.name() == name)
    }
}

/// The pre-rendered SSE bytes of every answer.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Used when the request's `model` names no script.
    default: Script,
    /// The whole `bash echo hi` answer.
    tool_call: Bytes,
    /// The first frame of a text answer (`role: assistant`).
    head: Bytes,
    /// A text chunk's frame up to its content, and from after it.
    text_prefix: Bytes,
    text_suffix: Bytes,
    /// `finish_reason: stop`, usage and `[DONE]`.
    tail: Bytes,
}

impl Workload {
    /// Renders every answer once; `default` serves requests whose `model` names no script.
    pub fn new(default: Script) -> Self {
        let joined = |reply: Reply| match reply {
            Reply::Sse { events, .. } => Bytes::from(events.concat()),
            Reply::Http { body, .. } => Bytes::from(body),
        };
        let tool_call = joined(Reply::tool_call(
            "call_bench",
            "bash",
            json!({"command": "echo hi"}),
        ));
        // An answer with no pieces: [role delta, finish, usage, DONE].
        let (head, tail) = match Reply::text_chunks(&[]) {
            Reply::Sse { events, .. } => {
                let mut events = events.into_iter();
                let head = events.next().unwrap_or_default();
                (Bytes::from(head), Bytes::from(events.collect::<String>()))
            }
            Reply::Http { .. } => (Bytes::new(), Bytes::new()),
        };
        let chunk = delta(json!({"content": STAMP}), None);
        let (prefix, suffix) = chunk.split_once(STAMP).unwrap_or((&chunk, ""));
        Self {
            default,
            tool_call,
            head,
            text_prefix: Bytes::copy_from_slice(prefix.as_bytes()),
            text_suffix: Bytes::copy_from_slice(suffix.as_bytes()),
            tail,
        }
    }

    /// The answer to a chat-completions request `body`, as SSE frames. Text chunks are
    /// rendered lazily, so each carries the wall-clock time at which the server took it to
    /// write (see [`send_stamp`]).
    pub fn answer(&self, body: &[u8]) -> Answer {
        let body = std::str::from_utf8(body).unwrap_or_default();
        let script = requested_model(body)
            .and_then(Script::from_name)
            .unwrap_or(self.default);
        let chunks = match script {
            Script::Bench if last_role(body) == Some("user") => {
                return Answer {
                    workload: self.clone(),
                    step: Step::ToolCall,
                    texts_left: 0,
                };
            }
            Script::Bench => 20,
            Script::Stream300 => 300,
        };
        Answer {
            workload: self.clone(),
            step: Step::Head,
            texts_left: chunks,
        }
    }
}

/// One answer's frames, in order. Iterate it (or stream it) to send.
#[derive(Debug)]
pub struct Answer {
    workload: Workload,
    step: Step,
    /// Text chunks still to render.
    texts_left: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    ToolCall,
    Head,
    Texts,
    Done,
}

impl Iterator for Answer {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let w = &self.workload;
        match self.step {
            Step::ToolCall => {
                self.step = Step::Done;
                Some(w.tool_call.clone())
            }
            Step::Head => {
                self.step = Step::Texts;
                Some(w.head.clone())
            }
            Step::Texts if self.texts_left > 0 => {
                self.texts_left -= 1;
                let stamp = now_nanos().to_string();
                let mut frame =
                    Vec::with_capacity(w.text_prefix.len() + stamp.len() + w.text_suffix.len());
                frame.extend_from_slice(&w.text_prefix);
                frame.extend_from_slice(stamp.as_bytes());
                frame.extend_from_slice(&w.text_suffix);
                Some(Bytes::from(frame))
            }
            Step::Texts => {
                self.step = Step::Done;
                Some(w.tail.clone())
            }
            Step::Done => None,
        }
    }
}

/// Nanoseconds since the UNIX epoch by the wall clock (0 if the clock is before it).
pub fn now_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The send timestamp (see [`now_nanos`]) a text chunk of a [`Workload`] answer carries as
/// its whole `content`; `None` for other text.
pub fn send_stamp(content: &str) -> Option<u64> {
    content.parse().ok()
}

/// The request's `"model"`. The provider serialises it first, and a quote inside any string
/// value is escaped, so the first `"model":"` is the top-level one.
fn requested_model(body: &str) -> Option<&str> {
    let rest = body.split_once("\"model\":\"")?.1;
    rest.split_once('"').map(|(model, _)| model)
}

/// The role of the last message: the last `"role":"` in the body (quotes inside values are
/// escaped, and the `tools` menu after the messages has no `role` key). Scanning avoids
/// parsing a long history on every request.
fn last_role(body: &str) -> Option<&str> {
    let at = body.rfind("\"role\":\"")? + "\"role\":\"".len();
    body[at..].split_once('"').map(|(role, _)| role)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(answer: Answer) -> String {
        answer
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect()
    }

    #[test]
    fn a_user_message_gets_the_bash_call_and_a_tool_result_gets_twenty_stamped_chunks() {
        let workload = Workload::new(Script::Bench);
        let user = br#"{"model":"x","messages":[{"role":"user","content":"say \"role\":\"tool\""}],"tools":[]}"#;
        let call = text_of(workload.answer(user));
        assert!(call.contains(r#"\"command\""#), "{call}");
        assert!(call.ends_with("data: [DONE]\n\n"));

        let tool = br#"{"model":"bench","messages":[{"role":"user","content":"a"},{"role":"tool","content":"hi"}]}"#;
        let frames: Vec<_> = workload.answer(tool).collect();
        assert_eq!(frames.len(), 1 + 20 + 1);
        let stamps: Vec<u64> = frames[1..21]
            .iter()
            .map(|frame| {
                let json: serde_json::Value =
                    serde_json::from_slice(&frame[b"data: ".len()..]).unwrap();
                send_stamp(json["choices"][0]["delta"]["content"].as_str().unwrap()).unwrap()
            })
            .collect();
        assert!(stamps.windows(2).all(|w| w[0] <= w[1]) && stamps[0] > 0);
    }

    #[test]
    fn the_model_name_picks_the_script() {
        let workload = Workload::new(Script::Bench);
        let body = br#"{"model":"stream300","messages":[{"role":"user","content":"a"}]}"#;
        assert_eq!(workload.answer(body).count(), 1 + 300 + 1);
    }
}
