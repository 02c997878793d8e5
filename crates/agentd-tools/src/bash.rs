//! The `bash` tool: runs the model's command with `bash -c` in the session's workspace.
//!
//! Owns the tool's menu entry, checking the arguments and writing a run's ending for the
//! model. Starting, limiting and killing the process belongs to [`crate::process`];
//! confining it to the [`Sandbox`]; capping its processes to the [`ProcessCap`].

use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::Duration;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use nix::sys::signal::Signal;
use serde_json::{Value, json};

use crate::args::kind;
use crate::command::{CommandSpec, NoSandbox, Sandbox};
use crate::limits::ResourceLimits;
use crate::output::Captured;
use crate::pids::ProcessCap;
use crate::process::{self, Ending, Finished, Limits};
use crate::spill::{OUTPUT_DIR, Spill};
use crate::{Tool, ToolContext, ToolOutput};

/// Limits of the `bash` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BashConfig {
    /// The default and maximum wall time of one call; the model may ask for less with
    /// `timeout_secs`. Default 120 s.
    pub timeout: Duration,
    /// Bytes of output kept per call: the first half and the last half; what lies between
    /// is replaced by a note. Default 32 KiB (32768 bytes).
    pub output_cap: usize,
    /// Bytes of a call's output kept in `.agentd/output/<call id>.log` in the workspace
    /// once the output exceeds `output_cap` (the note then names the file). Default 64 MiB.
    pub full_output_limit: u64,
    /// The rlimits of the command and everything it starts, and the cap on its processes
    /// ([`ResourceLimits::processes`]).
    pub limits: ResourceLimits,
}

impl Default for BashConfig {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            output_cap: 32 * 1024,
            full_output_limit: 64 << 20,
            limits: ResourceLimits::default(),
        }
    }
}

/// Runs a command with `bash -c` in the session's workspace: no stdin, a scrubbed
/// environment, output capped, a timeout, and nothing left running afterwards.
#[derive(Debug, Clone)]
pub struct BashTool {
    config: BashConfig,
    sandbox: Arc<dyn Sandbox>,
    cap: ProcessCap,
}

impl BashTool {
    /// The tool with `config`, unconfined beyond the process limits ([`NoSandbox`]) and
    /// with the number of processes capped by `RLIMIT_NPROC` only
    /// ([`ProcessCap::rlimit`]).
    pub fn new(config: BashConfig) -> Self {
        Self::with_sandbox(config, Arc::new(NoSandbox))
    }

    /// The tool with `config`, every command wrapped by `sandbox` before it starts; its
    /// processes capped by `RLIMIT_NPROC` only until [`BashTool::with_process_cap`].
    pub fn with_sandbox(config: BashConfig, sandbox: Arc<dyn Sandbox>) -> Self {
        Self {
            config,
            sandbox,
            cap: ProcessCap::rlimit(),
        }
    }

    /// The same tool with each call's processes capped through `cap` (from
    /// [`ProcessCap::probe`]): a pids cgroup per call where there is one.
    pub fn with_process_cap(mut self, cap: ProcessCap) -> Self {
        self.cap = cap;
        self
    }

    /// The whole seconds shown to the model as default and maximum `timeout_secs`.
    fn max_timeout_secs(&self) -> u64 {
        self.config.timeout.as_secs().max(1)
    }
}

