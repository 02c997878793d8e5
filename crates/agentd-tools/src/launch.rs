//! Tool processes started ahead of their call ("parked"), so a call does not wait for the
//! kernel to move a new process into its pids cgroup.
//!
//! Moving a process into a cgroup write-locks the kernel's `cgroup_threadgroup_rwsem` and
//! waits for an RCU grace period: 10 to 30 ms per call on a busy 2-core VM, most of a `bash
//! echo` call (issue 7). So the process cap keeps a few launchers ready: each is the helper
//! executable (`agentd`, or this crate's `agentd-sandbox-exec` in tests) run as
//! `sandbox-exec --launch`, already in the next call's cgroup, with the call's rlimits,
//! process group and output pipe, blocked reading its standard input. A call writes its
//! command there ([`encode`]); the launcher executes it in place ([`launch_main`]), so the
//! tool process is the one that was parked, and everything else (kill, timeout, reaping) is
//! as for a process started at the call.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::{Child, ChildStdin, Command};

use crate::command::CommandSpec;
use crate::limits::{self, ResourceLimits};
use crate::pids::{CallCap, ProcessCap};

/// The flag after `sandbox-exec` that makes the helper a launcher.
pub(crate) const LAUNCH: &str = "--launch";

/// What a launcher writes to its output once it is in its group and under its limits.
const READY: u8 = b'R';

/// How long a launcher may take to get ready: moving it into its group waits for the
/// kernel (an RCU grace period), normally 10 to 30 ms.
const READY_LIMIT: Duration = Duration::from_secs(10);

/// The largest command a launcher accepts, in bytes (far above any request body).
const MAX_REQUEST: u64 = 16 << 20;

/// The exit status of a launcher that could not execute its command (as a shell's "not
/// found"); what went wrong is on its standard error, the call's output.
const CANNOT_EXECUTE: i32 = 127;

/// Launchers kept ready at once, at most.
const POOL: usize = 4;

/// The process cap's launchers: off until [`Launchers::enable`], then refilled in the
/// background as calls take them.
#[derive(Debug, Default)]
pub(crate) struct Launchers {
    /// The helper executable, once launchers proved to work.
    helper: OnceLock<PathBuf>,
    /// Launchers ready for a call.
    parked: Mutex<Vec<Parked>>,
    /// Launchers being started.
    starting: AtomicUsize,
    /// Set when starting one failed: calls start their own process from then on.
    broken: AtomicBool,
}

impl Launchers {
    /// Uses `helper` for launchers from now on.
    pub(crate) fn enable(&self, helper: PathBuf) {
        let _ = self.helper.set(helper);
    }

    /// The helper executable, while calls get launchers (enabled, and none failed to start).
    fn helper(&self) -> Option<&PathBuf> {
        self.helper
            .get()
            .filter(|_| !self.broken.load(Ordering::Relaxed))
    }

    /// A ready launcher under `rlimits`, if there is one.
    pub(crate) fn take(&self, rlimits: ResourceLimits) -> Option<Parked> {
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        let index = parked.iter().position(|p| p.rlimits == rlimits)?;
        Some(parked.swap_remove(index))
    }

    /// A launcher under `rlimits` started for a call now, when none was ready: it waits for
    /// the move into its group, but still spares the server a `fork`. `None` when launchers
    /// are off or one cannot be started.
    pub(crate) async fn start_now(
        &self,
        cap: &ProcessCap,
        rlimits: ResourceLimits,
    ) -> Option<Parked> {
        let helper = self.helper()?;
        match Parked::start(cap, helper, rlimits).await {
            Ok(parked) => Some(parked),
            Err(error) => {
                tracing::warn!(%error, "cannot start a launcher for a call; the call starts its own process");
                None
            }
        }
    }

