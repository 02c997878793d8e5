//! The kernel-enforced limits every tool process starts with, set in the child between
//! `fork` and `exec`.
//!
//! Owns [`ResourceLimits`] (rlimits, inherited by everything the process starts, through a
//! sandbox too), joining the call's pids cgroup (made by `crate::pids`) and
//! `PR_SET_PDEATHSIG`, so a tool process dies with the server. It is the only place in the
//! crate with `unsafe`: the `pre_exec` hook, which may only make async-signal-safe system
//! calls. It must not allocate, lock or log in the child.

use std::ffi::OsString;
use std::fs::File;
use std::io;

use nix::sys::resource::{Resource, getrlimit, rlim_t, setrlimit};
use nix::sys::signal::Signal;
use nix::unistd::{Pid, getpid, getppid};
use tokio::process::Command;

use crate::pids::CallCap;

/// One GiB in bytes.
const GIB: u64 = 1 << 30;

/// Seconds between the soft CPU limit (SIGXCPU, fatal unless handled) and the hard one
/// (SIGKILL).
const CPU_GRACE_SECS: u64 = 5;

/// Per-process resource limits of a tool process (`setrlimit(2)`), inherited by all its
/// children. `None` leaves the server's own limit in place. A limit above the server's own
/// hard limit is lowered to it (only root may raise a hard limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceLimits {
    /// CPU time per process, in seconds (`RLIMIT_CPU`): SIGXCPU at this, SIGKILL 5 s later.
    /// A backstop for multi-threaded work; the wall-clock timeout ends most runs first.
    /// Default 600 s.
    pub cpu_secs: Option<u64>,
    /// Virtual address space per process, in bytes (`RLIMIT_AS`): allocations beyond it
    /// fail (`MemoryError`, "memory exhausted"). Default 4 GiB. Runtimes that reserve huge
    /// virtual ranges up front may need more.
    pub address_space: Option<u64>,
    /// Largest file a process may create or grow, in bytes (`RLIMIT_FSIZE`): a write past it
    /// fails with `EFBIG` (the process gets SIGXFSZ). Default 1 GiB.
    pub file_size: Option<u64>,
    /// Processes (and threads) one call may have at once: a `fork` or thread past it fails
    /// with `EAGAIN` ("Resource temporarily unavailable"), so a fork bomb stops growing.
    /// Enforced exactly by the call's pids cgroup (`pids.max`, binding for root too) when
    /// [`crate::ProcessCap`] found one; else by `RLIMIT_NPROC` set to the tasks on the
    /// machine at the start of the call plus this, which root ignores. `None`: no cap of
    /// the call's own. Default 1024: room for a parallel build on a many-core machine
    /// (compilers and test runners start threads per core), yet a small share of the
    /// machine's pids.
    pub processes: Option<u64>,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        Self {
            cpu_secs: Some(600),
            address_space: Some(4 * GIB),
            file_size: Some(GIB),
            processes: Some(1024),
        }
    }
}

/// The most rlimits [`prepare`] sets: CPU, AS, FSIZE, NPROC, CORE.
const MAX_RLIMITS: usize = 5;

/// What the child applies, computed in the parent so the child only makes system calls.
#[derive(Debug, Clone, Copy)]
struct ChildSetup {
    /// `(resource, soft, hard)`; the first `len` entries are used.
    rlimits: [(Resource, rlim_t, rlim_t); MAX_RLIMITS],
    len: usize,
    /// The server's pid: if the child's parent is already someone else, the server died
    /// before `PR_SET_PDEATHSIG` took effect and the child must not run.
    parent: Pid,
}

/// Makes `command`'s process join `cap`'s pids cgroup, start with `limits` (plus no core
/// dumps) and receive SIGKILL when the thread that spawns it exits (`PR_SET_PDEATHSIG`),
/// all before `exec`: so whatever runs (`bwrap`, and everything it starts) is in the group
/// from its first instruction, and no fork can slip out before the move, as it could if
/// the parent moved the child after `spawn`. The spawning thread is the cap's spawner
/// (`crate::spawner`), which lives as long as the cap, i.e. the server; never spawn with
/// this from a thread that may exit sooner (a blocking-pool thread, or one that left the
/// worker pool through `block_in_place`): it would kill the tool with it. Errors: reading
/// the server's own limits or opening the group's `cgroup.procs` failed.
pub(crate) fn apply(
    command: &mut Command,
    limits: &ResourceLimits,
    cap: &CallCap,
) -> io::Result<()> {
    let setup = prepare(limits, cap.nproc(limits.processes))?;
    // Opened here, in the parent: the child only writes to it. Close-on-exec, so the tool
    // never holds it; the parent's copy closes when `command` is dropped after the spawn.
    let procs = cap.procs()?;
    // SAFETY: the closure runs in the forked child of a multi-threaded process, where only
    // async-signal-safe functions may be called. It uses a `Copy` value and a file opened
    // before the fork and makes only raw system calls through nix's thin wrappers
    // (`write`, `setrlimit`, `prctl`, `getppid`), which neither allocate nor take locks;
    // errors become `io::Error::from_raw_os_error`, which does not allocate either.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || in_child(&setup, procs.as_ref()));
    }
    Ok(())
}

/// The rlimits a launcher can be asked to set, by the names [`launcher_args`] uses.
const RESOURCES: [(Resource, &str); MAX_RLIMITS] = [
    (Resource::RLIMIT_CPU, "cpu"),
    (Resource::RLIMIT_AS, "as"),
    (Resource::RLIMIT_FSIZE, "fsize"),
    (Resource::RLIMIT_NPROC, "nproc"),
    (Resource::RLIMIT_CORE, "core"),
];

