//! agentd's tools: what the model may call, run in the session's workspace.
//!
//! Owns the [`Tool`] trait, the [`Toolbox`] of named tools, the per-session [`Workspaces`],
//! the tools themselves (`bash` and the file tools), confinement of file paths to the
//! workspace ([`WorkspaceDir`]), of processes to an OS sandbox ([`SandboxMode::probe`]) and
//! of their number to a pids cgroup per call ([`ProcessCap::probe`]). A tool never fails the
//! turn: every failure is a [`ToolOutput`] with `is_error: true` that the model reads. It
//! must not touch the event log or providers.
//!
//! At startup the binary calls [`confined_toolbox`] (or [`SandboxMode::probe`] and
//! [`ProcessCap::probe`], then [`toolbox`]) and refuses to start on its error.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

mod args;
mod bash;
mod command;
mod confine;
mod files;
mod launch;
mod limits;
mod output;
mod pids;
mod process;
mod sandbox;
mod spawner;
mod spill;
mod workspace;

pub use bash::{BashConfig, BashTool};
pub use command::{CommandSpec, NoSandbox, SAFE_PATH, Sandbox};
pub use confine::{PathError, WorkspaceDir};
pub use files::{EditFileTool, GlobTool, GrepTool, ListDirTool, ReadFileTool, WriteFileTool};
pub use limits::ResourceLimits;
pub use pids::{ProcessCap, ProcessCapMode};
pub use process::EXIT_GRACE;
pub use sandbox::{
    ActiveSandbox, Bubblewrap, Landlock, PRIVATE_TMP, SANDBOX_EXEC, SandboxConfig, SandboxError,
    SandboxMode, SandboxRequest, sandbox_exec_main,
};
pub use spill::OUTPUT_DIR;
pub use workspace::Workspaces;

/// Every tool: `bash` with `config`, every command wrapped by `sandbox` and its processes
/// capped through `cap`, and the file tools `read_file`, `write_file`, `edit_file`,
/// `list_dir`, `glob` and `grep`.
pub fn toolbox(config: BashConfig, sandbox: Arc<dyn Sandbox>, cap: ProcessCap) -> Toolbox {
    Toolbox::new(vec![
        Arc::new(BashTool::with_sandbox(config, sandbox).with_process_cap(cap)),
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(EditFileTool),
        Arc::new(ListDirTool),
        Arc::new(GlobTool),
        Arc::new(GrepTool),
    ])
}

/// Every tool and what confines it, as [`confined_toolbox`] set it up.
#[derive(Clone)]
pub struct ConfinedToolbox {
    /// Every tool ([`toolbox`]).
    pub toolbox: Toolbox,
    /// The sandbox in force (`/healthz`: [`SandboxMode::as_str`]).
    pub sandbox: SandboxMode,
    /// How each call's processes are capped (`/healthz`: `cap.mode().as_str()`). Its cgroup
    /// lives as long as this and the toolbox.
    pub cap: ProcessCap,
}

/// What the server calls at startup: probes the sandbox `sandbox` asks for
/// ([`SandboxMode::probe`]) and the process cap ([`ProcessCap::probe`]) and returns every
/// tool ([`toolbox`]) confined by both, with the modes in force (for `/healthz`). With a
/// pids cgroup, tool processes are then started ahead of their calls by the sandbox's helper
/// executable ([`ProcessCap::enable_launchers`], checked in the background). Errors:
/// no acceptable sandbox works here; the server must then refuse to start (the message
/// tells the operator what to do). A missing pids cgroup is no error: the cap falls back
/// to `RLIMIT_NPROC` and says so in the log.
pub async fn confined_toolbox(
    config: BashConfig,
    sandbox: &SandboxConfig,
) -> Result<ConfinedToolbox, SandboxError> {
    let active = SandboxMode::probe(sandbox).await?;
    let cap = ProcessCap::probe().await;
    let helper = sandbox
        .landlock_helper
        .clone()
        .or_else(|| std::env::current_exe().ok());
    if let Some(helper) = helper {
        // In the background: proving a launcher waits for the kernel to move it into a
        // cgroup, which takes long on a busy machine; calls start their own process until
        // then.
        let cap = cap.clone();
        tokio::spawn(async move {
            match cap.enable_launchers(helper).await {
                Ok(()) => tracing::info!(
                    "tool processes are started ahead of their calls, already in their call's pids cgroup"
                ),
                Err(reason) => tracing::info!(%reason, "tool processes are started at their call"),
            }
        });
    }
    Ok(ConfinedToolbox {
        toolbox: toolbox(config, active.sandbox, cap.clone()),
        sandbox: active.mode,
        cap,
    })
}

/// [`confined_toolbox`] without the process cap's mode: the tools and the sandbox mode.
/// Kept for callers that do not report the cap yet.
pub async fn sandboxed_toolbox(
    config: BashConfig,
    sandbox: &SandboxConfig,
) -> Result<(Toolbox, SandboxMode), SandboxError> {
    let confined = confined_toolbox(config, sandbox).await?;
    Ok((confined.toolbox, confined.sandbox))
}

/// Every tool ([`toolbox`]) with `bash` UNCONFINED ([`NoSandbox`]) and its processes
/// capped by `RLIMIT_NPROC` only ([`ProcessCap::rlimit`]): for tests, and for callers that
/// decided on no sandbox themselves. A server should use [`confined_toolbox`].
pub fn default_toolbox(config: BashConfig) -> Toolbox {
    toolbox(config, Arc::new(NoSandbox), ProcessCap::rlimit())
}

/// Where and under what conditions one tool call runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's workspace directory (exists); the tool's cwd and its boundary.
    pub workspace: PathBuf,
    /// The tool call's id.
    pub call_id: String,
    /// Cancelled when the turn is cancelled or the server shuts down: the tool must stop
    /// promptly and kill whatever it started.
    pub cancel: CancellationToken,
}

/// What a tool call produced, as the model will read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The result text (valid UTF-8, capped).
    pub text: String,
    /// Whether the call failed.
    pub is_error: bool,
    /// The exit code of the process the tool ran, if any.
    pub exit_code: Option<i32>,
    /// Whether `text` was cut to the output cap.
    pub truncated: bool,
}

impl ToolOutput {
    /// A failed call whose `text` tells the model what went wrong.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            is_error: true,
            exit_code: None,
            truncated: false,
        }
    }
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The tools-menu entry: name, description for the model, JSON Schema of the arguments.
    fn spec(&self) -> ToolSpec;

    /// Runs one call with already-parsed JSON `arguments`. Never panics; failures are
    /// returned as [`ToolOutput::error`].
    async fn call(&self, ctx: &ToolContext, arguments: serde_json::Value) -> ToolOutput;
}

/// The tools a server offers, by name.
#[derive(Clone, Default)]
pub struct Toolbox {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl Toolbox {
    /// A toolbox of `tools`, keyed by their spec's name (a later duplicate replaces).
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let tools = tools
            .into_iter()
            .map(|tool| (tool.spec().name, tool))
            .collect();
        Self { tools }
    }

    /// The tool called `name`, if offered.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> Vec<String> {
        self.tools.keys().cloned().collect()
    }

    /// The menu for a session: all tools when `enabled` is `None`, else those named in it
    /// (unknown names are skipped), in name order.
    pub fn specs(&self, enabled: Option<&[String]>) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(name, _)| enabled.is_none_or(|list| list.iter().any(|n| n == *name)))
            .map(|(_, tool)| tool.spec())
            .collect()
    }
}
