//! Which OS sandbox confines `bash`, decided once at startup by actually running one.
//!
//! Owns the operator's choice ([`SandboxConfig`], `AGENTD_SANDBOX`), the startup probe
//! ([`SandboxMode::probe`]) and the rule that the server never runs tools unconfined
//! unless the operator said so: `auto` falls back from bubblewrap to Landlock and then
//! fails; `none` works only when asked for by name, and is logged loudly. How a command is
//! confined is the job of each [`Sandbox`] implementation ([`Bubblewrap`], [`Landlock`]).

mod bwrap;
mod caps;
mod exec;
mod probe_landlock;
mod reexec;
mod ruleset;
mod seccomp;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

pub use bwrap::Bubblewrap;
pub use exec::{PRIVATE_TMP, sandbox_exec_main};
pub use reexec::{Landlock, SANDBOX_EXEC};

use crate::command::{CommandSpec, NoSandbox, Sandbox};
use crate::limits::ResourceLimits;
use crate::pids::ProcessCap;
use crate::process::{self, Ending, Limits};

/// How long the probe's trivial command may take: 10 s.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the probe runs in a scratch workspace, and the output that proves the sandbox
/// works: a file written in the workspace is read back, and `/` is not writable.
const PROBE_SCRIPT: &str = "echo agentd-sandbox-ok > probe.txt && cat probe.txt && test ! -w /";
const PROBE_OUTPUT: &str = "agentd-sandbox-ok\n";

/// The sandbox the operator asks for (`AGENTD_SANDBOX`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SandboxRequest {
    /// The best that works: bubblewrap, else Landlock, else refuse to start.
    #[default]
    Auto,
    /// Bubblewrap or refuse to start.
    Bwrap,
    /// Landlock + seccomp or refuse to start.
    Landlock,
    /// No sandbox: tools run with the server's own rights (limits and process control
    /// still apply). Only when explicitly asked for.
    None,
}

impl FromStr for SandboxRequest {
    type Err = String;

    /// `auto`, `bwrap`, `landlock` or `none` (any case); the error says what is accepted.
    fn from_str(value: &str) -> Result<Self, Self::Err> {
        match value.to_ascii_lowercase().as_str() {
            "auto" => Ok(Self::Auto),
            "bwrap" | "bubblewrap" => Ok(Self::Bwrap),
            "landlock" => Ok(Self::Landlock),
            "none" => Ok(Self::None),
            _ => Err(format!(
                "unknown sandbox `{value}`: use auto, bwrap, landlock or none"
            )),
        }
    }
}

/// How the server's tool processes are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxConfig {
    /// Which sandbox to use. Default [`SandboxRequest::Auto`].
    pub mode: SandboxRequest,
    /// Whether tool processes may use the network. Default `false`.
    pub network: bool,
    /// Directories tool processes must not read, e.g. the server's data directory with its
    /// database. `/run` and the directory holding the workspaces are always hidden. Default:
    /// the server's `$HOME` (credentials, shell history), when set and not `/`.
    pub hide: Vec<PathBuf>,
    /// The size of the private `/tmp`, in bytes (it is memory). Default 1 GiB.
    pub tmp_size: u64,
    /// The `bwrap` executable. Default `None`: the first `bwrap` in [`crate::SAFE_PATH`]
    /// (`chrt` is looked up there too; see [`Bubblewrap::with_idle_scheduling`]).
    pub bwrap_path: Option<PathBuf>,
    /// The Landlock helper, run as `<it> sandbox-exec …` (see [`Landlock`]). Default
    /// `None`: this very executable (`std::env::current_exe` at probe time), i.e. `agentd`.
    /// Tests point it at the `agentd-sandbox-exec` binary of this crate.
    pub landlock_helper: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|home| home.is_absolute() && home.parent().is_some());
        Self {
            mode: SandboxRequest::Auto,
            network: false,
            hide: home.into_iter().collect(),
            tmp_size: 1 << 30,
            bwrap_path: None,
            landlock_helper: None,
        }
    }
}

/// The sandbox in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// Bubblewrap: namespaces, read-only root, private `/tmp`, `/proc` and PID space.
    Bwrap,
    /// Landlock + seccomp in a re-executed helper.
    Landlock,
    /// None: the operator chose to run tools unconfined.
    None,
}

