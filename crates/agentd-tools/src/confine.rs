//! Paths from the model, resolved strictly beneath the session's workspace.
//!
//! Owns the one rule every file tool follows (DESIGN.md invariant 9): a path names
//! something inside the workspace, or nothing. Every open goes through [`WorkspaceDir`],
//! which resolves it with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` relative to a
//! descriptor of the workspace (via `cap-std`, which falls back to a component-by-component
//! `O_NOFOLLOW` walk on kernels without `openat2`). So `..`, absolute paths and symlinks that
//! lead outside are refused by the kernel at the moment of the open, also for files about
//! to be created, and a symlink swapped in between a check and a use cannot win a race.
//! The lexical checks here only exist to give the model a clearer message first.

use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

/// A path the model gave could not be used; the message says why and what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path leads outside the workspace (`..`, an absolute path elsewhere, a symlink).
    #[error(
        "`{path}` is outside the workspace ({why}); only files inside it can be used: give a \
         path relative to the workspace, like `src/main.rs`"
    )]
    Outside {
        /// The path as given.
        path: String,
        /// How it leads outside.
        why: &'static str,
    },
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A file was expected, the path is a directory.
    #[error("`{path}` is a directory, not a file")]
    IsADirectory {
        /// The path as given.
        path: String,
    },
    /// A directory was expected, the path (or a parent of it) is something else.
    #[error("`{path}` is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// Any other failure of the system call, e.g. permission denied.
    #[error("`{path}`: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// What the kernel said.
        source: io::Error,
    },
}

/// An open handle on a session's workspace; every path is resolved beneath it.
#[derive(Debug)]
pub struct WorkspaceDir {
    /// The workspace as the server names it (`ToolContext::workspace`).
    root: PathBuf,
    /// The same directory with symlinks resolved, so an absolute path the model copied from
    /// `pwd` is recognised either way.
    real_root: PathBuf,
    dir: Dir,
}

impl WorkspaceDir {
    /// Opens the workspace directory `root` (a path the server chose, trusted as is).
    /// Errors: `root` does not exist or is not a directory.
    pub fn open(root: &Path) -> io::Result<Self> {
        let dir = Dir::open_ambient_dir(root, ambient_authority())?;
        let real_root = root.canonicalize()?;
        Ok(Self {
            root: root.to_path_buf(),
            real_root,
            dir,
        })
    }

    /// The workspace path this handle was opened with.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The capability handle on the workspace, for opens not covered by the helpers here.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// `path` as a path relative to the workspace: an absolute path inside the workspace
    /// loses its prefix, "" becomes ".". Refuses, lexically, absolute paths elsewhere and
    /// `..` that climbs above the workspace; symlinks are checked when the path is opened.
    pub fn relative(&self, path: &str) -> Result<PathBuf, PathError> {
        let given = Path::new(path);
        let relative = if given.is_absolute() {
            let inside = given
                .strip_prefix(&self.root)
                .or_else(|_| given.strip_prefix(&self.real_root));
            match inside {
                Ok(rest) => rest.to_path_buf(),
                Err(_) => return Err(outside(path, "an absolute path outside the workspace")),
            }
        } else {
            given.to_path_buf()
        };
        let mut depth: usize = 0;
        for component in relative.components() {
            match component {
                Component::Normal(_) => depth += 1,
                Component::CurDir => {}
                Component::ParentDir => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| outside(path, "`..` climbs above the workspace"))?;
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(outside(path, "an absolute path outside the workspace"));
                }
            }
        }
        if relative.as_os_str().is_empty() {
            return Ok(PathBuf::from("."));
        }
        Ok(relative)
    }

    /// Opens the existing file at `path` for reading. Errors: see [`PathError`].
    pub fn open_file(&self, path: &str) -> Result<std::fs::File, PathError> {
        let relative = self.relative(path)?;
        let file = self
            .dir
            .open(&relative)
            .map_err(|err| classify(path, err))?;
        let file = file.into_std();
        let is_dir = file.metadata().map_err(|err| classify(path, err))?.is_dir();
        if is_dir {
            return Err(PathError::IsADirectory {
                path: path.to_owned(),
            });
        }
        Ok(file)
    }

    /// Opens the existing directory at `path`. Errors: see [`PathError`].
    pub fn open_dir(&self, path: &str) -> Result<Dir, PathError> {
        let relative = self.relative(path)?;
        self.dir
            .open_dir(&relative)
            .map_err(|err| classify(path, err))
    }

    /// Opens the file at `path` for writing, truncating it, creating it and its missing
    /// parent directories first; returns whether it was created. Errors: see [`PathError`].
    pub fn create_file(&self, path: &str) -> Result<(std::fs::File, bool), PathError> {
        let relative = self.relative(path)?;
        if relative == Path::new(".") || path.ends_with('/') {
            return Err(PathError::IsADirectory {
                path: path.to_owned(),
            });
        }
        if let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty()) {
            self.dir
                .create_dir_all(parent)
                .map_err(|err| classify(path, err))?;
        }
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        match self.dir.open_with(&relative, &options) {
            Ok(file) => return Ok((file.into_std(), true)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(classify(path, err)),
        }
        let mut options = OpenOptions::new();
        options.write(true).truncate(true);
        let file = self
            .dir
            .open_with(&relative, &options)
            .map_err(|err| classify(path, err))?;
        Ok((file.into_std(), false))
    }
}

impl fmt::Display for WorkspaceDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root.display().fmt(f)
    }
}

fn outside(path: &str, why: &'static str) -> PathError {
    PathError::Outside {
        path: path.to_owned(),
        why,
    }
}

/// Turns an error of an open beneath the workspace into what the model should read.
pub(crate) fn classify(path: &str, err: io::Error) -> PathError {
    let path = path.to_owned();
    // cap-std reports an escape (the kernel's EXDEV from RESOLVE_BENEATH, or its own walk)
    // as PermissionDenied without an OS error code; a real EACCES carries one.
    if err.kind() == io::ErrorKind::PermissionDenied && err.raw_os_error().is_none() {
        return PathError::Outside {
            path,
            why: "it leads outside through a symlink or `..`",
        };
    }
    match err.raw_os_error() {
        Some(nix::libc::ENOENT) => PathError::NotFound { path },
        Some(nix::libc::EISDIR) => PathError::IsADirectory { path },
        Some(nix::libc::ENOTDIR) => PathError::NotADirectory { path },
        Some(nix::libc::EXDEV) => PathError::Outside {
            path,
            why: "it leads outside through a symlink or `..`",
        },
        _ => PathError::Io { path, source: err },
    }
}
