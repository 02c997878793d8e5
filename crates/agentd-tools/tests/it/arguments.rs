//! The tools-menu entry and malformed arguments, answered with messages the model can act on.

use agentd_tools::{BashConfig, BashTool, Tool, ToolOutput, default_toolbox};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::helpers::{call_timed, workspace};

async fn call(arguments: Value) -> ToolOutput {
    let tool = BashTool::new(BashConfig::default());
    call_timed(&tool, &workspace().ctx, arguments).await.0
}

#[tokio::test]
async fn a_missing_command_is_an_error_saying_what_to_send() {
    assert_eq!(
        call(json!({})).await,
        ToolOutput::error(
            "missing required argument `command`: the bash command to run, \
             as in {\"command\": \"ls -la\"}"
        )
    );
    assert_eq!(call(json!({"command": null})).await, call(json!({})).await);
}

#[tokio::test]
async fn a_non_string_command_is_an_error() {
    assert_eq!(
        call(json!({"command": 5})).await,
        ToolOutput::error(
            "argument `command` must be a string with the bash command to run, got a number"
        )
    );
    assert_eq!(
        call(json!({"command": ["ls", "-la"]})).await,
        ToolOutput::error(
            "argument `command` must be a string with the bash command to run, got an array"
        )
    );
}

#[tokio::test]
async fn an_empty_command_is_an_error() {
    assert_eq!(
        call(json!({"command": " \n"})).await,
        ToolOutput::error("argument `command` is empty: give the bash command to run")
    );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_an_error() {
    assert_eq!(
        call(json!("ls -la")).await,
        ToolOutput::error(
            "arguments must be a JSON object like {\"command\": \"ls -la\"}, got a string"
        )
    );
}

#[tokio::test]
async fn a_timeout_that_is_not_a_whole_number_is_an_error() {
    for timeout in [json!("10"), json!(1.5)] {
        let expected = match timeout {
            Value::String(_) => "got a string",
            _ => "got a number",
        };
        assert_eq!(
            call(json!({"command": "true", "timeout_secs": timeout})).await,
            ToolOutput::error(format!(
                "argument `timeout_secs` must be a whole number of seconds from 1 to 120, \
                 {expected}"
            ))
        );
    }
}

#[test]
fn the_spec_offers_bash_with_a_required_command_and_an_optional_timeout() {
    let spec = BashTool::new(BashConfig::default()).spec();
    assert_eq!(spec.name, "bash");
    assert_eq!(
        spec.parameters,
        json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command to run, e.g. `ls -la` or `make test 2>&1 | tail -n 40`.",
                },
                "timeout_secs": {
                    "type": "integer",
                    "description": "Seconds before the command is killed, 1 to 120; default 120.",
                    "minimum": 1,
                    "maximum": 120,
                },
            },
            "required": ["command"],
        })
    );
    for promise in [
        "`bash -c`",
        "workspace",
        "stdin",
        "32768 bytes",
        "120 s",
        "[exit code N]",
        "At most 1024 processes and threads",
    ] {
        assert!(
            spec.description.contains(promise),
            "{promise}: {}",
            spec.description
        );
    }
}

#[test]
fn the_default_toolbox_offers_bash_and_the_file_tools() {
    let toolbox = default_toolbox(BashConfig::default());
    assert_eq!(
        toolbox.names(),
        [
            "bash",
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "write_file"
        ]
    );
    let enabled = ["bash".to_owned(), "read_file".to_owned()];
    let specs = toolbox.specs(Some(&enabled));
    assert_eq!(specs[0], BashTool::new(BashConfig::default()).spec());
    assert_eq!(specs[1].name, "read_file");
    assert_eq!(specs.len(), 2);
}
