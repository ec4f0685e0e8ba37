//! When a new holder of a free lock may start the job: not while another
//! server's heartbeat says it still runs it. The lock can vanish under a
//! running holder (deleted, force-unlocked, evicted, lost in a restart);
//! that holder stops at its next look, and at the latest when its reaper's
//! dead-man deadline passes. So the new holder holds the lock and waits
//! until that server beats idle, or until the deadline counted from its
//! last beat or renewal has passed, with a margin for the kill to land (a
//! dead server cannot say it stopped).
//!
//! The holding before the new one, which the lock script names
//! ([`Before`]), is waited for until a sign from its own side proves it
//! stopped: it said so (released, noted it after losing the lock, or its
//! reaper let go once the job's whole tree was gone), or its own worker
//! process beats idle or holds a later fence; with no such sign, until a
//! lease has passed since its last sign of life, at the latest since the
//! lock was taken. Absence proves nothing: a missing heartbeat, presence
//! subscription or process is as true of a frozen worker whose job runs on
//! as of a dead one, and another process may beat under the same name.
//!
//! A holder that was never a lockwatch worker (a Redisson service) has no
//! reaper to wait for: when no lockwatch holding began since a refused
//! attempt saw such a foreign holder (`foreign_since`, Redis ms), every
//! lockwatch holding that may still run lost the lock before then, and its
//! reaper kills its job within a lease of that moment.
//! Pure: a snapshot in, a wait out.

use std::time::Duration;

use crate::clock::millis;
use crate::schema::BeatState;
use crate::snapshot::{Beat, Snapshot};
use crate::work::lease::Lease;
use crate::work::outcome::Before;

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
/// processes walks `/proc` for tens of milliseconds first). A holder whose
/// heartbeat names a longer lease (workers started with different
/// `--lease`) is waited for by that one; a shorter one never shortens it. A
/// heartbeat that names none is an older lockwatch's, whose lease is not
/// known: the default one, [`OLDER_LEASE_MS`], is counted.
fn may_run(lease: Lease, theirs: Option<u64>) -> u64 {
    millis(lease.whole()).max(theirs.unwrap_or(0))
}

/// The lease a heartbeat names, or an older lockwatch's.
fn lease_of(beat: &Beat) -> u64 {
    beat.lease_ms.unwrap_or(OLDER_LEASE_MS)
}

/// The lease counted for a worker whose heartbeat does not name its own
/// (a lockwatch older than `lease_ms`): the default `--lease`.
pub const OLDER_LEASE_MS: u64 = 30_000;

/// The server the new holder `node` (holding under `field`) must wait for
/// the longest, if any, as `snap` shows them. A server counts when its
/// heartbeat says it runs the job (`running`, `stalled`, `stopping`) under
/// another lock field, until a lease after its last sign of life.
pub fn busy_elsewhere(snap: &Snapshot, node: &str, field: &str, lease: Lease) -> Option<Busy> {
    snap.beats
        .iter()
        .filter(|b| b.node != node && b.state.as_ref().is_some_and(BeatState::job_may_live))
        .filter(|b| b.lock_field.as_deref().is_some_and(|f| !f.is_empty() && f != field))
        .filter_map(|b| {
            let last_sign = b.beat_ms.max(b.renewed_ms)?;
            let until = last_sign.saturating_add(may_run(lease, Some(lease_of(b))));
            (until > snap.time_ms)
                .then(|| Busy { node: b.node.clone(), left: Duration::from_millis(until - snap.time_ms) })
        })
        .max_by_key(|b| b.left)
}

/// What a new holding knows of itself and of the holder before it, beyond
/// the lock script's answer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Taken<'a> {
    /// This worker process (its heartbeat's `instance`).
    pub instance: &'a str,
    /// When the lock was taken (Redis ms).
    pub acquired_ms: u64,
    /// Since when (Redis ms) only a foreign holder can have held the lock
    /// before this holding, if that is known.
    pub foreign_since: Option<u64>,
    /// The run id of the server process the lock was taken on, if read.
    pub server: Option<&'a str>,
}

