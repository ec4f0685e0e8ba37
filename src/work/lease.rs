//! The lease and its fractions, in one place, so the margins between them
//! stay as designed: a holder renews every third of the lease, stops its job
//! when three quarters passed without a confirmed renewal, its reaper kills
//! the job by itself at seven eighths, and the lock expires at the whole.
//! A replica's confirmation is waited for a tenth of it, two seconds at most.

use std::time::Duration;

/// The longest a replica's confirmation is waited for, whatever the lease:
/// below the connection's answer timeout, so a slow confirmation is not a
/// broken link.
const MAX_CONFIRM_WAIT: Duration = Duration::from_secs(2);

/// The longest a worker goes without a look.
pub const LONGEST_LOOK: Duration = Duration::from_secs(5);

/// A lock's lease: how long the lock lives after each acquisition or renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Lease(Duration);

impl Lease {
    pub const fn new(lease: Duration) -> Lease {
        Lease(lease)
    }

    /// The whole lease: when the lock expires unless renewed.
    pub fn whole(self) -> Duration {
        self.0
    }

    /// How often the holder renews: a third, so two renewals may fail
    /// before the holder must stop.
    pub fn renew_every(self) -> Duration {
        self.0 / 3
    }

    /// How long after its last confirmed renewal the worker stops its job
    /// itself: three quarters, well before another can take the lock.
    pub fn stop_after(self) -> Duration {
        self.0 * 3 / 4
    }

    /// How long after its last confirmed renewal the job's reaper kills the
    /// job by itself, whatever its worker is doing: seven eighths; the last
    /// eighth is the margin for the kill and for clocks.
    pub fn kill_after(self) -> Duration {
        self.0 * 7 / 8
    }

    /// How often a worker looks at the job when nothing woke it sooner (a
    /// flip, an unlock, the lock written, its own deadlines): a sixth of the
    /// lease, from 1 s to [`LONGEST_LOOK`], and never less often than the
    /// holder renews.
    pub fn look_every(self) -> Duration {
        (self.0 / 6).clamp(Duration::from_secs(1), LONGEST_LOOK).min(self.renew_every())
    }

    /// How long an acquisition or renewal waits for a replica's confirmation.
    pub fn confirm_within(self) -> Duration {
        (self.0 / 10).min(MAX_CONFIRM_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fractions_keep_their_order_for_every_lease() {
        for ms in [1_500, 2_000, 3_000, 10_000, 30_000, 3_600_000] {
            let lease = Lease::new(Duration::from_millis(ms));
            assert!(lease.renew_every() * 2 < lease.stop_after(), "{ms}: two renewals fit before the stop");
            assert!(lease.stop_after() < lease.kill_after(), "{ms}: the worker stops before the reaper kills");
            assert!(lease.kill_after() < lease.whole(), "{ms}: the reaper kills before the lock expires");
            assert!(lease.confirm_within() < lease.renew_every(), "{ms}: a confirmation fits in a renewal");
            assert!(lease.look_every() <= lease.renew_every(), "{ms}: a look at least every renewal");
            assert!(lease.look_every() <= LONGEST_LOOK, "{ms}: a look at least every {LONGEST_LOOK:?}");
        }
        assert_eq!(Lease::new(Duration::from_secs(30)).confirm_within(), Duration::from_secs(2));
        assert_eq!(Lease::new(Duration::from_secs(3)).look_every(), Duration::from_secs(1));
        assert_eq!(Lease::new(Duration::from_secs(30)).look_every(), LONGEST_LOOK);
    }
}
