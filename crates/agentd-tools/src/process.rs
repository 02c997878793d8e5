//! Runs one tool process to its end and makes sure nothing it started outlives the call
//! (DESIGN.md invariant 9).
//!
//! Owns spawning (on the cap's spawner thread; stdin from `/dev/null`, stdout and stderr
//! into one pipe, its own process group and the call's pids cgroup, an environment of
//! exactly [`CommandSpec::env`]), reading that pipe into a [`CappedOutput`] without
//! blocking the runtime, the timeout, cancellation, killing the whole process group and
//! cgroup with SIGKILL, reaping the child and removing the cgroup. It knows nothing of
//! bash or of how the result is shown to the model.

use std::io;
use std::os::fd::OwnedFd;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::{Instant, timeout, timeout_at};
use tokio_util::sync::CancellationToken;

use crate::command::CommandSpec;
use crate::limits::{self, ResourceLimits};
use crate::output::{CappedOutput, Captured};
use crate::pids::{CallCap, ProcessCap};
use crate::spawner::Spawner;
use crate::spill::Spill;

/// How long output is still read after the process exits, while something it left behind
/// (`sleep 300 &`) holds the pipe open, before the group is killed: 100 ms.
pub const EXIT_GRACE: Duration = Duration::from_millis(100);

/// After the group is killed, how long to wait for the pipe to close. Only a process that
/// left the group (`setsid`) can hold it open longer; it is then abandoned.
const DRAIN_LIMIT: Duration = Duration::from_millis(100);

/// How long to wait for a killed leader to be reaped; after that tokio reaps it later.
const REAP_LIMIT: Duration = Duration::from_secs(1);

/// Bytes read from the pipe at a time.
const READ_CHUNK: usize = 16 * 1024;

/// The limits of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Wall time until the group is killed.
    pub(crate) timeout: Duration,
    /// Bytes of output kept (head and tail halves).
    pub(crate) output_cap: usize,
    /// The rlimits the process starts with.
    pub(crate) rlimits: ResourceLimits,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The process exited (or was killed by a signal not of ours) with this status.
    Exited(ExitStatus),
    /// [`Limits::timeout`] passed; the group was killed.
    TimedOut,
    /// The cancel token fired; the group was killed.
    Cancelled,
}

/// The result of a run; by the time it exists, the whole process group and the call's
/// pids cgroup (if any) have been killed, and the cgroup is being removed.
#[derive(Debug)]
pub(crate) struct Finished {
    /// How it ended.
    pub(crate) ending: Ending,
    /// Its stdout and stderr, interleaved in the order written, capped.
    pub(crate) output: Captured,
}

/// Starts `spec` in a new call group of `cap` and waits for it to exit, time out or be
/// cancelled; then kills its process group and call group and returns the capped output.
/// Once the output outgrows the cap, all of it also goes to `spill` (if given), which the
/// note in the capped text then names. An error means it could not be started (its call
/// group could not be created, say) or its output could not be read; everything it
/// started is killed then too.
pub(crate) async fn run(
    spec: &CommandSpec,
    limits: Limits,
    cap: &ProcessCap,
    cancel: &CancellationToken,
    mut spill: Option<Spill>,
) -> io::Result<Finished> {
    let (mut child, mut group, mut reader, call) = start(spec, &limits, cap).await?;
    let mut output = CappedOutput::new(limits.output_cap);
    let mut buf = vec![0; READ_CHUNK];
    let mut eof = false;
    let deadline = Instant::now() + limits.timeout;
    // Biased: a command flooding the pipe must not starve the timeout or the cancel.
    let ending = loop {
        tokio::select! {
            biased;
            () = cancel.cancelled() => break Ending::Cancelled,
            () = tokio::time::sleep_until(deadline) => break Ending::TimedOut,
            status = child.wait() => break Ending::Exited(status?),
            read = reader.read(&mut buf), if !eof => {
                eof = keep(read, &buf, &mut output, spill.as_mut()).await?;
            }
        }
    };
    if matches!(ending, Ending::Exited(_)) && !eof {
        let grace_end = Instant::now() + EXIT_GRACE;
        eof = read_until(
            &mut reader,
            &mut buf,
            &mut output,
            spill.as_mut(),
            grace_end,
        )
        .await?;
    }
    // Always, also after a clean exit: whatever the command left behind dies with the call.
    // The leader may be reaped already, but its pid stays reserved while any process is
    // left in its group; an empty group just gives ESRCH (hitting a stranger would need
    // the pid to be reused within the grace, i.e. all pids to wrap around). Killing the
    // call's cgroup also gets what left the process group (`setsid`), even unsandboxed.
    group.kill();
    call.kill();
    if !eof {
        read_until(
            &mut reader,
            &mut buf,
            &mut output,
            spill.as_mut(),
            Instant::now() + DRAIN_LIMIT,
        )
        .await?;
    }
    if !matches!(ending, Ending::Exited(_)) && timeout(REAP_LIMIT, child.wait()).await.is_err() {
        tracing::warn!(pid = ?child.id(), "killed tool process not reaped in time; tokio reaps it later");
    }
    // Kills anything left once more and removes the call's group.
    drop(call);
    let whereabouts = match spill {
        Some(spill) => spill.finish().await,
        None => None,
    };
    Ok(Finished {
        ending,
        output: output.finish(whereabouts.as_deref()),
    })
}

