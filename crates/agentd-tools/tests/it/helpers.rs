//! Shared set-up: a workspace per test, a bounded tool call, process liveness checks.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_tools::{
    BashConfig, BashTool, ProcessCap, ProcessCapMode, SandboxConfig, SandboxMode, SandboxRequest,
    Tool, ToolContext, ToolOutput,
};
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
    tool: &dyn Tool,
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

/// Whether `pid` exists, is not a zombie and has not been sent SIGKILL, from
/// `/proc/<pid>/stat` and `/proc/<pid>/status`.
pub fn is_running(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // "<pid> (<comm>) <state> …"; comm may contain spaces and parentheses.
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None) && !sigkill_pending(pid)
}

/// Whether SIGKILL (signal 9, bit 8 of the masks) is pending for `pid`: it is dying.
fn sigkill_pending(pid: i32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return false;
    };
    status
        .lines()
        .filter_map(|line| {
            let mask = line
                .strip_prefix("SigPnd:")
                .or_else(|| line.strip_prefix("ShdPnd:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .any(|mask| mask & (1 << 8) != 0)
}

/// A successful file-tool output (no process, so no exit code).
pub fn done(text: &str) -> ToolOutput {
    ToolOutput {
        text: text.to_owned(),
        is_error: false,
        exit_code: None,
        truncated: false,
    }
}

/// Calls `tool` in `ctx` with `arguments`, bounded by [`CALL_BOUND`].
pub async fn call(tool: &dyn Tool, ctx: &ToolContext, arguments: Value) -> ToolOutput {
    call_timed(tool, ctx, arguments).await.0
}

/// The bubblewrap sandbox as the server's startup probe finds it (network off).
pub fn bwrap_config() -> SandboxConfig {
    SandboxConfig {
        mode: SandboxRequest::Bwrap,
        ..SandboxConfig::default()
    }
}

/// `bash` with `config`, confined by bubblewrap through the real startup probe and with
/// its processes capped as the server's probe finds ([`process_cap`]). Fails the test when
/// bubblewrap does not work here (`apt-get install bubblewrap`).
pub async fn sandboxed(config: BashConfig, sandbox: SandboxConfig) -> BashTool {
    let active = SandboxMode::probe(&sandbox)
        .await
        .unwrap_or_else(|err| panic!("bubblewrap must work for these tests: {err}"));
    assert_eq!(active.mode, SandboxMode::Bwrap);
    BashTool::with_sandbox(config, active.sandbox).with_process_cap(process_cap().await)
}

/// The process cap the server's startup probe finds here. Fails the test when it would not
/// bound a fork bomb: a root server (which `RLIMIT_NPROC` does not bind) without a pids
/// cgroup it may create. Run the tests as another user, or where cgroups are writable.
pub async fn process_cap() -> ProcessCap {
    let cap = ProcessCap::probe().await;
    assert!(
        cap.mode() != ProcessCapMode::Rlimit || !nix::unistd::geteuid().is_root(),
        "running as root without a writable pids cgroup: nothing would bound a fork bomb"
    );
    cap
}

/// A `sleep` duration of about 300 s that no other process on the machine has in its
/// command line, to find what a command left behind from outside its PID namespace.
pub fn marker() -> String {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    let random = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
    format!("300.{:09}", random % 1_000_000_000)
}

/// The pids of running (not zombie) processes whose command line contains `needle` as one
/// argument.
pub fn processes_with_arg(needle: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline
            .split(|&b| b == 0)
            .any(|arg| arg == needle.as_bytes())
            && is_running(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Asserts that within 5 s no process has `needle` as an argument (processes already
/// sent SIGKILL count as gone: on a busy machine they may wait a while for the CPU time to
/// exit).
pub async fn assert_none_left(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with_arg(needle);
        if left.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            let described: Vec<String> = left
                .iter()
                .map(|pid| {
                    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
                    format!("{pid}: {}", stat.unwrap_or_default().trim())
                })
                .collect();
            panic!("processes left behind: {described:#?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// This process's resident memory, in bytes.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// The name of the canary variable set in this test process, standing for a server secret.
pub const CANARY: &str = "AGENTD_TEST_CANARY_SECRET";

/// Its value.
pub const CANARY_VALUE: &str = "sk-live-do-not-leak";

/// Sets [`CANARY`] in this process's environment (once; later calls do nothing).
pub fn set_canary() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: set once under `Once`; std serialises its own environment access
        // (Command captures the environment under the same lock), and no test reads this
        // variable through libc directly.
        #[allow(unsafe_code)]
        unsafe {
            std::env::set_var(CANARY, CANARY_VALUE);
        }
    });
    assert_eq!(std::env::var(CANARY).as_deref(), Ok(CANARY_VALUE));
}

/// A configuration allowing `processes` per call and `timeout`.
pub fn capped(processes: u64, timeout: Duration) -> BashConfig {
    let mut config = BashConfig {
        timeout,
        ..BashConfig::default()
    };
    config.limits.processes = Some(processes);
    config
}

/// The cap the server would use here, or `None` (the test is then skipped, saying so)
/// when no pids cgroup can be created: these tests are about the cgroup.
pub async fn cgroup_cap() -> Option<ProcessCap> {
    let cap = process_cap().await;
    if cap.mode() == ProcessCapMode::Rlimit {
        eprintln!("skipped: no pids cgroup can be created here");
        return None;
    }
    Some(cap)
}

/// Waits up to 5 s for `dir` to be gone (a call's group may still be being removed in the
/// background, keeping agentd's group alive until then).
pub async fn assert_removed(dir: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while dir.exists() {
        assert!(Instant::now() < deadline, "{} left behind", dir.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A command that forks children (each waiting 30 s) until a fork fails, then prints
/// `forked <n>, then errno <errno>`; `exec` keeps bash out of the count.
pub fn fork_until_refused() -> String {
    let script = "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            \
                  time.sleep(30)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    \
                  print(f'forked {n}, then errno {e.errno}')";
    format!("exec python3 -c \"{script}\"")
}
