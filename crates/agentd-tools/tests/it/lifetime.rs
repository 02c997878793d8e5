//! Tool processes never outlive the server and leave no zombies; what a bash call costs.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use agentd_tools::{BashConfig, BashTool, ProcessCap, Tool};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{
    assert_none_left, bwrap_config, call, marker, ok, processes_with_arg, sandboxed, workspace,
};

/// Set in the child test process that plays the server in
/// [`tool_processes_die_with_the_server`].
const ROLE: &str = "AGENTD_TEST_PLAY_SERVER";
const WORKSPACE: &str = "AGENTD_TEST_WORKSPACE";
const MARKER: &str = "AGENTD_TEST_MARKER";

/// Waits up to 10 s for `path` to exist.
async fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The server's side: starts a sandboxed call that leaves processes running (one escaped
/// with `setsid`), then dies abruptly, without dropping anything, when told to.
async fn play_server() {
    let workspace = std::env::var(WORKSPACE).unwrap();
    let marker = std::env::var(MARKER).unwrap();
    let tool = sandboxed(BashConfig::default(), bwrap_config()).await;
    let ctx = agentd_tools::ToolContext {
        workspace: workspace.clone().into(),
        call_id: "call-1".to_owned(),
        cancel: tokio_util::sync::CancellationToken::new(),
    };
    let command = format!("sleep {marker} & setsid sleep {marker} & touch started; sleep {marker}");
    tokio::spawn(async move { tool.call(&ctx, json!({ "command": command })).await });
    wait_for(&Path::new(&workspace).join("exit-now")).await;
    std::process::exit(0);
}

#[tokio::test]
async fn tool_processes_die_with_the_server() {
    if std::env::var_os(ROLE).is_some() {
        return play_server().await;
    }
    let workspace = workspace();
    let marker = marker();
    let mut server = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "lifetime::tool_processes_die_with_the_server",
            "--nocapture",
        ])
        .env(ROLE, "1")
        .env(WORKSPACE, workspace.dir.path())
        .env(MARKER, &marker)
        .spawn()
        .unwrap();
    wait_for(&workspace.dir.path().join("started")).await;
    // Two background sleeps and the shell's last command, exec'd in its place.
    let deadline = Instant::now() + Duration::from_secs(5);
    while processes_with_arg(&marker).len() < 3 {
        assert!(
            Instant::now() < deadline,
            "{:?}",
            processes_with_arg(&marker)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    std::fs::write(workspace.dir.path().join("exit-now"), "").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(status.success(), "{status}");
    assert_none_left(&marker).await;
}

/// Zombie children of this process (exited, not yet reaped).
fn zombie_children() -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut zombies = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()) {
            zombies.push(entry.file_name().to_string_lossy().parse().unwrap_or(0));
        }
    }
    zombies
}

#[tokio::test]
async fn calls_leave_no_zombies() {
    let workspace = workspace();
    let config = BashConfig {
        timeout: Duration::from_secs(1),
        ..BashConfig::default()
    };
    let tool = sandboxed(config, bwrap_config()).await;
    for command in ["true", "sleep 300 & echo started", "sleep 30", "exit 3"] {
        call(&tool, &workspace.ctx, json!({ "command": command })).await;
    }
    // Other tests run in parallel and may have a child between its exit and its reaping.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let zombies = zombie_children();
        if zombies.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "zombies: {zombies:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The median wall time of 100 calls of `true` through `tool`.
async fn median_cost(tool: &BashTool) -> Duration {
    let workspace = workspace();
    let mut times = Vec::with_capacity(100);
    for _ in 0..100 {
        let started = Instant::now();
        let output = call(tool, &workspace.ctx, json!({"command": "true"})).await;
        times.push(started.elapsed());
        assert_eq!(output, ok("(no output)"));
    }
    times.sort();
    times[50]
}

/// Prints the cost of a bash call with and without the sandbox, and of the sandboxed call's
/// process cap (a pids cgroup per call where there is one). Run alone for stable figures:
/// `cargo test -p agentd-tools --test it -- lifetime::cost --nocapture`.
#[tokio::test]
async fn cost_of_a_bash_call_with_and_without_the_sandbox() {
    let plain = median_cost(&BashTool::new(BashConfig::default())).await;
    let tool = sandboxed(BashConfig::default(), bwrap_config()).await;
    let boxed = median_cost(&tool.clone().with_process_cap(ProcessCap::rlimit())).await;
    let capped = median_cost(&tool).await;
    eprintln!(
        "bash `true`, median of 100 calls: no sandbox {plain:?}, bwrap {boxed:?}, bwrap and \
         the process cap of the probe {capped:?}"
    );
    assert!(
        [plain, boxed, capped]
            .iter()
            .all(|cost| *cost < Duration::from_secs(1))
    );
}
