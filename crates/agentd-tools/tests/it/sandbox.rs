//! bash in the real bubblewrap sandbox: nothing outside the workspace is writable, no
//! network, no secrets, nothing left running.

use std::net::TcpListener;
use std::time::Duration;

use agentd_tools::{BashConfig, SandboxConfig, ToolOutput};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{
    CANARY, CANARY_VALUE, assert_none_left, bwrap_config, call, call_timed, marker, ok, sandboxed,
    set_canary, workspace,
};

fn failed(text: &str, code: i32) -> ToolOutput {
    ToolOutput {
        text: text.to_owned(),
        is_error: true,
        exit_code: Some(code),
        truncated: false,
    }
}

async fn tool() -> agentd_tools::BashTool {
    sandboxed(BashConfig::default(), bwrap_config()).await
}

#[tokio::test]
async fn bash_cannot_write_outside_the_workspace() {
    let workspace = workspace();
    let tool = tool().await;
    let name = format!("agentd-test-{}", uuid::Uuid::new_v4());
    let command = format!(
        "touch /etc/{name}; touch /root/{name}; touch /usr/{name}; touch inside.txt; \
         touch /tmp/{name} && echo private-tmp-ok"
    );
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        ok(&format!(
            "touch: cannot touch '/etc/{name}': Read-only file system\n\
             touch: cannot touch '/root/{name}': Read-only file system\n\
             touch: cannot touch '/usr/{name}': Read-only file system\n\
             private-tmp-ok\n"
        ))
    );
    for dir in ["/etc", "/root", "/usr", "/tmp"] {
        assert!(!std::path::Path::new(dir).join(&name).exists(), "{dir}");
    }
    assert!(workspace.dir.path().join("inside.txt").exists());
}

#[tokio::test]
async fn secrets_in_home_run_and_other_workspaces_are_hidden() {
    // Not under /tmp, which is private in the sandbox anyway: the workspace's parent must be
    // hidden explicitly.
    let parent = tempfile::tempdir_in("/var/tmp").unwrap();
    let mine = parent.path().join("mine");
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&mine).unwrap();
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("secret.txt"), "other session").unwrap();
    let mut workspace = workspace();
    workspace.ctx.workspace = mine;
    let tool = tool().await;
    // The workspace stays writable under its hidden, read-only parent.
    let command = "ls -A \"$(dirname \"$PWD\")\"; ls -A /root | wc -l; ls -A /run | wc -l; \
                   touch written && echo wrote";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("mine\n0\n0\nwrote\n"));
    assert!(parent.path().join("mine/written").exists());
}

#[tokio::test]
async fn bash_cannot_reach_the_network_when_it_is_off() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let workspace = workspace();
    let tool = tool().await;
    let command = format!("echo > /dev/tcp/127.0.0.1/{port}");
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        failed(
            &format!(
                "bash: connect: Connection refused\n\
                 bash: line 1: /dev/tcp/127.0.0.1/{port}: Connection refused\n[exit code 1]"
            ),
            1
        )
    );
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection reached the host");

    let open = sandboxed(
        BashConfig::default(),
        SandboxConfig {
            network: true,
            ..bwrap_config()
        },
    )
    .await;
    let output = call(&open, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("(no output)"));
}

#[tokio::test]
async fn bash_cannot_see_the_servers_environment() {
    set_canary();
    let workspace = workspace();
    let tool = tool().await;
    let output = call(
        &tool,
        &workspace.ctx,
        json!({"command": "env | cut -d= -f1 | sort"}),
    )
    .await;
    assert_eq!(output, ok("HOME\nLANG\nPATH\nPWD\nSHLVL\nTERM\n_\n"));
    let command = "echo \"ppid=$PPID\"; tr '\\0' '\\n' < /proc/$PPID/environ; \
                   tr '\\0' '\\n' < /proc/1/environ; cat /proc/*/environ | tr '\\0' '\\n' \
                   | grep -c AGENTD_TEST_CANARY; echo end";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("ppid=1\n0\nend\n"));
    assert!(!output.text.contains(CANARY) && !output.text.contains(CANARY_VALUE));
}

#[tokio::test]
async fn background_children_return_at_once_and_leave_nothing_behind() {
    let workspace = workspace();
    let tool = tool().await;
    for launcher in ["", "setsid ", "nohup "] {
        let marker = marker();
        let command = format!("{launcher}sleep {marker} > /dev/null 2>&1 & echo started");
        let (output, elapsed) =
            call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
        assert_eq!(output, ok("started\n"), "{command}");
        assert!(
            elapsed < Duration::from_millis(700),
            "{command}: {elapsed:?}"
        );
        assert_none_left(&marker).await;
    }
    let marker = marker();
    let command = format!("setsid sleep {marker} & echo started");
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("started\n"));
    assert!(elapsed < Duration::from_millis(700), "{elapsed:?}");
    assert_none_left(&marker).await;
}

#[tokio::test]
async fn cat_and_read_return_at_once() {
    let workspace = workspace();
    let tool = tool().await;
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({"command": "cat"})).await;
    assert_eq!(output, ok("(no output)"));
    assert!(elapsed < Duration::from_millis(700), "{elapsed:?}");
    let command = "read -r line; echo \"read returned $?\"";
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("read returned 1\n"));
    assert!(elapsed < Duration::from_millis(700), "{elapsed:?}");
}

#[tokio::test]
async fn a_timeout_kills_a_tree_with_grandchildren() {
    let workspace = workspace();
    let config = BashConfig {
        timeout: Duration::from_secs(1),
        ..BashConfig::default()
    };
    let tool = sandboxed(config, bwrap_config()).await;
    let marker = marker();
    let command = format!(
        "bash -c 'sleep {marker} & setsid sleep {marker} & wait' & sleep {marker}; echo no"
    );
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        ToolOutput {
            text: "(no output)\n[command timed out after 1 s and was killed]".to_owned(),
            is_error: true,
            exit_code: None,
            truncated: false,
        }
    );
    assert!(elapsed < Duration::from_millis(2500), "{elapsed:?}");
    assert_none_left(&marker).await;
}
