//! The startup probe: which sandbox is in force, and refusing to start without one.

use std::path::PathBuf;

use agentd_tools::{
    BashConfig, Bubblewrap, CommandSpec, Sandbox, SandboxConfig, SandboxError, SandboxMode,
    SandboxRequest, sandboxed_toolbox,
};
use pretty_assertions::assert_eq;

#[tokio::test]
async fn auto_picks_bubblewrap_where_it_works() {
    let active = SandboxMode::probe(&SandboxConfig::default()).await.unwrap();
    assert_eq!(active.mode, SandboxMode::Bwrap);
    assert_eq!(active.mode.as_str(), "bwrap");
}

#[tokio::test]
async fn none_is_used_only_when_asked_for() {
    let config = SandboxConfig {
        mode: SandboxRequest::None,
        ..SandboxConfig::default()
    };
    let active = SandboxMode::probe(&config).await.unwrap();
    assert_eq!(active.mode, SandboxMode::None);
    assert_eq!(active.mode.to_string(), "none");
}

#[tokio::test]
async fn auto_refuses_to_start_when_no_sandbox_works() {
    let config = SandboxConfig {
        bwrap_path: Some(PathBuf::from("/bin/false")),
        landlock_helper: Some(PathBuf::from("/nonexistent/agentd")),
        ..SandboxConfig::default()
    };
    let err = SandboxMode::probe(&config).await.unwrap_err();
    assert!(matches!(err, SandboxError::NoneWorks { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "no sandbox works here (bwrap: a trivial command failed (exit status: 1) without \
             output; landlock: could not start the Landlock helper: No such file or directory \
             (os error 2)). Install bubblewrap (Debian: `apt-get install \
             bubblewrap`) and allow unprivileged user namespaces, or set AGENTD_SANDBOX=none \
             to run tools unconfined"
        )
    );
    let missing = SandboxConfig {
        mode: SandboxRequest::Bwrap,
        bwrap_path: Some(PathBuf::from("/nonexistent/bwrap")),
        ..SandboxConfig::default()
    };
    let err = SandboxMode::probe(&missing).await.unwrap_err();
    assert!(
        err.to_string().starts_with(
            "the bwrap sandbox was asked for but does not work here: could not start bwrap: \
             No such file or directory (os error 2)."
        ),
        "{err}"
    );
}

#[test]
fn sandbox_requests_parse_from_the_environment_values() {
    let parse = |value: &str| value.parse::<SandboxRequest>();
    assert_eq!(parse("auto"), Ok(SandboxRequest::Auto));
    assert_eq!(parse("BWRAP"), Ok(SandboxRequest::Bwrap));
    assert_eq!(parse("landlock"), Ok(SandboxRequest::Landlock));
    assert_eq!(parse("none"), Ok(SandboxRequest::None));
    assert_eq!(
        parse("off"),
        Err("unknown sandbox `off`: use auto, bwrap, landlock or none".to_owned())
    );
}

#[tokio::test]
async fn the_sandboxed_toolbox_offers_every_tool_and_tells_the_model_about_the_sandbox() {
    let (toolbox, mode) = sandboxed_toolbox(BashConfig::default(), &SandboxConfig::default())
        .await
        .unwrap();
    assert_eq!(mode, SandboxMode::Bwrap);
    assert_eq!(
        toolbox.names(),
        [
            "bash",
            "edit_file",
            "glob",
            "grep",
            "list_dir",
            "read_file",
            "write_file"
        ]
    );
    let bash = toolbox.get("bash").unwrap().spec();
    assert!(
        bash.description.ends_with(
            "It runs in a sandbox: everything outside the workspace is read-only, /tmp is \
             private and emptied after each call, and only the call's own processes are \
             visible. There is no network access (downloads and package installs fail)."
        ),
        "{}",
        bash.description
    );
}

#[test]
fn the_bwrap_command_line_confines_the_command() {
    let sandbox = Bubblewrap::new(
        PathBuf::from("/usr/bin/bwrap"),
        /* network */ false,
        vec![PathBuf::from("/nonexistent-agentd-dir")],
        Some(1024),
    )
    .with_idle_scheduling(PathBuf::from("/usr/bin/chrt"));
    let workspace = PathBuf::from("/tmp/agentd-ws");
    let wrapped = sandbox
        .wrap(CommandSpec::bash("echo hi", workspace.clone()))
        .unwrap();
    let args: Vec<String> = wrapped
        .args
        .iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    let expected = [
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--unshare-net",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--size",
        "1024",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/run",
        "--bind",
        "/tmp/agentd-ws",
        "/tmp/agentd-ws",
        "--remount-ro",
        "/run",
        "--chdir",
        "/tmp/agentd-ws",
        "--clearenv",
        "--setenv",
        "PATH",
        agentd_tools::SAFE_PATH,
        "--setenv",
        "HOME",
        "/tmp/agentd-ws",
        "--setenv",
        "LANG",
        "C.UTF-8",
        "--setenv",
        "TERM",
        "dumb",
        "--",
        "/usr/bin/chrt",
        "--idle",
        "0",
        "bash",
        "-c",
        "echo hi",
    ];
    assert_eq!(args, expected);
    assert_eq!(wrapped.program, "/usr/bin/bwrap");
    assert_eq!(wrapped.env, vec![]);
    assert_eq!(
        (wrapped.cwd, wrapped.workspace),
        (workspace.clone(), workspace)
    );
}
