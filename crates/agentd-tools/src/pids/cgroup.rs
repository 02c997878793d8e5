//! agentd's own pids cgroup, in the server's own cgroup of the hierarchy
//! `super::locate` found.
//!
//! Owns creating agentd's parent group ([`Parent::create`]), which caps all calls together
//! and holds one group per call; removing it again, with anything a call left in it, when
//! dropped; killing a group's processes; and removing the empty groups of servers that
//! died. It touches no group it did not create, except enabling `pids` in the server's own
//! v2 group's `cgroup.subtree_control`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::locate::{Location, Version};

/// The prefix of agentd's parent groups: `agentd-<server pid>-<random>`.
const PREFIX: &str = "agentd-";

/// How often, and how far apart, dropping the parent tries to remove call groups whose
/// processes are still exiting.
const DROP_ATTEMPTS: u32 = 20;
const DROP_PAUSE: Duration = Duration::from_millis(10);

/// agentd's group in the pids hierarchy, `agentd-<pid>-<random>` in the server's own cgroup:
/// every call's group is created in it. Dropping it kills whatever is left in its call
/// groups and removes them and itself.
#[derive(Debug)]
pub(crate) struct Parent {
    /// Which interface the hierarchy has.
    pub(crate) version: Version,
    /// Its directory.
    pub(crate) dir: PathBuf,
}

impl Parent {
    /// Creates the parent group at `location`, after enabling `pids` for the server's v2
    /// group's children where needed and removing the empty groups of dead servers. Its
    /// `pids.max` is half of the machine's process slots ([`machine_share`]), so all calls
    /// together leave the rest of the machine room. Blocking: file system calls only, on
    /// cgroupfs. The error says why this location cannot be used.
    pub(crate) fn create(location: &Location) -> Result<Self, String> {
        let version = location.version;
        if version == Version::V2 {
            enable_pids(&location.dir)?;
        }
        remove_stale(&location.dir);
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{PREFIX}{}-{}", std::process::id(), &suffix[..8]);
        let dir = location.dir.join(name);
        fs::create_dir(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        // From here on, dropping `parent` removes the directory again.
        let parent = Self { version, dir };
        if version == Version::V2 {
            write(&parent.dir.join("cgroup.subtree_control"), "+pids")?;
        }
        if let Some(share) = machine_share() {
            write(&parent.dir.join("pids.max"), &share.to_string())?;
        }
        Ok(parent)
    }
}

impl Drop for Parent {
    fn drop(&mut self) {
        // Calls remove their own groups; one is only left if its removal gave up.
        for attempt in 0..DROP_ATTEMPTS {
            let left = call_groups(&self.dir);
            if left.is_empty() {
                break;
            }
            for group in &left {
                kill_members(group, self.version);
                let _ = fs::remove_dir(group);
            }
            if attempt + 1 < DROP_ATTEMPTS {
                std::thread::sleep(DROP_PAUSE);
            }
        }
        match fs::remove_dir(&self.dir) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                tracing::warn!(dir = %self.dir.display(), %err, "could not remove agentd's pids cgroup");
            }
        }
    }
}

/// Kills every process in the cgroup `dir` with SIGKILL: through `cgroup.kill` on v2
/// (Linux 5.14+), else each pid listed in `cgroup.procs`. Processes forked meanwhile are
/// caught by the next call; callers repeat until the group can be removed. A pid listed
/// may exit and be reused before the signal lands only if all pids wrap around in between.
pub(crate) fn kill_members(dir: &Path, version: Version) {
    if version == Version::V2 && fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let Ok(procs) = fs::read_to_string(dir.join("cgroup.procs")) else {
        return;
    };
    for pid in procs
        .lines()
        .filter_map(|line| line.trim().parse::<i32>().ok())
    {
        match kill(Pid::from_raw(pid), Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(err) => tracing::warn!(pid, %err, "could not kill a tool process"),
        }
    }
}

/// The `call-*` groups in `dir`.
fn call_groups(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("call-"))
        .map(|entry| entry.path())
        .collect()
}

/// Makes sure the v2 group `dir` passes the pids controller to its children.
fn enable_pids(dir: &Path) -> Result<(), String> {
    let has = |file: &str| {
        fs::read_to_string(dir.join(file))
            .map(|text| text.split_whitespace().any(|c| c == "pids"))
            .map_err(|err| format!("cannot read {}: {err}", dir.join(file).display()))
    };
    if !has("cgroup.controllers")? {
        return Err(format!(
            "the pids controller is not available in {} (it is bound to a cgroup v1 \
             hierarchy, or not enabled for this group by its parent)",
            dir.display()
        ));
    }
    if has("cgroup.subtree_control")? {
        return Ok(());
    }
    write(&dir.join("cgroup.subtree_control"), "+pids").map_err(|err| {
        format!(
            "{err} (cgroup v2 lets a group that holds processes, here the server's own, pass \
             controllers to children only if it is the root of its hierarchy: run agentd in a \
             cgroup namespace of its own, e.g. a container with a writable cgroupfs)"
        )
    })
}

/// Writes `value` to the cgroup file `path`.
fn write(path: &Path, value: &str) -> Result<(), String> {
    fs::write(path, value)
        .map_err(|err| format!("cannot write {value} to {}: {err}", path.display()))
}

/// Removes the groups (and their empty call groups) that servers now dead left in `dir`,
/// e.g. after a crash. A group whose server pid is alive, or that still holds processes, is
/// kept: `rmdir` refuses a populated group.
fn remove_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let stale = entry.path();
        for group in call_groups(&stale) {
            let _ = fs::remove_dir(group);
        }
        match fs::remove_dir(&stale) {
            Ok(()) => {
                tracing::info!(dir = %stale.display(), "removed the pids cgroup of a server that is gone")
            }
            Err(err) => tracing::debug!(dir = %stale.display(), %err, "kept a stale pids cgroup"),
        }
    }
}

/// Half of the machine's process slots (the smaller of `kernel.pid_max` and
/// `kernel.threads-max`), if readable.
fn machine_share() -> Option<u64> {
    let read = |name: &str| -> Option<u64> {
        fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let slots = read("pid_max")?.min(read("threads-max")?);
    Some((slots / 2).max(1))
}
