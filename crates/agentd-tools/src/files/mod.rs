//! The file tools: `read_file`, `write_file`, `edit_file`, `list_dir`, `glob` and `grep`.
//!
//! Owns what they share: running their blocking file IO off the async runtime, the binary
//! check, bounded line reading, and the directory walk (`ignore`, so `.gitignore` is
//! respected). Every path goes through [`WorkspaceDir`], never through `std::fs` on a path
//! built from the model's input. They start no processes.

mod edit;
mod glob;
mod grep;
mod list;
mod read;
mod write;

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use ignore::WalkBuilder;

pub use edit::EditFileTool;
pub use glob::GlobTool;
pub use grep::GrepTool;
pub use list::ListDirTool;
pub use read::ReadFileTool;
pub use write::WriteFileTool;

use crate::confine::WorkspaceDir;
use crate::{ToolContext, ToolOutput};

/// Bytes looked at for a NUL byte to call a file binary (as git does): 8 KiB.
const BINARY_SNIFF: usize = 8 * 1024;

/// Directories the walk of `glob` and `grep` never enters: version control internals and
/// agentd's own files (full outputs of earlier calls).
const SKIPPED_DIRS: [&str; 2] = [".git", ".agentd"];

/// Entries a walk visits at most before it stops and says so.
const MAX_VISITED: usize = 100_000;

/// A successful result: the text and whether it was cut.
#[derive(Debug)]
struct Reply {
    text: String,
    truncated: bool,
}

impl Reply {
    fn whole(text: String) -> Self {
        Self {
            text,
            truncated: false,
        }
    }
}

/// Runs `work` (blocking file IO) on tokio's blocking pool with the workspace opened; its
/// error string becomes an error result the model reads.
async fn blocking<F>(ctx: &ToolContext, work: F) -> ToolOutput
where
    F: FnOnce(&WorkspaceDir) -> Result<Reply, String> + Send + 'static,
{
    if ctx.cancel.is_cancelled() {
        return ToolOutput::error("[cancelled before the tool started]");
    }
    let root = ctx.workspace.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let workspace = WorkspaceDir::open(&root)
            .map_err(|err| format!("the workspace cannot be opened: {err}"))?;
        work(&workspace)
    })
    .await;
    match joined {
        Ok(Ok(reply)) => ToolOutput {
            text: reply.text,
            is_error: false,
            exit_code: None,
            truncated: reply.truncated,
        },
        Ok(Err(message)) => ToolOutput::error(message),
        Err(err) => ToolOutput::error(format!("the tool failed: {err}")),
    }
}

/// Whether `start` (the beginning of a file) looks binary: it holds a NUL byte.
fn looks_binary(start: &[u8]) -> bool {
    start[..start.len().min(BINARY_SNIFF)].contains(&0)
}

/// Reads one line (without its `\n` or `\r\n`) into `line`, keeping at most `max` bytes of
/// it and skipping the rest. `Ok(None)` at end of file, else `Ok(Some(cut))` with `cut`
/// telling whether bytes were skipped. Memory stays within `max` whatever the line length.
fn read_line(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    line.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (part, consumed, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => (&chunk[..at], at + 1, true),
            None => (chunk, chunk.len(), false),
        };
        let room = max.saturating_sub(line.len());
        line.extend_from_slice(&part[..part.len().min(room)]);
        cut |= part.len() > room;
        reader.consume(consumed);
        if done {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(cut))
}

/// `relative` (from [`WorkspaceDir::relative`]) joined with `rest`, as shown to the model:
/// no leading `./`.
fn display(relative: &Path, rest: &Path) -> String {
    let joined: PathBuf = if relative == Path::new(".") {
        rest.to_path_buf()
    } else {
        relative.join(rest)
    };
    joined.to_string_lossy().into_owned()
}

/// A walk of `base` (an absolute path already checked to be a directory beneath the
/// workspace) that respects `.gitignore` and `.ignore` files inside the workspace (not
/// above it, not the user's global ones), includes hidden files, skips [`SKIPPED_DIRS`],
/// never follows symlinks, and is sorted by file name.
fn walk(base: &Path) -> ignore::Walk {
    WalkBuilder::new(base)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let name = entry.file_name().to_string_lossy();
            !(entry.depth() > 0 && is_dir && SKIPPED_DIRS.contains(&name.as_ref()))
        })
        .build()
}

/// "1 line", "3 lines": `count` and `noun`, plural unless one.
fn count(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}
