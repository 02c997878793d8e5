//! What a tool process is started with, as plain data, and the seam where a sandbox wraps it.
//!
//! A tool builds a [`CommandSpec`] (program, arguments, cwd, the whole environment); a
//! [`Sandbox`] may rewrite it (e.g. into `bwrap … -- bash -c …`, see `crate::sandbox`);
//! the process runner starts exactly that. The parts every tool process needs whatever the
//! sandbox (stdin from `/dev/null`, its own process group, an environment cleared down to
//! [`CommandSpec::env`], rlimits, death with the server, kill on timeout) are applied by the
//! runner, not here, so no sandbox can forget them.

use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::PathBuf;

/// The `PATH` tool processes get: the usual system directories, nothing from the server's
/// own environment.
pub const SAFE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// A process to start: program, arguments, working directory and its complete environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    /// The program; without a slash, looked up in the `PATH` of [`CommandSpec::env`].
    pub program: OsString,
    /// The arguments after the program name.
    pub args: Vec<OsString>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The directory the process works on: the only one a sandbox lets it write (besides
    /// a private `/tmp`). The session's workspace.
    pub workspace: PathBuf,
    /// The whole environment of the process; nothing else is inherited.
    pub env: Vec<(OsString, OsString)>,
}

impl CommandSpec {
    /// Sandboxes bind and restrict by path: both the workspace and the working directory
    /// must be absolute. Errors: `InvalidInput` otherwise.
    pub fn require_absolute_paths(&self) -> std::io::Result<()> {
        if self.workspace.is_absolute() && self.cwd.is_absolute() {
            return Ok(());
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the workspace and working directory must be absolute paths",
        ))
    }

    /// `bash -c <script>` in `workspace`, with the allowlisted environment only:
    /// `PATH` = [`SAFE_PATH`], `HOME` = `workspace`, `LANG=C.UTF-8`, `TERM=dumb`.
    pub fn bash(script: &str, workspace: PathBuf) -> Self {
        let env = vec![
            ("PATH".into(), SAFE_PATH.into()),
            ("HOME".into(), workspace.clone().into_os_string()),
            ("LANG".into(), "C.UTF-8".into()),
            ("TERM".into(), "dumb".into()),
        ];
        Self {
            program: "bash".into(),
            args: vec!["-c".into(), script.into()],
            cwd: workspace.clone(),
            workspace,
            env,
        }
    }
}

/// Confines a tool process: turns the command a tool wants to run into the command that
/// actually runs (e.g. the same command inside bubblewrap).
pub trait Sandbox: Send + Sync + fmt::Debug {
    /// The command to start in place of `command`. An error (say, the sandbox binary is
    /// missing) becomes a failed tool call; the command is then not run at all.
    fn wrap(&self, command: CommandSpec) -> io::Result<CommandSpec>;

    /// What the model should know about the confinement (say, "no network"), added to the
    /// tool's description; `None` when there is nothing to say.
    fn describe(&self) -> Option<String> {
        None
    }
}

/// No confinement beyond what the process runner always applies: runs the command as is.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSandbox;

impl Sandbox for NoSandbox {
    fn wrap(&self, command: CommandSpec) -> io::Result<CommandSpec> {
        Ok(command)
    }
}
