//! The reaper's dead-man deadline, on the worker's [`clock`](crate::clock):
//! the time by which the worker must send a later one, or the job dies.

use std::fs::File;
use std::os::fd::AsRawFd;
#[cfg(target_os = "linux")]
use std::os::fd::{FromRawFd, OwnedFd};

/// The dead-man deadline, on the worker's clock. On Linux a timerfd on
/// `CLOCK_BOOTTIME` wakes the reaper at it, also when it passed while
/// the host was suspended; elsewhere the wait is cut into short slices.
pub(super) struct Deadline {
    at: Option<u64>,
    #[cfg(target_os = "linux")]
    timer: Option<OwnedFd>,
}

impl Deadline {
    pub(super) fn new() -> Deadline {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: timerfd_create takes no pointers; a negative
            // answer is an error, else a descriptor we now own.
            let fd = unsafe { libc::timerfd_create(libc::CLOCK_BOOTTIME, libc::TFD_CLOEXEC) };
            let timer = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
            Deadline { at: None, timer }
        }
        #[cfg(not(target_os = "linux"))]
        Deadline { at: None }
    }

    pub(super) fn set(&mut self, ms: u64) {
        self.at = Some(ms);
        #[cfg(target_os = "linux")]
        if let Some(timer) = &self.timer {
            let spec = libc::itimerspec {
                it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
                it_value: libc::timespec {
                    tv_sec: libc::time_t::try_from(ms / 1000).unwrap_or(libc::time_t::MAX),
                    tv_nsec: libc::c_long::try_from(ms % 1000 * 1_000_000).unwrap_or(0),
                },
            };
            // SAFETY: arms our own timerfd with a valid itimerspec.
            unsafe { libc::timerfd_settime(timer.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) };
        }
    }

    pub(super) fn passed(&self) -> bool {
        self.at.is_some_and(|at| crate::clock::Boot::now().as_millis() >= at)
    }

    /// Waits until the control pipe has something to read (true) or the
    /// deadline may have passed (false).
    pub(super) fn wait_for(&self, control: &File) -> bool {
        let mut fds = vec![libc::pollfd { fd: control.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let mut timeout: libc::c_int = -1;
        #[cfg(target_os = "linux")]
        if let (Some(_), Some(timer)) = (self.at, &self.timer) {
            fds.push(libc::pollfd { fd: timer.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        }
        // Without a timer (not Linux, or none could be made), in slices.
        if fds.len() == 1
            && let Some(at) = self.at
        {
            let left = at.saturating_sub(crate::clock::Boot::now().as_millis());
            timeout = libc::c_int::try_from(left.min(100)).unwrap_or(100);
        }
        // SAFETY: poll on descriptors we own, with the array's true length.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        n > 0 && fds[0].revents != 0
    }
}
