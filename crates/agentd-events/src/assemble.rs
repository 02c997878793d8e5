//! [`BlockAssembler`]: folds one model response's chunks into its assistant message.

use crate::chunk::{Chunk, ErrorInfo, Finish};
use crate::message::{Message, ToolCall};

/// Collects the chunks of one model response, in order, and assembles the
/// `assistant/message` they make, with the response's [`Finish`].
///
/// Text and reasoning deltas are concatenated; tool-call chunks (already complete) are
/// kept in order. The first `finish` chunk wins; chunks after it are ignored.
#[derive(Debug, Default)]
pub struct BlockAssembler {
    text: String,
    reasoning: String,
    tool_calls: Vec<ToolCall>,
    finish: Option<Finish>,
}

/// What one model response assembled into.
#[derive(Debug, Clone, PartialEq)]
pub struct Assembled {
    /// A [`Message::Assistant`]: `content` is `""` when the model wrote no text;
    /// `reasoning_content` is set when it reasoned.
    pub message: Message,
    /// The response's finish; `error` (code `provider_stream_incomplete`) when the
    /// chunks ended without one.
    pub finish: Finish,
}

impl BlockAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next chunk of the response.
    pub fn push(&mut self, chunk: &Chunk) {
        if self.finish.is_some() {
            return;
        }
        match chunk {
            Chunk::Text { content } => self.text.push_str(content),
            Chunk::Reasoning { content } => self.reasoning.push_str(content),
            Chunk::ToolCall {
                id,
                name,
                arguments,
            } => self
                .tool_calls
                .push(ToolCall::new(id.clone(), name.clone(), arguments.clone())),
            Chunk::Finish(finish) => self.finish = Some(finish.clone()),
        }
    }

    /// Whether a `finish` chunk has been pushed.
    pub fn is_finished(&self) -> bool {
        self.finish.is_some()
    }

    /// The assistant message and finish of the response.
    pub fn finish(self) -> Assembled {
        let finish = self.finish.unwrap_or_else(|| {
            Finish::error(ErrorInfo::new(
                "provider_stream_incomplete",
                "the model response ended without a finish",
            ))
        });
        let reasoning_content = (!self.reasoning.is_empty()).then_some(self.reasoning);
        Assembled {
            message: Message::Assistant {
                content: self.text,
                tool_calls: self.tool_calls,
                reasoning_content,
            },
            finish,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{FinishKind, Usage};
    use pretty_assertions::assert_eq;

    fn text(s: &str) -> Chunk {
        Chunk::Text { content: s.into() }
    }

    #[test]
    fn text_reasoning_and_calls_assemble_in_order() {
        let usage = Usage {
            input_tokens: 3,
            output_tokens: 4,
            ..Usage::default()
        };
        let finish = Finish {
            kind: FinishKind::ToolCalls,
            usage: Some(usage),
            error: None,
        };
        let mut assembler = BlockAssembler::new();
        for chunk in [
            Chunk::Reasoning {
                content: "think ".into(),
            },
            Chunk::Reasoning {
                content: "more".into(),
            },
            text("Let me "),
            text("look."),
            Chunk::ToolCall {
                id: "a".into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls"}"#.into(),
            },
            Chunk::ToolCall {
                id: "b".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            },
            Chunk::Finish(finish.clone()),
            text("ignored after finish"),
        ] {
            assembler.push(&chunk);
        }
        assert_eq!(
            assembler.finish(),
            Assembled {
                message: Message::Assistant {
                    content: "Let me look.".into(),
                    tool_calls: vec![
                        ToolCall::new("a", "bash", r#"{"command":"ls"}"#),
                        ToolCall::new("b", "bash", "{}"),
                    ],
                    reasoning_content: Some("think more".into()),
                },
                finish,
            }
        );
    }

    #[test]
    fn missing_finish_assembles_as_error_with_partial_text_kept() {
        let mut assembler = BlockAssembler::new();
        assembler.push(&text("partial"));
        let assembled = assembler.finish();
        assert_eq!(assembled.finish.kind, FinishKind::Error);
        assert_eq!(
            assembled.message,
            Message::Assistant {
                content: "partial".into(),
                tool_calls: vec![],
                reasoning_content: None
            }
        );
    }
}
