//! The full output of a call, kept in the workspace once it outgrows what the model reads.
//!
//! Owns `.agentd/output/<call id>.log`: created (through [`WorkspaceDir`], so a symlinked
//! `.agentd` cannot redirect it outside) only when the output first exceeds the cap, then
//! fed every byte up to a limit. It never fails the call: a log that cannot be written is
//! described in the note the model reads instead.

use std::path::PathBuf;

use tokio::io::AsyncWriteExt;

use crate::confine::WorkspaceDir;

/// The workspace directory holding full outputs.
pub const OUTPUT_DIR: &str = ".agentd/output";

/// Where the full output of one call goes, and how far it got.
#[derive(Debug)]
pub(crate) struct Spill {
    workspace: PathBuf,
    /// Relative to the workspace, e.g. `.agentd/output/call_1.log`.
    path: String,
    /// Bytes written at most; the rest is dropped.
    limit: u64,
    state: State,
}

#[derive(Debug)]
enum State {
    /// Nothing written yet; the file does not exist.
    Waiting,
    /// The file is open with `written` bytes (all there were).
    Writing { file: tokio::fs::File, written: u64 },
    /// The limit was reached; later bytes were dropped.
    Full { file: tokio::fs::File },
    /// Opening or writing failed with this message; nothing more is written.
    Failed(String),
}

impl Spill {
    /// The log of call `call_id` in `workspace`, at most `limit` bytes. Characters of the
    /// id other than ASCII letters, digits, `-` and `_` become `_`, so it stays one file name.
    pub(crate) fn new(workspace: PathBuf, call_id: &str, limit: u64) -> Self {
        let mut name: String = call_id
            .chars()
            .take(128)
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if name.is_empty() {
            name.push_str("call");
        }
        Self {
            workspace,
            path: format!("{OUTPUT_DIR}/{name}.log"),
            limit,
            state: State::Waiting,
        }
    }

    /// Appends `parts` in order, creating the file first if needed.
    pub(crate) async fn write(&mut self, parts: &[&[u8]]) {
        if matches!(self.state, State::Waiting) {
            self.state = self.open().await;
        }
        for part in parts {
            let State::Writing { file, written } = &mut self.state else {
                return;
            };
            let room = usize::try_from(self.limit - *written).unwrap_or(usize::MAX);
            let take = room.min(part.len());
            if let Err(err) = file.write_all(&part[..take]).await {
                self.state = State::Failed(err.to_string());
                return;
            }
            *written += take as u64;
            if take < part.len() {
                let State::Writing { file, .. } =
                    std::mem::replace(&mut self.state, State::Waiting)
                else {
                    return;
                };
                self.state = State::Full { file };
            }
        }
    }

    /// Flushes the file; returns, for the note the model reads, where the full output is
    /// (`None` if nothing was ever written).
    pub(crate) async fn finish(self) -> Option<String> {
        let path = &self.path;
        match self.state {
            State::Waiting => None,
            State::Writing { mut file, .. } => Some(match file.flush().await {
                Ok(()) => format!("the full output is in {path}"),
                Err(err) => format!("the full output could not be saved: {err}"),
            }),
            State::Full { mut file } => Some(match file.flush().await {
                Ok(()) => format!("the first {} bytes are in {path}", self.limit),
                Err(err) => format!("the full output could not be saved: {err}"),
            }),
            State::Failed(err) => Some(format!("the full output could not be saved: {err}")),
        }
    }

    /// Creates (or truncates) the log file beneath the workspace.
    async fn open(&self) -> State {
        let workspace = self.workspace.clone();
        let path = self.path.clone();
        let opened = tokio::task::spawn_blocking(move || {
            let dir = WorkspaceDir::open(&workspace).map_err(|err| err.to_string())?;
            dir.create_file(&path)
                .map(|(file, _created)| file)
                .map_err(|err| err.to_string())
        })
        .await;
        match opened {
            Ok(Ok(file)) => State::Writing {
                file: tokio::fs::File::from_std(file),
                written: 0,
            },
            Ok(Err(err)) => State::Failed(err),
            Err(err) => State::Failed(err.to_string()),
        }
    }
}
