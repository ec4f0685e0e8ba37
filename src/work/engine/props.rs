//! Property tests of the engine over random interleavings of looks,
//! renewals, pauses, losses and flips: it never starts the job without a
//! confirmed lease, never keeps it past one, never runs it beside the
//! server before, and, when nothing is wrong, runs it.

use proptest::prelude::*;

use super::world::{Predecessor, World};
use crate::clock::millis;

/// One change of the world, then some time.
#[derive(Debug, Clone)]
enum Change {
    Wait(u64),
    Pause(u64),
    Reachable(bool),
    Hung(bool),
    /// Each answer of Redis takes this long from now on.
    Latency(u64),
    Replica(bool),
    Flags(Option<bool>),
    JobExits,
    LockGone,
    Taken,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        6 => (0u64..20_000).prop_map(Change::Wait),
        1 => (0u64..40_000).prop_map(Change::Pause),
        2 => any::<bool>().prop_map(Change::Reachable),
        1 => any::<bool>().prop_map(Change::Hung),
        2 => (0u64..3_000).prop_map(Change::Latency),
        1 => any::<bool>().prop_map(Change::Replica),
        2 => prop::option::of(any::<bool>()).prop_map(Change::Flags),
        1 => Just(Change::JobExits),
        1 => Just(Change::LockGone),
        1 => Just(Change::Taken),
    ]
}

/// The server before, if any: its job ends within its reaper's kill after
/// its last sign, which came before this world began.
fn before() -> impl Strategy<Value = Option<Predecessor>> {
    let kill = millis(super::world::LEASE.kill_after());
    prop::option::of((0u64..kill, 0u64..5_000, any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        move |(run, ago, says_idle, beat_kept, recorded)| {
            let last_sign = 100_000 - ago;
            Predecessor { ends_at: last_sign + run, last_sign: beat_kept.then_some(last_sign), says_idle, recorded }
        },
    ))
}

fn apply(w: &mut World, change: &Change) {
    match *change {
        Change::Wait(ms) => w.wait(ms),
        Change::Pause(ms) => w.pause(ms),
        Change::Reachable(up) => w.reachable = up,
        Change::Hung(hung) => w.hung = hung,
        Change::Latency(ms) => w.latency = ms,
        Change::Replica(ok) => w.replica = ok,
        Change::Flags(on) => w.enabled = on,
        Change::JobExits => w.job_exits(),
        // Somebody deletes the lock (`DEL`, a force-unlock, eviction).
        Change::LockGone => w.lock = None,
        Change::Taken => w.taken(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn the_lease_and_the_server_before_are_always_kept(
        before in before(),
        changes in prop::collection::vec(change(), 1..40),
    ) {
        let mut w = World::new(Some(true), before);
        for c in &changes {
            apply(&mut w, c);
            w.wait(100);
        }
        prop_assert!(w.broken.is_empty(), "{:?}\nafter {:?}", w.broken, changes);
    }

    #[test]
    fn once_nothing_is_wrong_the_job_runs_within_a_lease_and_a_tick(
        before in before(),
        changes in prop::collection::vec(change(), 0..30),
    ) {
        let mut w = World::new(Some(true), before);
        for c in &changes {
            apply(&mut w, c);
        }
        // Everything mends: Redis answers, a replica confirms, the flag is
        // on, the worker runs; a lock somebody took expires.
        w.reachable = true;
        w.hung = false;
        w.latency = 0;
        w.replica = true;
        w.enabled = Some(true);
        w.wait(4 * millis(super::world::LEASE.whole()) + 40_000);
        prop_assert!(w.job, "not running at {} after {:?}; starts {:?}, kills {:?}", w.now, changes, w.starts, w.kills);
        prop_assert!(w.broken.is_empty(), "{:?}", w.broken);
    }
}
