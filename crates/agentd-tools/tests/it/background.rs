//! Processes a command leaves behind: they never hold the call open and never survive it.

use std::time::Duration;

use agentd_tools::{BashConfig, BashTool};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{assert_dead, call_timed, ok, pids, workspace};

/// Runs `command`, which must write the pid of what it leaves behind to `bg.pid`; checks
/// the output, that the call returned quickly and that the process is dead afterwards.
async fn returns_at_once_and_leaves_nothing(command: &str, expected: &str) {
    let workspace = workspace();
    let tool = BashTool::new(BashConfig::default());
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    eprintln!("`{command}` took {elapsed:?}");
    assert_eq!(output, ok(expected));
    assert!(elapsed < Duration::from_millis(700), "took {elapsed:?}");
    let pids = pids(&workspace.dir.path().join("bg.pid"));
    assert_eq!(pids.len(), 1, "{pids:?}");
    assert_dead(pids[0]).await;
}

#[tokio::test]
async fn a_background_child_holding_the_output_does_not_keep_the_call_open() {
    returns_at_once_and_leaves_nothing("sleep 300 & echo $! > bg.pid; echo started", "started\n")
        .await;
}

#[tokio::test]
async fn a_background_child_of_a_subshell_is_killed_too() {
    returns_at_once_and_leaves_nothing("(sleep 300 & echo $! > bg.pid); echo started", "started\n")
        .await;
}

#[tokio::test]
async fn a_background_child_with_its_output_redirected_is_killed_too() {
    returns_at_once_and_leaves_nothing(
        "nohup sleep 300 > /dev/null 2>&1 & echo $! > bg.pid",
        "(no output)",
    )
    .await;
}