    /// Starts launchers under `rlimits` in the background until [`POOL`] are ready or
    /// starting. Needs a tokio runtime.
    pub(crate) fn refill(&self, cap: &ProcessCap, rlimits: ResourceLimits) {
        let Some(helper) = self.helper() else {
            return;
        };
        let missing = {
            let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
            let ready = parked.iter().filter(|p| p.rlimits == rlimits).count();
            let missing = POOL.saturating_sub(ready + self.starting.load(Ordering::Relaxed));
            // Make room: launchers under other rlimits wait for calls that may not come.
            while missing > 0 && parked.len() + missing > POOL {
                let Some(index) = parked.iter().position(|p| p.rlimits != rlimits) else {
                    break;
                };
                parked.swap_remove(index);
            }
            missing
        };
        for _ in 0..missing {
            self.starting.fetch_add(1, Ordering::Relaxed);
            let (cap, helper) = (cap.clone(), helper.clone());
            tokio::spawn(async move {
                let started = Parked::start(&cap, &helper, rlimits).await;
                let launchers = cap.launchers();
                launchers.starting.fetch_sub(1, Ordering::Relaxed);
                match started {
                    Ok(parked) => launchers
                        .parked
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(parked),
                    Err(error) => {
                        if !launchers.broken.swap(true, Ordering::Relaxed) {
                            tracing::warn!(%error, helper = %helper.display(), "cannot park tool processes ahead of their calls; each call starts its own (slower)");
                        }
                    }
                }
            });
        }
    }
}

/// A launcher waiting for its call.
#[derive(Debug)]
pub(crate) struct Parked {
    /// The launcher; after [`Parked::launch`], the tool process itself.
    pub(crate) child: Child,
    /// Where the command goes; closed once it is written (the launcher reads to its end).
    stdin: Option<ChildStdin>,
    /// The read end of the process's stdout and stderr.
    pub(crate) output: pipe::Receiver,
    /// The cgroup (or rlimit) the process is capped by.
    pub(crate) call: CallCap,
    /// The rlimits it runs under; only a call asking for the same may take it.
    pub(crate) rlimits: ResourceLimits,
}

impl Parked {
    /// Starts `launcher sandbox-exec --launch` in a new call group of `cap`, under `rlimits`.
    /// Errors: the group could not be created, or the launcher not started.
    pub(crate) async fn start(
        cap: &ProcessCap,
        launcher: &Path,
        rlimits: ResourceLimits,
    ) -> io::Result<Self> {
        let call = cap.start_call(rlimits.processes).await?;
        let (writer, mut output) = pipe::pipe()?;
        let stdout = writer.into_blocking_fd()?;
        let stderr = stdout.try_clone()?;
        let mut command = Command::new(launcher);
        command
            .args([crate::SANDBOX_EXEC, LAUNCH])
            .args(limits::launcher_args(&rlimits, &call)?)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cap.spawner().spawn(command).await?;
        // The launcher joins the group and sets its limits itself, then says so.
        let mut said = [0; 1];
        match tokio::time::timeout(READY_LIMIT, output.read(&mut said)).await {
            Ok(Ok(1)) if said[0] == READY => {}
            _ => {
                let _ = child.start_kill();
                let mut text = said.to_vec();
                let rest = output.read_to_end(&mut text);
                let _ = tokio::time::timeout(Duration::from_millis(100), rest).await;
                return Err(io::Error::other(format!(
                    "the launcher did not start: {}",
                    String::from_utf8_lossy(&text).trim()
                )));
            }
        }
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the launcher has no stdin"))?;
        Ok(Self {
            child,
            stdin: Some(stdin),
            output,
            call,
            rlimits,
        })
    }

    /// Hands `spec` to the launcher, which executes it. Errors: the launcher is gone.
    pub(crate) async fn launch(&mut self, spec: &CommandSpec) -> io::Result<()> {
        let mut stdin = self
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("the launcher was used already"))?;
        stdin.write_all(&encode(spec)).await?;
        // Dropping it closes the pipe: the launcher sees the request's end.
        drop(stdin);
        Ok(())
    }
}

/// The request a launcher reads: NUL-terminated fields `cwd`, `program`, the number of
/// arguments, the arguments, the number of variables, then each variable's name and value.
/// (No field can hold a NUL: `execve` could not pass it either.)
pub(crate) fn encode(spec: &CommandSpec) -> Vec<u8> {
    let mut out = Vec::new();
    let mut field = |bytes: &[u8]| {
        out.extend_from_slice(bytes);
        out.push(0);
    };
    field(spec.cwd.as_os_str().as_bytes());
    field(spec.program.as_bytes());
    field(spec.args.len().to_string().as_bytes());
    for arg in &spec.args {
        field(arg.as_bytes());
    }
    field(spec.env.len().to_string().as_bytes());
    for (name, value) in &spec.env {
        field(name.as_bytes());
        field(value.as_bytes());
    }
    out
}

