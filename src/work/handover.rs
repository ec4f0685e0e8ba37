//! When a new holder of a free lock may start the job: not while another
//! server's heartbeat says it still runs it. The lock can vanish under a
//! running holder (deleted, force-unlocked, evicted, lost in a restart);
//! that holder stops at its next look, and at the latest when its reaper's
//! dead-man deadline passes. So the new holder holds the lock and waits
//! until that server beats idle, or until the deadline counted from its
//! last beat or renewal has passed, with a margin for the kill to land (a
//! dead server cannot say it stopped).
//!
//! Heartbeats can vanish too (evicted with the lock, or never written by
//! a server that is gone), and a missing heartbeat proves nothing. So the
//! holding before the new one, which the lock script names ([`Before`]),
//! is waited for until something proves it stopped: it said so (released,
//! or noted it after losing the lock), its server beats idle or holds a
//! later fence, or its process is gone; with no such proof, until a lease
//! has passed since the lock was taken.
//! Pure: a snapshot in, a wait out.

use std::time::Duration;

use crate::clock::millis;
use crate::schema::BeatState;
use crate::snapshot::Snapshot;
use crate::work::lease::Lease;
use crate::work::lock::Before;

/// Another server that may still run the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub node: String,
    /// How long after the snapshot its job may still run.
    pub left: Duration,
}

/// How long after its last sign of life another holder's job may still run,
/// as far as a new holder counts: the whole lease. Its reaper kills it at
/// 7/8 of the lease ([`Lease::kill_after`]); the last eighth is
/// the margin for that kill to land (a reaper on a host with thousands of
/// processes walks `/proc` for tens of milliseconds first).
fn may_run(lease: Lease) -> u64 {
    millis(lease.whole())
}

/// The server the new holder `node` (holding under `field`) must wait for
/// the longest, if any, as `snap` shows them. A server counts when its
/// heartbeat says it runs the job (`running`, `stalled`, `stopping`) under
/// another lock field, and its process is not known dead: a worker's death
/// closes its presence subscription and its reaper kills the job at once.
pub fn busy_elsewhere(snap: &Snapshot, node: &str, field: &str, lease: Lease) -> Option<Busy> {
    let may_run = may_run(lease);
    snap.beats
        .iter()
        .filter(|b| b.node != node && b.state.as_ref().is_some_and(BeatState::job_may_live))
        .filter(|b| b.lock_field.as_deref().is_some_and(|f| !f.is_empty() && f != field))
        .filter(|b| b.present != Some(false))
        .filter_map(|b| {
            let last_sign = b.beat_ms.max(b.renewed_ms)?;
            let until = last_sign.saturating_add(may_run);
            (until > snap.time_ms)
                .then(|| Busy { node: b.node.clone(), left: Duration::from_millis(until - snap.time_ms) })
        })
        .max_by_key(|b| b.left)
}

