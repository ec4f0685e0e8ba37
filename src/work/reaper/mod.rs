//! The job's reaper: a small process between the worker and the job that
//! takes the job's whole process tree down with it, so that nothing the job
//! started outlives the worker's right to run it.
//!
//! The worker re-executes its own binary with [`VAR`] set; the binary's
//! `main` calls [`enter_if_asked`] first, which turns it into the reaper.
//! The reaper is a child subreaper (Linux), so every descendant of the job
//! stays below it, `setsid` or not, and is found by walking `/proc`. It runs
//! the job with an untouched stdout, stderr and exit status (its own exit
//! status is the job's), and it obeys a control pipe from the worker:
//!
//! - `T`: SIGTERM to every descendant (a clean stop);
//! - `K`, or the pipe's end (the worker died, even by `kill -9`): SIGKILL to
//!   every descendant, then exit;
//! - `D<ms>;`: the deadline, on the [`clock`](crate::clock), by which the
//!   worker must send a later one. The reaper is a dead-man switch: when the
//!   deadline passes, it SIGKILLs every descendant by itself, whatever the
//!   worker is doing (stopped by SIGSTOP or a debugger, stuck, swapping, or
//!   the host suspended), so the job never outlives the lease the worker
//!   last had confirmed. No deadline sent, none enforced.
//!
//! When the job's own process ends, whatever it left running is killed too.
//! When the worker died, and the last of the job's tree is reaped, the
//! reaper lets go of the worker's lock ([`orphan`](super::orphan)), so the
//! next holder need not wait out the lease.
//! The worker never SIGKILLs the reaper itself: that would orphan the tree.
//! Should anyone else (`kill -9`, the OOM killer), the worker is a child
//! subreaper too ([`adopt_orphans`]): the job's processes fall to it, and it
//! kills them the moment it sees the reaper gone ([`sweep`]).
//!
//! # Layout
//!
//! Unix only, but for this file:
//!
//! - The worker's side: `link` (the pipes to a reaper about to start, and
//!   the control end the worker keeps), `adopt` (the worker as the
//!   subreaper of what a killed reaper left, and the sweep of it).
//! - The reaper's side: `serve` (the reaper's process: starts the job,
//!   serves signals, reaps, exits as the job did), `control` (the control
//!   pipe's commands), `deadline` (the dead-man deadline's timer), `tree`
//!   (finding and signalling every process below the reaper).

#[cfg(unix)]
mod adopt;
#[cfg(unix)]
mod control;
#[cfg(unix)]
mod deadline;
#[cfg(unix)]
mod link;
#[cfg(unix)]
mod serve;
#[cfg(unix)]
mod tree;

use std::sync::atomic::{AtomicBool, Ordering};

/// Set in the reaper's environment by the worker: `<control fd>,<report fd>,<worker pid>`, and
/// `,<orphan fd>,<log fd>` when it passed what it takes to let go of the lock
/// ([`Orphan`](super::orphan::Orphan)) and where to say so (the worker's own stderr).
pub const VAR: &str = "LOCKWATCH_REAPER";

/// Whether this binary called [`enter_if_asked`], and so can serve as the reaper.
static AVAILABLE: AtomicBool = AtomicBool::new(false);

/// Call first thing in `main` of a binary that runs workers with
/// [`Work::Command`](crate::work::job::Work::Command). Started as a job's reaper,
/// it runs the job and exits with the job's status, never returning;
/// otherwise it notes that this binary can serve as the reaper and returns.
/// Without it, jobs run as direct children of the worker, and descendants
/// that leave the job's process group can outlive it.
pub fn enter_if_asked() {
    #[cfg(unix)]
    if let Some(spec) = std::env::var_os(VAR) {
        serve::serve(&spec)
    }
    AVAILABLE.store(true, Ordering::SeqCst);
}

/// True when this process can re-execute itself as a job's reaper.
#[cfg(unix)]
pub(crate) fn available() -> bool {
    AVAILABLE.load(Ordering::SeqCst)
}

#[cfg(unix)]
pub(crate) use adopt::{adopt_orphans, sweep};
#[cfg(unix)]
pub(crate) use link::{Control, Link};