/// A decoded request.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    cwd: PathBuf,
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

fn decode(bytes: &[u8]) -> Result<Request, String> {
    let body = bytes.strip_suffix(&[0]).ok_or("the request is cut short")?;
    let mut fields = body.split(|byte| *byte == 0).map(OsStr::from_bytes);
    let mut next = |what: &str| fields.next().ok_or(format!("the request lacks {what}"));
    let count = |field: &OsStr| {
        field
            .to_str()
            .and_then(|text| text.parse::<usize>().ok())
            .ok_or(format!("bad count {field:?}"))
    };
    let cwd = PathBuf::from(next("a directory")?);
    let program = next("a program")?.to_owned();
    let args = (0..count(next("an argument count")?)?)
        .map(|_| next("an argument").map(OsStr::to_owned))
        .collect::<Result<_, _>>()?;
    let env = (0..count(next("a variable count")?)?)
        .map(|_| Ok((next("a name")?.to_owned(), next("a value")?.to_owned())))
        .collect::<Result<_, String>>()?;
    if fields.next().is_some() {
        return Err("the request has extra fields".to_owned());
    }
    Ok(Request {
        cwd,
        program,
        args,
        env,
    })
}

/// The launcher, in the helper process (`sandbox-exec --launch <setup>…`): joins its call's
/// group and sets its limits as `setup` says (see `limits::launcher_args`), writes
/// [`READY`], reads one request from standard input, then executes its program there, with
/// its arguments, exactly its environment, its directory and standard input from
/// `/dev/null`. Never returns; when a step fails, says why on standard error (the call's
/// output) and exits with status 127.
pub(crate) fn launch_main(setup: &[OsString]) -> ! {
    if let Err(error) = limits::apply_to_self(setup) {
        let _ = writeln!(io::stderr(), "agentd: cannot set up the launcher: {error}");
        std::process::exit(CANNOT_EXECUTE);
    }
    let mut stdout = io::stdout();
    if stdout
        .write_all(&[READY])
        .and_then(|()| stdout.flush())
        .is_err()
    {
        std::process::exit(CANNOT_EXECUTE);
    }
    let mut bytes = Vec::new();
    let read = io::stdin().lock().take(MAX_REQUEST).read_to_end(&mut bytes);
    let error = match read.map_err(|e| e.to_string()).and_then(|_| decode(&bytes)) {
        Ok(request) => {
            let error = std::process::Command::new(&request.program)
                .args(&request.args)
                .env_clear()
                .envs(request.env)
                .current_dir(&request.cwd)
                .stdin(Stdio::null())
                .exec();
            format!("cannot run {:?}: {error}", request.program)
        }
        Err(error) => format!("bad launch request: {error}"),
    };
    let _ = writeln!(io::stderr(), "agentd: {error}");
    std::process::exit(CANNOT_EXECUTE)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_request_decodes_to_what_was_encoded() {
        let spec = CommandSpec {
            program: "/usr/bin/bwrap".into(),
            args: vec!["--".into(), "".into(), "echo hi; printf 'a\\nb'".into()],
            cwd: "/tmp/work space".into(),
            workspace: "/tmp/work space".into(),
            env: vec![("PATH".into(), "/bin".into()), ("EMPTY".into(), "".into())],
        };
        let request = decode(&encode(&spec)).unwrap();
        assert_eq!(
            request,
            Request {
                cwd: spec.cwd.clone(),
                program: spec.program.clone(),
                args: spec.args.clone(),
                env: spec.env.clone(),
            }
        );
    }

    #[test]
    fn a_cut_or_padded_request_is_refused() {
        let spec = CommandSpec {
            program: "/bin/true".into(),
            args: vec!["x".into()],
            cwd: "/".into(),
            workspace: "/".into(),
            env: Vec::new(),
        };
        let bytes = encode(&spec);
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.extend_from_slice(b"more\0");
        assert!(decode(&padded).is_err());
    }
}
