//! Shared set-up: a workspace per test, a bounded tool call, process liveness checks.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_tools::{BashConfig, BashTool, Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

/// No call in these tests may take longer than this; a regression fails instead of hanging.
pub const CALL_BOUND: Duration = Duration::from_secs(20);

/// A temporary workspace and the context of one call in it.
pub struct Workspace {
    /// Deleted when the test ends.
    pub dir: TempDir,
    pub ctx: ToolContext,
}

pub fn workspace() -> Workspace {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext {
        workspace: dir.path().to_path_buf(),
        call_id: "call-1".to_owned(),
        cancel: CancellationToken::new(),
    };
    Workspace { dir, ctx }
}

/// Calls `tool` with `arguments`, failing the test if it takes longer than [`CALL_BOUND`];
/// also returns the wall time of the call.
pub async fn call_timed(
    tool: &BashTool,
    ctx: &ToolContext,
    arguments: Value,
) -> (ToolOutput, Duration) {
    let started = Instant::now();
    let output = tokio::time::timeout(CALL_BOUND, tool.call(ctx, arguments))
        .await
        .expect("the tool call did not return in time");
    (output, started.elapsed())
}

/// Runs `command` with the default configuration in `ctx`'s workspace.
pub async fn bash_in(ctx: &ToolContext, command: &str) -> ToolOutput {
    let tool = BashTool::new(BashConfig::default());
    call_timed(&tool, ctx, json!({ "command": command }))
        .await
        .0
}

/// Runs `command` with the default configuration in a fresh workspace.
pub async fn bash(command: &str) -> ToolOutput {
    bash_in(&workspace().ctx, command).await
}

/// A successful output.
pub fn ok(text: &str) -> ToolOutput {
    ToolOutput {
        text: text.to_owned(),
        is_error: false,
        exit_code: Some(0),
        truncated: false,
    }
}

/// The pids a test command wrote to `file`, one a line.
pub fn pids(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|line| line.trim().parse().unwrap())
        .collect()
}

/// Asserts `pid` is gone (or a zombie waiting for its new parent to reap it) within 2 s:
/// SIGKILL is delivered asynchronously.
pub async fn assert_dead(pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while is_running(pid) {
        assert!(Instant::now() < deadline, "process {pid} is still running");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `pid` exists and is not a zombie, from `/proc/<pid>/stat`.
fn is_running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "<pid> (<comm>) <state> …"; comm may contain spaces and parentheses.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}
