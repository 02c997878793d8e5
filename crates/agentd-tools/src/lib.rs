//! agentd's tools: what the model may call, run in the session's workspace.
//!
//! Owns the [`Tool`] trait, the [`Toolbox`] of named tools, the per-session [`Workspaces`],
//! the tools themselves (`bash` and the file tools), confinement of file paths to the
//! workspace ([`WorkspaceDir`]) and of processes to an OS sandbox ([`SandboxMode::probe`]).
//! A tool never fails the turn: every failure is a [`ToolOutput`] with `is_error: true`
//! that the model reads. It must not touch the event log or providers.
//!
//! At startup the binary calls [`sandboxed_toolbox`] (or [`SandboxMode::probe`] and then
//! [`toolbox`]) and refuses to start on its error.

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
mod limits;
mod output;
mod process;
mod sandbox;
mod spill;
mod workspace;

pub use bash::{BashConfig, BashTool};
pub use command::{CommandSpec, NoSandbox, SAFE_PATH, Sandbox};
pub use confine::{PathError, WorkspaceDir};
pub use files::{EditFileTool, GlobTool, GrepTool, ListDirTool, ReadFileTool, WriteFileTool};
pub use limits::ResourceLimits;
pub use process::EXIT_GRACE;
pub use sandbox::{
    ActiveSandbox, Bubblewrap, Landlock, PRIVATE_TMP, SANDBOX_EXEC, SandboxConfig, SandboxError,
    SandboxMode, SandboxRequest, sandbox_exec_main,
};
pub use spill::OUTPUT_DIR;
pub use workspace::Workspaces;

/// Every tool: `bash` with `config` and every command wrapped by `sandbox`, and the file
/// tools `read_file`, `write_file`, `edit_file`, `list_dir`, `glob` and `grep`.
pub fn toolbox(config: BashConfig, sandbox: Arc<dyn Sandbox>) -> Toolbox {
    Toolbox::new(vec![
        Arc::new(BashTool::with_sandbox(config, sandbox)),
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(EditFileTool),
        Arc::new(ListDirTool),
        Arc::new(GlobTool),
        Arc::new(GrepTool),
    ])
}

/// What the server calls at startup: probes the sandbox `sandbox` asks for
/// ([`SandboxMode::probe`]) and returns every tool ([`toolbox`]) confined by it, with the
/// mode in force (for `/healthz`). Errors: no acceptable sandbox works here; the server
/// must then refuse to start (the message tells the operator what to do).
pub async fn sandboxed_toolbox(
    config: BashConfig,
    sandbox: &SandboxConfig,
) -> Result<(Toolbox, SandboxMode), SandboxError> {
    let active = SandboxMode::probe(sandbox).await?;
    Ok((toolbox(config, active.sandbox), active.mode))
}

/// Every tool ([`toolbox`]) with `bash` UNCONFINED ([`NoSandbox`]): for tests, and for
/// callers that decided on no sandbox themselves. A server should use
/// [`sandboxed_toolbox`].
pub fn default_toolbox(config: BashConfig) -> Toolbox {
    toolbox(config, Arc::new(NoSandbox))
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
