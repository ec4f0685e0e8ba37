//! Tests of the engine: hand-made scenarios, then property tests of its
//! invariants over random sequences of snapshots and failed reads.

use proptest::prelude::*;

use super::*;
use crate::snapshot::{Beat, Flag, Lock, LockKind, Snapshot};

const JOB: &str = "outbound";
const LOCK: &str = "{outbound}:lock";

/// A world the tests script: who holds the lock, who beats, who enabled it.
#[derive(Debug, Clone)]
struct World {
    time_ms: u64,
    holder: Option<(&'static str, &'static str)>,
    fence: i64,
    ttl_ms: u64,
    beating: bool,
    enabled: bool,
    /// Redis time the flag was last flipped.
    flag_at_ms: u64,
}

impl World {
    fn running(node: &'static str, field: &'static str) -> World {
        World {
            time_ms: 1_000_000,
            holder: Some((node, field)),
            fence: 1,
            ttl_ms: 30_000,
            beating: true,
            enabled: true,
            flag_at_ms: 0,
        }
    }

    fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot { time_ms: self.time_ms, fence: Some(self.fence), ..Default::default() };
        if let Some((node, field)) = self.holder {
            snap.lock = Lock {
                kind: LockKind::Redisson,
                holders: vec![field.to_owned()],
                ttl_ms: Some(self.ttl_ms),
                ..Default::default()
            };
            if self.beating {
                snap.beats.push(Beat {
                    node: node.to_owned(),
                    lock_field: Some(field.to_owned()),
                    fence: Some(self.fence),
                    beat_ms: Some(self.time_ms.saturating_sub(500)),
                    started_ms: Some(self.time_ms.saturating_sub(60_000)),
                    state: Some("running".to_owned()),
                    ..Default::default()
                });
            }
        }
        snap.flags.push(Flag {
            user: "alice".to_owned(),
            on: Some(self.enabled),
            at_ms: Some(self.flag_at_ms),
            host: None,
        });
        snap
    }
}

fn feed(t: &mut Tracker, obs: Observation) -> Step {
    step(t, JOB, LOCK, obs, &Config::default())
}

fn read(t: &mut Tracker, w: &World) -> Step {
    feed(t, Observation::Read(w.snapshot()))
}

fn kinds(s: &Step) -> Vec<EventKind> {
    s.events.iter().map(|e| e.event).collect()
}

#[test]
fn first_look_reports_the_state_without_events() {
    let mut t = Tracker::default();
    let s = read(&mut t, &World::running("srv-a", "uuid-a:1"));
    assert_eq!(s.status.state, State::Running);
    assert_eq!(s.status.holder.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
    assert!(s.events.is_empty());
}

#[test]
fn quick_holder_change_through_a_gap_is_one_failover() {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.holder = None;
    w.time_ms += 1_000;
    let gap = read(&mut t, &w);
    assert_eq!(gap.status.state, State::Running, "a short gap keeps the last state");
    assert!(gap.events.is_empty());
    assert!(gap.next_check_ms.is_some(), "the end of the failover window is armed");
    w.holder = Some(("srv-b", "uuid-b:1"));
    w.fence = 2;
    w.time_ms += 800;
    let s = read(&mut t, &w);
    assert_eq!(kinds(&s), vec![EventKind::Failover]);
    assert_eq!(s.events[0].from.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
    assert_eq!(s.events[0].to.as_ref().and_then(|h| h.node.as_deref()), Some("srv-b"));
}

#[test]
fn a_long_gap_is_a_death_then_a_recovery() {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.holder = None;
    w.time_ms += 1_000;
    let _ = read(&mut t, &w);
    w.time_ms += Config::default().failover_window_ms;
    let died = read(&mut t, &w);
    assert_eq!(died.status.state, State::Down);
    assert_eq!(kinds(&died), vec![EventKind::Died]);
    w.holder = Some(("srv-b", "uuid-b:1"));
    w.fence = 2;
    w.time_ms += 1_000;
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Recovered]);
}

#[test]
fn a_new_fence_under_the_same_field_is_a_failover() {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.fence = 2;
    w.time_ms += 1_000;
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Failover]);
}

#[test]
fn a_silent_holder_is_stale_and_says_whether_the_lock_is_renewed() {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.beating = false;
    w.time_ms += 1_000;
    w.ttl_ms -= 1_000;
    let first = read(&mut t, &w);
    assert_eq!(first.status.state, State::Running, "one look is not yet a confirmation");
    w.time_ms += 200;
    w.ttl_ms -= 200;
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Stale);
    assert_eq!(kinds(&s), vec![EventKind::Stalled]);
    assert!(s.status.reason.starts_with("dying"), "{}", s.status.reason);
    w.time_ms += 1_000;
    w.ttl_ms = 30_000;
    let renewed = read(&mut t, &w);
    assert!(renewed.status.reason.starts_with("hung"), "{}", renewed.status.reason);
    assert!(renewed.events.is_empty());
}

