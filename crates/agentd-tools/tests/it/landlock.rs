//! bash in the real Landlock + seccomp sandbox, forced (bubblewrap works here, so `auto`
//! would not pick it): the helper is this crate's `agentd-sandbox-exec` binary, the same
//! code as `agentd sandbox-exec`. Nothing outside the workspace is writable, no network
//! unless allowed, no secrets.

use std::net::TcpListener;
use std::path::PathBuf;

use agentd_tools::{
    BashConfig, BashTool, CommandSpec, Landlock, Sandbox, SandboxConfig, SandboxError, SandboxMode,
    SandboxRequest, ToolOutput,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::helpers::{
    CANARY, CANARY_VALUE, assert_none_left, call, call_timed, marker, ok, set_canary, workspace,
};

/// The helper built with these tests.
const HELPER: &str = env!("CARGO_BIN_EXE_agentd-sandbox-exec");

/// The Landlock sandbox, forced, with the test helper (network off).
fn landlock_config() -> SandboxConfig {
    SandboxConfig {
        mode: SandboxRequest::Landlock,
        landlock_helper: Some(PathBuf::from(HELPER)),
        ..SandboxConfig::default()
    }
}

/// `bash` confined by Landlock through the real startup probe.
async fn tool(sandbox: SandboxConfig) -> BashTool {
    let active = SandboxMode::probe(&sandbox)
        .await
        .unwrap_or_else(|err| panic!("Landlock must work for these tests: {err}"));
    assert_eq!(active.mode, SandboxMode::Landlock);
    BashTool::with_sandbox(BashConfig::default(), active.sandbox)
}

fn failed(text: &str, code: i32) -> ToolOutput {
    ToolOutput {
        text: text.to_owned(),
        is_error: true,
        exit_code: Some(code),
        truncated: false,
    }
}

#[tokio::test]
async fn bash_cannot_write_outside_the_workspace_but_can_inside() {
    let workspace = workspace();
    let tool = tool(landlock_config()).await;
    // Not under /tmp, which is hidden: a directory that is readable but not writable.
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let name = format!("agentd-test-{}", uuid::Uuid::new_v4());
    let escape = outside.path().join("escape.txt");
    let command = format!(
        "touch /etc/{name}; echo x > {escape}; echo x >> /etc/hostname; \
         echo inside > inside.txt && cat inside.txt; \
         t=$(mktemp) && echo tmp > \"$t\" && cat \"$t\"; echo \"$TMPDIR\"",
        escape = escape.display()
    );
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        ok(&format!(
            "touch: cannot touch '/etc/{name}': Permission denied\n\
             bash: line 1: {escape}: Permission denied\n\
             bash: line 1: /etc/hostname: Permission denied\n\
             inside\ntmp\n{tmp}\n",
            escape = escape.display(),
            tmp = workspace.ctx.workspace.join(".agentd/tmp").display()
        ))
    );
    assert!(!std::path::Path::new("/etc").join(&name).exists());
    assert!(!escape.exists());
    assert!(workspace.dir.path().join("inside.txt").exists());
}

#[tokio::test]
async fn a_normal_pipeline_and_stderr_work() {
    let workspace = workspace();
    std::fs::write(workspace.dir.path().join("a.txt"), "a").unwrap();
    std::fs::write(workspace.dir.path().join("b.txt"), "b").unwrap();
    let tool = tool(landlock_config()).await;
    let command = "ls | wc -l; echo to-stderr > /dev/stderr; ls /usr/bin/bash; \
                   seq 3 | awk '{ s += $1 } END { print s }'";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    // `.agentd` (the private TMPDIR) is hidden from `ls`; a.txt and b.txt are listed.
    assert_eq!(output, ok("2\nto-stderr\n/usr/bin/bash\n6\n"));
}

#[tokio::test]
async fn bash_reaches_the_network_only_when_it_is_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let workspace = workspace();
    let closed = tool(landlock_config()).await;
    let command = format!("echo > /dev/tcp/127.0.0.1/{port}");
    let output = call(&closed, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        failed(
            &format!(
                "bash: socket: Operation not permitted\n\
                 bash: line 1: /dev/tcp/127.0.0.1/{port}: Operation not permitted\n[exit code 1]"
            ),
            1
        )
    );
    listener.set_nonblocking(true).unwrap();
    assert!(listener.accept().is_err(), "a connection reached the host");

    let open = tool(SandboxConfig {
        network: true,
        ..landlock_config()
    })
    .await;
    let output = call(&open, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("(no output)"));
    assert!(listener.accept().is_ok(), "no connection reached the host");
}

