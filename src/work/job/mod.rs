//! What the worker runs while it holds the lock: a child process, or a task
//! of a Rust service that embeds the worker and reports signs of life with
//! [`Liveness::beat`].
//!
//! A child process runs below a [`reaper`](crate::work::reaper) that takes the job's
//! whole process tree down on every stop and with the worker, even by
//! `kill -9`. It gets the fence in its environment and none of the worker's
//! Redis credentials. Its output is forwarded by threads of its own, so a
//! stdout nobody reads stalls the job (shown as `stalled`), never the
//! runtime that renews the lease and kills the job.
//!
//! # Layout
//!
//! - This file: what the job is ([`Work`], [`Job`]) and what it gets
//!   ([`JobEnv`], [`JobContext`]).
//! - `start`: starting it, below a reaper or as a direct child, its
//!   environment cleared of the worker's connection.
//! - `stop`: waiting for it, stopping it, killing it, and sweeping what a
//!   killed reaper left.
//! - `killer`: [`Killer`], which kills it from elsewhere (the lease
//!   watchdog) and feeds the reaper its dead-man deadline.
//! - `liveness`: [`Liveness`], its last sign of life; `output`: its output
//!   forwarded, each chunk a sign of life.
//! - `group`: a direct child's process group, signalled, and dying with the worker.

mod group;
mod killer;
mod liveness;
mod output;
mod start;
mod stop;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::process::Child;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::work::orphan::Orphan;
#[cfg(unix)]
use crate::work::reaper::Control;

pub use killer::Killer;
pub use liveness::Liveness;

/// The work a worker runs while it holds the lock.
#[derive(Clone)]
pub enum Work {
    /// A program and its arguments. It runs below a reaper that takes its
    /// whole process tree down when the binary calls
    /// [`reaper::enter_if_asked`](crate::work::reaper::enter_if_asked)
    /// first thing in `main`, as `lockwatch` does.
    Command(Vec<String>),
    /// A Rust task, for services that embed the worker: called with the
    /// holding's context each time the job starts.
    Task(TaskFn),
}

/// An embedded job: makes the future to run for one holding of the lock.
pub type TaskFn = Arc<dyn Fn(JobContext) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Work::Command(cmd) => f.debug_tuple("Command").field(cmd).finish(),
            Work::Task(_) => f.write_str("Task"),
        }
    }
}

/// What an embedded task gets: the fence to pass downstream, a liveness
/// handle to call [`Liveness::beat`] on, and a signal to stop.
#[derive(Debug, Clone)]
pub struct JobContext {
    pub fence: i64,
    pub node: String,
    pub liveness: Liveness,
    /// Turns `true` when the task must stop (lock released or lost).
    pub stop: watch::Receiver<bool>,
}

/// A running job.
pub struct Job {
    run: Run,
    /// Process id of the job's own process; `None` for an embedded task.
    pub pid: Option<u32>,
    pub liveness: Liveness,
}

enum Run {
    /// Below a reaper, which takes the job's whole tree down when told.
    #[cfg(unix)]
    Reaped {
        reaper: Child,
        control: Arc<Control>,
        /// Whether what the job left below the worker was swept, once the
        /// reaper's end was seen.
        swept: bool,
    },
    /// A direct child in a process group of its own (no reaper available);
    /// boxed, as it outweighs the other kinds.
    Process(Box<Child>),
    Task {
        handle: JoinHandle<()>,
        stop: watch::Sender<bool>,
        done: bool,
    },
}

/// The environment a job gets.
pub struct JobEnv<'a> {
    pub fence: i64,
    pub node: &'a str,
    pub job: &'a str,
    /// Handed to the job's reaper (never to the job), to let go of the
    /// lock should the worker die.
    pub orphan: Option<&'a Orphan>,
}