/// The holding `before` this one, if it may still run the job as `snap`
/// shows its worker: how long, at the latest, from the snapshot. A holding
/// of this very process is never waited for: it runs no job outside one.
pub fn before_busy(snap: &Snapshot, before: &Before, taken: Taken<'_>, lease: Lease) -> Option<Busy> {
    let mut run_for;
    let (who, last_sign) = match before {
        Before::Stopped => return None,
        Before::Running { instance, .. } if !instance.is_empty() && instance == taken.instance => return None,
        // Nothing names it: no later than since a foreign holder held the
        // lock, by the longest lease a heartbeat names whose worker may
        // still live by it.
        Before::Unknown => {
            let alive = |b: &&Beat| b.beat_ms.max(b.renewed_ms).is_some_and(|s| s + lease_of(b) > snap.time_ms);
            run_for = may_run(lease, snap.beats.iter().filter(alive).map(lease_of).max());
            (String::new(), taken.foreign_since)
        }
        Before::Running { node: other, fence, instance, lease_ms } => {
            // Its lease as recorded with the lock (a record without one is
            // an older lockwatch's), whether or not its heartbeat is left.
            run_for = may_run(lease, Some(lease_ms.unwrap_or(OLDER_LEASE_MS)));
            // Only its own process's heartbeat speaks for it: another may
            // beat under the same name (restarted, or on a cloned host).
            let own = snap
                .beats
                .iter()
                .find(|b| &b.node == other && !instance.is_empty() && b.instance.as_deref() == Some(instance.as_str()));
            match own {
                None => (other.clone(), None),
                Some(b) => {
                    if b.state == Some(BeatState::Idle) || b.fence.is_some_and(|f| f > *fence) {
                        return None;
                    }
                    run_for = run_for.max(lease_of(b));
                    // Its heartbeat written on another server process than
                    // the one this holding's worker is on (a primary left
                    // behind by a failover, a partition): its renewals there
                    // did not reach this copy, so its last sign here says
                    // nothing of its last renewal.
                    let elsewhere = match (ours_on(snap, taken), b.presence_on.as_deref()) {
                        (Some(ours), Some(theirs)) => !theirs.is_empty() && ours != theirs,
                        _ => false,
                    };
                    (other.clone(), if elsewhere { None } else { b.beat_ms.max(b.renewed_ms) })
                }
            }
        }
    };
    // Its reaper kills its job at the latest the dead-man time after its
    // last renewal, which came before the lock was taken, and no later than
    // its heartbeat's last sign (each renewal stamps the heartbeat); the
    // wait is a lease from then, the margin included.
    let acquired_ms = taken.acquired_ms;
    let until = last_sign.map_or(acquired_ms, |s| s.min(acquired_ms)).saturating_add(run_for);
    (until > snap.time_ms).then(|| Busy { node: who, left: Duration::from_millis(until - snap.time_ms) })
}