#[tokio::test]
async fn bash_cannot_see_the_servers_environment() {
    set_canary();
    let workspace = workspace();
    let tool = tool(landlock_config()).await;
    let command = "env | cut -d= -f1 | sort; tr '\\0' '\\n' < /proc/$PPID/environ; \
                   grep -c Cap /proc/$PPID/status";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    // $PPID is this test process: no namespace hides it, Landlock refuses its environ.
    assert_eq!(
        output,
        ok(&format!(
            "HOME\nLANG\nPATH\nPWD\nSHLVL\nTERM\nTMPDIR\n_\n\
             bash: line 1: /proc/{ppid}/environ: Permission denied\n5\n",
            ppid = std::process::id()
        ))
    );
    assert!(!output.text.contains(CANARY) && !output.text.contains(CANARY_VALUE));
}

#[tokio::test]
async fn hidden_directories_and_other_workspaces_cannot_be_read() {
    let parent = tempfile::tempdir_in("/var/tmp").unwrap();
    let mine = parent.path().join("mine");
    let theirs = parent.path().join("theirs");
    std::fs::create_dir(&mine).unwrap();
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("secret.txt"), "other session").unwrap();
    let mut workspace = workspace();
    workspace.ctx.workspace = mine;
    let tool = tool(landlock_config()).await;
    let command = "cat ../theirs/secret.txt; ls /tmp; ls /run; touch written && echo wrote";
    let output = call(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(
        output,
        ok("cat: ../theirs/secret.txt: Permission denied\n\
            ls: cannot open directory '/tmp': Permission denied\n\
            ls: cannot open directory '/run': Permission denied\nwrote\n")
    );
}

#[tokio::test]
async fn a_background_child_is_killed_with_its_group() {
    let workspace = workspace();
    let tool = tool(landlock_config()).await;
    let marker = marker();
    let command = format!("sleep {marker} > /dev/null 2>&1 & echo started");
    let (output, elapsed) = call_timed(&tool, &workspace.ctx, json!({ "command": command })).await;
    assert_eq!(output, ok("started\n"));
    assert!(
        elapsed < std::time::Duration::from_millis(1500),
        "{elapsed:?}"
    );
    // A `setsid` child would escape this group kill: no PID namespace here (see README).
    assert_none_left(&marker).await;
}

#[tokio::test]
async fn the_probe_reports_why_landlock_does_not_work() {
    let broken = SandboxConfig {
        landlock_helper: Some(PathBuf::from("/bin/false")),
        ..landlock_config()
    };
    let err = SandboxMode::probe(&broken).await.unwrap_err();
    assert!(
        matches!(
            err,
            SandboxError::Unavailable {
                mode: SandboxMode::Landlock,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().starts_with(
            "the landlock sandbox was asked for but does not work here: a trivial command \
             failed (exit status: 1) without output."
        ),
        "{err}"
    );
}

#[tokio::test]
async fn auto_falls_back_to_landlock_when_bubblewrap_fails() {
    let config = SandboxConfig {
        mode: SandboxRequest::Auto,
        bwrap_path: Some(PathBuf::from("/bin/false")),
        ..landlock_config()
    };
    let active = SandboxMode::probe(&config).await.unwrap();
    assert_eq!(active.mode, SandboxMode::Landlock);
    assert_eq!(active.mode.as_str(), "landlock");
}

#[test]
fn the_landlock_command_line_re_executes_the_helper() {
    let sandbox = Landlock::new(
        PathBuf::from("/usr/bin/agentd"),
        /* network */ false,
        vec![PathBuf::from("/srv/agentd-data")],
    );
    let workspace = PathBuf::from("/srv/agentd-data/workspaces/s1");
    let spec = CommandSpec::bash("echo hi", workspace.clone());
    let wrapped = sandbox.wrap(spec.clone()).unwrap();
    let args: Vec<String> = wrapped
        .args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        args,
        [
            "sandbox-exec",
            "--workspace",
            "/srv/agentd-data/workspaces/s1",
            "--hide",
            "/run",
            "--hide",
            "/srv/agentd-data",
            "--hide",
            "/srv/agentd-data/workspaces",
            "--hide",
            "/tmp",
            "--",
            "bash",
            "-c",
            "echo hi",
        ]
    );
    assert_eq!(wrapped.program, "/usr/bin/agentd");
    assert_eq!((wrapped.cwd, wrapped.env), (spec.cwd, spec.env));
}
