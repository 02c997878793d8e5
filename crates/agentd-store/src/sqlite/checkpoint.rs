//! WAL checkpoints on a thread of their own, so the writer never waits for one.
//!
//! SQLite's automatic checkpoint runs in the connection whose commit crossed the threshold
//! (the writer) and syncs the file: a few milliseconds in which no event is stored or
//! relayed, the worst relay times of the benchmark (issue 7: relay p99 5.4 ms with, 2.3 ms
//! without). The writer's automatic checkpoints are off; this thread runs a `PASSIVE`
//! checkpoint every [`INTERVAL`], which copies committed pages into the database while the
//! writer goes on, and never blocks readers or the writer.

use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// How often the WAL is checkpointed: at the highest write rate measured (~11 MB of WAL a
/// second) it stays around that size.
const INTERVAL: Duration = Duration::from_secs(1);

/// The checkpoint thread; it stops when this is dropped.
#[derive(Debug)]
pub(super) struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

impl Checkpointer {
    /// Starts the thread `agentd-sqlite-ckpt` on its own connection to `path`.
    /// Errors: [`Error::Sqlite`] when the file cannot be opened, [`Error::Unavailable`] when
    /// the thread cannot start.
    pub(super) fn spawn(path: &Path) -> Result<Self> {
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(super::BUSY_TIMEOUT)?;
        connection.execute_batch("PRAGMA synchronous = NORMAL;")?;
        let (stop, stopped) = mpsc::channel::<()>();
        thread::Builder::new()
            .name("agentd-sqlite-ckpt".to_owned())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(INTERVAL) {
                    let done =
                        connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    if let Err(error) = done {
                        tracing::warn!(%error, "SQLite WAL checkpoint failed; retrying later");
                    }
                }
            })
            .map_err(|e| {
                Error::Unavailable(format!("cannot start the SQLite checkpointer: {e}"))
            })?;
        Ok(Self { _stop: stop })
    }
}
