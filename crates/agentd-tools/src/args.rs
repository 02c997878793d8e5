//! Reading a tool call's JSON arguments, with errors the model can act on.
//!
//! Owns the wording of argument errors shared by all tools: what was missing or of the
//! wrong type, and an example of a correct call. It does no IO.

use serde_json::{Map, Value};

/// The arguments object of one call.
pub(crate) type Args = Map<String, Value>;

/// `arguments` as an object. `example` is a correct call, shown in the error.
pub(crate) fn object<'a>(arguments: &'a Value, example: &str) -> Result<&'a Args, String> {
    arguments.as_object().ok_or_else(|| {
        format!(
            "arguments must be a JSON object like {example}, got {}",
            kind(arguments)
        )
    })
}

/// The string argument `name`. `what` describes it, `example` is a correct call.
pub(crate) fn required_str<'a>(
    args: &'a Args,
    name: &str,
    what: &str,
    example: &str,
) -> Result<&'a str, String> {
    match args.get(name) {
        None | Some(Value::Null) => Err(format!(
            "missing required argument `{name}`: {what}, as in {example}"
        )),
        Some(Value::String(value)) => Ok(value),
        Some(other) => Err(format!(
            "argument `{name}` must be a string ({what}), got {}",
            kind(other)
        )),
    }
}

/// The string argument `name` if given (null counts as not given).
pub(crate) fn optional_str<'a>(
    args: &'a Args,
    name: &str,
    what: &str,
) -> Result<Option<&'a str>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(value)) => Ok(Some(value)),
        Some(other) => Err(format!(
            "argument `{name}` must be a string ({what}), got {}",
            kind(other)
        )),
    }
}

/// The whole-number argument `name` if given, at least `min`.
pub(crate) fn optional_u64(args: &Args, name: &str, min: u64) -> Result<Option<u64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(number) if number >= min => Ok(Some(number)),
            _ => Err(format!(
                "argument `{name}` must be a whole number of at least {min}, got {}",
                describe(value)
            )),
        },
    }
}

/// The boolean argument `name`, `false` when not given.
pub(crate) fn flag(args: &Args, name: &str) -> Result<bool, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(value)) => Ok(*value),
        Some(other) => Err(format!(
            "argument `{name}` must be true or false, got {}",
            kind(other)
        )),
    }
}

/// "a string", "an array", …: what the model sent where something else was expected.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A number as written ("-3", "1.5"), anything else by its [`kind`].
fn describe(value: &Value) -> String {
    match value {
        Value::Number(number) => number.to_string(),
        other => kind(other).to_owned(),
    }
}
