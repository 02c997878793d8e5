//! The Landlock sandbox, server side: the tool's command, started by a re-executed helper
//! that confines itself and then becomes the command.
//!
//! Owns the helper's command line, `<helper> sandbox-exec --workspace <dir> [--network]
//! [--hide <dir>]… -- <program> <args>…`, and what the model is told about it. The server
//! process never calls Landlock or seccomp itself: the helper (the `agentd` binary, or the
//! `agentd-sandbox-exec` binary of this crate) applies them in the child, see
//! `sandbox::exec`. Unlike bubblewrap there are no namespaces: the command shares the host's
//! `/tmp`, `/proc` and PID space, so a `setsid` child escapes the process-group kill (a
//! pids cgroup is what ends those).

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use crate::command::{CommandSpec, Sandbox};

/// The helper's subcommand, the first argument after its program name.
pub const SANDBOX_EXEC: &str = "sandbox-exec";

/// Runs every command through a helper executable that applies Landlock and seccomp to
/// itself, then executes the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landlock {
    /// The helper executable, an absolute path (normally the running `agentd`).
    helper: PathBuf,
    /// Whether the command may create IP sockets and use TCP.
    network: bool,
    /// Directories the command must not read (absolute, sorted).
    hide: Vec<PathBuf>,
}

impl Landlock {
    /// A sandbox whose commands are started by `helper` (`<helper> sandbox-exec …`). With
    /// `network` false the command cannot create IP sockets nor bind or connect TCP ports.
    /// `hide` lists directories the command must not read (say, the server's data
    /// directory); `/run`, `/tmp` and the parent directory of each workspace (other
    /// sessions' workspaces) are hidden as well.
    pub fn new(helper: PathBuf, network: bool, hide: Vec<PathBuf>) -> Self {
        let mut hide: Vec<PathBuf> = hide.into_iter().filter(|p| p.is_absolute()).collect();
        hide.extend(["/run", "/tmp"].map(PathBuf::from));
        hide.sort();
        hide.dedup();
        Self {
            helper,
            network,
            hide,
        }
    }

    /// The helper executable used.
    pub fn helper(&self) -> &Path {
        &self.helper
    }

    /// The directories hidden for `workspace`: those configured plus its parent, without
    /// `/` and without the workspace itself or anything inside it.
    fn hidden_for(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut hide: Vec<PathBuf> = self
            .hide
            .iter()
            .map(PathBuf::as_path)
            .chain(workspace.parent())
            .filter(|dir| dir.parent().is_some() && !dir.starts_with(workspace))
            .map(Path::to_path_buf)
            .collect();
        hide.sort();
        hide.dedup();
        hide
    }
}

impl Sandbox for Landlock {
    fn wrap(&self, command: CommandSpec) -> io::Result<CommandSpec> {
        command.require_absolute_paths()?;
        let CommandSpec {
            program,
            args: command_args,
            cwd,
            workspace,
            env,
        } = command;
        let mut args: Vec<OsString> = vec![SANDBOX_EXEC.into(), "--workspace".into()];
        args.push(workspace.clone().into_os_string());
        if self.network {
            args.push("--network".into());
        }
        for dir in self.hidden_for(&workspace) {
            args.push("--hide".into());
            args.push(dir.into_os_string());
        }
        args.push("--".into());
        args.push(program);
        args.extend(command_args);
        Ok(CommandSpec {
            program: self.helper.clone().into_os_string(),
            args,
            cwd,
            workspace,
            // Passed through to the command as is (the helper only adds `TMPDIR`).
            env,
        })
    }

    fn describe(&self) -> Option<String> {
        let network = if self.network {
            "The network is available."
        } else {
            "There is no network access (downloads and package installs fail)."
        };
        Some(format!(
            "It runs in a sandbox: only the workspace is writable, so put temporary files in \
             $TMPDIR (inside the workspace), not /tmp. {network}"
        ))
    }
}
