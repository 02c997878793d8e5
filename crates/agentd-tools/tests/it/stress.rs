//! Hostile commands in the sandbox, bounded by construction (rlimits, PID namespace,
//! timeouts): they fail, and the server (this test process) is unharmed.

use std::time::Duration;

use agentd_tools::{BashConfig, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{
    assert_none_left, bwrap_config, call, call_timed, marker, ok, rss_bytes, sandboxed, workspace,
};

/// How much this process's resident memory may grow while a tool floods its output.
const RSS_SLACK: u64 = 64 << 20;

#[tokio::test]
async fn endless_yes_is_capped_and_the_servers_memory_stays_bounded() {
    let workspace = workspace();
    let config = BashConfig {
        timeout: Duration::from_secs(2),
        output_cap: 1000,
        full_output_limit: 8 << 20,
        ..BashConfig::default()
    };
    let tool = sandboxed(config, bwrap_config()).await;
    let before = rss_bytes();
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({"command": "yes"})).await;
    let after = rss_bytes();
    eprintln!("yes: {elapsed:?}, RSS {before} -> {after} bytes");
    assert!(
        after < before + RSS_SLACK,
        "RSS grew from {before} to {after}"
    );
    let (head, rest) = output.text.split_once("\n[... ").unwrap();
    let (note, tail) = rest.split_once(" ...]\n").unwrap();
    assert_eq!(head, "y\n".repeat(250));
    assert!(
        note.ends_with("; the first 8388608 bytes are in .agentd/output/call-1.log"),
        "{note}"
    );
    assert_eq!(
        tail,
        format!(
            "{}y\n[command timed out after 2 s and was killed]",
            "y\n".repeat(249)
        )
    );
    assert!(output.truncated && output.is_error);
    let log = std::fs::metadata(workspace.dir.path().join(".agentd/output/call-1.log")).unwrap();
    assert_eq!(log.len(), 8 << 20);
}

/// Both bombs in one test, one after the other: two at once would mostly measure how the
/// kernel copes with reaping thousands of processes in parallel.
#[tokio::test]
async fn fork_bombs_fail_without_hurting_the_server() {
    let workspace = workspace();
    let short = |millis| BashConfig {
        timeout: Duration::from_millis(millis),
        ..BashConfig::default()
    };
    let alive = sandboxed(BashConfig::default(), bwrap_config()).await;

    // The classic one: its shell returns at once, and the PID namespace ends with it. The
    // call lasts until the kernel has killed and reaped the namespace's processes (up to the
    // cap, all at idle priority): ~20 ms here, but seconds once other tests load both cores
    // (a CI run timed out at 2 s). The timeout leaves room for that; the check is that the
    // shell ends by itself, not by the timeout.
    let tool = sandboxed(short(10_000), bwrap_config()).await;
    let (output, elapsed) =
        call_timed(&tool, &workspace.ctx, json!({"command": ":(){ :|:& };:"})).await;
    eprintln!("classic fork bomb: {elapsed:?}");
    // Its text may hold "fork: retry" lines from subshells, if the machine ran out of pids.
    assert_eq!(
        (output.is_error, output.exit_code),
        (false, Some(0)),
        "{output:?}"
    );
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(
        call(&alive, &workspace.ctx, json!({"command": "echo alive"})).await,
        ok("alive\n")
    );

    // One that keeps its shell running: ended by the timeout. Its processes are bash
    // subshells; the marker, an argument of the shell's last command, finds it from outside.
    let tool = sandboxed(short(500), bwrap_config()).await;
    let marker = marker();
    let command = format!(":(){{ :|:& }};: ; sleep {marker}");
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    eprintln!("sustained fork bomb: {elapsed:?}");
    assert!(output.is_error, "{output:?}");
    assert!(
        output
            .text
            .ends_with("[command timed out after 500 ms and was killed]"),
        "{}",
        output.text
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_none_left(&marker).await;
    assert_eq!(
        call(&alive, &workspace.ctx, json!({"command": "echo alive"})).await,
        ok("alive\n")
    );
}

#[tokio::test]
async fn an_8_gib_allocation_fails_under_the_address_space_limit() {
    let workspace = workspace();
    let tool = sandboxed(BashConfig::default(), bwrap_config()).await;
    let before = rss_bytes();
    let command = "python3 -c 'b = bytearray(8 << 30)'";
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    eprintln!("8 GiB: {elapsed:?}");
    assert_eq!(
        output,
        ToolOutput {
            text: "Traceback (most recent call last):\n  File \"<string>\", line 1, in \
                   <module>\nMemoryError\n[exit code 1]"
                .to_owned(),
            is_error: true,
            exit_code: Some(1),
            truncated: false,
        }
    );
    assert!(rss_bytes() < before + RSS_SLACK);
}

#[tokio::test]
async fn a_file_past_the_size_limit_is_cut_and_its_writer_stopped() {
    let workspace = workspace();
    let mut config = BashConfig::default();
    config.limits.file_size = Some(1 << 20);
    let tool = sandboxed(config, bwrap_config()).await;
    // The group's stderr is dropped: bash's "File size limit exceeded" line names a pid.
    let command = "{ head -c 2M /dev/zero > big; } 2>/dev/null; echo \"exit $?\"; stat -c %s big";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("exit 153\n1048576\n"));
}

#[tokio::test]
async fn a_busy_loop_past_the_cpu_limit_is_killed() {
    let workspace = workspace();
    let mut config = BashConfig::default();
    config.limits.cpu_secs = Some(1);
    let tool = sandboxed(config, bwrap_config()).await;
    let (output, elapsed) = call_timed(
        &tool,
        &workspace.ctx,
        json!({"command": "while :; do :; done"}),
    )
    .await;
    assert_eq!(
        output,
        ToolOutput {
            // bwrap reports a child killed by signal N as exit code 128 + N.
            text: "(no output)\n[exit code 152]".to_owned(),
            is_error: true,
            exit_code: Some(152),
            truncated: false,
        }
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}
