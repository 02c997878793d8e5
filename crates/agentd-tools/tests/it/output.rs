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
                "{half}\n[... 9999000 bytes omitted; output was 10000000 bytes in total ...]\n{half}"
            ),
            is_error: false,
            exit_code: Some(0),
            truncated: true,
        }
    );
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
