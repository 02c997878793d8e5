//! [`validate_openai_request`]: a strict checker of the OpenAI Chat Completions message
//! rules, stricter than most servers, so a test fails where any real server could answer 400.
//!
//! Rules (OpenAI API reference, "Create chat completion", and the 400s OpenAI and DeepSeek
//! return for broken histories): `messages` is a non-empty array; each role is `system`,
//! `developer`, `user`, `assistant` or `tool`; an assistant message with `tool_calls` has a
//! string `content` (never null); every call has a non-empty id unique within its message,
//! `type: "function"`, a non-empty name and `arguments` a string holding JSON; the calls
//! are answered by exactly one `tool` message each, right after the assistant message, in
//! call order, before any other message; there is no `tool` message without its call.

use serde_json::Value;

/// Checks `body` (a whole request JSON) against the rules above.
///
/// # Errors
/// The first broken rule, naming the message index.
pub fn validate_openai_request(body: &Value) -> Result<(), String> {
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or("`messages` is missing or not an array")?;
    if messages.is_empty() {
        return Err("`messages` is empty".to_owned());
    }
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        let role = message.get("role").and_then(Value::as_str);
        match role {
            Some("system" | "developer" | "user") => {}
            Some("tool") => {
                return Err(format!(
                    "messages[{i}]: tool message without a preceding assistant tool call"
                ));
            }
            Some("assistant") => {
                let ids = tool_call_ids(message, i)?;
                for (n, id) in ids.iter().enumerate() {
                    let at = i + 1 + n;
                    let answer = messages.get(at).ok_or_else(|| {
                        format!("messages[{i}]: tool call {id:?} has no tool message after it")
                    })?;
                    if answer.get("role").and_then(Value::as_str) != Some("tool") {
                        return Err(format!(
                            "messages[{at}]: expected the tool message answering {id:?}"
                        ));
                    }
                    let answered = answer.get("tool_call_id").and_then(Value::as_str);
                    if answered != Some(id.as_str()) {
                        return Err(format!(
                            "messages[{at}]: tool_call_id {answered:?} where {id:?} is due \
                             (results must follow their calls in order)"
                        ));
                    }
                    if !answer.get("content").is_some_and(Value::is_string) {
                        return Err(format!("messages[{at}]: tool content is not a string"));
                    }
                }
                i += ids.len();
            }
            other => return Err(format!("messages[{i}]: invalid role {other:?}")),
        }
        i += 1;
    }
    Ok(())
}

/// The ids of an assistant message's tool calls, checking each call.
fn tool_call_ids(message: &Value, i: usize) -> Result<Vec<String>, String> {
    let calls = match message.get("tool_calls") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err(format!("messages[{i}]: tool_calls is not an array")),
    };
    if !calls.is_empty() && !message.get("content").is_some_and(Value::is_string) {
        return Err(format!(
            "messages[{i}]: assistant content must be a string when it has tool_calls"
        ));
    }
    let mut ids: Vec<String> = Vec::new();
    for (n, call) in calls.iter().enumerate() {
        let at = format!("messages[{i}].tool_calls[{n}]");
        let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
        if id.is_empty() {
            return Err(format!("{at}: id is missing or empty"));
        }
        if ids.iter().any(|seen| seen == id) {
            return Err(format!("{at}: id {id:?} repeats within the message"));
        }
        if call.get("type").and_then(Value::as_str) != Some("function") {
            return Err(format!("{at}: type is not \"function\""));
        }
        let function = call.get("function");
        let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
        if name.is_none_or(str::is_empty) {
            return Err(format!("{at}: function name is missing or empty"));
        }
        let Some(arguments) = function
            .and_then(|f| f.get("arguments"))
            .and_then(Value::as_str)
        else {
            return Err(format!("{at}: arguments is not a string"));
        };
        if let Err(err) = serde_json::from_str::<Value>(arguments) {
            return Err(format!(
                "{at}: arguments are not JSON ({err}): {arguments:?}"
            ));
        }
        ids.push(id.to_owned());
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, arguments: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": arguments}})
    }

    fn check(messages: Value) -> Result<(), String> {
        validate_openai_request(&json!({ "messages": messages }))
    }

    #[test]
    fn accepts_answered_calls_in_order() {
        let ok = check(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", "{}"), call("b", "{\"x\":1}")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done"},
        ]));
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn rejects_each_broken_rule() {
        let user = json!({"role": "user", "content": "u"});
        let broken = [
            json!([]),
            json!([{"role": "robot", "content": "x"}]),
            json!([user, {"role": "tool", "tool_call_id": "a", "content": "x"}]),
            json!([user, {"role": "assistant", "content": null, "tool_calls": [call("a", "{}")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"}]),
            json!([user, {"role": "assistant", "content": "", "tool_calls": [call("", "{}")]},
                {"role": "tool", "tool_call_id": "", "content": "x"}]),
            json!([user, {"role": "assistant", "content": "", "tool_calls": [call("a", "{")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"}]),
            json!([user, {"role": "assistant", "content": "", "tool_calls": [call("a", "{}"), call("a", "{}")]}]),
            json!([user, {"role": "assistant", "content": "", "tool_calls": [call("a", "{}"), call("b", "{}")]},
                {"role": "tool", "tool_call_id": "b", "content": "x"},
                {"role": "tool", "tool_call_id": "a", "content": "x"}]),
            json!([user, {"role": "assistant", "content": "", "tool_calls": [call("a", "{}")]}, user]),
            json!([user, {"role": "assistant", "content": "", "tool_calls": [call("a", "{}")]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
                {"role": "tool", "tool_call_id": "a", "content": "again"}]),
        ];
        for messages in broken {
            assert!(check(messages.clone()).is_err(), "accepted {messages}");
        }
    }
}
