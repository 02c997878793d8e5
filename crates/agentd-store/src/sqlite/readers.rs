//! Read-only SQLite connections, used on tokio's blocking threads. Under WAL a reader sees
//! the last commit and never waits for the writer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// Idle connections kept for reuse; more are opened while many reads run at once.
const KEEP: usize = 4;

/// A pool of read-only connections on one file. Cheap to clone.
#[derive(Debug, Clone)]
pub(super) struct Readers {
    inner: Arc<Pool>,
}

#[derive(Debug)]
struct Pool {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    /// A pool on the database at `path`, which must exist. Opens one connection now, so a
    /// file that cannot be read fails here. Errors: [`Error::Sqlite`].
    pub(super) fn open(path: PathBuf) -> Result<Self> {
        let first = connect(&path)?;
        Ok(Self {
            inner: Arc::new(Pool {
                path,
                idle: Mutex::new(vec![first]),
            }),
        })
    }

    /// Runs `read` on a pooled connection on a blocking thread.
    /// Errors: what `read` returned; [`Error::Sqlite`] when no connection could be opened;
    /// [`Error::Unavailable`] when the blocking thread failed.
    pub(super) async fn run<T, F>(&self, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let pool = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let connection = match pool.take() {
                Some(connection) => connection,
                None => connect(&pool.path)?,
            };
            let result = read(&connection);
            pool.give_back(connection);
            result
        })
        .await
        .map_err(|e| Error::Unavailable(format!("a database read failed: {e}")))?
    }
}

impl Pool {
    fn take(&self) -> Option<Connection> {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
    }

    fn give_back(&self, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < KEEP {
            idle.push(connection);
        }
    }
}

fn connect(path: &std::path::Path) -> Result<Connection> {
    let connection = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(super::BUSY_TIMEOUT)?;
    connection.set_prepared_statement_cache_capacity(32);
    Ok(connection)
}
