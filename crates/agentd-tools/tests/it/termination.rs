//! Timeouts and cancellation: the whole process group dies, the model reads why.

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentd_tools::{BashConfig, BashTool, Tool, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{CALL_BOUND, assert_dead, call_timed, pids, workspace};

fn with_timeout(timeout: Duration) -> BashTool {
    BashTool::new(BashConfig {
        timeout,
        ..BashConfig::default()
    })
}

fn timed_out(text: &str) -> ToolOutput {
    ToolOutput {
        text: text.to_owned(),
        is_error: true,
        exit_code: None,
        truncated: false,
    }
}

#[tokio::test]
async fn a_command_past_its_timeout_is_killed_and_keeps_its_output_so_far() {
    let workspace = workspace();
    let tool = with_timeout(Duration::from_secs(1));
    let (output, elapsed) = call_timed(
        &tool,
        &workspace.ctx,
        json!({"command": "echo before; sleep 30; echo no"}),
    )
    .await;
    assert_eq!(
        output,
        timed_out("before\n[command timed out after 1 s and was killed]")
    );
    assert!(
        elapsed >= Duration::from_secs(1) && elapsed < Duration::from_millis(2500),
        "took {elapsed:?}"
    );
}

#[tokio::test]
async fn a_timeout_kills_children_and_grandchildren() {
    let workspace = workspace();
    let tool = with_timeout(Duration::from_secs(1));
    let command = "bash -c 'sleep 60 & echo $! >> pids; sleep 60 & echo $! >> pids; wait' & \
                   echo $! >> pids; wait";
    let (output, _) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        timed_out("(no output)\n[command timed out after 1 s and was killed]")
    );
    let pids = pids(&workspace.dir.path().join("pids"));
    assert_eq!(pids.len(), 3, "{pids:?}");
    for pid in pids {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn timeout_secs_shortens_the_timeout_but_never_past_the_configured_one() {
    let workspace = workspace();
    let tool = with_timeout(Duration::from_secs(3));
    let (output, elapsed) = call_timed(
        &tool,
        &workspace.ctx,
        json!({"command": "sleep 30", "timeout_secs": 1}),
    )
    .await;
    assert_eq!(
        output,
        timed_out("(no output)\n[command timed out after 1 s and was killed]")
    );
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");

    let short = with_timeout(Duration::from_secs(1));
    for asked in [json!(600), json!(0), json!(-5)] {
        let arguments = json!({"command": "sleep 30", "timeout_secs": asked});
        let (output, elapsed) = call_timed(&short, &workspace.ctx, arguments).await;
        assert_eq!(
            output,
            timed_out("(no output)\n[command timed out after 1 s and was killed]"),
            "timeout_secs {asked}"
        );
        assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    }
}

#[tokio::test]
async fn cancelling_kills_the_whole_group_and_returns_promptly() {
    let workspace = workspace();
    let tool = Arc::new(BashTool::new(BashConfig::default()));
    let ctx = workspace.ctx.clone();
    let call = tokio::spawn(async move {
        // The pid file appears (atomically) only once "started" is in the pipe.
        let command = "sleep 30 & pid=$!; echo started; echo $pid > pids.tmp; mv pids.tmp pids; \
                       sleep 30; echo no";
        tool.call(&ctx, json!({ "command": command })).await
    });
    let pids_file = workspace.dir.path().join("pids");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pids_file.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let cancelled_at = Instant::now();
    workspace.ctx.cancel.cancel();
    let output = tokio::time::timeout(CALL_BOUND, call)
        .await
        .unwrap()
        .unwrap();
    let elapsed = cancelled_at.elapsed();
    assert_eq!(
        output,
        timed_out("started\n[cancelled; the command was killed]")
    );
    assert!(elapsed < Duration::from_secs(1), "took {elapsed:?}");
    for pid in pids(&pids_file) {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn a_call_cancelled_before_it_starts_runs_nothing() {
    let workspace = workspace();
    workspace.ctx.cancel.cancel();
    let tool = BashTool::new(BashConfig::default());
    let (output, _) = call_timed(&tool, &workspace.ctx, json!({"command": "touch ran"})).await;
    assert_eq!(
        output,
        ToolOutput::error("[cancelled before the command started]")
    );
    assert!(!workspace.dir.path().join("ran").exists());
}
