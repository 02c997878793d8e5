//! agentd's tools: what the model may call, run in the session's workspace.
//!
//! Owns the [`Tool`] trait, the [`Toolbox`] of named tools, the per-session [`Workspaces`]
//! and the tools themselves. A tool never fails the turn: every failure is a [`ToolOutput`]
//! with `is_error: true` that the model reads. It must not touch the event log or providers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

mod bash;
mod command;
mod output;
mod process;
mod workspace;

pub use bash::{BashConfig, BashTool};
pub use command::{CommandSpec, NoSandbox, SAFE_PATH, Sandbox};
pub use process::EXIT_GRACE;
pub use workspace::Workspaces;

/// The tools the server offers by default: `bash` with `config`, unconfined
/// ([`NoSandbox`]).
pub fn default_toolbox(config: BashConfig) -> Toolbox {
    Toolbox::new(vec![Arc::new(BashTool::new(config))])
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
