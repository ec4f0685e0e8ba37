//! How often switches may start the job again: a job stopped because the
//! last flag went off starts again when a flag comes on, [`BURST`] times at
//! once and once more every [`REFILL`]. A person flipping her flag on and
//! off (by hand, a script, her own flood) would otherwise start and stop the
//! job at each flip, and fill the history with runs. Past the budget the
//! worker holds back and says until when (its heartbeat's `held_until_ms`),
//! so the status reads `pending` with that time, never `down`. Pure: the
//! time comes in.

use std::time::Duration;

use crate::bucket::Bucket;
use crate::clock::{Boot, millis};

/// Starts after a switch-off taken at once.
pub const BURST: u32 = 5;
/// One more start after a switch-off this often.
pub const REFILL: Duration = Duration::from_secs(10 * 60);

/// The starts after a switch-off left, and whether the next start is one.
#[derive(Debug, Clone, Copy)]
pub(super) struct Restarts {
    left: Bucket,
    /// The job was last stopped by a switch-off: the next start counts.
    owed: bool,
}

impl Restarts {
    pub(super) fn new() -> Restarts {
        Restarts { left: Bucket::full(BURST), owed: false }
    }

    /// The job was stopped because nobody has it enabled any more.
    pub(super) fn switched_off(&mut self) {
        self.owed = true;
    }

    /// A start is due at `now`: `None` when it may go ahead (and is
    /// counted), or how long it is held back.
    pub(super) fn start(&mut self, now: Boot) -> Option<Duration> {
        if !self.owed {
            return None;
        }
        match self.left.take(now.as_millis(), BURST, millis(REFILL)) {
            Ok(()) => {
                self.owed = false;
                None
            }
            Err(wait_ms) => Some(Duration::from_millis(wait_ms)),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn at(ms: u64) -> Boot {
        Boot::from_millis(ms)
    }

    #[test]
    fn a_start_not_after_a_switch_off_is_never_held() {
        let mut r = Restarts::new();
        for i in 0..100 {
            assert_eq!(r.start(at(i)), None);
        }
    }

    #[test]
    fn after_the_burst_a_switched_start_waits_for_the_refill() {
        let mut r = Restarts::new();
        for i in 0..u64::from(BURST) {
            r.switched_off();
            assert_eq!(r.start(at(i * 100)), None, "start {i} of the burst");
        }
        r.switched_off();
        let held = r.start(at(1_000)).expect("held back");
        assert_eq!(held, REFILL - Duration::from_millis(1_000));
        assert_eq!(r.start(at(2_000)), Some(REFILL - Duration::from_millis(2_000)), "still held, the same end");
        let refill = u64::try_from(REFILL.as_millis()).unwrap();
        assert_eq!(r.start(at(refill)), None, "one more after the refill");
        r.switched_off();
        assert!(r.start(at(refill + 1)).is_some(), "and only one");
    }

    proptest! {
        /// However the flag flips, the starts after a switch-off over a span
        /// are at most the burst and one per refill; one switch-off per
        /// refill is never held back.
        #[test]
        fn switched_starts_are_bounded_and_a_persons_pace_is_whole(gaps in prop::collection::vec(0u64..1_500_000, 1..300)) {
            let refill = u64::try_from(REFILL.as_millis()).unwrap();
            let mut r = Restarts::new();
            let mut now = 0;
            let mut started = 0u64;
            for g in &gaps {
                now += g;
                r.switched_off();
                started += u64::from(r.start(at(now)).is_none());
            }
            prop_assert!(started <= u64::from(BURST) + now / refill);
            let mut r = Restarts::new();
            let mut now = 0;
            for g in &gaps {
                now += refill + g;
                r.switched_off();
                prop_assert_eq!(r.start(at(now)), None);
            }
        }
    }
}
