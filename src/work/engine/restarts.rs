//! How often a person's switches may start the job again: a job stopped
//! because the last flag went off starts again when a flag comes on, as
//! long as one of those who have it on now has switched it on less than
//! [`BURST`] times at once and once more every [`REFILL`]. A person flipping
//! her flag on and off (by hand, a script, her own flood) would otherwise
//! start and stop the job at each flip, and fill the history with runs; her
//! flood holds back only her own switches, never another's. Past the budget
//! the worker holds back and says until when (its heartbeat's
//! `held_until_ms`), so the status reads `pending` with that time, never
//! `down`. Pure: the time comes in.

use std::time::Duration;

use crate::bucket::Bucket;
use crate::clock::{Boot, millis};

/// A person's starts after a switch-off taken at once.
pub const BURST: u32 = 5;
/// One more start after a switch-off this often.
pub const REFILL: Duration = Duration::from_secs(10 * 60);

/// Each person's starts after a switch-off left, and whether the next start
/// is one.
#[derive(Debug, Clone, Default)]
pub(super) struct Restarts {
    /// Those who spent some lately (the rest have a whole burst).
    spent: Vec<(String, Bucket)>,
    /// The job was last stopped by a switch-off: the next start counts.
    owed: bool,
}

impl Restarts {
    /// The job was stopped because nobody has it enabled any more.
    pub(super) fn switched_off(&mut self) {
        self.owed = true;
    }

    /// A start is due at `now`, with the flags of `by` on (empty: a flag
    /// counted on though not read on, as one Redis lost): `None` when it
    /// may go ahead (counted to each of them with some left), or how long
    /// it is held back.
    pub(super) fn start(&mut self, now: Boot, by: &[&str]) -> Option<Duration> {
        if !self.owed {
            return None;
        }
        let (now_ms, refill) = (now.as_millis(), millis(REFILL));
        self.spent.retain(|(_, b)| !b.rested(now_ms, BURST, refill));
        let mut wait: Option<u64> = None;
        for user in if by.is_empty() { &[""][..] } else { by } {
            let at = self.spent.iter().position(|(u, _)| u == user);
            let mut bucket = at.map_or(Bucket::full(BURST), |i| self.spent[i].1);
            match bucket.take(now_ms, BURST, refill) {
                Ok(()) => {
                    wait = Some(0);
                    match at {
                        Some(i) => self.spent[i].1 = bucket,
                        None => self.spent.push(((*user).to_owned(), bucket)),
                    }
                }
                Err(ms) => wait = Some(wait.map_or(ms, |w| w.min(ms))),
            }
        }
        match wait {
            Some(0) | None => {
                self.owed = false;
                None
            }
            Some(ms) => Some(Duration::from_millis(ms)),
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const ALICE: &[&str] = &["alice"];

    fn at(ms: u64) -> Boot {
        Boot::from_millis(ms)
    }

    #[test]
    fn her_spent_switches_do_not_hold_back_anothers_switch_on() {
        let mut r = Restarts::default();
        for i in 0..u64::from(BURST) {
            r.switched_off();
            assert_eq!(r.start(at(i * 100), ALICE), None);
        }
        r.switched_off();
        assert!(r.start(at(1_000), ALICE).is_some(), "hers spent");
        assert_eq!(r.start(at(1_100), &["alice", "bob"]), None, "bob switched it on");
        r.switched_off();
        assert!(r.start(at(1_200), ALICE).is_some(), "hers still spent");
        r.switched_off();
        assert_eq!(r.start(at(1_300), &["bob"]), None, "bob has four more");
    }

    #[test]
    fn a_start_not_after_a_switch_off_is_never_held() {
        let mut r = Restarts::default();
        for i in 0..100 {
            assert_eq!(r.start(at(i), ALICE), None);
        }
    }

    #[test]
    fn after_the_burst_a_switched_start_waits_for_the_refill() {
        let mut r = Restarts::default();
        for i in 0..u64::from(BURST) {
            r.switched_off();
            assert_eq!(r.start(at(i * 100), ALICE), None, "start {i} of the burst");
        }
        r.switched_off();
        let held = r.start(at(1_000), ALICE).expect("held back");
        assert_eq!(held, REFILL - Duration::from_millis(1_000));
        assert_eq!(r.start(at(2_000), ALICE), Some(REFILL - Duration::from_millis(2_000)), "still held, the same end");
        let refill = u64::try_from(REFILL.as_millis()).unwrap();
        assert_eq!(r.start(at(refill), ALICE), None, "one more after the refill");
        r.switched_off();
        assert!(r.start(at(refill + 1), ALICE).is_some(), "and only one");
    }

    proptest! {
        /// However the flag flips, the starts after a switch-off over a span
        /// are at most the burst and one per refill; one switch-off per
        /// refill is never held back.
        #[test]
        fn switched_starts_are_bounded_and_a_persons_pace_is_whole(gaps in prop::collection::vec(0u64..1_500_000, 1..300)) {
            let refill = u64::try_from(REFILL.as_millis()).unwrap();
            let mut r = Restarts::default();
            let mut now = 0;
            let mut started = 0u64;
            for g in &gaps {
                now += g;
                r.switched_off();
                started += u64::from(r.start(at(now), ALICE).is_none());
            }
            prop_assert!(started <= u64::from(BURST) + now / refill);
            let mut r = Restarts::default();
            let mut now = 0;
            for g in &gaps {
                now += refill + g;
                r.switched_off();
                prop_assert_eq!(r.start(at(now), ALICE), None);
            }
        }

        /// Her flood beside, bob's switch-ons at a person's pace (one per
        /// refill) are never held back.
        #[test]
        fn her_flood_never_holds_back_his_switches(her in prop::collection::vec(0u64..5_000, 1..200), his_at in 0usize..200) {
            let refill = u64::try_from(REFILL.as_millis()).unwrap();
            let mut r = Restarts::default();
            let mut now = 0;
            let mut last_his: Option<u64> = None;
            for (i, g) in her.iter().enumerate() {
                now += g;
                r.switched_off();
                let _ = r.start(at(now), ALICE);
                if i % 50 == his_at % 50 && last_his.is_none_or(|t| now >= t + refill) {
                    r.switched_off();
                    prop_assert_eq!(r.start(at(now), &["alice", "bob"]), None);
                    last_his = Some(now);
                }
            }
        }
    }
}
