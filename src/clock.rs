//! The clock leases are measured on. On Linux it is `CLOCK_BOOTTIME`, which
//! goes on while the host is suspended; `CLOCK_MONOTONIC` (tokio's and std's
//! `Instant`) stands still then, so a lease measured on it would outlive
//! its real end after a resume. The worker and the job's reaper share it:
//! a deadline the worker writes down, the reaper reads the same way.

use std::time::Duration;

/// A point on the boot clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Boot(Duration);

impl Boot {
    /// Now.
    pub fn now() -> Boot {
        Boot(since_boot())
    }

    /// The point `ms` milliseconds after the clock's start, as [`Boot::as_millis`] gave it.
    pub fn from_millis(ms: u64) -> Boot {
        Boot(Duration::from_millis(ms))
    }

    /// Milliseconds since the clock's start (for passing to another process).
    pub fn as_millis(self) -> u64 {
        millis(self.0)
    }

    /// Time since this point; zero for a point not reached yet.
    pub fn elapsed(self) -> Duration {
        since_boot().saturating_sub(self.0)
    }

    /// Time from now until this point; zero once it has passed.
    pub fn remaining(self) -> Duration {
        self.0.saturating_sub(since_boot())
    }
}

impl std::ops::Add<Duration> for Boot {
    type Output = Boot;
    fn add(self, d: Duration) -> Boot {
        Boot(self.0.saturating_add(d))
    }
}

/// The system-wide clock: `CLOCK_BOOTTIME` on Linux, `CLOCK_MONOTONIC` on
/// other Unixes (on macOS it counts a sleep too).
#[cfg(unix)]
fn since_boot() -> Duration {
    #[cfg(target_os = "linux")]
    const CLOCK: libc::clockid_t = libc::CLOCK_BOOTTIME;
    #[cfg(not(target_os = "linux"))]
    const CLOCK: libc::clockid_t = libc::CLOCK_MONOTONIC;
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec to a valid pointer; the
    // clock exists on every kernel lockwatch runs on (Linux 2.6.39+).
    if unsafe { libc::clock_gettime(CLOCK, &mut ts) } != 0 {
        return monotonic();
    }
    Duration::new(u64::try_from(ts.tv_sec).unwrap_or(0), u32::try_from(ts.tv_nsec).unwrap_or(0))
}

#[cfg(not(unix))]
fn since_boot() -> Duration {
    monotonic()
}

/// Time since this process first asked, on std's monotonic clock: where
/// there is no system-wide clock to ask (no reaper runs there).
fn monotonic() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

/// A duration in whole milliseconds, as Redis takes them (saturating).
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boot_clock_goes_forward_and_round_trips_through_millis() {
        let a = Boot::now();
        std::thread::sleep(Duration::from_millis(20));
        let b = Boot::now();
        assert!(b > a && a.elapsed() >= Duration::from_millis(20));
        let later = b + Duration::from_secs(5);
        assert!(later.remaining() > Duration::from_secs(4));
        assert_eq!(Boot::from_millis(later.as_millis()).as_millis(), later.as_millis());
        assert_eq!(a.remaining(), Duration::ZERO);
    }
}
