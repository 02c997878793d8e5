//! What a command sees and what the model reads back: output, exit codes, cwd, stdin.

use std::time::Duration;

use agentd_tools::{BashConfig, BashTool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{bash, bash_in, call_timed, ok, workspace};

#[tokio::test]
async fn echo_output_is_returned_as_is() {
    assert_eq!(bash("echo hello").await, ok("hello\n"));
}

#[tokio::test]
async fn a_command_without_output_says_so() {
    assert_eq!(bash("true").await, ok("(no output)"));
}

#[tokio::test]
async fn a_trivial_command_returns_in_a_fraction_of_a_second() {
    let workspace = workspace();
    let tool = BashTool::new(BashConfig::default());
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({"command": "true"})).await;
    eprintln!("`true` took {elapsed:?}");
    assert_eq!(output, ok("(no output)"));
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
}

#[tokio::test]
async fn a_non_zero_exit_is_an_error_with_the_code_appended() {
    assert_eq!(
        bash("echo oops; exit 3").await,
        ToolOutput {
            text: "oops\n[exit code 3]".to_owned(),
            is_error: true,
            exit_code: Some(3),
            truncated: false,
        }
    );
}

#[tokio::test]
async fn a_non_zero_exit_without_output_or_final_newline_still_shows_the_code() {
    assert_eq!(bash("false").await.text, "(no output)\n[exit code 1]");
    assert_eq!(bash("printf x; exit 2").await.text, "x\n[exit code 2]");
}

#[tokio::test]
async fn a_shell_killed_by_a_signal_reports_128_plus_the_signal() {
    assert_eq!(
        bash("kill -TERM $$").await,
        ToolOutput {
            text: "(no output)\n[killed by signal 15 (SIGTERM); exit code 143]".to_owned(),
            is_error: true,
            exit_code: Some(143),
            truncated: false,
        }
    );
}

#[tokio::test]
async fn stderr_is_interleaved_with_stdout_in_the_order_written() {
    assert_eq!(
        bash("echo one; echo two >&2; echo three; echo four >&2; ls /nonexistent-agentd").await,
        ToolOutput {
            text: "one\ntwo\nthree\nfour\n\
                   ls: cannot access '/nonexistent-agentd': No such file or directory\n\
                   [exit code 2]"
                .to_owned(),
            is_error: true,
            exit_code: Some(2),
            truncated: false,
        }
    );
}

#[tokio::test]
async fn the_working_directory_is_the_workspace() {
    let workspace = workspace();
    let real = workspace.dir.path().canonicalize().unwrap();
    assert_eq!(
        bash_in(&workspace.ctx, "pwd").await,
        ok(&format!("{}\n", real.display()))
    );
}

#[tokio::test]
async fn files_written_by_one_call_are_seen_by_the_next() {
    let workspace = workspace();
    assert_eq!(
        bash_in(&workspace.ctx, "echo kept > note.txt").await,
        ok("(no output)")
    );
    assert_eq!(bash_in(&workspace.ctx, "cat note.txt").await, ok("kept\n"));
    assert_eq!(
        std::fs::read_to_string(workspace.dir.path().join("note.txt")).unwrap(),
        "kept\n"
    );
}

#[tokio::test]
async fn home_is_the_workspace() {
    let workspace = workspace();
    assert_eq!(
        bash_in(&workspace.ctx, "echo \"$HOME\"; cd && pwd -L").await,
        ok(&format!("{0}\n{0}\n", workspace.dir.path().display()))
    );
}

#[tokio::test]
async fn cat_reads_end_of_file_at_once_instead_of_waiting_for_input() {
    assert_eq!(bash("cat").await, ok("(no output)"));
}

#[tokio::test]
async fn read_gets_end_of_file_at_once() {
    assert_eq!(
        bash("read -r line; echo \"read returned $?\"").await,
        ok("read returned 1\n")
    );
}

#[tokio::test]
async fn a_missing_workspace_is_an_error_the_model_reads() {
    let mut workspace = workspace();
    workspace.ctx.workspace = workspace.dir.path().join("gone");
    assert_eq!(
        bash_in(&workspace.ctx, "true").await,
        ToolOutput::error("could not run bash: No such file or directory (os error 2)")
    );
}
