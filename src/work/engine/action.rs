//! What the engine asks the shell to do, each answered (where it has an
//! answer) by a call back into the engine.

use crate::cause::Cause;
use crate::clock::Boot;
use crate::work::handover::Busy;
use crate::work::outcome::Wait;

/// What the shell does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Try to take the lock; the answer goes to [`Engine::acquired`].
    Acquire,
    /// Enabled again, but switches stopped and started the job too often
    /// lately: say that it starts again at `until_ms` (Redis ms), once.
    HeldBack { until_ms: u64 },
    /// The lock is ours from `since`: start the watchdog renewing it, and
    /// arm the reaper's dead-man kill.
    Guard { fence: i64, since: Boot },
    /// Say and record that the lock was taken, why the job waits if it does,
    /// the last beat of the holder before on another server, and whether
    /// the holder before was foreign (a Redisson service: nothing of
    /// lockwatch's to wait for).
    Acquired { fence: i64, wait: Option<Wait>, prev_beat_ms: Option<u64>, after_foreign: bool },
    /// Taken, but no replica confirmed it: not a holding; say so.
    Unconfirmed { fence: i64 },
    /// Another server may still run the job (said once per server waited for).
    Waits(Busy),
    /// Record that renewals fail (once per spell).
    RenewFailing { fence: i64 },
    /// Note in Redis that this holding starts its job; the answer goes to
    /// [`Engine::start_noted`].
    NoteStarted,
    /// Start the job; its pid goes to [`Engine::job_started`].
    Start { fence: i64 },
    /// The job exited: record it and disarm the kill.
    Exited { fence: i64, status: String },
    /// The lease cannot be vouched for: kill the job now, note it stopped,
    /// record the loss; `say_idle` when the lock was found gone (a new
    /// holder may be waiting for this server).
    Kill { fence: i64, cause: Cause, say_idle: bool },
    /// Stop the job cleanly and release the lock.
    LetGo { fence: i64, cause: Cause },
}