/// Starts `spec`: in a launcher when the cap uses them (see `crate::launch`; one parked
/// ahead of the call when ready, else one started now), else through the cap's spawner
/// with a `fork`. Asks for the next calls' launchers to be parked. Returns the process, its group guard, its output and its cap.
async fn start(
    spec: &CommandSpec,
    limits: &Limits,
    cap: &ProcessCap,
) -> io::Result<(Child, GroupGuard, pipe::Receiver, CallCap)> {
    let launchers = cap.launchers();
    let ready = launchers.take(limits.rlimits);
    launchers.refill(cap, limits.rlimits);
    let launcher = match ready {
        Some(parked) => Some(parked),
        None => launchers.start_now(cap, limits.rlimits).await,
    };
    if let Some(mut parked) = launcher {
        match parked.launch(spec).await {
            Ok(()) => {
                let group = GroupGuard::of(&parked.child)?;
                return Ok((parked.child, group, parked.output, parked.call));
            }
            // Killed from outside while parked: start the call's own process instead.
            Err(error) => tracing::warn!(%error, "a parked launcher was gone"),
        }
    }
    let call = cap.start_call(limits.rlimits.processes).await?;
    let (writer, reader) = pipe::pipe()?;
    let stdout = writer.into_blocking_fd()?;
    let (child, group) = spawn(spec, stdout, &limits.rlimits, &call, cap.spawner()).await?;
    Ok((child, group, reader, call))
}

/// Starts `spec` through `spawner` in its own process group and in `call`'s cgroup with
/// `stdout` as both stdout and stderr, under `rlimits` and dying with the server. The
/// returned guard kills the group when dropped, so a dropped call future kills it too (and
/// `call` its cgroup).
async fn spawn(
    spec: &CommandSpec,
    stdout: OwnedFd,
    rlimits: &ResourceLimits,
    call: &CallCap,
    spawner: &Spawner,
) -> io::Result<(Child, GroupGuard)> {
    let stderr = stdout.try_clone()?;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .process_group(0)
        .kill_on_drop(true);
    limits::apply(&mut command, rlimits, call)?;
    // The spawner drops `command`, and with it our copies of the pipe's write end, right
    // after the spawn, so the pipe reaches EOF once the process group lets go.
    let child = spawner.spawn(command).await?;
    let group = GroupGuard::of(&child)?;
    Ok((child, group))
}

/// Adds one read's bytes to `output`, and to `spill` once the output outgrows the cap;
/// `Ok(true)` at EOF.
async fn keep(
    read: io::Result<usize>,
    buf: &[u8],
    output: &mut CappedOutput,
    spill: Option<&mut Spill>,
) -> io::Result<bool> {
    match read {
        Ok(0) => Ok(true),
        Ok(n) => {
            let bytes = &buf[..n];
            if let Some(spill) = spill {
                if output.first_overflow(n) {
                    spill.write(&output.everything()).await;
                    spill.write(&[bytes]).await;
                } else if output.truncated() {
                    spill.write(&[bytes]).await;
                }
            }
            output.push(bytes);
            Ok(false)
        }
        Err(err) if err.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(err) => Err(err),
    }
}

/// Reads into `output` (and `spill`) until EOF (`Ok(true)`) or `deadline` (`Ok(false)`).
async fn read_until(
    reader: &mut pipe::Receiver,
    buf: &mut [u8],
    output: &mut CappedOutput,
    mut spill: Option<&mut Spill>,
    deadline: Instant,
) -> io::Result<bool> {
    loop {
        let Ok(read) = timeout_at(deadline, reader.read(buf)).await else {
            return Ok(false);
        };
        if keep(read, buf, output, spill.as_deref_mut()).await? {
            return Ok(true);
        }
    }
}

/// The process group of a started tool process, killed with SIGKILL once: explicitly, or
/// on drop if the run stops early (an error, or the call future dropped).
#[derive(Debug)]
struct GroupGuard(Option<Pid>);

impl GroupGuard {
    /// The guard of `child`'s process group (it leads its own group).
    fn of(child: &Child) -> io::Result<Self> {
        let pid = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .ok_or_else(|| io::Error::other("spawned process has no pid"))?;
        Ok(Self(Some(Pid::from_raw(pid))))
    }

    /// Kills every process in the group; a group already empty is fine.
    fn kill(&mut self) {
        let Some(pgid) = self.0.take() else { return };
        match killpg(pgid, Signal::SIGKILL) {
            Ok(()) | Err(Errno::ESRCH) => {}
            Err(err) => tracing::warn!(%pgid, %err, "could not kill tool process group"),
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
