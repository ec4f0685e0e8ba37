//! A budget of things one may do at once and again over time: [`Bucket`]
//! holds a burst, taken one at a time, and earns one back every refill,
//! counted from the first take of a spell. Pure: the time comes in (ms on
//! any one clock). A person's flips the history takes and the starts after
//! a switch-off a worker allows are both counted so.

/// What is left of a burst, and since when the refill is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    left: u32,
    since_ms: u64,
}

impl Bucket {
    /// A whole burst of `burst`.
    pub fn full(burst: u32) -> Bucket {
        Bucket { left: burst, since_ms: 0 }
    }

    /// Takes one at `now_ms`, after earning back one per `refill_ms` since
    /// the refill was last counted (never past `burst`): `Ok`, or `Err` with
    /// how long (ms) until the next one is earned.
    pub fn take(&mut self, now_ms: u64, burst: u32, refill_ms: u64) -> Result<(), u64> {
        let earned = now_ms.saturating_sub(self.since_ms) / refill_ms.max(1);
        if earned > 0 {
            self.left = self.left.saturating_add(u32::try_from(earned).unwrap_or(u32::MAX)).min(burst);
            self.since_ms += earned * refill_ms;
        }
        if self.left >= burst {
            // The refill counts from the first take of a spell.
            self.since_ms = now_ms;
        }
        if self.left == 0 {
            return Err((self.since_ms + refill_ms).saturating_sub(now_ms));
        }
        self.left -= 1;
        Ok(())
    }

    /// Whether the burst is whole again by `now_ms`.
    pub fn rested(&self, now_ms: u64, burst: u32, refill_ms: u64) -> bool {
        let missing = u64::from(burst.saturating_sub(self.left));
        now_ms.saturating_sub(self.since_ms) >= missing * refill_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_refill_counted_from_the_first_take() {
        let mut b = Bucket::full(2);
        assert_eq!(b.take(1_000, 2, 100), Ok(()));
        assert_eq!(b.take(1_010, 2, 100), Ok(()));
        assert_eq!(b.take(1_050, 2, 100), Err(50));
        assert_eq!(b.take(1_100, 2, 100), Ok(()));
        assert_eq!(b.take(1_150, 2, 100), Err(50));
        assert!(!b.rested(1_250, 2, 100));
        assert!(b.rested(1_300, 2, 100));
    }
}
