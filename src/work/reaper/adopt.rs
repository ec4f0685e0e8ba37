//! The worker as the subreaper of its jobs' processes: should a job's
//! reaper itself be killed, what the job started falls to the worker, which
//! sweeps it the moment it sees the reaper gone.

#[cfg(target_os = "linux")]
use std::io;
use std::time::Duration;

use super::tree::descendants;

/// Makes the worker the subreaper of everything its jobs start: were a
/// job's reaper killed, the job's processes are reparented to the
/// worker (not to init), where [`sweep`] finds them. For a process that
/// starts no other child than its jobs' reapers: the worker.
pub(crate) fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_CHILD_SUBREAPER) only sets a flag of this process.
        if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) } != 0 {
            let err = io::Error::last_os_error();
            tracing::warn!(error = %err, "cannot adopt the processes of a job whose reaper is killed");
        }
    }
}

/// Kills and reaps whatever still runs below the worker once its job's
/// reaper has ended: normally nothing (the reaper took the job's tree
/// along); after the reaper was killed, what the job left. Returns how
/// many processes it killed. Call only when no reaper runs.
pub(crate) fn sweep() -> usize {
    let mut killed: Vec<i32> = Vec::new();
    // Each round kills what is below, and reaps the worker's own
    // children among them; their children fall to the worker in turn.
    for _ in 0..50 {
        let below = descendants();
        if below.is_empty() {
            break;
        }
        for pid in &below {
            // SAFETY: kill(2) and a non-blocking waitpid(2) on pids that were below us a moment ago.
            unsafe {
                libc::kill(*pid, libc::SIGKILL);
                libc::waitpid(*pid, std::ptr::null_mut(), libc::WNOHANG);
            }
            if !killed.contains(pid) {
                killed.push(*pid);
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    killed.len()
}
