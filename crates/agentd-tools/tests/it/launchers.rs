//! Tool processes parked ahead of their calls (`ProcessCap::enable_launchers`): a call that
//! takes one runs exactly as one started at the call, in its own capped pids cgroup, with
//! its output, its exit code, its limits and its clean-up; parked ones die with the cap.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_tools::{BashConfig, BashTool, ProcessCap, ProcessCapMode};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{
    assert_none_left, assert_removed, bwrap_config, call, call_timed, capped, cgroup_cap,
    fork_until_refused, marker, ok, process_cap, sandboxed, workspace,
};

/// The helper the server re-executes, built from this crate.
const HELPER: &str = env!("CARGO_BIN_EXE_agentd-sandbox-exec");

/// The cap the server would use here with launchers on, or `None` (the test is then
/// skipped, saying so) without a pids cgroup: launchers only exist with one.
async fn launching_cap() -> Option<ProcessCap> {
    let cap = cgroup_cap().await?;
    cap.enable_launchers(HELPER.into()).await.unwrap();
    Some(cap)
}

/// Waits up to 5 s for `count` launchers to be parked in `dir` (call groups with a
/// process); returns the names of such groups.
async fn wait_parked_n(dir: &Path, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let parked: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|entry| {
                entry.file_name().to_string_lossy().starts_with("call-")
                    && std::fs::read_to_string(entry.path().join("cgroup.procs"))
                        .is_ok_and(|procs| !procs.trim().is_empty())
            })
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect();
        if parked.len() >= count {
            return parked;
        }
        assert!(Instant::now() < deadline, "no launcher parked in {dir:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits up to 5 s for a launcher to be parked in `dir`.
async fn wait_parked(dir: &Path) {
    wait_parked_n(dir, 1).await;
}

#[tokio::test]
async fn each_launched_call_runs_in_a_call_group_of_its_own_with_its_output_and_status() {
    let Some(cap) = launching_cap().await else {
        return;
    };
    let dir = cap.cgroup_dir().unwrap().to_path_buf();
    let workspace = workspace();
    let tool = BashTool::new(BashConfig::default()).with_process_cap(cap);
    let mut groups = Vec::new();
    for i in 0..4 {
        // The cap keeps four ready; once all are, no fifth starts before a call takes one,
        // so the call runs in one of these.
        let parked = wait_parked_n(&dir, 4).await;
        let command =
            format!("grep pids /proc/self/cgroup; echo out {i}; echo err {i} >&2; exit {i}");
        let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
        let group = output.text.lines().next().unwrap().to_owned();
        // It ran in a group that was parked before the call started.
        let name = group.rsplit('/').next().unwrap();
        assert!(
            parked.iter().any(|p| p == name),
            "{group} not in {parked:?}"
        );
        assert!(
            output.text.contains(&format!("out {i}\nerr {i}\n")),
            "{}",
            output.text
        );
        assert_eq!(output.exit_code, Some(i));
        assert_eq!(output.is_error, i != 0);
        groups.push(group);
    }
    groups.dedup();
    assert_eq!(groups.len(), 4, "{groups:?}");
    drop(tool);
    // The parked launchers die with the last clone of the cap, and with them its cgroup.
    assert_removed(&dir).await;
}

#[tokio::test]
async fn a_launched_fork_bomb_hits_its_own_pids_max() {
    let Some(cap) = launching_cap().await else {
        return;
    };
    let dir = cap.cgroup_dir().unwrap().to_path_buf();
    let workspace = workspace();
    let tool = sandboxed(capped(8, Duration::from_secs(10)), bwrap_config())
        .await
        .with_process_cap(cap);
    let command = fork_until_refused();
    for _ in 0..2 {
        wait_parked(&dir).await;
        let (output, elapsed) =
            call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
        // As when started at the call: bwrap, its init and python count; 5 forks fit.
        assert_eq!(output, ok("forked 5, then errno 11\n"));
        assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    }
}

#[tokio::test]
async fn a_launched_call_still_loses_its_setsid_escapes_and_its_timeout_holds() {
    let Some(cap) = launching_cap().await else {
        return;
    };
    let dir = cap.cgroup_dir().unwrap().to_path_buf();
    let workspace = workspace();
    let tool = BashTool::new(BashConfig {
        timeout: Duration::from_millis(500),
        ..BashConfig::default()
    })
    .with_process_cap(cap);
    wait_parked(&dir).await;
    let marker = marker();
    let command = format!("setsid sleep {marker} > /dev/null 2>&1 & echo started");
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("started\n"));
    assert_none_left(&marker).await;
    wait_parked(&dir).await;
    let (output, elapsed) =
        call_timed(&tool, &workspace.ctx, json!({ "command": "sleep 30" })).await;
    assert!(output.is_error, "{output:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn a_helper_that_is_not_a_launcher_is_refused() {
    let cap = process_cap().await;
    if cap.mode() == ProcessCapMode::Rlimit {
        eprintln!("skipped: no pids cgroup can be created here");
        return;
    }
    // `true` exits 0 without reading, let alone running, the command it is handed.
    let refused = cap.enable_launchers("/bin/true".into()).await;
    assert!(refused.is_err(), "{refused:?}");
    let workspace = workspace();
    let tool = BashTool::new(BashConfig::default()).with_process_cap(cap);
    let output = call(
        &tool,
        &workspace.ctx,
        json!({ "command": "echo still works" }),
    )
    .await;
    assert_eq!(output, ok("still works\n"));
}

#[tokio::test]
async fn more_calls_at_once_than_parked_launchers_all_run_each_in_its_own_group() {
    let Some(cap) = launching_cap().await else {
        return;
    };
    let workspace = workspace();
    let tool = BashTool::new(BashConfig::default()).with_process_cap(cap);
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..10 {
        let (tool, ctx) = (tool.clone(), workspace.ctx.clone());
        calls.spawn(async move {
            let command = format!("grep pids /proc/self/cgroup; echo call {i}");
            (i, call(&tool, &ctx, json!({ "command": command })).await)
        });
    }
    let mut outputs = calls.join_all().await;
    outputs.sort_by_key(|(i, _)| *i);
    let mut groups = Vec::new();
    for (i, output) in &outputs {
        assert!(!output.is_error, "{output:?}");
        let mut lines = output.text.lines();
        let group = lines.next().unwrap().to_owned();
        assert!(group.contains("/call-"), "{group}");
        assert_eq!(lines.next(), Some(format!("call {i}").as_str()));
        groups.push(group);
    }
    groups.sort();
    groups.dedup();
    assert_eq!(groups.len(), 10, "{groups:?}");
}