/// The server process (run id) this holding is on: as read when the lock
/// was taken, else as its own worker's heartbeat names its presence
/// subscription's (which may lag behind a move).
fn ours_on<'s>(snap: &'s Snapshot, taken: Taken<'s>) -> Option<&'s str> {
    taken.server.filter(|on| !on.is_empty()).or_else(|| {
        snap.beats
            .iter()
            .find(|b| !taken.instance.is_empty() && b.instance.as_deref() == Some(taken.instance))
            .and_then(|b| b.presence_on.as_deref())
            .filter(|on| !on.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const LEASE: Lease = Lease::new(Duration::from_secs(8));

    fn beat(node: &str, state: &str, field: &str, beat_ms: u64) -> Beat {
        Beat {
            node: node.to_owned(),
            state: Some(BeatState::parse(state)),
            lock_field: Some(field.to_owned()),
            beat_ms: Some(beat_ms),
            instance: Some(format!("{node}-1")),
            lease_ms: Some(millis(LEASE.whole())),
            ..Beat::default()
        }
    }

    fn snap(time_ms: u64, beats: Vec<Beat>) -> Snapshot {
        Snapshot { time_ms, beats, ..Snapshot::default() }
    }

    fn a_running() -> Before {
        Before::Running {
            node: "a".to_owned(),
            fence: 5,
            instance: "a-1".to_owned(),
            lease_ms: Some(millis(LEASE.whole())),
        }
    }

    fn taken(acquired_ms: u64) -> Taken<'static> {
        Taken { instance: "b-1", acquired_ms, foreign_since: None, server: None }
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
    fn idle_past_or_own_servers_are_not_waited_for() {
        for (what, b) in [
            ("idle", beat("a", "idle", "", 9_000)),
            ("starting: never ran it", beat("a", "starting", "fa", 9_000)),
            ("past its deadline", beat("a", "running", "fa", 2_000)),
            ("this very server", beat("b", "running", "fa", 9_000)),
            ("this very holding", beat("c", "running", "fb", 9_000)),
        ] {
            assert_eq!(busy_elsewhere(&snap(10_000, vec![b]), "b", "fb", LEASE), None, "{what}");
        }
    }

    #[test]
    fn a_missing_presence_subscription_proves_nothing() {
        // A frozen worker whose connections dropped looks just like a dead one.
        let mut cut_off = beat("a", "running", "fa", 9_000);
        cut_off.present = Some(false);
        cut_off.fence = Some(5);
        let s = snap(10_000, vec![cut_off]);
        assert_eq!(busy_elsewhere(&s, "b", "fb", LEASE).map(|b| b.left.as_millis()), Some(7_000));
        assert_eq!(before_busy(&s, &a_running(), taken(10_000), LEASE).map(|b| b.left.as_millis()), Some(7_000));
    }

    #[test]
    fn a_holding_before_on_another_server_process_is_waited_for_a_lease_from_the_acquisition() {
        // The holder before beat last on the old primary (its run id): its
        // renewals there, after this copy was cut off, are not seen here.
        let mut theirs = beat("a", "running", "fa", 2_000);
        theirs.fence = Some(5);
        theirs.presence_on = Some("old-primary".to_owned());
        let mut ours = beat("b", "starting", "fb", 10_000);
        ours.presence_on = Some("new-primary".to_owned());
        let s = snap(10_500, vec![theirs.clone(), ours.clone()]);
        let busy = before_busy(&s, &a_running(), taken(10_000), LEASE).map(|b| b.left.as_millis());
        assert_eq!(busy, Some(10_000 + 8_000 - 10_500));
        // On the same server process, its last sign counts (long past here).
        ours.presence_on = theirs.presence_on.clone();
        assert_eq!(
            before_busy(&snap(10_500, vec![theirs.clone(), ours.clone()]), &a_running(), taken(10_000), LEASE),
            None
        );
        // The server read at the acquisition counts over a heartbeat that lags.
        let read = Taken { server: Some("new-primary"), ..taken(10_000) };
        let s = snap(10_500, vec![theirs.clone(), ours.clone()]);
        assert_eq!(before_busy(&s, &a_running(), read, LEASE).map(|b| b.left.as_millis()), Some(7_500));
        // Where neither says, as before.
        ours.presence_on = None;
        assert_eq!(before_busy(&snap(10_500, vec![theirs, ours]), &a_running(), taken(10_000), LEASE), None);
    }

    #[test]
    fn the_holding_before_is_waited_for_until_its_own_side_proves_it_stopped() {
        let acquired = 10_000;
        let at = |beats| snap(10_500, beats);
        // No heartbeat (evicted): a lease from the acquisition.
        let busy = before_busy(&at(vec![]), &a_running(), taken(acquired), LEASE).unwrap();
        assert_eq!(busy, Busy { node: "a".to_owned(), left: Duration::from_millis(10_000 + 8_000 - 10_500) });
        // Nothing names it: the same.
        assert_eq!(before_busy(&at(vec![]), &Before::Unknown, taken(acquired), LEASE).unwrap().left, busy.left);
        // A heartbeat still running under it: from its last sign, if earlier.
        let mut running = beat("a", "running", "fa", 9_000);
        running.fence = Some(5);
        assert_eq!(
            before_busy(&at(vec![running.clone()]), &a_running(), taken(acquired), LEASE).unwrap().left.as_millis(),
            6_500
        );
        // Proofs that it stopped, from its own worker process.
        let mut later = running.clone();
        later.fence = Some(6);
        for (what, b) in [("beats idle", beat("a", "idle", "", 10_200)), ("holds a later fence", later.clone())] {
            assert_eq!(before_busy(&at(vec![b]), &a_running(), taken(acquired), LEASE), None, "{what}");
        }
        // The same words from another process under its name prove nothing.
        for b in [beat("a", "idle", "", 10_200), later] {
            let other = Beat { instance: Some("a-2".to_owned()), ..b };
            let busy = before_busy(&at(vec![other]), &a_running(), taken(acquired), LEASE);
            assert_eq!(busy.map(|b| b.left.as_millis()), Some(7_500), "another process under the name");
        }
        // An older lockwatch's record names no process: nothing speaks for it.
        let old = Before::Running { node: "a".to_owned(), fence: 5, instance: String::new(), lease_ms: None };
        assert!(before_busy(&at(vec![beat("a", "idle", "", 10_200)]), &old, taken(acquired), LEASE).is_some());
        assert_eq!(before_busy(&at(vec![]), &Before::Stopped, taken(acquired), LEASE), None, "it said it stopped");
        let mine = Before::Running { node: "a".to_owned(), fence: 5, instance: "b-1".to_owned(), lease_ms: None };
        assert_eq!(before_busy(&at(vec![]), &mine, taken(acquired), LEASE), None, "this very process");
    }

    #[test]
    fn after_a_foreign_holder_nothing_unnamed_is_waited_for_past_a_lease_from_when_it_was_seen() {
        let t = |since| Taken { instance: "b-1", acquired_ms: 10_000, foreign_since: Some(since), server: None };
        // Seen a lease and more ago: nothing to wait for.
        assert_eq!(before_busy(&snap(10_001, vec![]), &Before::Unknown, t(2_000), LEASE), None);
        // Seen just before: a lease from then.
        let busy = before_busy(&snap(10_001, vec![]), &Before::Unknown, t(9_000), LEASE).unwrap();
        assert_eq!(busy.left.as_millis(), 6_999);
        // A lockwatch holding the record names is waited for all the same.
        let busy = before_busy(&snap(10_001, vec![]), &a_running(), t(2_000), LEASE).unwrap();
        assert_eq!(busy.left.as_millis(), 7_999);
    }

    #[test]
    fn a_longer_lease_is_known_from_the_record_or_a_live_heartbeat_when_the_other_is_gone() {
        // The record keeps the holder's 30 s lease; its heartbeat is gone.
        let recorded =
            Before::Running { node: "a".to_owned(), fence: 5, instance: "a-1".to_owned(), lease_ms: Some(30_000) };
        let busy = before_busy(&snap(10_000, vec![]), &recorded, taken(10_000), LEASE).unwrap();
        assert_eq!(busy.left.as_millis(), 30_000);
        // No record: a heartbeat that may still live names its 30 s; one
        // silent for longer than its lease names nothing.
        let mut long = beat("a", "running", "fa", 9_000);
        long.lease_ms = Some(30_000);
        let busy = before_busy(&snap(10_000, vec![long.clone()]), &Before::Unknown, taken(10_000), LEASE).unwrap();
        assert_eq!(busy.left.as_millis(), 30_000);
        long.beat_ms = Some(1);
        let busy = before_busy(&snap(40_000, vec![long]), &Before::Unknown, taken(40_000), LEASE).unwrap();
        assert_eq!(busy.left.as_millis(), 8_000);
    }

    #[test]
    fn a_server_with_a_longer_lease_is_waited_for_by_its_own() {
        // Its reaper kills by its 30 s lease, not by this worker's 8 s.
        let mut long = beat("a", "running", "fa", 9_000);
        long.lease_ms = Some(30_000);
        long.fence = Some(5);
        let s = snap(10_000, vec![long.clone()]);
        assert_eq!(busy_elsewhere(&s, "b", "fb", LEASE).map(|b| b.left.as_millis()), Some(29_000));
        assert_eq!(before_busy(&s, &a_running(), taken(10_000), LEASE).map(|b| b.left.as_millis()), Some(29_000));
        // A shorter one does not shorten this worker's own.
        long.lease_ms = Some(1_000);
        let s = snap(10_000, vec![long.clone()]);
        assert_eq!(busy_elsewhere(&s, "b", "fb", LEASE).map(|b| b.left.as_millis()), Some(7_000));
        // None named: an older lockwatch's, waited for by the default lease.
        long.lease_ms = None;
        let s = snap(10_000, vec![long]);
        let older = u128::from(OLDER_LEASE_MS) - 1_000;
        assert_eq!(busy_elsewhere(&s, "b", "fb", LEASE).map(|b| b.left.as_millis()), Some(older));
    }

    proptest! {
        /// Whatever the heartbeats, the holding before is never waited for
        /// past a lease after the acquisition, and always while nothing
        /// from its own process proves it stopped and that time has not passed.
        #[test]
        fn the_wait_for_the_holding_before_is_bounded_and_kept(
            now in 0u64..40_000,
            acquired in 0u64..40_000,
            beat_at in proptest::option::of((0u64..40_000, 0usize..5, proptest::option::of(0u64..40_000), any::<bool>(), proptest::option::of(any::<bool>()))),
        ) {
            let states = ["running", "stalled", "stopping", "idle", "starting"];
            let beats: Vec<Beat> = beat_at
                .map(|(at, st, renewed, same, present)| Beat {
                    renewed_ms: renewed,
                    fence: Some(5),
                    present,
                    instance: Some(if same { "a-1" } else { "a-2" }.to_owned()),
                    ..beat("a", states[st], "fa", at)
                })
                .into_iter()
                .collect();
            let proven = beats.first().is_some_and(|b| {
                b.state.as_ref().map(BeatState::as_str) == Some("idle") && b.instance.as_deref() == Some("a-1")
            });
            let busy = before_busy(&snap(now, beats), &a_running(), taken(acquired), LEASE);
            if let Some(busy) = &busy {
                prop_assert!(now + (busy.left.as_millis() as u64) <= acquired + 8_000);
            }
            let sign = beat_at.filter(|b| b.3).map(|(at, _, renewed, ..)| at.max(renewed.unwrap_or(0)));
            if !proven && now < sign.unwrap_or(acquired).min(acquired) + 8_000 {
                prop_assert!(busy.is_some());
            }
        }

        /// Whatever the heartbeats, a wait never reaches past the last sign
        /// of life plus a lease, and names a server that runs it.
        #[test]
        fn a_wait_is_bounded_by_the_last_sign_of_life(
            now in 0u64..100_000,
            beats in proptest::collection::vec((0u64..100_000, 0usize..5, proptest::option::of(0u64..100_000), proptest::option::of(any::<bool>())), 0..6),
        ) {
            let states = ["running", "stalled", "stopping", "idle", "starting"];
            let beats: Vec<Beat> = beats
                .into_iter()
                .enumerate()
                .map(|(i, (at, st, renewed, present))| Beat { renewed_ms: renewed, present, ..beat(&format!("n{i}"), states[st], "f", at) })
                .collect();
            let s = snap(now, beats.clone());
            let busy = busy_elsewhere(&s, "me", "mine", LEASE);
            if let Some(busy) = &busy {
                let b = beats.iter().find(|b| b.node == busy.node).unwrap();
                prop_assert!(["running", "stalled", "stopping"].contains(&b.state.as_ref().map(BeatState::as_str).unwrap()));
                let last = b.beat_ms.max(b.renewed_ms).unwrap();
                prop_assert_eq!(now + busy.left.as_millis() as u64, last + 8_000);
            }
            // Whatever their presence, a running heartbeat within its lease is waited for.
            let live = beats.iter().any(|b| {
                b.state.as_ref().is_some_and(BeatState::job_may_live) && b.beat_ms.max(b.renewed_ms).unwrap() + 8_000 > now
            });
            prop_assert_eq!(busy.is_some(), live);
        }
    }
}
