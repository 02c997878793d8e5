//! `write_file`: creates or replaces a file with the given text.

use std::io::Write;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Reply, blocking, count};
use crate::args;
use crate::confine::WorkspaceDir;
use crate::{Tool, ToolContext, ToolOutput};

const EXAMPLE: &str = r#"{"path": "notes/todo.md", "content": "- write tests\n"}"#;

/// Writes a whole file in the workspace, creating missing parent directories.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteFileTool;

#[async_trait]
impl Tool for WriteFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".to_owned(),
            description: "Writes `content` to a file in the workspace, replacing the whole file \
                          if it exists and creating it (and any missing parent directories) if \
                          not. To change part of an existing file, prefer edit_file. Paths are \
                          relative to the workspace; nothing outside it can be written."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, relative to the workspace, e.g. `src/lib.rs`."},
                    "content": {"type": "string", "description": "The complete new content of the file."},
                },
                "required": ["path", "content"],
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        blocking(ctx, move |workspace| write(workspace, &arguments)).await
    }
}

fn write(workspace: &WorkspaceDir, arguments: &Value) -> Result<Reply, String> {
    let args = args::object(arguments, EXAMPLE)?;
    let path = args::required_str(args, "path", "the file to write", EXAMPLE)?;
    let content = args::required_str(args, "content", "the text to write", EXAMPLE)?;
    let (mut file, created) = workspace.create_file(path).map_err(|err| err.to_string())?;
    file.write_all(content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|err| format!("`{path}` could not be written: {err}"))?;
    let verb = if created { "Created" } else { "Replaced" };
    Ok(Reply::whole(format!(
        "{verb} `{path}` ({} bytes, {}).",
        content.len(),
        count(line_count(content), "line")
    )))
}

/// Lines of `text`, counting a last line without `\n`.
fn line_count(text: &str) -> usize {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}
