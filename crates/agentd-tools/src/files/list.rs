//! `list_dir`: the entries of one directory.

use std::fmt::Write as _;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Reply, blocking};
use crate::args;
use crate::confine::{WorkspaceDir, classify};
use crate::{Tool, ToolContext, ToolOutput};

/// Entries listed at most: 1000.
const MAX_ENTRIES: usize = 1000;

const EXAMPLE: &str = r#"{"path": "src"}"#;

/// Lists a directory of the workspace.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListDirTool;

#[async_trait]
impl Tool for ListDirTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_dir".to_owned(),
            description: format!(
                "Lists the entries of a directory in the workspace (not recursive), sorted by \
                 name, one a line: directories end with `/`, files show their size, symlinks \
                 show their target after `->`. Hidden and git-ignored entries are included. At \
                 most {MAX_ENTRIES} entries; for a recursive search use glob."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The directory, relative to the workspace. Default: the workspace itself."},
                },
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        blocking(ctx, move |workspace| list(workspace, &arguments)).await
    }
}

fn list(workspace: &WorkspaceDir, arguments: &Value) -> Result<Reply, String> {
    let args = args::object(arguments, EXAMPLE)?;
    let path = args::optional_str(args, "path", "the directory to list")?.unwrap_or(".");
    let dir = workspace.open_dir(path).map_err(|err| err.to_string())?;
    let entries = dir
        .entries()
        .map_err(|err| classify(path, err).to_string())?;
    let mut lines = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| classify(path, err).to_string())?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            lines.push(name);
            continue;
        };
        let line = if kind.is_dir() {
            format!("{name}/")
        } else if kind.is_symlink() {
            match dir.read_link_contents(&name) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => format!("{name} -> ?"),
            }
        } else if kind.is_file() {
            match entry.metadata() {
                Ok(meta) => format!("{name}  ({} bytes)", meta.len()),
                Err(_) => name,
            }
        } else {
            format!("{name}  (special file)")
        };
        lines.push(line);
    }
    if lines.is_empty() {
        return Ok(Reply::whole(format!("(`{path}` is empty)")));
    }
    lines.sort();
    let total = lines.len();
    let mut text = lines
        .iter()
        .take(MAX_ENTRIES)
        .fold(String::new(), |mut text, line| {
            text.push_str(line);
            text.push('\n');
            text
        });
    let truncated = total > MAX_ENTRIES;
    if truncated {
        let _ = write!(
            text,
            "[{} more entries not shown; use glob with a pattern to narrow]",
            total - MAX_ENTRIES
        );
    }
    Ok(Reply { text, truncated })
}
