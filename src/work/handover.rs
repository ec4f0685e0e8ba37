//! When a new holder of a free lock may start the job: not while another
//! server's heartbeat says it still runs it. The lock can vanish under a
//! running holder (deleted, force-unlocked, evicted, lost in a restart);
//! that holder stops at its next look, and at the latest when its reaper's
//! dead-man deadline passes. So the new holder holds the lock and waits
//! until that server beats idle, or until the deadline counted from its
//! last beat or renewal has passed (a dead server cannot say it stopped).
//! Pure: a snapshot in, a wait out.

use std::time::Duration;

use crate::clock::millis;
use crate::snapshot::Snapshot;
use crate::work::lock::dead_man;

/// Another server that may still run the job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    pub node: String,
    /// How long after the snapshot its job may still run.
    pub left: Duration,
}

/// The server the new holder `node` (holding under `field`) must wait for
/// the longest, if any, as `snap` shows them. A server counts when its
/// heartbeat says it runs the job (`running`, `stalled`, `stopping`) under
/// another lock field, and its process is not known dead: a worker's death
/// closes its presence subscription and its reaper kills the job at once.
pub fn busy_elsewhere(snap: &Snapshot, node: &str, field: &str, lease: Duration) -> Option<Busy> {
    let may_run = millis(dead_man(lease));
    snap.beats
        .iter()
        .filter(|b| b.node != node && matches!(b.state.as_deref(), Some("running" | "stalled" | "stopping")))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Beat;
    use proptest::prelude::*;

    const LEASE: Duration = Duration::from_secs(8);

    fn beat(node: &str, state: &str, field: &str, beat_ms: u64) -> Beat {
        Beat {
            node: node.to_owned(),
            state: Some(state.to_owned()),
            lock_field: Some(field.to_owned()),
            beat_ms: Some(beat_ms),
            ..Beat::default()
        }
    }

    fn snap(time_ms: u64, beats: Vec<Beat>) -> Snapshot {
        Snapshot { time_ms, beats, ..Snapshot::default() }
    }

    #[test]
    fn a_running_server_is_waited_for_until_its_dead_man_deadline() {
        let s = snap(10_000, vec![beat("a", "running", "fa", 9_000)]);
        let busy = busy_elsewhere(&s, "b", "fb", LEASE).unwrap();
        assert_eq!(busy, Busy { node: "a".to_owned(), left: Duration::from_millis(9_000 + 7_000 - 10_000) });
        // A renewal after the beat counts from the renewal.
        let mut renewed = beat("a", "running", "fa", 9_000);
        renewed.renewed_ms = Some(9_500);
        let busy = busy_elsewhere(&snap(10_000, vec![renewed]), "b", "fb", LEASE).unwrap();
        assert_eq!(busy.left, Duration::from_millis(6_500));
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

    proptest! {
        /// Whatever the heartbeats, a wait never reaches past the last sign
        /// of life plus the dead-man time, and names a server that runs it.
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
                prop_assert!(["running", "stalled", "stopping"].contains(&b.state.as_deref().unwrap()));
                let last = b.beat_ms.max(b.renewed_ms).unwrap();
                prop_assert_eq!(now + busy.left.as_millis() as u64, last + 7_000);
            }
        }
    }
}
