//! How many processes one tool call may have at once, capped by construction.
//!
//! Owns [`ProcessCap`], decided once at startup ([`ProcessCap::probe`]): a pids cgroup per
//! call where the server may create one (cgroup v2, or v1 as on hybrid hosts), which the
//! kernel enforces for root too and which also kills every process of the call exactly;
//! else `RLIMIT_NPROC`, which root ignores. It hands each call a [`CallCap`] to start its
//! process under, which kills and removes the call's group when dropped. It knows nothing
//! of sandboxes or of what runs.

mod call;
mod cgroup;
mod locate;

use std::fmt;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use self::call::CallGroup;
use self::cgroup::Parent;
use self::locate::Version;
use crate::command::{CommandSpec, SAFE_PATH};
use crate::launch::{Launchers, Parked};
use crate::limits::ResourceLimits;
use crate::process::{self, Ending, Limits};
use crate::spawner::Spawner;

/// How long the probe's trivial process may take: 10 s.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// How the processes of a tool call are capped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessCapMode {
    /// A cgroup v2 group per call, with `pids.max`; killed with `cgroup.kill`.
    CgroupV2,
    /// A group per call in the cgroup v1 `pids` hierarchy, with `pids.max`.
    CgroupV1,
    /// `RLIMIT_NPROC` only: effective for a server that does not run as root.
    Rlimit,
}

impl ProcessCapMode {
    /// The name reported by `/healthz`: `cgroup-v2`, `cgroup-v1` or `rlimit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CgroupV2 => "cgroup-v2",
            Self::CgroupV1 => "cgroup-v1",
            Self::Rlimit => "rlimit",
        }
    }
}

impl fmt::Display for ProcessCapMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The cap on each tool call's processes ([`ResourceLimits::processes`]): how it is
/// enforced, and agentd's pids cgroup when there is one. Cheap to clone; the cgroup is
/// removed when the last clone (and the last call started through it) is gone.
#[derive(Debug, Clone)]
pub struct ProcessCap {
    inner: Arc<Inner>,
}

/// What the clones of a [`ProcessCap`] share.
#[derive(Debug)]
struct Inner {
    /// agentd's group, parent of every call's; `None` in [`ProcessCapMode::Rlimit`].
    parent: Option<Arc<Parent>>,
    /// Numbers the calls' groups; each call takes the next.
    calls: AtomicU64,
    /// Starts every call's process, off the runtime's workers; its thread ends, killing
    /// any tool process still running, when the last clone of the cap is dropped.
    spawner: Spawner,
    /// Processes started ahead of their calls, already in their call's group (see
    /// `crate::launch`); off unless [`ProcessCap::enable_launchers`] succeeded.
    launchers: Launchers,
}

impl ProcessCap {
    /// Finds a pids cgroup hierarchy the server may create groups in (cgroup v2 at the
    /// server's own cgroup, enabling `pids` for its children where possible, then the v1
    /// `pids` hierarchy), creates agentd's group there and starts a trivial process in a
    /// call group to prove it works. Falls back to [`ProcessCap::rlimit`] otherwise. Logs
    /// the mode in force once; a warning when nothing caps a root server's tool calls.
    pub async fn probe() -> Self {
        let found = match tokio::task::spawn_blocking(find_parent).await {
            Ok(found) => found,
            Err(err) => Err(format!("the probe failed: {err}")),
        };
        let reason = match found {
            Ok(parent) => {
                let cap = Self::with_parent(Some(Arc::new(parent)));
                match cap.check().await {
                    Ok(()) => {
                        let dir = cap.cgroup_dir().map(Path::display);
                        tracing::info!(mode = %cap.mode(), dir = ?dir, "each tool call runs in a pids cgroup of its own");
                        return cap;
                    }
                    Err(reason) => reason,
                }
            }
            Err(reason) => reason,
        };
        if nix::unistd::geteuid().is_root() {
            tracing::warn!(
                %reason,
                "no pids cgroup can be used, and the server runs as root, which RLIMIT_NPROC \
                 does not bind: a tool call's processes are bounded only by the sandbox's PID \
                 namespace and the timeout (a fork bomb may exhaust the machine's pids). Run \
                 agentd as another user, or where it may create cgroups"
            );
        } else {
            tracing::info!(%reason, "no pids cgroup can be used: tool calls' processes are capped with RLIMIT_NPROC");
        }
        Self::rlimit()
    }

