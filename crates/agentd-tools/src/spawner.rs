//! Starting tool processes on a thread of their own, not on a runtime worker.
//!
//! Owns the spawner thread. `Command::spawn` returns only once the child has called
//! `exec`, and a child that first joins its call's pids cgroup waits in that write for an
//! RCU grace period (moving a process between cgroups write-locks the kernel's
//! `cgroup_threadgroup_rwsem`): 10 to 30 ms on a busy 2-core VM. On a runtime worker that
//! wait would stall every task queued there; here it only delays the call that waits. The
//! thread is also the parent `PR_SET_PDEATHSIG` watches (see `crate::limits`): it lives as
//! long as its [`Spawner`], so tool processes die with it as they do with the server. It
//! must not do anything but spawn.

use std::io;
use std::sync::{Mutex, mpsc};

use tokio::process::{Child, Command};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// One command to start, with the runtime its child is registered with and where the
/// result goes.
struct Job {
    command: Command,
    runtime: Handle,
    reply: oneshot::Sender<io::Result<Child>>,
}

/// Starts commands on its thread, created at the first [`Spawner::spawn`] (a runtime is
/// needed then, not when the tool is built). The thread ends when the spawner is dropped.
#[derive(Debug, Default)]
pub(crate) struct Spawner {
    /// The thread's queue; `None` until the first spawn. Written once under the lock, read
    /// (cloned) by every spawn; the thread stops when this last sender is dropped.
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
}

impl Spawner {
    /// Starts `command` on the spawner thread and returns its child once it has called
    /// `exec` (or failed to). If the caller stops waiting, the child is dropped on the
    /// thread and, being `kill_on_drop`, killed. Errors: the spawn failed, or the thread
    /// could not be started.
    pub(crate) async fn spawn(&self, command: Command) -> io::Result<Child> {
        let (reply, result) = oneshot::channel();
        let job = Job {
            command,
            runtime: Handle::current(),
            reply,
        };
        self.queue()?
            .send(job)
            .map_err(|_| io::Error::other("the spawner thread is gone"))?;
        result
            .await
            .map_err(|_| io::Error::other("the spawner thread dropped the spawn"))?
    }

    /// The thread's queue, starting the thread if there is none yet.
    fn queue(&self) -> io::Result<mpsc::Sender<Job>> {
        let mut jobs = self
            .jobs
            .lock()
            .map_err(|_| io::Error::other("the spawner's lock is poisoned"))?;
        if let Some(queue) = jobs.as_ref() {
            return Ok(queue.clone());
        }
        let (queue, receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name("agentd-spawner".to_owned())
            .spawn(move || serve(receiver))?;
        *jobs = Some(queue.clone());
        Ok(queue)
    }
}

/// The thread: spawns each job's command until every sender is gone.
fn serve(jobs: mpsc::Receiver<Job>) {
    for job in jobs {
        let Job {
            mut command,
            runtime,
            reply,
        } = job;
        let _runtime = runtime.enter();
        let spawned = command.spawn();
        // Closes the parent's copies of the child's output pipe and of its cgroup's
        // `cgroup.procs` before the caller reads the pipe.
        drop(command);
        // A caller that stopped waiting gets nothing; the child is dropped, and killed.
        let _ = reply.send(spawned);
    }
}
