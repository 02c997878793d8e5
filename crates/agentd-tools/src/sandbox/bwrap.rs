//! The bubblewrap sandbox: the tool's command, started by `bwrap` in fresh namespaces.
//!
//! Owns the `bwrap` command line. Inside, the whole filesystem is read-only except the
//! workspace (bound read-write at its own path) and a private size-capped `/tmp`;
//! directories holding secrets or other sessions' files are covered by empty read-only
//! mounts; `/proc` and `/dev` are the sandbox's own; the PID namespace ends every process
//! of the call when the command exits or `bwrap` is killed (`setsid` included); the
//! network namespace has only its own loopback unless the network is allowed; the
//! environment is exactly the tool's allowlist. Deciding whether bubblewrap works on this
//! machine is the job of `SandboxMode::probe`.

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};

use crate::command::{CommandSpec, SAFE_PATH, Sandbox};

/// Runs every command inside `bwrap` (bubblewrap, Debian package `bubblewrap`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bubblewrap {
    /// The `bwrap` executable, an absolute path.
    program: PathBuf,
    /// Whether the command keeps the host's network namespace.
    network: bool,
    /// Directories covered by an empty read-only tmpfs (absolute, sorted).
    hide: Vec<PathBuf>,
    /// The size limit of the private `/tmp`, in bytes, if this `bwrap` supports `--size`
    /// (0.8 and later).
    tmp_size: Option<u64>,
    /// `chrt`, to run the command (not `bwrap` itself) under `SCHED_IDLE`, if available.
    chrt: Option<PathBuf>,
}

impl Bubblewrap {
    /// A sandbox started with `program` (the `bwrap` executable). With `network` false the
    /// command gets a network namespace of its own, with nothing but its own loopback.
    /// `hide` lists directories the command must not read (say, the server's data
    /// directory); `/run` (service sockets such as Docker's) and the parent directory of
    /// each workspace (other sessions' workspaces) are hidden as well. `tmp_size` caps the
    /// private `/tmp`, in bytes (`None`: no `--size`, for `bwrap` older than 0.8).
    pub fn new(program: PathBuf, network: bool, hide: Vec<PathBuf>, tmp_size: Option<u64>) -> Self {
        let mut hide: Vec<PathBuf> = hide.into_iter().filter(|p| p.is_absolute()).collect();
        hide.push(PathBuf::from("/run"));
        hide.sort();
        hide.dedup();
        Self {
            program,
            network,
            hide,
            tmp_size,
            chrt: None,
        }
    }

    /// Runs each command under the `SCHED_IDLE` policy through `chrt` (util-linux), while
    /// `bwrap` and its init keep normal priority. Any normal task (the server's threads,
    /// the sandbox's init reaping and dying) then preempts the command's processes, so even
    /// thousands of them (a fork bomb) cannot starve the server of the CPU it needs to time
    /// them out. They still get all the CPU nobody else wants.
    pub fn with_idle_scheduling(mut self, chrt: PathBuf) -> Self {
        self.chrt = Some(chrt);
        self
    }

    /// The first file called `name` (say, `bwrap`) in the directories of [`SAFE_PATH`].
    pub fn find(name: &str) -> Option<PathBuf> {
        SAFE_PATH
            .split(':')
            .map(|dir| Path::new(dir).join(name))
            .find(|candidate| candidate.is_file())
    }

    /// The `bwrap` executable used.
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The directories hidden for `workspace`: those configured plus its parent, without
    /// `/`, the workspace itself or anything inside it, anything in `/tmp` (already a fresh
    /// tmpfs) and only those that exist (an empty mount cannot be placed on a missing path
    /// of the read-only root).
    fn hidden_for(&self, workspace: &Path) -> Vec<PathBuf> {
        let candidates = self
            .hide
            .iter()
            .map(PathBuf::as_path)
            .chain(workspace.parent());
        let hide = candidates
            .filter(|dir| {
                dir.parent().is_some()
                    && !dir.starts_with(workspace)
                    && !dir.starts_with("/tmp")
                    && dir.is_dir()
            })
            .map(Path::to_path_buf)
            .collect();
        outermost(hide)
    }
}

impl Sandbox for Bubblewrap {
    fn wrap(&self, command: CommandSpec) -> io::Result<CommandSpec> {
        command.require_absolute_paths()?;
        let CommandSpec {
            program,
            args: command_args,
            cwd,
            workspace,
            env,
        } = command;
        let mut args = Args::default();
        args.flags(&[
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]);
        if !self.network {
            args.flags(&["--unshare-net"]);
        }
        args.flags(&["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
        if let Some(size) = self.tmp_size {
            args.flags(&["--size"]);
            args.push(size.to_string());
        }
        args.flags(&["--tmpfs", "/tmp"]);
        let hidden = self.hidden_for(&workspace);
        for dir in &hidden {
            args.flags(&["--tmpfs"]);
            args.push(dir);
        }
        if self.network {
            // With /run hidden, a resolv.conf that points into it (systemd-resolved) would
            // dangle: put the file it names back, read-only.
            let resolver = std::fs::canonicalize("/etc/resolv.conf").ok();
            if let Some(target) = resolver.filter(|t| hidden.iter().any(|d| t.starts_with(d))) {
                args.flags(&["--ro-bind"]);
                args.push(&target);
                args.push(&target);
            }
        }
        args.flags(&["--bind"]);
        args.push(&workspace);
        args.push(&workspace);
        // After the workspace bind: an empty tmpfs the command could fill would be memory.
        for dir in &hidden {
            args.flags(&["--remount-ro"]);
            args.push(dir);
        }
        args.flags(&["--chdir"]);
        args.push(&cwd);
        args.flags(&["--clearenv"]);
        for (key, value) in env {
            args.flags(&["--setenv"]);
            args.push(key);
            args.push(value);
        }
        args.flags(&["--"]);
        if let Some(chrt) = &self.chrt {
            args.push(chrt);
            args.flags(&["--idle", "0"]);
        }
        args.push(program);
        args.0.extend(command_args);
        Ok(CommandSpec {
            program: self.program.clone().into_os_string(),
            args: args.0,
            cwd,
            workspace,
            // bwrap itself needs no environment; what it has is what `/proc/1/environ`
            // shows inside.
            env: Vec::new(),
        })
    }

    fn describe(&self) -> Option<String> {
        let network = if self.network {
            "The network is available."
        } else {
            "There is no network access (downloads and package installs fail)."
        };
        Some(format!(
            "It runs in a sandbox: everything outside the workspace is read-only, /tmp is \
             private and emptied after each call, and only the call's own processes are \
             visible. {network}"
        ))
    }
}

/// A `bwrap` argument list under construction.
#[derive(Default)]
struct Args(Vec<OsString>);

impl Args {
    fn flags(&mut self, flags: &[&str]) {
        self.0.extend(flags.iter().map(OsString::from));
    }

    fn push(&mut self, arg: impl AsRef<OsStr>) {
        self.0.push(arg.as_ref().to_owned());
    }
}

/// `dirs` sorted and deduplicated, without any that lies inside another.
fn outermost(mut dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    dirs.sort();
    dirs.dedup();
    let mut kept: Vec<PathBuf> = Vec::with_capacity(dirs.len());
    for dir in dirs {
        if !kept.iter().any(|outer| dir.starts_with(outer)) {
            kept.push(dir);
        }
    }
    kept
}