    /// No cgroup: each call's processes are capped with `RLIMIT_NPROC` only (see
    /// [`ResourceLimits::processes`]), which root ignores. For tests and callers that
    /// decided so; a server should use [`ProcessCap::probe`].
    pub fn rlimit() -> Self {
        Self::with_parent(None)
    }

    /// The mode in force, for `/healthz`.
    pub fn mode(&self) -> ProcessCapMode {
        match self.inner.parent.as_deref().map(|parent| parent.version) {
            Some(Version::V2) => ProcessCapMode::CgroupV2,
            Some(Version::V1) => ProcessCapMode::CgroupV1,
            None => ProcessCapMode::Rlimit,
        }
    }

    /// agentd's cgroup directory, which holds one `call-<n>` group per running call (their
    /// `pids.current` and `pids.peak` show what each uses); `None` without a cgroup.
    pub fn cgroup_dir(&self) -> Option<&Path> {
        self.inner
            .parent
            .as_deref()
            .map(|parent| parent.dir.as_path())
    }

    fn with_parent(parent: Option<Arc<Parent>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                parent,
                calls: AtomicU64::new(1),
                spawner: Spawner::default(),
                launchers: Launchers::default(),
            }),
        }
    }

    /// What starts the calls' processes.
    pub(crate) fn spawner(&self) -> &Spawner {
        &self.inner.spawner
    }

    /// The processes parked ahead of their calls.
    pub(crate) fn launchers(&self) -> &Launchers {
        &self.inner.launchers
    }

    /// Starts each call's process ahead of the call, already moved into the call's pids
    /// cgroup, so the call does not wait for that move (10 to 30 ms on a busy VM; see
    /// `crate::launch`). `helper` is the executable run as `<helper> sandbox-exec --launch`
    /// (the running `agentd`, or this crate's `agentd-sandbox-exec`). Only with a cgroup:
    /// without one there is no move to save. Errors: a launcher did not run `sh -c 'exit
    /// 7'`; calls then start their own process, as before.
    pub async fn enable_launchers(&self, helper: PathBuf) -> Result<(), String> {
        if self.inner.parent.is_none() {
            return Err("no pids cgroup: nothing to save".to_owned());
        }
        // An exit status only a shell can give proves the command ran.
        let spec = CommandSpec {
            program: "sh".into(),
            args: vec!["-c".into(), "exit 7".into()],
            cwd: "/".into(),
            workspace: "/".into(),
            env: vec![("PATH".into(), SAFE_PATH.into())],
        };
        let mut parked = Parked::start(self, &helper, ResourceLimits::default())
            .await
            .map_err(|err| format!("cannot start {}: {err}", helper.display()))?;
        parked
            .launch(&spec)
            .await
            .map_err(|err| format!("cannot hand a command to {}: {err}", helper.display()))?;
        match tokio::time::timeout(PROBE_TIMEOUT, parked.child.wait()).await {
            Ok(Ok(status)) if status.code() == Some(7) => {}
            ended => return Err(format!("a launched `sh -c 'exit 7'` ended with {ended:?}")),
        }
        self.inner.launchers.enable(helper);
        self.inner.launchers.refill(self, ResourceLimits::default());
        Ok(())
    }

    /// What the next call's process starts under: a fresh group with `pids.max` =
    /// `processes`, or nothing to create. Errors: the group could not be created; the call
    /// must then not run.
    pub(crate) async fn start_call(&self, processes: Option<u64>) -> io::Result<CallCap> {
        let Some(parent) = &self.inner.parent else {
            return Ok(CallCap::Rlimit);
        };
        let n = self.inner.calls.fetch_add(1, Ordering::Relaxed);
        let group = CallGroup::create(Arc::clone(parent), n, processes).await?;
        Ok(CallCap::Cgroup(group))
    }

    /// Runs `true` under this cap, as a tool process is run.
    async fn check(&self) -> Result<(), String> {
        let spec = CommandSpec {
            program: "true".into(),
            args: Vec::new(),
            cwd: "/".into(),
            workspace: "/".into(),
            env: vec![("PATH".into(), SAFE_PATH.into())],
        };
        let limits = Limits {
            timeout: PROBE_TIMEOUT,
            output_cap: 1024,
            rlimits: ResourceLimits::default(),
        };
        let finished = process::run(&spec, limits, self, &CancellationToken::new(), None)
            .await
            .map_err(|err| format!("a process could not be started in a call group: {err}"))?;
        match finished.ending {
            Ending::Exited(status) if status.success() => Ok(()),
            ending => Err(format!(
                "a trivial process in a call group ended with {ending:?}"
            )),
        }
    }
}

