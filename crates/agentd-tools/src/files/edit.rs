//! `edit_file`: replaces an exact piece of text in a file.

use std::io::{Read, Write};

use agentd_events::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Reply, blocking, count, looks_binary};
use crate::args;
use crate::confine::WorkspaceDir;
use crate::{Tool, ToolContext, ToolOutput};

/// The largest file edited in place, in bytes: 16 MiB. Larger ones: use bash.
const MAX_EDIT_BYTES: u64 = 16 << 20;

/// Line numbers listed after an edit at most.
const MAX_LINES_LISTED: usize = 10;

const EXAMPLE: &str =
    r#"{"path": "src/main.rs", "old_string": "let x = 1;", "new_string": "let x = 2;"}"#;

/// Replaces an exact string in a file of the workspace: once, or everywhere when asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct EditFileTool;

#[async_trait]
impl Tool for EditFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".to_owned(),
            description: "Edits a text file in the workspace by replacing `old_string` with \
                          `new_string`. `old_string` must match the file exactly, whitespace and \
                          indentation included (copy it from read_file output without the line \
                          numbers), and must occur exactly once unless `replace_all` is true, in \
                          which case every occurrence is replaced. If it occurs several times, \
                          include more surrounding lines to make it unique. To create a file or \
                          rewrite it whole, use write_file."
                .to_owned(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, relative to the workspace."},
                    "old_string": {"type": "string", "description": "The exact text to replace; not empty."},
                    "new_string": {"type": "string", "description": "The text to put in its place (may be empty to delete)."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of requiring exactly one. Default false."},
                },
                "required": ["path", "old_string", "new_string"],
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        blocking(ctx, move |workspace| edit(workspace, &arguments)).await
    }
}

fn edit(workspace: &WorkspaceDir, arguments: &Value) -> Result<Reply, String> {
    let args = args::object(arguments, EXAMPLE)?;
    let path = args::required_str(args, "path", "the file to edit", EXAMPLE)?;
    let old = args::required_str(args, "old_string", "the exact text to replace", EXAMPLE)?;
    let new = args::required_str(args, "new_string", "the replacement text", EXAMPLE)?;
    let replace_all = args::flag(args, "replace_all")?;
    if old.is_empty() {
        return Err(
            "`old_string` is empty: give the exact text to replace (to create a file, use \
             write_file)"
                .to_owned(),
        );
    }
    if old == new {
        return Err("`old_string` and `new_string` are the same: nothing would change".to_owned());
    }
    let content = read_text(workspace, path)?;
    let starts: Vec<usize> = content.match_indices(old).map(|(at, _)| at).collect();
    match (starts.len(), replace_all) {
        (0, _) => {
            return Err(format!(
                "`old_string` was not found in `{path}`. It must match the file exactly, \
                 including whitespace, indentation and line breaks: read_file the part you \
                 want to change and copy it without the line numbers"
            ));
        }
        (1, _) | (_, true) => {}
        (times, false) => {
            return Err(format!(
                "`old_string` occurs {times} times in `{path}` (lines {}); include more \
                 surrounding lines to make it unique, or set `replace_all: true` to replace \
                 every occurrence",
                lines_of(&content, &starts)
            ));
        }
    }
    let edited = content.replace(old, new);
    let (mut file, _created) = workspace.create_file(path).map_err(|err| err.to_string())?;
    file.write_all(edited.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|err| format!("`{path}` could not be written: {err}"))?;
    let occurrences = count(starts.len(), "occurrence");
    let at = if starts.len() == 1 { "line" } else { "lines" };
    let lines = lines_of(&content, &starts);
    Ok(Reply::whole(format!(
        "Replaced {occurrences} in `{path}` ({at} {lines})."
    )))
}

/// The file's text. Errors: missing, outside, too large, binary or not UTF-8.
fn read_text(workspace: &WorkspaceDir, path: &str) -> Result<String, String> {
    let file = workspace.open_file(path).map_err(|err| err.to_string())?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_EDIT_BYTES {
        return Err(format!(
            "`{path}` is {size} bytes, more than edit_file handles ({MAX_EDIT_BYTES}); use bash \
             (e.g. sed) instead"
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("`{path}` could not be read: {err}"))?;
    if looks_binary(&bytes) {
        return Err(format!(
            "`{path}` is a binary file; edit_file only changes text"
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        format!("`{path}` is not valid UTF-8 text; edit it with bash (e.g. sed) instead")
    })
}

/// The 1-based line numbers where `starts` (byte offsets into `text`) lie, comma-separated,
/// the first [`MAX_LINES_LISTED`] of them.
fn lines_of(text: &str, starts: &[usize]) -> String {
    let mut lines = Vec::new();
    let mut line = 1;
    let mut scanned = 0;
    for &start in starts.iter().take(MAX_LINES_LISTED) {
        line += text[scanned..start].bytes().filter(|&b| b == b'\n').count();
        scanned = start;
        lines.push(line.to_string());
    }
    if starts.len() > MAX_LINES_LISTED {
        lines.push("…".to_owned());
    }
    lines.join(", ")
}