/// What [`apply`] does, as arguments for a launcher to do it to itself (`crate::launch`):
/// `--parent <server pid> [--procs <cgroup.procs>] [--rlimit <name>:<soft>:<hard>]…`. So the
/// launcher is spawned without a `pre_exec` hook, hence without `fork`: std then uses
/// `posix_spawn`, which shares the server's memory until `exec` instead of copying its page
/// tables, and leaves the server no copy-on-write faults to take afterwards.
/// Errors: reading the server's own limits failed.
pub(crate) fn launcher_args(limits: &ResourceLimits, cap: &CallCap) -> io::Result<Vec<OsString>> {
    let setup = prepare(limits, cap.nproc(limits.processes))?;
    let mut args: Vec<OsString> = vec!["--parent".into(), setup.parent.to_string().into()];
    if let Some(procs) = cap.procs_path() {
        args.push("--procs".into());
        args.push(procs.into_os_string());
    }
    for &(resource, soft, hard) in &setup.rlimits[..setup.len] {
        if let Some((_, name)) = RESOURCES.iter().find(|(r, _)| *r == resource) {
            args.push("--rlimit".into());
            args.push(format!("{name}:{soft}:{hard}").into());
        }
    }
    Ok(args)
}

/// In a launcher, a fresh single-threaded process: applies to itself what
/// [`launcher_args`] encoded, in [`apply`]'s order. Errors: say which step failed.
pub(crate) fn apply_to_self(args: &[OsString]) -> Result<(), String> {
    let mut parent = None;
    let mut procs = None;
    let mut rlimits = Vec::new();
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .and_then(|value| value.to_str())
            .ok_or_else(|| format!("{flag:?} needs a value"))?;
        match flag.to_str() {
            Some("--parent") => parent = Some(value.parse::<i32>().map_err(|e| e.to_string())?),
            Some("--procs") => procs = Some(value.to_owned()),
            Some("--rlimit") => rlimits.push(parse_rlimit(value)?),
            _ => return Err(format!("unexpected argument {flag:?}")),
        }
    }
    let parent = Pid::from_raw(parent.ok_or("missing --parent")?);
    if let Some(procs) = procs {
        std::fs::write(&procs, b"0").map_err(|e| format!("joining {procs}: {e}"))?;
    }
    for (resource, soft, hard) in rlimits {
        setrlimit(resource, soft, hard).map_err(|e| format!("setrlimit: {e}"))?;
    }
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(|e| format!("prctl: {e}"))?;
    if getppid() != parent {
        return Err("the server is gone".to_owned());
    }
    Ok(())
}

fn parse_rlimit(value: &str) -> Result<(Resource, rlim_t, rlim_t), String> {
    let mut parts = value.split(':');
    let (Some(name), Some(soft), Some(hard), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("bad --rlimit {value:?}"));
    };
    let resource = RESOURCES
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(resource, _)| *resource)
        .ok_or_else(|| format!("unknown rlimit {name:?}"))?;
    let number = |text: &str| {
        text.parse::<rlim_t>()
            .map_err(|e| format!("{value:?}: {e}"))
    };
    Ok((resource, number(soft)?, number(hard)?))
}

/// The rlimits to set, each lowered to the server's current hard limit; `nproc` is the
/// `RLIMIT_NPROC` to set, if any.
fn prepare(limits: &ResourceLimits, nproc: Option<u64>) -> io::Result<ChildSetup> {
    let wanted = [
        (
            Resource::RLIMIT_CPU,
            limits.cpu_secs,
            limits
                .cpu_secs
                .map(|secs| secs.saturating_add(CPU_GRACE_SECS)),
        ),
        (
            Resource::RLIMIT_AS,
            limits.address_space,
            limits.address_space,
        ),
        (Resource::RLIMIT_FSIZE, limits.file_size, limits.file_size),
        (Resource::RLIMIT_NPROC, nproc, nproc),
        (Resource::RLIMIT_CORE, Some(0), Some(0)),
    ];
    let mut setup = ChildSetup {
        rlimits: [(Resource::RLIMIT_CORE, 0, 0); MAX_RLIMITS],
        len: 0,
        parent: getpid(),
    };
    for (resource, soft, hard) in wanted {
        let (Some(soft), Some(hard)) = (soft, hard) else {
            continue;
        };
        let (_, current_hard) = getrlimit(resource).map_err(io::Error::from)?;
        let hard = hard.min(current_hard);
        setup.rlimits[setup.len] = (resource, soft.min(hard), hard);
        setup.len += 1;
    }
    Ok(setup)
}

/// Runs in the child after `fork`, before `exec`: system calls only (see [`apply`]).
/// First joins the call's pids cgroup, if any, by writing `0` ("the writing process") to
/// its `cgroup.procs`, the same on cgroup v1 and v2.
fn in_child(setup: &ChildSetup, procs: Option<&File>) -> io::Result<()> {
    if let Some(procs) = procs {
        match nix::unistd::write(procs, b"0") {
            Ok(1) => {}
            Ok(_) => return Err(io::Error::from_raw_os_error(nix::libc::EIO)),
            Err(err) => return Err(errno(err)),
        }
    }
    for &(resource, soft, hard) in &setup.rlimits[..setup.len] {
        setrlimit(resource, soft, hard).map_err(errno)?;
    }
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(errno)?;
    if getppid() != setup.parent {
        // The server is already gone; the death signal was set too late to fire.
        return Err(io::Error::from_raw_os_error(nix::libc::ESRCH));
    }
    Ok(())
}

/// An errno as an `io::Error`, without allocating.
fn errno(err: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(err as i32)
}
