//! Capped and lossy output as the model reads it.

use std::time::Duration;

use agentd_tools::{BashConfig, BashTool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{bash, call_timed, ok, workspace};

fn capped(output_cap: usize, timeout: Duration) -> BashTool {
    BashTool::new(BashConfig {
        timeout,
        output_cap,
        ..BashConfig::default()
    })
}

#[tokio::test]
async fn a_flood_of_output_keeps_head_and_tail_with_a_note_between() {
    let workspace = workspace();
    let tool = capped(1000, Duration::from_secs(30));
    let arguments = json!({"command": "yes | head -c 10000000"});
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, arguments).await;
    eprintln!("10 MB of output took {elapsed:?}");
    let half = "y\n".repeat(250);
    assert_eq!(
        output,
        ToolOutput {
            text: format!(
                "{half}\n[... 9999000 bytes omitted; output was 10000000 bytes in total; the \
                 full output is in .agentd/output/call-1.log ...]\n{half}"
            ),
            is_error: false,
            exit_code: Some(0),
            truncated: true,
        }
    );
    let log = std::fs::read(workspace.dir.path().join(".agentd/output/call-1.log")).unwrap();
    assert_eq!(log.len(), 10_000_000);
    assert!(log.chunks(2).all(|pair| pair == b"y\n"));
}

#[tokio::test]
async fn the_full_output_log_is_bounded_and_the_note_says_so() {
    let workspace = workspace();
    let tool = BashTool::new(BashConfig {
        output_cap: 10,
        full_output_limit: 1000,
        ..BashConfig::default()
    });
    let arguments = json!({"command": "yes | head -c 5000"});
    let (output, _) = call_timed(&tool, &workspace.ctx, arguments).await;
    assert_eq!(
        output.text,
        "y\ny\ny\n[... 4990 bytes omitted; output was 5000 bytes in total; the first 1000 \
         bytes are in .agentd/output/call-1.log ...]\n\ny\ny\n"
    );
    let log = std::fs::read(workspace.dir.path().join(".agentd/output/call-1.log")).unwrap();
    assert_eq!(log, "y\n".repeat(500).as_bytes());
}

#[tokio::test]
async fn output_within_the_cap_leaves_no_log_file() {
    let workspace = workspace();
    let tool = capped(1000, Duration::from_secs(30));
    let (output, _) = call_timed(&tool, &workspace.ctx, json!({"command": "echo hi"})).await;
    assert_eq!(output, ok("hi\n"));
    assert!(!workspace.dir.path().join(".agentd").exists());
}

#[tokio::test]
async fn a_call_id_cannot_steer_the_log_file_out_of_its_directory() {
    let mut workspace = workspace();
    workspace.ctx.call_id = "../../escape/x".to_owned();
    let tool = capped(4, Duration::from_secs(30));
    let (output, _) = call_timed(&tool, &workspace.ctx, json!({"command": "echo 123456"})).await;
    assert_eq!(
        output.text,
        "12\n[... 3 bytes omitted; output was 7 bytes in total; the full output is in \
         .agentd/output/______escape_x.log ...]\n6\n"
    );
    let log = workspace
        .dir
        .path()
        .join(".agentd/output/______escape_x.log");
    assert_eq!(std::fs::read_to_string(log).unwrap(), "123456\n");
}

#[tokio::test]
async fn a_symlinked_output_directory_cannot_redirect_the_log_outside() {
    let workspace = workspace();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), workspace.dir.path().join(".agentd")).unwrap();
    let tool = capped(4, Duration::from_secs(30));
    let (output, _) = call_timed(&tool, &workspace.ctx, json!({"command": "echo 123456"})).await;
    assert_eq!(
        output.text,
        "12\n[... 3 bytes omitted; output was 7 bytes in total; the full output could not be \
         saved: `.agentd/output/call-1.log` is outside the workspace (it leads outside through \
         a symlink or `..`); only files inside it can be used: give a path relative to the \
         workspace, like `src/main.rs` ...]\n6\n"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn endless_output_stays_capped_until_the_timeout() {
    let workspace = workspace();
    let tool = capped(1000, Duration::from_secs(1));
    let (output, _) = call_timed(&tool, &workspace.ctx, json!({"command": "yes"})).await;
    assert!(output.truncated);
    assert!(output.is_error);
    assert!(
        output.text.starts_with(&"y\n".repeat(250)),
        "{}",
        output.text
    );
    assert!(
        output
            .text
            .ends_with("y\n[command timed out after 1 s and was killed]"),
        "{}",
        output.text
    );
    assert!(output.text.len() < 1200, "{} bytes", output.text.len());
}

#[tokio::test]
async fn invalid_utf8_is_replaced_and_the_rest_kept() {
    assert_eq!(
        bash("printf '\\xff\\xfeok'").await,
        ok("\u{FFFD}\u{FFFD}ok")
    );
}

#[tokio::test]
async fn output_up_to_the_cap_is_not_truncated() {
    let workspace = workspace();
    let tool = capped(1000, Duration::from_secs(30));
    let arguments = json!({"command": "yes | head -c 1000"});
    let (output, _) = call_timed(&tool, &workspace.ctx, arguments).await;
    assert_eq!(output, ok(&"y\n".repeat(500)));
}
