//! Per-session workspace directories: `<root>/<session uuid>`.
//!
//! Owns where a session's files live and creating and deleting that directory. Paths are
//! built from a [`Uuid`] only, never from a string a client or model sent, so no request
//! can name a directory outside `root`. Confining what runs inside is not its job.

use std::io;
use std::path::{Path, PathBuf};

use uuid::Uuid;

/// The workspaces of all sessions, one directory each under `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspaces {
    root: PathBuf,
}

impl Workspaces {
    /// Workspaces under `root`; nothing is created until [`Workspaces::ensure`].
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// The directory all workspaces live in.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace of `session_id`: `<root>/<uuid, hyphenated lowercase>`. It may not
    /// exist yet.
    pub fn path(&self, session_id: Uuid) -> PathBuf {
        self.root.join(session_id.hyphenated().to_string())
    }

    /// The workspace of `session_id`, created first if missing, with mode 0700 (as are
    /// missing parents, `root` included). An existing directory is left as it is.
    pub async fn ensure(&self, session_id: Uuid) -> io::Result<PathBuf> {
        let path = self.path(session_id);
        tokio::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&path)
            .await?;
        Ok(path)
    }

    /// Deletes the workspace of `session_id` with everything in it; a missing one is fine.
    pub async fn remove(&self, session_id: Uuid) -> io::Result<()> {
        match tokio::fs::remove_dir_all(self.path(session_id)).await {
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}