impl SandboxMode {
    /// The name reported by `/healthz`: `bwrap`, `landlock` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bwrap => "bwrap",
            Self::Landlock => "landlock",
            Self::None => "none",
        }
    }

    /// Decides the sandbox for `config` by running a trivial command through it (not
    /// just looking for the binary). Errors: the requested sandbox does not work here, or
    /// with [`SandboxRequest::Auto`] none does; the message says why and what to do.
    pub async fn probe(config: &SandboxConfig) -> Result<ActiveSandbox, SandboxError> {
        match config.mode {
            SandboxRequest::None => {
                tracing::warn!(
                    "AGENTD_SANDBOX=none: tool commands run UNCONFINED, with the server's own \
                     rights over every file it can reach, its environment and its secrets \
                     (/proc/<pid>/environ) included; use only on a machine you can lose"
                );
                Ok(ActiveSandbox {
                    mode: Self::None,
                    sandbox: Arc::new(NoSandbox),
                })
            }
            SandboxRequest::Bwrap => {
                probe_bwrap(config)
                    .await
                    .map_err(|reason| SandboxError::Unavailable {
                        mode: Self::Bwrap,
                        reason,
                    })
            }
            SandboxRequest::Landlock => {
                probe_landlock::probe(config)
                    .await
                    .map_err(|reason| SandboxError::Unavailable {
                        mode: Self::Landlock,
                        reason,
                    })
            }
            SandboxRequest::Auto => match probe_bwrap(config).await {
                Ok(active) => Ok(active),
                Err(bwrap) => {
                    tracing::warn!(reason = %bwrap, "bubblewrap does not work here; trying Landlock");
                    probe_landlock::probe(config)
                        .await
                        .map_err(|landlock| SandboxError::NoneWorks { bwrap, landlock })
                }
            },
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The sandbox the probe chose: its name for `/healthz` and the wrapper to build the
/// toolbox with.
#[derive(Debug, Clone)]
pub struct ActiveSandbox {
    /// Which sandbox is in force.
    pub mode: SandboxMode,
    /// Wraps every tool command.
    pub sandbox: Arc<dyn Sandbox>,
}

/// No usable sandbox: the server must not start.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// The sandbox asked for by name does not work here.
    #[error(
        "the {mode} sandbox was asked for but does not work here: {reason}. Install \
         bubblewrap (Debian: `apt-get install bubblewrap`) and allow unprivileged user \
         namespaces, pick another AGENTD_SANDBOX, or set AGENTD_SANDBOX=none to run tools \
         unconfined"
    )]
    Unavailable {
        /// The sandbox asked for.
        mode: SandboxMode,
        /// Why it does not work.
        reason: String,
    },
    /// With `auto`, no sandbox works here.
    #[error(
        "no sandbox works here (bwrap: {bwrap}; landlock: {landlock}). Install bubblewrap \
         (Debian: `apt-get install bubblewrap`) and allow unprivileged user namespaces, or \
         set AGENTD_SANDBOX=none to run tools unconfined"
    )]
    NoneWorks {
        /// Why bubblewrap does not work.
        bwrap: String,
        /// Why Landlock does not work.
        landlock: String,
    },
}

/// Finds `bwrap`, builds the sandbox for `config` and runs [`PROBE_SCRIPT`] in it in a
/// scratch workspace; the error is why it does not work.
async fn probe_bwrap(config: &SandboxConfig) -> Result<ActiveSandbox, String> {
    let program = config
        .bwrap_path
        .clone()
        .or_else(|| Bubblewrap::find("bwrap"))
        .ok_or("no `bwrap` executable found in PATH")?;
    let tmp_size = supports_size(&program).await.then_some(config.tmp_size);
    let mut sandbox = Bubblewrap::new(program, config.network, config.hide.clone(), tmp_size);
    match Bubblewrap::find("chrt") {
        Some(chrt) => sandbox = sandbox.with_idle_scheduling(chrt),
        None => tracing::warn!(
            "no `chrt` (util-linux) found: tool commands run at normal priority, so a fork \
             bomb can starve the server until its timeout"
        ),
    }
    let scratch = std::env::temp_dir().join(format!("agentd-probe-{}", uuid::Uuid::new_v4()));
    tokio::fs::DirBuilder::new()
        .mode(0o700)
        .create(&scratch)
        .await
        .map_err(|err| format!("creating {}: {err}", scratch.display()))?;
    let result = run_probe(&sandbox, "bwrap", PROBE_SCRIPT, scratch.clone()).await;
    if let Err(err) = tokio::fs::remove_dir_all(&scratch).await {
        tracing::warn!(dir = %scratch.display(), %err, "could not remove the sandbox probe's directory");
    }
    result?;
    tracing::info!(bwrap = %sandbox.program().display(), network = config.network, "bash runs in a bubblewrap sandbox");
    Ok(ActiveSandbox {
        mode: SandboxMode::Bwrap,
        sandbox: Arc::new(sandbox),
    })
}

/// Runs `script` through `sandbox` (whose program is called `name` in errors) in
/// `workspace`; it must print [`PROBE_OUTPUT`] and succeed.
async fn run_probe(
    sandbox: &dyn Sandbox,
    name: &str,
    script: &str,
    workspace: PathBuf,
) -> Result<(), String> {
    let spec = sandbox
        .wrap(CommandSpec::bash(script, workspace))
        .map_err(|err| err.to_string())?;
    let limits = Limits {
        timeout: PROBE_TIMEOUT,
        output_cap: 4096,
        rlimits: ResourceLimits::default(),
    };
    let cap = ProcessCap::rlimit();
    let finished = process::run(&spec, limits, &cap, &CancellationToken::new(), None)
        .await
        .map_err(|err| format!("could not start {name}: {err}"))?;
    let output = finished.output.text;
    match finished.ending {
        Ending::Exited(status) if status.success() && output == PROBE_OUTPUT => Ok(()),
        Ending::Exited(status) if output.trim().is_empty() => Err(format!(
            "a trivial command failed ({status}) without output"
        )),
        Ending::Exited(status) => Err(format!(
            "a trivial command failed ({status}): {}",
            output.trim()
        )),
        Ending::TimedOut | Ending::Cancelled => Err(format!(
            "a trivial command did not finish within {} s",
            PROBE_TIMEOUT.as_secs()
        )),
    }
}

/// Whether `bwrap --help` lists `--size` (bubblewrap 0.8 and later).
async fn supports_size(program: &std::path::Path) -> bool {
    let help = tokio::process::Command::new(program)
        .arg("--help")
        .env_clear()
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(PROBE_TIMEOUT, help).await {
        Ok(Ok(output)) => String::from_utf8_lossy(&output.stdout).contains("--size"),
        _ => false,
    }
}
