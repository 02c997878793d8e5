//! The SQLite writer: one thread owns the one writing connection and commits in groups.
//!
//! A write operation is a closure run on that thread, whole, inside its own `SAVEPOINT`; the
//! thread takes every operation that is waiting (at most [`MAX_GROUP`]) into one
//! `BEGIN IMMEDIATE … COMMIT`, so concurrent sessions share a commit, and each operation costs
//! one hand-over to the thread and one back, not one per statement. A failed operation is
//! rolled back to its savepoint and leaves the rest of its group alone; a failed `COMMIT`
//! fails every operation of the group. Results reach their callers only after the commit,
//! so no caller publishes an event that was not stored.

use std::sync::mpsc;
use std::thread;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::error::{Error, Result};

/// Most operations committed together.
const MAX_GROUP: usize = 256;

/// What the thread does with a finished group: hands each caller its result, or the group's
/// commit error.
type Deliver = Box<dyn FnOnce(Option<&str>) + Send>;

/// One operation: runs on the writer's connection (or, given why it cannot run, does not);
/// says whether it failed (so its savepoint is rolled back) and how to deliver its result
/// after the commit.
type Job = Box<dyn FnOnce(std::result::Result<&Connection, &str>) -> (bool, Deliver) + Send>;

/// A handle on the writer thread. Cloning shares the thread; the thread exits when the last
/// handle is dropped.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    jobs: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the thread `agentd-sqlite-w` on `connection`.
    /// Errors: [`Error::Unavailable`] when the thread cannot be spawned.
    pub(super) fn spawn(connection: Connection) -> Result<Self> {
        let (jobs, queue) = mpsc::channel::<Job>();
        thread::Builder::new()
            .name("agentd-sqlite-w".to_owned())
            .spawn(move || serve(&connection, &queue))
            .map_err(|e| Error::Unavailable(format!("cannot start the SQLite writer: {e}")))?;
        Ok(Self { jobs })
    }

    /// Runs `operation` in the next group commit and returns its result once committed.
    /// Errors: what `operation` returned (its writes rolled back), or [`Error::Unavailable`]
    /// when the commit failed or the thread is gone.
    pub(super) async fn run<T, F>(&self, operation: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, result) = oneshot::channel::<Result<T>>();
        let job: Job = Box::new(move |connection| {
            let outcome = match connection {
                Ok(connection) => operation(connection),
                Err(why) => Err(Error::Unavailable(why.to_owned())),
            };
            let failed = outcome.is_err();
            let deliver: Deliver = Box::new(move |commit_error| {
                let outcome = match commit_error {
                    Some(message) => Err(Error::Unavailable(message.to_owned())),
                    None => outcome,
                };
                // The caller may have gone (its request was dropped); nothing to tell it.
                let _ = reply.send(outcome);
            });
            (failed, deliver)
        });
        self.jobs
            .send(job)
            .map_err(|_| Error::Unavailable("the SQLite writer has stopped".to_owned()))?;
        result
            .await
            .map_err(|_| Error::Unavailable("the SQLite writer dropped an operation".to_owned()))?
    }
}

fn serve(connection: &Connection, queue: &mpsc::Receiver<Job>) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match queue.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        commit_group(connection, group);
    }
}

/// Runs `group` in one transaction, each job inside its own savepoint, then delivers.
fn commit_group(connection: &Connection, group: Vec<Job>) {
    if let Err(error) = execute(connection, "BEGIN IMMEDIATE") {
        let message = format!("cannot begin a write transaction: {error}");
        tracing::error!(%message, "SQLite write refused");
        for job in group {
            let (_, deliver) = job(Err(&message));
            deliver(None);
        }
        return;
    }
    let mut deliveries = Vec::with_capacity(group.len());
    let mut broken: Option<String> = None;
    for job in group {
        if let Some(error) = &broken {
            deliveries.push(job(Err(error)).1);
            continue;
        }
        if let Err(error) = execute(connection, "SAVEPOINT op") {
            let error = error.to_string();
            deliveries.push(job(Err(&error)).1);
            broken = Some(error);
            continue;
        }
        let (failed, deliver) = job(Ok(connection));
        let closed = if failed {
            execute(connection, "ROLLBACK TO op").and_then(|()| execute(connection, "RELEASE op"))
        } else {
            execute(connection, "RELEASE op")
        };
        deliveries.push(deliver);
        if let Err(error) = closed {
            broken = Some(error.to_string());
        }
    }
    let commit = match broken {
        Some(error) => Err(error),
        None => execute(connection, "COMMIT").map_err(|error| error.to_string()),
    };
    match commit {
        Ok(()) => deliveries.into_iter().for_each(|deliver| deliver(None)),
        Err(error) => {
            let _ = execute(connection, "ROLLBACK");
            let message = format!("the write was not committed: {error}");
            tracing::error!(%message, "SQLite group commit failed");
            deliveries
                .into_iter()
                .for_each(|deliver| deliver(Some(&message)));
        }
    }
}

fn execute(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([])?;
    Ok(())
}
