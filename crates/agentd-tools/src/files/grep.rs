//! `grep`: lines matching a regex in the workspace's files, `.gitignore` respected.

use std::fmt::Write as _;
use std::io::BufRead;
use std::io::BufReader;

use agentd_events::ToolSpec;
use async_trait::async_trait;
use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde_json::{Value, json};

use super::glob::shown_dir;
use super::{MAX_VISITED, Reply, blocking, display, looks_binary, read_line, walk};
use crate::args;
use crate::confine::{WorkspaceDir, classify};
use crate::{Tool, ToolContext, ToolOutput};

/// Matching lines returned at most: 200.
const MAX_MATCHES: usize = 200;

/// Bytes of output at most (the line that crosses it is the last): 32 KiB.
const MAX_OUTPUT: usize = 32 * 1024;

/// Bytes of a line searched and shown; longer lines are cut: 1000.
const MAX_LINE_BYTES: usize = 1000;

const EXAMPLE: &str = r#"{"pattern": "fn main", "glob": "*.rs"}"#;

/// Searches file contents with a regular expression.
#[derive(Debug, Clone, Copy, Default)]
pub struct GrepTool;

#[async_trait]
impl Tool for GrepTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".to_owned(),
            description: format!(
                "Searches the text files in the workspace for lines matching a regular \
                 expression (Rust regex syntax, like ripgrep: escape `( ) [ ] {{ }} . * + ? | \\` \
                 with a backslash to match them literally). Returns `path:line number:line` \
                 for each match, files in path order. Files and directories ignored by \
                 .gitignore or .ignore are skipped, and so are binary files, .git and .agentd. \
                 At most {MAX_MATCHES} matching lines; lines are cut at {MAX_LINE_BYTES} bytes."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "The regular expression, e.g. `fn \\w+_test` or `TODO|FIXME`."},
                    "path": {"type": "string", "description": "A file or directory to search, relative to the workspace. Default: the workspace itself."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs` (file name) or `src/**/*.ts` (path relative to `path`)."},
                    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
                },
                "required": ["pattern"],
            }),
        }
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> ToolOutput {
        blocking(ctx, move |workspace| grep(workspace, &arguments)).await
    }
}

/// What is searched for, and what was found so far.
struct Search {
    regex: Regex,
    text: String,
    matches: usize,
    full: bool,
    line: Vec<u8>,
}

fn grep(workspace: &WorkspaceDir, arguments: &Value) -> Result<Reply, String> {
    let args = args::object(arguments, EXAMPLE)?;
    let pattern = args::required_str(args, "pattern", "the regular expression", EXAMPLE)?;
    let path = args::optional_str(args, "path", "the file or directory to search")?;
    let path = path.unwrap_or(".");
    let glob = args::optional_str(args, "glob", "a glob the file names must match")?;
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(args::flag(args, "case_insensitive")?)
        .build()
        .map_err(|err| format!("invalid regular expression `{pattern}`: {err}"))?;
    let filter = glob.map(file_filter).transpose()?;
    let relative = workspace.relative(path).map_err(|err| err.to_string())?;
    let meta = workspace
        .dir()
        .metadata(&relative)
        .map_err(|err| classify(path, err).to_string())?;
    let mut search = Search {
        regex,
        text: String::new(),
        matches: 0,
        full: false,
        line: Vec::new(),
    };
    let mut stopped = false;
    if meta.is_dir() {
        let base = workspace.root().join(&relative);
        let mut visited = 0;
        for entry in walk(&base).flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                stopped = true;
                break;
            }
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(inside) = entry.path().strip_prefix(&base) else {
                continue;
            };
            if filter.as_ref().is_some_and(|f| !f.matches(inside)) {
                continue;
            }
            search.file(workspace, &display(&relative, inside));
            if search.full {
                break;
            }
        }
    } else {
        search.file(workspace, path);
    }
    if search.matches == 0 && !stopped {
        return Ok(Reply::whole(format!(
            "No matches for `{pattern}` in `{}`.",
            shown_dir(&relative)
        )));
    }
    let mut text = search.text;
    if search.full {
        let _ = write!(
            text,
            "[stopped after {} matching lines; narrow the pattern, path or glob]",
            search.matches
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
        truncated: search.full || stopped,
    })
}

impl Search {
    /// Adds the matching lines of the file at `path` (relative to the workspace); files
    /// that cannot be opened beneath the workspace or look binary are skipped.
    fn file(&mut self, workspace: &WorkspaceDir, path: &str) {
        let Ok(file) = workspace.open_file(path) else {
            return;
        };
        let mut reader = BufReader::with_capacity(64 * 1024, file);
        match reader.fill_buf() {
            Ok(start) if !looks_binary(start) => {}
            _ => return,
        }
        let mut number: u64 = 0;
        while let Ok(Some(_cut)) = read_line(&mut reader, &mut self.line, MAX_LINE_BYTES) {
            number += 1;
            let line = String::from_utf8_lossy(&self.line);
            if !self.regex.is_match(&line) {
                continue;
            }
            let _ = writeln!(self.text, "{path}:{number}:{line}");
            self.matches += 1;
            if self.matches >= MAX_MATCHES || self.text.len() >= MAX_OUTPUT {
                self.full = true;
                return;
            }
        }
    }
}

/// Which files a `glob` argument selects: by file name when it has no `/`, else by the
/// path relative to the searched directory.
struct FileFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl FileFilter {
    fn matches(&self, inside: &std::path::Path) -> bool {
        if self.by_name {
            inside
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(inside)
        }
    }
}

fn file_filter(glob: &str) -> Result<FileFilter, String> {
    let matcher = GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .map_err(|err| format!("invalid glob `{glob}`: {}", err.kind()))?
        .compile_matcher();
    Ok(FileFilter {
        matcher,
        by_name: !glob.contains('/'),
    })
}
