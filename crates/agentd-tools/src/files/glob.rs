//! `glob`: paths in the workspace matching a glob pattern, `.gitignore` respected.

use std::fmt::Write as _;
use std::path::Path;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use globset::GlobBuilder;
use serde_json::{Value, json};

use super::{MAX_VISITED, Reply, blocking, display, walk};
use crate::args;
use crate::confine::WorkspaceDir;
use crate::{Tool, ToolContext, ToolOutput};

/// Paths returned at most: 1000.
const MAX_MATCHES: usize = 1000;

const EXAMPLE: &str = r#"{"pattern": "**/*.rs"}"#;

/// Finds files and directories by glob pattern.
#[derive(Debug, Clone, Copy, Default)]
pub struct GlobTool;

#[async_trait]
impl Tool for GlobTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "glob".to_owned(),
            description: format!(
                "Finds paths in the workspace matching a glob pattern, e.g. `**/*.rs`, \
                 `src/**/test_*.py` or `*.{{json,yaml}}`. The pattern is matched against paths \
                 relative to `path` (default: the workspace); `*` does not cross `/`, `**` \
                 matches any number of directories. Files and directories ignored by \
                 .gitignore or .ignore are skipped, and so are .git and .agentd. Returns \
                 matching paths relative to the workspace, sorted, one a line, directories \
                 ending with `/`; at most {MAX_MATCHES}."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The glob pattern, e.g. `**/*.ts`."},
                    "path": {"type": "string", "description": "The directory to search in, relative to the workspace. Default: the workspace itself."},
                },
                "required": ["pattern"],
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        blocking(ctx, move |workspace| glob(workspace, &arguments)).await
    }
}

fn glob(workspace: &WorkspaceDir, arguments: &Value) -> Result<Reply, String> {
    let args = args::object(arguments, EXAMPLE)?;
    let pattern = args::required_str(args, "pattern", "the glob pattern to match", EXAMPLE)?;
    let path = args::optional_str(args, "path", "the directory to search in")?.unwrap_or(".");
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|err| format!("invalid glob pattern `{pattern}`: {}", err.kind()))?
        .compile_matcher();
    let relative = workspace.relative(path).map_err(|err| err.to_string())?;
    workspace.open_dir(path).map_err(|err| err.to_string())?;
    let base = workspace.root().join(&relative);
    let mut matches = Vec::new();
    let mut visited = 0;
    let mut stopped = false;
    for entry in walk(&base).flatten() {
        if entry.depth() == 0 {
            continue;
        }
        visited += 1;
        if visited > MAX_VISITED {
            stopped = true;
            break;
        }
        let Ok(inside) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if !matcher.is_match(inside) {
            continue;
        }
        let mut shown = display(&relative, inside);
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            shown.push('/');
        }
        matches.push(shown);
    }
    if matches.is_empty() && !stopped {
        return Ok(Reply::whole(format!(
            "No paths match `{pattern}` in `{}`.",
            shown_dir(&relative)
        )));
    }
    matches.sort();
    let total = matches.len();
    let mut text = String::new();
    for line in matches.iter().take(MAX_MATCHES) {
        text.push_str(line);
        text.push('\n');
    }
    if total > MAX_MATCHES {
        let _ = write!(
            text,
            "[{} more matches not shown; use a narrower pattern or path]",
            total - MAX_MATCHES
        );
    }
    if stopped {
        let _ = write!(
            text,
            "[the search stopped after {MAX_VISITED} entries; use a narrower path]"
        );
    }
    Ok(Reply {
        text,
        truncated: total > MAX_MATCHES || stopped,
    })
}

/// The searched directory as shown to the model: `.` for the workspace.
pub(super) fn shown_dir(relative: &Path) -> String {
    relative.to_string_lossy().into_owned()
}
