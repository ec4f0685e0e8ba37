//! How many of one person's flips the history takes: a person flips her
//! flag a few times a day, so each may record [`BURST`] flips at once and
//! one more every [`REFILL_MS`]; flips past that (a script, her own flood of
//! on and off) are not recorded, and the history's 10,000 entries keep a
//! week of runs, failovers and deaths through a day of her flood. The flag
//! itself still counts at once: the budget is the history's, not the job's.
//! Pure: the time comes in, Redis's.

use std::collections::HashMap;

use crate::bucket::Bucket;

/// Flips one person may record at once.
pub const BURST: u32 = 10;
/// One more flip may be recorded this often (ms): six an hour.
pub const REFILL_MS: u64 = 10 * 60 * 1_000;

/// What to do with one flip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    Record,
    /// Not recorded; `first` for the first of a spell, to be said once.
    Skip {
        first: bool,
    },
}

/// Each person's flips left to record, and whether a spell of skipping
/// was said.
#[derive(Debug, Default)]
pub struct Budget {
    people: HashMap<String, (Bucket, bool)>,
}

impl Budget {
    /// A flip of `user` at Redis time `now_ms`.
    pub fn take(&mut self, user: &str, now_ms: u64) -> Take {
        let (bucket, skipping) = self.people.entry(user.to_owned()).or_insert((Bucket::full(BURST), false));
        match bucket.take(now_ms, BURST, REFILL_MS) {
            Ok(()) => {
                *skipping = false;
                Take::Record
            }
            Err(_) => Take::Skip { first: !std::mem::replace(skipping, true) },
        }
    }

    /// Forgets those whose budget is whole again by `now_ms`, so the map
    /// holds only people who flipped lately.
    pub fn forget_rested(&mut self, now_ms: u64) {
        self.people.retain(|_, (b, _)| !b.rested(now_ms, BURST, REFILL_MS));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_burst_is_recorded_then_one_flip_per_refill() {
        let mut b = Budget::default();
        let took: Vec<Take> = (0..12).map(|i| b.take("alice", 1_000 + i)).collect();
        assert!(took[..10].iter().all(|t| *t == Take::Record));
        assert_eq!(took[10], Take::Skip { first: true });
        assert_eq!(took[11], Take::Skip { first: false });
        assert_eq!(b.take("bob", 2_000), Take::Record, "bob has his own budget");
        assert_eq!(b.take("alice", 1_000 + REFILL_MS), Take::Record);
        assert_eq!(b.take("alice", 1_000 + REFILL_MS + 1), Take::Skip { first: true });
    }

    #[test]
    fn a_rested_person_is_forgotten_and_starts_whole() {
        let mut b = Budget::default();
        for i in 0..BURST as u64 {
            b.take("alice", i);
        }
        b.forget_rested(REFILL_MS * 9);
        assert_eq!(b.people.len(), 1, "one flip short still");
        b.forget_rested(REFILL_MS * 10 + 10);
        assert!(b.people.is_empty());
    }

    proptest! {
        /// However she flips, what is recorded over a span is at most the
        /// burst and one per refill; a person who flips as people do (at most
        /// once per refill) has every flip recorded.
        #[test]
        fn recorded_flips_are_bounded_and_a_persons_pace_is_whole(gaps in prop::collection::vec(0u64..3 * REFILL_MS, 1..300)) {
            let mut b = Budget::default();
            let mut now = 0;
            let mut recorded = 0u64;
            for g in &gaps {
                now += g;
                recorded += u64::from(b.take("alice", now) == Take::Record);
                if g % 7 == 0 {
                    b.forget_rested(now);
                }
            }
            prop_assert!(recorded <= u64::from(BURST) + now / REFILL_MS);
            let mut b = Budget::default();
            let mut now = 0;
            for g in &gaps {
                now += REFILL_MS + g;
                prop_assert_eq!(b.take("alice", now), Take::Record);
            }
        }
    }
}
