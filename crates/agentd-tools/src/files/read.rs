//! `read_file`: a text file's lines, numbered, a window at a time.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};

use agentd_events::ToolSpec;
use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Reply, blocking, looks_binary, read_line};
use crate::args;
use crate::confine::WorkspaceDir;
use crate::{Tool, ToolContext, ToolOutput};

/// Lines shown when the model gives no `limit`, and the most it may ask for: 2000.
const MAX_LINES: u64 = 2000;

/// Bytes of one line shown; the rest of a longer line is replaced by a note: 2000.
const MAX_LINE_BYTES: usize = 2000;

/// Bytes of numbered text returned at most; reading stops at the line that crosses it:
/// 64 KiB.
const MAX_OUTPUT: usize = 64 * 1024;

const EXAMPLE: &str = r#"{"path": "src/main.rs"}"#;

/// Reads a text file in the workspace, with line numbers.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadFileTool;

#[async_trait]
impl Tool for ReadFileTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".to_owned(),
            description: format!(
                "Reads a text file in the workspace and returns its lines, each prefixed with \
                 its line number and a tab (the number and tab are not part of the file). \
                 Shows up to {MAX_LINES} lines from `offset` (default line 1); use `offset` \
                 and `limit` to page through long files, as the note at the end says. Lines \
                 longer than {MAX_LINE_BYTES} bytes are cut. Binary files are refused. Paths \
                 are relative to the workspace; nothing outside it can be read."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, relative to the workspace, e.g. `src/main.rs`."},
                    "offset": {"type": "integer", "minimum": 1, "description": "The first line to show, counting from 1. Default 1."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LINES, "description": format!("How many lines to show, at most {MAX_LINES}. Default {MAX_LINES}.")},
                },
                "required": ["path"],
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        blocking(ctx, move |workspace| read(workspace, &arguments)).await
    }
}

fn read(workspace: &WorkspaceDir, arguments: &Value) -> Result<Reply, String> {
    let args = args::object(arguments, EXAMPLE)?;
    let path = args::required_str(args, "path", "the file to read", EXAMPLE)?;
    let offset = args::optional_u64(args, "offset", 1)?.unwrap_or(1);
    let limit = args::optional_u64(args, "limit", 1)?
        .unwrap_or(MAX_LINES)
        .min(MAX_LINES);
    let file = workspace.open_file(path).map_err(|err| err.to_string())?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let start = reader
        .fill_buf()
        .map_err(|err| format!("`{path}` could not be read: {err}"))?;
    if start.is_empty() {
        return Ok(Reply::whole(format!("(`{path}` is empty)")));
    }
    if looks_binary(start) {
        return Err(format!(
            "`{path}` is a binary file ({size} bytes); read_file only shows text. Inspect it \
             with bash instead, e.g. `file {path}` or `xxd {path} | head`"
        ));
    }
    let mut text = String::new();
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut last_shown: Option<u64> = None;
    let read_err = |err: std::io::Error| format!("`{path}` could not be read: {err}");
    while let Some(cut) = read_line(&mut reader, &mut line, MAX_LINE_BYTES).map_err(read_err)? {
        number += 1;
        if number < offset {
            continue;
        }
        if number >= offset.saturating_add(limit) || text.len() >= MAX_OUTPUT {
            let shown = last_shown.unwrap_or(offset);
            let why = if text.len() >= MAX_OUTPUT {
                format!("output is capped at {MAX_OUTPUT} bytes")
            } else {
                format!("showing {limit} lines")
            };
            let _ = write!(
                text,
                "[{why}; the file continues after line {shown}: read more with offset={}]",
                shown + 1
            );
            return Ok(Reply {
                text,
                truncated: true,
            });
        }
        let _ = write!(text, "{number:>6}\t{}", String::from_utf8_lossy(&line));
        if cut {
            let _ = write!(text, " [… line cut at {MAX_LINE_BYTES} bytes]");
        }
        text.push('\n');
        last_shown = Some(number);
    }
    if last_shown.is_none() {
        return Err(format!(
            "offset {offset} is past the end of `{path}`, which has {number} lines"
        ));
    }
    Ok(Reply::whole(text))
}
