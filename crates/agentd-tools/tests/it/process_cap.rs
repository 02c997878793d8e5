//! The cap on a call's processes: one pids cgroup per call, so a fork bomb stops growing at
//! `pids.max`, ends within its timeout and leaves no process and no cgroup behind, while a
//! command that forks a few children works as before.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentd_tools::{BashConfig, BashTool, ProcessCapMode, Tool};
use pretty_assertions::assert_eq;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::helpers::{
    CALL_BOUND, assert_none_left, assert_removed, bwrap_config, call, call_timed, capped,
    cgroup_cap, fork_until_refused, marker, ok, process_cap, processes_with_arg, sandboxed,
    workspace,
};

/// `pids.max` of the fork bomb's call.
const BOMB_CAP: u64 = 64;

/// The call groups in agentd's cgroup `dir`.
/// (none once the directory itself is gone).
fn call_groups(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("call-"))
        .map(|entry| entry.path())
        .collect()
}

/// The largest `pids.peak` (or `pids.current`, on kernels without it) of any call group in
/// `dir`, sampled every 5 ms until `done` fires.
async fn watch_peak(dir: PathBuf, done: CancellationToken) -> u64 {
    let mut peak = 0;
    loop {
        for group in call_groups(&dir) {
            for file in ["pids.peak", "pids.current"] {
                if let Ok(text) = std::fs::read_to_string(group.join(file)) {
                    peak = peak.max(text.trim().parse().unwrap_or(0));
                }
            }
        }
        if done.is_cancelled() {
            return peak;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits up to 5 s for `dir` to hold no call group.
async fn assert_no_call_groups(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = call_groups(dir);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "call groups left: {left:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn the_probe_reports_its_mode_and_its_cgroup_lives_as_long_as_the_cap() {
    let cap = process_cap().await;
    eprintln!("process cap: {} at {:?}", cap.mode(), cap.cgroup_dir());
    assert!(["cgroup-v2", "cgroup-v1", "rlimit"].contains(&cap.mode().as_str()));
    let Some(dir) = cap.cgroup_dir().map(Path::to_path_buf) else {
        assert_eq!(cap.mode(), ProcessCapMode::Rlimit);
        return;
    };
    assert!(dir.join("pids.max").is_file(), "{}", dir.display());
    let clone = cap.clone();
    drop(cap);
    assert!(dir.is_dir(), "removed while a clone is alive");
    drop(clone);
    assert_removed(&dir).await;
}

#[tokio::test]
async fn a_fork_bomb_never_grows_past_its_pids_max_and_leaves_nothing_behind() {
    let Some(cap) = cgroup_cap().await else {
        return;
    };
    let dir = cap.cgroup_dir().unwrap().to_path_buf();
    let workspace = workspace();
    let tool = sandboxed(capped(BOMB_CAP, Duration::from_secs(3)), bwrap_config())
        .await
        .with_process_cap(cap);
    let done = CancellationToken::new();
    let watcher = tokio::spawn(watch_peak(dir.clone(), done.clone()));
    let marker = marker();
    let command = format!(":(){{ :|:& }};: ; sleep {marker}");
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    done.cancel();
    let peak = watcher.await.unwrap();
    eprintln!("fork bomb under pids.max {BOMB_CAP}: peak {peak} processes, {elapsed:?}");
    assert!(
        output
            .text
            .ends_with("[command timed out after 3 s and was killed]"),
        "{}",
        output.text
    );
    assert!(
        (BOMB_CAP / 2..=BOMB_CAP).contains(&peak),
        "peak {peak} processes"
    );
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    assert_none_left(&marker).await;
    assert_no_call_groups(&dir).await;
    drop(tool);
    assert_removed(&dir).await;
}

#[tokio::test]
async fn forks_past_the_cap_fail_at_once_with_eagain() {
    let Some(cap) = cgroup_cap().await else {
        return;
    };
    let workspace = workspace();
    let tool = sandboxed(capped(8, Duration::from_secs(10)), bwrap_config())
        .await
        .with_process_cap(cap);
    // In the group: bwrap, its init in the PID namespace and python.
    let command = fork_until_refused();
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("forked 5, then errno 11\n"));
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

#[tokio::test]
async fn a_command_forking_a_few_children_works_under_a_small_cap() {
    let workspace = workspace();
    let tool = sandboxed(capped(16, Duration::from_secs(10)), bwrap_config()).await;
    let command = "(for i in 1 2 3 4 5; do (echo $i) & done; wait) | sort; echo done | cat";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("1\n2\n3\n4\n5\ndone\n"));
}

#[tokio::test]
async fn without_a_sandbox_the_cgroup_still_kills_a_setsid_escape() {
    let Some(cap) = cgroup_cap().await else {
        return;
    };
    let dir = cap.cgroup_dir().unwrap().to_path_buf();
    let workspace = workspace();
    let tool = BashTool::new(BashConfig::default()).with_process_cap(cap);
    let marker = marker();
    let command = format!("setsid sleep {marker} > /dev/null 2>&1 & echo started");
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("started\n"));
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
    assert_none_left(&marker).await;
    assert_no_call_groups(&dir).await;
}

#[tokio::test]
async fn the_probe_removes_the_empty_groups_of_servers_that_are_gone() {
    let Some(cap) = cgroup_cap().await else {
        return;
    };
    let servers = cap.cgroup_dir().unwrap().parent().unwrap().to_path_buf();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = servers.join(format!("agentd-{dead}-0badc0de"));
    std::fs::create_dir(&stale).unwrap();
    std::fs::create_dir(stale.join("call-7")).unwrap();
    let ours = servers.join(format!("agentd-{}-0badc0de", std::process::id()));
    std::fs::create_dir(&ours).unwrap();
    let again = process_cap().await;
    assert!(!stale.exists(), "{} kept", stale.display());
    assert!(ours.is_dir(), "a live server's group was removed");
    std::fs::remove_dir(&ours).unwrap();
    drop((cap, again));
}

#[tokio::test]
async fn a_dropped_call_kills_its_processes_and_removes_its_group() {
    let Some(cap) = cgroup_cap().await else {
        return;
    };
    let dir = cap.cgroup_dir().unwrap().to_path_buf();
    let workspace = workspace();
    let tool = sandboxed(BashConfig::default(), bwrap_config())
        .await
        .with_process_cap(cap);
    let marker = marker();
    let command = format!("sleep {marker}");
    let ctx = workspace.ctx.clone();
    let running = tokio::spawn(async move { tool.call(&ctx, json!({ "command": command })).await });
    let deadline = Instant::now() + CALL_BOUND;
    while processes_with_arg(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the command never started");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(call_groups(&dir).len(), 1);
    running.abort();
    assert!(running.await.unwrap_err().is_cancelled());
    assert_none_left(&marker).await;
    assert_no_call_groups(&dir).await;
}
