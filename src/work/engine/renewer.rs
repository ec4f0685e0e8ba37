//! The watchdog's decisions, pure: when to renew the lease, what a
//! renewal's answer means, and when to give up and kill the job. It renews
//! every third of the lease; a failed or unconfirmed renewal is retried
//! every quarter second until three quarters of the lease have passed since
//! the last confirmed one: then the job is killed, whatever the supervision
//! loop is doing, so it never outlives the lease.

use std::time::Duration;

use crate::cause::Cause;
use crate::clock::Boot;
use crate::work::lease::Lease;

/// How soon a failed renewal is tried again.
const RETRY_EVERY: Duration = Duration::from_millis(250);

/// The watchdog's last word on the lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// Renewed by the call sent at this time.
    Renewed(Boot),
    /// A renewal found the lock is not ours any more.
    Lost,
    /// A renewal failed; retrying.
    Failing,
    /// No renewal succeeded within [`Lease::stop_after`]; `unconfirmed`
    /// when Redis answered but no replica confirmed.
    Expiring { unconfirmed: bool },
}

impl Renewal {
    /// Why the job must stop, when it must.
    pub fn stop_reason(self) -> Option<Cause> {
        match self {
            Renewal::Lost => Some(Cause::Lost),
            Renewal::Expiring { unconfirmed: true } => Some(Cause::ReplicaUnconfirmed),
            Renewal::Expiring { unconfirmed: false } => Some(Cause::Expired),
            Renewal::Renewed(_) | Renewal::Failing => None,
        }
    }
}

/// What one renewal attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Renewed, and confirmed by a replica where there is one.
    Renewed,
    /// The lock is not ours any more.
    NotOurs,
    /// Redis renewed it, but no replica confirmed in time.
    Unconfirmed,
    /// The call failed (connection refused, closed, an error reply).
    Failed,
    /// No answer before [`Renewer::deadline`].
    TimedOut,
}

/// What the watchdog does after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Renewed: the kill moves to `kill_at`; renew again at [`Renewer::next_renewal`].
    Renewed { since: Boot, kill_at: Boot },
    /// Try again at `at`; `say` the first time in a round.
    Retry { at: Boot, say: bool },
    /// Kill the job now and report this: the lease cannot be vouched for.
    GiveUp(Renewal),
}

impl Verdict {
    /// What the supervision loop is told.
    pub fn report(self) -> Renewal {
        match self {
            Verdict::Renewed { since, .. } => Renewal::Renewed(since),
            Verdict::Retry { .. } => Renewal::Failing,
            Verdict::GiveUp(word) => word,
        }
    }
}

/// The watchdog of one holding.
#[derive(Debug, Clone)]
pub struct Renewer {
    lease: Lease,
    /// When the last confirmed acquisition or renewal was sent.
    last_ok: Boot,
    /// The last attempt reached Redis but no replica confirmed it.
    unconfirmed: bool,
    /// Whether this round's trouble was said.
    said: bool,
}

impl Renewer {
    /// The watchdog of a holding whose lease was confirmed by a call sent at `since`.
    pub fn new(lease: Lease, since: Boot) -> Renewer {
        Renewer { lease, last_ok: since, unconfirmed: false, said: false }
    }

    /// When the next round of renewal starts.
    pub fn next_renewal(&self) -> Boot {
        self.last_ok + self.lease.renew_every()
    }

    /// The latest an answer may come: past it the lease is not vouched for.
    pub fn deadline(&self) -> Boot {
        self.last_ok + self.lease.stop_after()
    }

    /// The answer to the attempt sent at `sent`, arriving at `now`.
    pub fn answer(&mut self, sent: Boot, now: Boot, answer: Answer) -> Verdict {
        match answer {
            Answer::Renewed if now < self.deadline() => {
                self.last_ok = self.last_ok.max(sent);
                self.unconfirmed = false;
                self.said = false;
                return Verdict::Renewed { since: sent, kill_at: sent + self.lease.kill_after() };
            }
            Answer::NotOurs => return Verdict::GiveUp(Renewal::Lost),
            Answer::Unconfirmed => self.unconfirmed = true,
            Answer::Failed => self.unconfirmed = false,
            Answer::Renewed | Answer::TimedOut => {}
        }
        let at = now + RETRY_EVERY;
        if answer == Answer::TimedOut || answer == Answer::Renewed || at >= self.deadline() {
            return Verdict::GiveUp(Renewal::Expiring { unconfirmed: self.unconfirmed });
        }
        Verdict::Retry { at, say: !std::mem::replace(&mut self.said, true) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Lease = Lease::new(Duration::from_secs(30));

    fn at(ms: u64) -> Boot {
        Boot::from_millis(ms)
    }

    #[test]
    fn a_renewal_moves_the_kill_and_the_next_round() {
        let mut r = Renewer::new(LEASE, at(1_000));
        assert_eq!(r.next_renewal(), at(11_000));
        let v = r.answer(at(11_000), at(11_005), Answer::Renewed);
        assert_eq!(v, Verdict::Renewed { since: at(11_000), kill_at: at(11_000 + 26_250) });
        assert_eq!(r.next_renewal(), at(21_000));
        assert_eq!(r.deadline(), at(11_000 + 22_500));
    }

    #[test]
    fn failures_are_retried_until_three_quarters_then_given_up() {
        let mut r = Renewer::new(LEASE, at(0));
        assert_eq!(r.answer(at(10_000), at(10_010), Answer::Failed), Verdict::Retry { at: at(10_260), say: true });
        assert_eq!(
            r.answer(at(10_260), at(10_300), Answer::Unconfirmed),
            Verdict::Retry { at: at(10_550), say: false }
        );
        let v = r.answer(at(22_300), at(22_300), Answer::Unconfirmed);
        assert_eq!(v, Verdict::GiveUp(Renewal::Expiring { unconfirmed: true }));
        let mut r = Renewer::new(LEASE, at(0));
        assert_eq!(r.answer(at(10_000), at(22_500), Answer::TimedOut).report().stop_reason(), Some(Cause::Expired));
        let mut r = Renewer::new(LEASE, at(0));
        assert_eq!(r.answer(at(10_000), at(10_001), Answer::NotOurs), Verdict::GiveUp(Renewal::Lost));
    }

    #[test]
    fn a_renewal_answered_too_late_vouches_for_nothing() {
        let mut r = Renewer::new(LEASE, at(0));
        let v = r.answer(at(10_000), at(22_500), Answer::Renewed);
        assert_eq!(v, Verdict::GiveUp(Renewal::Expiring { unconfirmed: false }));
    }
}
