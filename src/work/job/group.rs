//! A job run as a direct child (no reaper available): its process group,
//! signalled, and its death with the worker's.

use tokio::process::Command;

pub(super) enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
pub(super) fn signal_group(pid: Option<u32>, signal: Signal) {
    let Some(Ok(pid)) = pid.map(libc::pid_t::try_from) else { return };
    if pid <= 1 {
        return;
    }
    let sig = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: kill(2) with a negative pid signals that process group; the
    // group was created for this child alone (setpgid in die_with_parent).
    unsafe {
        libc::kill(-pid, sig);
    }
}

#[cfg(not(unix))]
pub(super) fn signal_group(_pid: Option<u32>, _signal: Signal) {}

/// Without a reaper: puts the child in its own process group and, on
/// Linux, has the kernel kill it when the worker dies, even by `kill -9`
/// (its own children are reached only through the group).
#[cfg(unix)]
pub(super) fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The worker may have died before prctl took effect.
                if libc::getppid() as u32 != parent {
                    libc::_exit(1);
                }
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
pub(super) fn die_with_parent(_cmd: &mut Command) {}