#[async_trait]
impl Tool for BashTool {
    fn spec(&self) -> ToolSpec {
        let max = self.max_timeout_secs();
        let cap = self.config.output_cap;
        let mut description = format!(
            "Runs a command with `bash -c` in this session's workspace directory (the working \
             directory and $HOME; files there persist between calls). Non-interactive: stdin \
             is empty, so anything waiting for input gets end-of-file; use flags such as `-y` \
             or `--no-pager`. stdout and stderr are merged in the order written. Output \
             beyond {cap} bytes is cut: its start and end are kept with a note in between \
             naming a file under {OUTPUT_DIR}/ that holds all of it, so narrow long output \
             with grep, head or tail. The command is killed after `timeout_secs` (default and \
             maximum {max} s). The environment holds only PATH, HOME, LANG and TERM. Nothing \
             keeps running after the call: background processes are killed when the command \
             exits. A non-zero exit is reported as `[exit code N]` at the end."
        );
        if let Some(processes) = self.config.limits.processes {
            description.push_str(&format!(
                " At most {processes} processes and threads run at once; starting more fails \
                 with \"Resource temporarily unavailable\"."
            ));
        }
        if let Some(limits) = self.sandbox.describe() {
            description.push(' ');
            description.push_str(&limits);
        }
        ToolSpec {
            name: "bash".to_owned(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The bash command to run, e.g. `ls -la` or `make test 2>&1 | tail -n 40`.",
                    },
                    "timeout_secs": {
                        "type": "integer",
                        "description": format!("Seconds before the command is killed, 1 to {max}; default {max}."),
                        "minimum": 1,
                        "maximum": max,
                    },
                },
                "required": ["command"],
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        let args = match Args::parse(&arguments, self.max_timeout_secs()) {
            Ok(args) => args,
            Err(message) => return ToolOutput::error(message),
        };
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error("[cancelled before the command started]");
        }
        let timeout = args.timeout_secs.map_or(self.config.timeout, |secs| {
            Duration::from_secs(secs.max(1)).min(self.config.timeout)
        });
        let spec = match self
            .sandbox
            .wrap(CommandSpec::bash(&args.command, ctx.workspace.clone()))
        {
            Ok(spec) => spec,
            Err(err) => return ToolOutput::error(format!("could not set up the sandbox: {err}")),
        };
        let limits = Limits {
            timeout,
            output_cap: self.config.output_cap,
            rlimits: self.config.limits,
        };
        let spill = Spill::new(
            ctx.workspace.clone(),
            &ctx.call_id,
            self.config.full_output_limit,
        );
        match process::run(&spec, limits, &self.cap, &ctx.cancel, Some(spill)).await {
            Ok(finished) => report(finished, timeout),
            Err(err) => ToolOutput::error(format!("could not run bash: {err}")),
        }
    }
}

/// The checked arguments of one call.
#[derive(Debug)]
struct Args {
    command: String,
    /// As asked for; 0 for a negative number. Clamped to 1..=timeout by the caller.
    timeout_secs: Option<u64>,
}

impl Args {
    /// Checks `arguments`; an error is a message telling the model how to call correctly.
    fn parse(arguments: &Value, max_secs: u64) -> Result<Self, String> {
        let Some(object) = arguments.as_object() else {
            return Err(format!(
                "arguments must be a JSON object like {{\"command\": \"ls -la\"}}, got {}",
                kind(arguments)
            ));
        };
        let command = match object.get("command") {
            None | Some(Value::Null) => {
                return Err(
                    "missing required argument `command`: the bash command to run, \
                            as in {\"command\": \"ls -la\"}"
                        .to_owned(),
                );
            }
            Some(Value::String(command)) => command.clone(),
            Some(other) => {
                return Err(format!(
                    "argument `command` must be a string with the bash command to run, got {}",
                    kind(other)
                ));
            }
        };
        if command.trim().is_empty() {
            return Err("argument `command` is empty: give the bash command to run".to_owned());
        }
        let timeout_secs = match object.get("timeout_secs") {
            None | Some(Value::Null) => None,
            Some(value) => match (value.as_u64(), value.as_i64()) {
                (Some(secs), _) => Some(secs),
                (None, Some(_negative)) => Some(0),
                (None, None) => {
                    return Err(format!(
                        "argument `timeout_secs` must be a whole number of seconds from 1 to \
                         {max_secs}, got {}",
                        kind(value)
                    ));
                }
            },
        };
        Ok(Self {
            command,
            timeout_secs,
        })
    }
}

/// The result the model reads: the output (or "(no output)"), then a note on a line of its
/// own unless the command exited 0.
fn report(finished: Finished, timeout: Duration) -> ToolOutput {
    let Captured { text, truncated } = finished.output;
    let (note, exit_code) = match finished.ending {
        Ending::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => (None, Some(0)),
            (Some(code), _) => (Some(format!("[exit code {code}]")), Some(code)),
            (None, Some(signal)) => {
                let name = Signal::try_from(signal).map_or("unknown signal", Signal::as_str);
                let code = 128 + signal;
                let note = format!("[killed by signal {signal} ({name}); exit code {code}]");
                (Some(note), Some(code))
            }
            (None, None) => (Some("[ended without an exit code]".to_owned()), None),
        },
        Ending::TimedOut => {
            let after = seconds_or_millis(timeout);
            (
                Some(format!("[command timed out after {after} and was killed]")),
                None,
            )
        }
        Ending::Cancelled => (Some("[cancelled; the command was killed]".to_owned()), None),
    };
    let mut text = if text.is_empty() {
        "(no output)".to_owned()
    } else {
        text
    };
    let is_error = note.is_some();
    if let Some(note) = note {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&note);
    }
    ToolOutput {
        text,
        is_error,
        exit_code,
        truncated,
    }
}

/// "120 s", or "250 ms" when not a whole number of seconds.
fn seconds_or_millis(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        format!("{} s", duration.as_secs())
    } else {
        format!("{} ms", duration.as_millis())
    }
}