/// The holding `before` the one `node` took at `acquired_ms` (Redis time),
/// if it may still run the job as `snap` shows its server: how long, at
/// the latest, from the snapshot. `node` itself is never waited for: this
/// process runs no job outside a holding, and no other process runs under
/// its name.
pub fn before_busy(snap: &Snapshot, before: &Before, node: &str, lease: Lease, acquired_ms: u64) -> Option<Busy> {
    let may_run = may_run(lease);
    let (who, last_sign) = match before {
        Before::Stopped => return None,
        Before::Running { node: other, .. } if other == node => return None,
        Before::Unknown => (String::new(), None),
        Before::Running { node: other, fence } => match snap.beats.iter().find(|b| &b.node == other) {
            None => (other.clone(), None),
            Some(b) => {
                let stopped =
                    b.present == Some(false) || b.state == Some(BeatState::Idle) || b.fence.is_some_and(|f| f > *fence);
                if stopped {
                    return None;
                }
                (other.clone(), b.beat_ms.max(b.renewed_ms))
            }
        },
    };
    // Its reaper kills its job at the latest the dead-man time after its
    // last renewal, which came before the lock was taken, and no later than
    // its heartbeat's last sign (each renewal stamps the heartbeat); the
    // wait is a lease from then, the margin included.
    let until = last_sign.map_or(acquired_ms, |s| s.min(acquired_ms)).saturating_add(may_run);
    (until > snap.time_ms).then(|| Busy { node: who, left: Duration::from_millis(until - snap.time_ms) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Beat;
    use proptest::prelude::*;

    const LEASE: Lease = Lease::new(Duration::from_secs(8));

    fn beat(node: &str, state: &str, field: &str, beat_ms: u64) -> Beat {
        Beat {
            node: node.to_owned(),
            state: Some(BeatState::parse(state)),
            lock_field: Some(field.to_owned()),
            beat_ms: Some(beat_ms),
            ..Beat::default()
        }
    }

    fn snap(time_ms: u64, beats: Vec<Beat>) -> Snapshot {
        Snapshot { time_ms, beats, ..Snapshot::default() }
    }

    #[test]
    fn a_running_server_is_waited_for_a_lease_after_its_last_sign() {
        let s = snap(10_000, vec![beat("a", "running", "fa", 9_000)]);
        let busy = busy_elsewhere(&s, "b", "fb", LEASE).unwrap();
        assert_eq!(busy, Busy { node: "a".to_owned(), left: Duration::from_millis(9_000 + 8_000 - 10_000) });
        // A renewal after the beat counts from the renewal.
        let mut renewed = beat("a", "running", "fa", 9_000);
        renewed.renewed_ms = Some(9_500);
        let busy = busy_elsewhere(&snap(10_000, vec![renewed]), "b", "fb", LEASE).unwrap();
        assert_eq!(busy.left, Duration::from_millis(7_500));
    }

    #[test]
    fn idle_dead_past_or_own_servers_are_not_waited_for() {
        let mut dead = beat("a", "running", "fa", 9_000);
        dead.present = Some(false);
        for (what, b) in [
            ("idle", beat("a", "idle", "", 9_000)),
            ("starting: never ran it", beat("a", "starting", "fa", 9_000)),
            ("its process is gone", dead),
            ("past its deadline", beat("a", "running", "fa", 2_000)),
            ("this very server", beat("b", "running", "fa", 9_000)),
            ("this very holding", beat("c", "running", "fb", 9_000)),
        ] {
            assert_eq!(busy_elsewhere(&snap(10_000, vec![b]), "b", "fb", LEASE), None, "{what}");
        }
    }

    #[test]
    fn the_holding_before_is_waited_for_until_something_proves_it_stopped() {
        let before = Before::Running { node: "a".to_owned(), fence: 5 };
        let acquired = 10_000;
        let at = |beats| snap(10_500, beats);
        // No heartbeat (evicted): a lease from the acquisition.
        let busy = before_busy(&at(vec![]), &before, "b", LEASE, acquired).unwrap();
        assert_eq!(busy, Busy { node: "a".to_owned(), left: Duration::from_millis(10_000 + 8_000 - 10_500) });
        // Nothing names it: the same.
        assert_eq!(before_busy(&at(vec![]), &Before::Unknown, "b", LEASE, acquired).unwrap().left, busy.left);
        // A heartbeat still running under it: from its last sign, if earlier.
        let mut running = beat("a", "running", "fa", 9_000);
        running.fence = Some(5);
        assert_eq!(
            before_busy(&at(vec![running.clone()]), &before, "b", LEASE, acquired).unwrap().left.as_millis(),
            6_500
        );
        // Proofs that it stopped.
        let mut dead = running.clone();
        dead.present = Some(false);
        let mut later = running.clone();
        later.fence = Some(6);
        for (what, b) in [
            ("its process is gone", dead),
            ("beats idle", beat("a", "idle", "", 10_200)),
            ("holds a later fence", later),
        ] {
            assert_eq!(before_busy(&at(vec![b]), &before, "b", LEASE, acquired), None, "{what}");
        }
        assert_eq!(before_busy(&at(vec![]), &Before::Stopped, "b", LEASE, acquired), None, "it said it stopped");
        assert_eq!(before_busy(&at(vec![]), &before, "a", LEASE, acquired), None, "this very server");
    }

    proptest! {
        /// Whatever the heartbeats, the holding before is never waited for
        /// past a lease after the acquisition, and always while nothing
        /// proves it stopped and that time has not passed.
        #[test]
        fn the_wait_for_the_holding_before_is_bounded_and_kept(
            now in 0u64..40_000,
            acquired in 0u64..40_000,
            beat_at in proptest::option::of((0u64..40_000, 0usize..5, proptest::option::of(0u64..40_000))),
        ) {
            let states = ["running", "stalled", "stopping", "idle", "starting"];
            let before = Before::Running { node: "a".to_owned(), fence: 5 };
            let beats: Vec<Beat> = beat_at
                .map(|(at, st, renewed)| Beat { renewed_ms: renewed, fence: Some(5), ..beat("a", states[st], "fa", at) })
                .into_iter()
                .collect();
            let proven = beats.first().is_some_and(|b| b.state.as_ref().map(BeatState::as_str) == Some("idle"));
            let busy = before_busy(&snap(now, beats), &before, "b", LEASE, acquired);
            if let Some(busy) = &busy {
                prop_assert!(now + (busy.left.as_millis() as u64) <= acquired + 8_000);
            }
            if !proven && beat_at.is_none() && now < acquired + 8_000 {
                prop_assert!(busy.is_some());
            }
        }

        /// Whatever the heartbeats, a wait never reaches past the last sign
        /// of life plus a lease, and names a server that runs it.
        #[test]
        fn a_wait_is_bounded_by_the_last_sign_of_life(
            now in 0u64..100_000,
            beats in proptest::collection::vec((0u64..100_000, 0usize..5, proptest::option::of(0u64..100_000)), 0..6),
        ) {
            let states = ["running", "stalled", "stopping", "idle", "starting"];
            let beats: Vec<Beat> = beats
                .into_iter()
                .enumerate()
                .map(|(i, (at, st, renewed))| Beat { renewed_ms: renewed, ..beat(&format!("n{i}"), states[st], "f", at) })
                .collect();
            let s = snap(now, beats.clone());
            if let Some(busy) = busy_elsewhere(&s, "me", "mine", LEASE) {
                let b = beats.iter().find(|b| b.node == busy.node).unwrap();
                prop_assert!(["running", "stalled", "stopping"].contains(&b.state.as_ref().map(BeatState::as_str).unwrap()));
                let last = b.beat_ms.max(b.renewed_ms).unwrap();
                prop_assert_eq!(now + busy.left.as_millis() as u64, last + 8_000);
            }
        }
    }
}
