//! One tool call's pids cgroup: created before the call's process, left only once every
//! process in it is dead.
//!
//! Owns `call-<n>` in agentd's parent group: its `pids.max`, the open `cgroup.procs` the
//! child writes itself into before `exec`, killing everything in it, and removing it when
//! dropped. How the child uses the open file is `crate::limits`' job.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::cgroup::{Parent, kill_members};

/// How long a dropped group keeps killing and retrying `rmdir` while its processes exit:
/// 2 s. SIGKILLed processes normally leave within a millisecond; one stuck in the kernel
/// (on an unreachable NFS server, say) may not, and is then left to the parent group.
const REMOVE_LIMIT: Duration = Duration::from_secs(2);

/// The first and the longest pause between removal attempts.
const FIRST_PAUSE: Duration = Duration::from_millis(1);
const LONGEST_PAUSE: Duration = Duration::from_millis(50);

/// The pids cgroup of one call. Dropping it (after the call, after an error, or with the
/// call future) kills every process in it and removes it: at once when it is empty, else
/// in the background once the killed processes have exited.
#[derive(Debug)]
pub(crate) struct CallGroup {
    /// Its directory, `<parent>/call-<n>`.
    dir: PathBuf,
    /// Kept alive while this group exists: the parent removes itself on drop.
    parent: Arc<Parent>,
}

impl CallGroup {
    /// Creates `call-<n>` in `parent` with `pids.max` = `max` (`None`: no limit of its own;
    /// the parent's still applies). Errors: the group could not be created or limited; it
    /// is then not left behind.
    pub(crate) async fn create(parent: Arc<Parent>, n: u64, max: Option<u64>) -> io::Result<Self> {
        let dir = parent.dir.join(format!("call-{n}"));
        tokio::fs::create_dir(&dir)
            .await
            .map_err(|err| context(err, "creating", &dir))?;
        // From here on, dropping `group` removes the directory again.
        let group = Self { dir, parent };
        let limit = group.dir.join("pids.max");
        let value = max.map_or_else(|| "max".to_owned(), |max| max.to_string());
        tokio::fs::write(&limit, value)
            .await
            .map_err(|err| context(err, "writing", &limit))?;
        Ok(group)
    }

    /// The path of its `cgroup.procs`.
    pub(crate) fn procs_path(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// Its `cgroup.procs`, opened for writing (close-on-exec). The child writes `0` to it
    /// before `exec`, which moves the child itself into the group.
    pub(crate) fn procs(&self) -> io::Result<File> {
        let path = self.procs_path();
        File::options()
            .write(true)
            .open(&path)
            .map_err(|err| context(err, "opening", &path))
    }

    /// Sends SIGKILL to every process in the group (once; see [`kill_members`]).
    pub(crate) fn kill(&self) {
        kill_members(&self.dir, self.parent.version);
    }
}

impl Drop for CallGroup {
    fn drop(&mut self) {
        self.kill();
        if remove_once(&self.dir).is_ok() {
            return;
        }
        // Killed processes still exiting (bwrap's init outlives the bwrap process the runner
        // reaped by a moment): the call need not wait for that. Finish on the runtime if
        // there is one, else the parent group's drop removes it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let (dir, parent) = (self.dir.clone(), Arc::clone(&self.parent));
            runtime.spawn(async move { remove(&dir, &parent).await });
        }
    }
}

/// Kills and retries `rmdir` of `dir` until it is gone or [`REMOVE_LIMIT`] passed; then
/// warns and leaves it to `parent`'s drop.
async fn remove(dir: &Path, parent: &Parent) {
    let deadline = Instant::now() + REMOVE_LIMIT;
    let mut pause = FIRST_PAUSE;
    loop {
        tokio::time::sleep(pause).await;
        kill_members(dir, parent.version);
        let Err(err) = remove_once(dir) else {
            return;
        };
        if Instant::now() >= deadline {
            tracing::warn!(dir = %dir.display(), %err, "could not remove a tool call's pids cgroup; it is retried when the server stops");
            return;
        }
        pause = (pause * 2).min(LONGEST_PAUSE);
    }
}

/// One `rmdir`; a group already gone counts as removed. Blocking, but one system call on
/// cgroupfs that fails at once (`EBUSY`) while the group is populated.
fn remove_once(dir: &Path) -> io::Result<()> {
    match std::fs::remove_dir(dir) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// `err` with what was being done to which path.
fn context(err: io::Error, doing: &str, path: &Path) -> io::Error {
    io::Error::new(
        err.kind(),
        format!("{doing} the call's pids cgroup {}: {err}", path.display()),
    )
}
