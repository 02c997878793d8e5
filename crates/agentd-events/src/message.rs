//! The model-facing message shape (OpenAI Chat Completions) and the tools menu entry.

use serde::{Deserialize, Deserializer, Serialize};

/// One message of a model request, in the OpenAI Chat Completions shape
/// (`{"role":"user","content":"…"}` etc.). Providers with other wire formats render from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// The system prompt.
    System {
        /// Prompt text.
        content: String,
    },
    /// A user message.
    User {
        /// What the user wrote.
        content: String,
    },
    /// An assistant message. `content` is always a string (`""`, never null), also when it
    /// carries tool calls, because several OpenAI-compatible servers reject a null.
    Assistant {
        /// The answer text; `""` when there is none.
        #[serde(default, deserialize_with = "null_as_empty")]
        content: String,
        /// Tool calls, in the order the model made them; omitted when empty.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The model's reasoning (DeepSeek `reasoning_content`), where it gave any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
    },
    /// The result of one tool call.
    Tool {
        /// The id of the call this answers.
        tool_call_id: String,
        /// The result text.
        content: String,
    },
}

/// A tool call on an assistant message: `{"id","type":"function","function":{"name","arguments"}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id; never empty.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// What to call.
    pub function: FunctionCall,
}

impl ToolCall {
    /// A function tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

/// The function part of a [`ToolCall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments as a JSON text (a string, as the OpenAI API carries them).
    pub arguments: String,
}

/// An entry of the tools menu sent with every model request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, written for the model.
    pub description: String,
    /// The JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

fn function_type() -> String {
    "function".to_owned()
}

fn null_as_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn assistant_with_tool_calls_serialises_empty_content_as_string() {
        let message = Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall::new("c1", "bash", "{}")],
            reasoning_content: None,
        };
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ]})
        );
    }

    #[test]
    fn assistant_null_content_reads_as_empty_string() {
        let message: Message =
            serde_json::from_value(json!({"role": "assistant", "content": null})).unwrap();
        assert_eq!(
            message,
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![],
                reasoning_content: None
            }
        );
    }
}