#[test]
fn disabling_stops_without_a_death() {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.enabled = false;
    w.holder = None;
    w.time_ms += 1_000;
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Stopped);
    assert_eq!(kinds(&s), vec![EventKind::Stopped]);
}

#[test]
fn losing_redis_is_one_unreachable_then_one_reachable() {
    let mut t = Tracker::default();
    let w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let s = feed(&mut t, Observation::Failed { reason: "refused".into(), elapsed_ms: 1_000 });
        assert_ne!(s.status.state, State::Stopped);
        seen.extend(kinds(&s));
    }
    assert_eq!(seen, vec![EventKind::Unreachable]);
    assert_eq!(t.status().map(|s| s.state), Some(State::Unknown));
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Reachable]);
}

#[test]
fn two_fresh_claims_are_a_conflict() {
    let mut t = Tracker::default();
    let w = World::running("srv-a", "uuid-a:1");
    let mut snap = w.snapshot();
    snap.beats.push(Beat {
        node: "srv-b".into(),
        lock_field: Some("uuid-b:1".into()),
        beat_ms: Some(w.time_ms - 100),
        state: Some("running".into()),
        ..Default::default()
    });
    let s = feed(&mut t, Observation::Read(snap));
    assert_eq!(s.status.state, State::Conflict, "{}", s.status.reason);
}

#[test]
fn a_predecessor_that_stopped_beating_before_the_takeover_is_no_conflict() {
    let mut t = Tracker::default();
    let w = World::running("srv-b", "uuid-b:1");
    let mut snap = w.snapshot();
    // srv-a died a moment before srv-b took over; its last beat is still young.
    snap.beats[0].started_ms = Some(w.time_ms - 1_000);
    snap.beats.push(Beat {
        node: "srv-a".into(),
        lock_field: Some("uuid-a:1".into()),
        beat_ms: Some(w.time_ms - 2_000),
        state: Some("running".into()),
        ..Default::default()
    });
    assert_eq!(feed(&mut t, Observation::Read(snap)).status.state, State::Running);
}

#[test]
fn lock_only_mode_counts_a_held_lock_as_running() {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    w.beating = false;
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = step(&mut t, JOB, LOCK, Observation::Read(w.snapshot()), &cfg);
    assert_eq!(s.status.state, State::Running);
}

// ---- properties ----

/// One scripted change of the world between two looks.
#[derive(Debug, Clone)]
enum Change {
    Wait(u64),
    Holder(Option<u8>),
    NewFence,
    Beating(bool),
    Enabled(bool),
    Renew,
    Fail(u64),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        4 => (0u64..4_000).prop_map(Change::Wait),
        2 => prop::option::of(0u8..3).prop_map(Change::Holder),
        1 => Just(Change::NewFence),
        1 => any::<bool>().prop_map(Change::Beating),
        1 => any::<bool>().prop_map(Change::Enabled),
        1 => Just(Change::Renew),
        2 => (0u64..5_000).prop_map(Change::Fail),
    ]
}

const NODES: [(&str, &str); 3] = [("srv-a", "uuid-a:1"), ("srv-b", "uuid-b:7"), ("srv-c", "uuid-c:3")];