/// Creates agentd's group in the first usable pids hierarchy; the error lists why each
/// failed. Blocking.
fn find_parent() -> Result<Parent, String> {
    let read = |path: &str| {
        std::fs::read_to_string(path).map_err(|err| format!("cannot read {path}: {err}"))
    };
    let locations = locate::locate(&read("/proc/self/cgroup")?, &read("/proc/self/mountinfo")?);
    if locations.is_empty() {
        return Err("no cgroup v2 or v1 pids hierarchy is mounted here".to_owned());
    }
    let mut reasons = Vec::new();
    for location in &locations {
        match Parent::create(location) {
            Ok(parent) => return Ok(parent),
            Err(reason) => {
                let version = match location.version {
                    Version::V2 => "cgroup v2",
                    Version::V1 => "cgroup v1",
                };
                reasons.push(format!("{version}: {reason}"));
            }
        }
    }
    Err(reasons.join("; "))
}

/// What one call's process starts under, and what is left to do once it ended.
#[derive(Debug)]
pub(crate) enum CallCap {
    /// Its own pids cgroup.
    Cgroup(CallGroup),
    /// `RLIMIT_NPROC` only.
    Rlimit,
}

impl CallCap {
    /// The group's `cgroup.procs`, open for writing, for the child to join before `exec`.
    pub(crate) fn procs(&self) -> io::Result<Option<File>> {
        match self {
            Self::Cgroup(group) => group.procs().map(Some),
            Self::Rlimit => Ok(None),
        }
    }

    /// The path of the group's `cgroup.procs`, for a process to join it itself.
    pub(crate) fn procs_path(&self) -> Option<PathBuf> {
        match self {
            Self::Cgroup(group) => Some(group.procs_path()),
            Self::Rlimit => None,
        }
    }

    /// The `RLIMIT_NPROC` for a call allowed `processes`: none in a cgroup (it caps
    /// exactly), else the tasks on the machine now plus `processes`. That rlimit counts all
    /// tasks of the server's user, so a bare `processes` would fail every fork of a user
    /// already running more; the machine's count is an upper bound of the user's, so the
    /// call may always start `processes` more, and never more than that plus other users'.
    pub(crate) fn nproc(&self, processes: Option<u64>) -> Option<u64> {
        match self {
            Self::Cgroup(_) => None,
            Self::Rlimit => processes.map(|n| machine_tasks().unwrap_or(0).saturating_add(n)),
        }
    }

    /// Kills every process of the call, wherever it went (`setsid` included); nothing to do
    /// without a cgroup. Dropping the `CallCap` does it too, and removes the group.
    pub(crate) fn kill(&self) {
        if let Self::Cgroup(group) = self {
            group.kill();
        }
    }
}

/// The number of tasks (processes and threads) on the machine, from `/proc/loadavg`'s
/// `running/total` field.
fn machine_tasks() -> Option<u64> {
    let loadavg = std::fs::read_to_string("/proc/loadavg").ok()?;
    let field = loadavg.split_whitespace().nth(3)?;
    field.split_once('/')?.1.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn without_a_cgroup_a_call_may_start_its_processes_on_top_of_the_machines_tasks() {
        let before = machine_tasks().unwrap();
        let limit = CallCap::Rlimit.nproc(Some(64)).unwrap();
        let after = machine_tasks().unwrap();
        assert!(
            (before + 64..=after.max(before) + 64 + 100).contains(&limit),
            "{before} {limit} {after}"
        );
        assert_eq!(CallCap::Rlimit.nproc(None), None);
    }
}