/// Runs a script; returns, per look, the observation and the step.
fn run(changes: &[Change], offset: u64, elapsed_scale: u64) -> Vec<(Observation, Step)> {
    let mut t = Tracker::default();
    let mut w = World::running("srv-a", "uuid-a:1");
    w.time_ms += offset;
    w.flag_at_ms += offset;
    let mut out = Vec::new();
    let mut look = |t: &mut Tracker, obs: Observation| {
        let s = feed(t, obs.clone());
        out.push((obs, s));
    };
    look(&mut t, Observation::Read(w.snapshot()));
    for c in changes {
        let obs = match c {
            Change::Wait(ms) => {
                w.time_ms += ms;
                w.ttl_ms = w.ttl_ms.saturating_sub(*ms).max(1);
                Observation::Read(w.snapshot())
            }
            Change::Holder(h) => {
                w.holder = h.map(|i| NODES[usize::from(i)]);
                w.fence += 1;
                w.ttl_ms = 30_000;
                Observation::Read(w.snapshot())
            }
            Change::NewFence => {
                w.fence += 1;
                Observation::Read(w.snapshot())
            }
            Change::Beating(b) => {
                w.beating = *b;
                Observation::Read(w.snapshot())
            }
            Change::Enabled(e) => {
                w.enabled = *e;
                w.flag_at_ms = w.time_ms;
                Observation::Read(w.snapshot())
            }
            Change::Renew => {
                w.ttl_ms = 30_000;
                Observation::Read(w.snapshot())
            }
            Change::Fail(ms) => Observation::Failed { reason: "refused".into(), elapsed_ms: ms * elapsed_scale },
        };
        look(&mut t, obs);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Never `stopped` because Redis could not be read: a failed read never
    /// turns another state into `stopped`, and enough of them give `unknown`.
    #[test]
    fn never_stopped_when_redis_was_unreadable(changes in prop::collection::vec(change(), 0..40)) {
        let looks = run(&changes, 0, 1);
        let mut failures = 0;
        for pair in looks.windows(2) {
            let (prev, (obs, step)) = (&pair[0].1, &pair[1]);
            if let Observation::Failed { .. } = obs {
                failures += 1;
                if prev.status.state != State::Stopped {
                    prop_assert_ne!(step.status.state, State::Stopped);
                }
                if failures >= Config::default().confirmations {
                    prop_assert_eq!(step.status.state, State::Unknown);
                }
            } else {
                failures = 0;
            }
        }
    }

    /// Events happen only on edges: a step whose state and holder did not
    /// change emits nothing, and each event matches the state it leads to.
    #[test]
    fn an_event_only_on_an_edge(changes in prop::collection::vec(change(), 0..40)) {
        let looks = run(&changes, 0, 1);
        for pair in looks.windows(2) {
            let (prev, step) = (&pair[0].1.status, &pair[1].1);
            let moved = match (&prev.holder, &step.status.holder) {
                (Some(a), Some(b)) => a.differs_from(b),
                _ => false,
            };
            if prev.state == step.status.state && !moved {
                prop_assert!(step.events.iter().all(|e| matches!(e.event, EventKind::Reachable)),
                    "{:?} → {:?}: {:?}", prev.state, step.status.state, step.events);
            }
            for e in &step.events {
                let expected = match e.event {
                    EventKind::Started | EventKind::Recovered | EventKind::Failover => State::Running,
                    EventKind::Stopped => State::Stopped,
                    EventKind::Died => State::Down,
                    EventKind::Stalled => State::Stale,
                    EventKind::Conflict => State::Conflict,
                    EventKind::Unreachable => State::Unknown,
                    EventKind::Reachable => { prop_assert_eq!(prev.state, State::Unknown); continue; }
                };
                prop_assert_eq!(step.status.state, expected, "{:?}", e);
            }
            prop_assert!(step.events.len() <= 2);
        }
    }

    /// A holder change through a gap shorter than the failover window is one
    /// `failover`, never `died` + `recovered`, however the gap is observed.
    #[test]
    fn a_quick_holder_change_is_one_failover(
        gap_looks in prop::collection::vec(0u64..1_000, 0..5),
        to in 1u8..3,
        same_field in any::<bool>(),
    ) {
        let window = Config::default().failover_window_ms;
        prop_assume!(gap_looks.iter().sum::<u64>() < window);
        let mut changes = vec![Change::Holder(None)];
        changes.extend(gap_looks.iter().map(|ms| Change::Wait(*ms)));
        changes.push(Change::Holder(Some(if same_field { 0 } else { to })));
        let looks = run(&changes, 0, 1);
        let events: Vec<EventKind> = looks.iter().flat_map(|(_, s)| s.events.iter().map(|e| e.event)).collect();
        prop_assert_eq!(events, vec![EventKind::Failover]);
    }

    /// Ages come only from Redis time: shifting every Redis timestamp, or
    /// changing how much local time the desktop says passed between failed
    /// reads, changes no state and no event.
    #[test]
    fn desktop_clock_changes_nothing(
        changes in prop::collection::vec(change(), 0..40),
        offset in 0u64..10_000_000_000,
        scale in 0u64..1_000,
    ) {
        let base = run(&changes, 0, 1);
        let moved = run(&changes, offset, scale);
        for ((_, a), (_, b)) in base.iter().zip(&moved) {
            prop_assert_eq!(a.status.state, b.status.state);
            prop_assert_eq!(&a.status.reason, &b.status.reason);
            let ea: Vec<_> = a.events.iter().map(|e| (e.event, e.from.clone(), e.to.clone())).collect();
            let eb: Vec<_> = b.events.iter().map(|e| (e.event, e.from.clone(), e.to.clone())).collect();
            prop_assert_eq!(ea, eb);
        }
    }

    /// Looking again at an unchanged world changes nothing.
    #[test]
    fn the_same_look_twice_is_quiet(changes in prop::collection::vec(change(), 0..30)) {
        let mut t = Tracker::default();
        let looks = run(&changes, 0, 1);
        for (obs, _) in &looks {
            let _ = feed(&mut t, obs.clone());
        }
        if let Some((Observation::Read(snap), _)) = looks.last() {
            // Confirmations may still be pending: settle, then expect silence.
            for _ in 0..Config::default().confirmations {
                let _ = feed(&mut t, Observation::Read(snap.clone()));
            }
            let again = feed(&mut t, Observation::Read(snap.clone()));
            prop_assert!(again.events.is_empty(), "{:?}", again.events);
        }
    }
}
