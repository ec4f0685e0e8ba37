//! The engine's decisions in scenarios written out by hand: each the
//! story of one holding, told in looks, answers and deadlines.

use std::time::Duration;

use super::world::{LEASE, NODE, Predecessor, TICK, World};
use super::*;
use crate::cause::WaitCause;
use crate::snapshot::{Beat, Lock as LockSeen};
use crate::work::handover::Busy;
use crate::work::outcome::Wait;

fn at(ms: u64) -> Boot {
    Boot::from_millis(ms)
}

fn engine() -> Engine {
    Engine::new(rules(None, Some(Duration::from_secs(5))))
}

fn rules(every: Option<Duration>, stall_after: Option<Duration>) -> Rules {
    Rules { node: NODE.to_owned(), instance: format!("{NODE}-1"), lease: LEASE, every, stall_after }
}

fn held_by(field: &str, time_ms: u64) -> Snapshot {
    Snapshot {
        time_ms,
        lock: LockSeen { holders: vec![field.to_owned()], ..LockSeen::default() },
        ..Snapshot::default()
    }
}

fn acquired(fence: i64, before: Before) -> Acquire {
    Acquire::Acquired { fence, wait: None, before, at_ms: 1_000, counter: Some(fence - 1) }
}

/// An engine holding fence 7 since `at(1_000)`, its job started.
fn running() -> Engine {
    let mut e = engine();
    let snap = Snapshot { time_ms: 1_000, ..Snapshot::default() };
    assert_eq!(e.look(at(1_000), &snap, "f", Some(true)), vec![Action::Acquire]);
    let _ = e.acquired(at(1_000), at(1_000), acquired(7, Before::Stopped), &snap, "f");
    assert_eq!(e.tend(at(1_000), Renewal::Renewed(at(1_000))), Some(Action::NoteStarted));
    assert_eq!(e.start_noted(at(1_000), true, Renewal::Renewed(at(1_000))), Some(Action::Start { fence: 7 }));
    e.job_started(at(1_000));
    e
}

#[test]
fn a_free_lock_is_taken_and_the_first_start_noted_before_it_happens() {
    let mut e = engine();
    let snap = Snapshot { time_ms: 1_000, ..Snapshot::default() };
    assert_eq!(e.look(at(1_000), &snap, "f", Some(true)), vec![Action::Acquire]);
    let acts = e.acquired(at(1_010), at(1_000), acquired(7, Before::Stopped), &snap, "f");
    assert_eq!(
        acts,
        vec![
            Action::Guard { fence: 7, since: at(1_000) },
            Action::Acquired { fence: 7, wait: None, prev_beat_ms: None, after_foreign: false }
        ]
    );
    assert_eq!(e.beat(at(1_010), None).state, BeatState::Starting);
    assert_eq!(e.tend(at(1_010), Renewal::Renewed(at(1_000))), Some(Action::NoteStarted));
    // Refused (the lock is not ours any more, or Redis did not answer): no start, tried again later.
    assert_eq!(e.start_noted(at(1_010), false, Renewal::Renewed(at(1_000))), None);
    assert_eq!(e.tend(at(1_100), Renewal::Renewed(at(1_000))), None);
    assert_eq!(e.tend(at(1_260), Renewal::Renewed(at(1_000))), Some(Action::NoteStarted));
    assert_eq!(e.start_noted(at(1_260), true, Renewal::Renewed(at(1_000))), Some(Action::Start { fence: 7 }));
    e.job_started(at(1_260));
    assert_eq!(
        e.beat(at(1_300), None),
        BeatNow { state: BeatState::Running, fence: Some(7), wait: None, held_until: None }
    );
}

#[test]
fn no_start_once_the_lease_cannot_be_vouched_for() {
    let mut e = engine();
    let snap = Snapshot { time_ms: 1_000, ..Snapshot::default() };
    let _ = e.look(at(1_000), &snap, "f", Some(true));
    let _ = e.acquired(at(1_000), at(1_000), acquired(7, Before::Stopped), &snap, "f");
    let late = at(1_000) + LEASE.stop_after();
    assert_eq!(e.tend(late, Renewal::Renewed(at(1_000))), None, "three quarters passed");
    assert_eq!(e.tend(at(2_000), Renewal::Lost), None, "the watchdog found it lost");
    assert_eq!(e.tend(at(2_000), Renewal::Expiring { unconfirmed: true }), None);
    assert_eq!(e.tend(at(2_000), Renewal::Failing), Some(Action::NoteStarted), "failing is not lost yet");
}

#[test]
fn renewals_failing_are_recorded_once_then_the_job_is_killed_at_three_quarters() {
    let mut e = running();
    assert_eq!(e.lease_word(at(11_000), Renewal::Failing), vec![Action::RenewFailing { fence: 7 }]);
    assert_eq!(e.lease_word(at(12_000), Renewal::Failing), vec![]);
    assert_eq!(e.deadline(), Some(at(1_000) + LEASE.stop_after()));
    let acts = e.lease_word(at(1_000) + LEASE.stop_after(), Renewal::Failing);
    assert_eq!(acts, vec![Action::Kill { fence: 7, cause: Cause::Expired, say_idle: false }]);
    assert!(e.holding().is_none());
}

#[test]
fn the_watchdogs_word_kills_with_its_cause() {
    for (word, cause) in [
        (Renewal::Lost, Cause::Lost),
        (Renewal::Expiring { unconfirmed: false }, Cause::Expired),
        (Renewal::Expiring { unconfirmed: true }, Cause::ReplicaUnconfirmed),
    ] {
        let mut e = running();
        assert_eq!(e.lease_word(at(2_000), word), vec![Action::Kill { fence: 7, cause, say_idle: false }]);
    }
    let mut e = running();
    assert_eq!(e.lease_word(at(11_000), Renewal::Renewed(at(11_000))), vec![]);
    assert_eq!(e.deadline(), Some(at(11_000) + LEASE.stop_after()), "a renewal moves the deadline");
}

#[test]
fn a_lock_found_gone_kills_and_says_idle_and_disabled_lets_go() {
    let mut e = running();
    let acts = e.look(at(2_000), &held_by("someone-else", 2_000), "f", Some(true));
    assert_eq!(acts, vec![Action::Kill { fence: 7, cause: Cause::Lost, say_idle: true }]);
    let mut e = running();
    assert_eq!(
        e.look(at(2_000), &held_by("f", 2_000), "f", Some(false)),
        vec![Action::LetGo { fence: 7, cause: Cause::Disabled }]
    );
    assert_eq!(e.beat(at(2_000), None).state, BeatState::Idle);
}

#[test]
fn switched_off_and_on_too_often_the_job_is_held_back_and_says_until_when() {
    let mut e = engine();
    let mut t = 1_000;
    let look = |e: &mut Engine, t: u64, on: bool| e.look(at(t), &held_by("f", t), "f", Some(on));
    for _ in 0..restarts::BURST + 1 {
        // Started (the lock taken), then switched off: the job lets go.
        assert_eq!(
            e.look(at(t), &Snapshot { time_ms: t, ..Snapshot::default() }, "f", Some(true)),
            vec![Action::Acquire]
        );
        let _ = e.acquired(at(t), at(t), acquired(7, Before::Stopped), &held_by("f", t), "f");
        t += 100;
        assert_eq!(look(&mut e, t, false), vec![Action::LetGo { fence: 7, cause: Cause::Disabled }]);
        t += 100;
    }
    let free = |t: u64| Snapshot { time_ms: t, ..Snapshot::default() };
    let refill = millis(restarts::REFILL);
    let acts = e.look(at(t), &free(t), "f", Some(true));
    // The burst's first start was the second acquisition's, at 1,200.
    let until_ms = 1_200 + refill;
    assert_eq!(acts, vec![Action::HeldBack { until_ms }], "the first start after the burst waits for the refill");
    assert_eq!(e.beat(at(t), None).held_until, Some(until_ms));
    assert_eq!(e.deadline(), Some(at(until_ms)), "asked again when the hold ends");
    assert_eq!(e.look(at(t + 1_000), &free(t + 1_000), "f", Some(true)), vec![], "said once");
    assert_eq!(e.look(at(t + 2_000), &free(t + 2_000), "f", Some(false)), vec![]);
    assert_eq!(e.beat(at(t + 2_000), None).held_until, None, "switched off: nothing is held back");
    assert_eq!(e.look(at(t + 3_000), &free(t + 3_000), "f", Some(true)), vec![], "switched on again: not said again");
    assert_eq!(e.beat(at(t + 3_000), None).held_until, Some(until_ms));
    assert_eq!(e.look(at(until_ms), &free(until_ms), "f", Some(true)), vec![Action::Acquire]);
}

#[test]
fn a_lock_another_lockwatch_holding_has_is_not_tried_until_it_expires() {
    let mut e = engine();
    let theirs = "0b0f5d6e-2c4a-8e1b-9f3a-5d6e7f8a9b0c:1";
    assert!(is_lockwatch_field(theirs));
    let mut snap = held_by(theirs, 1_000);
    snap.lock.ttl_ms = Some(2_500);
    assert_eq!(e.look(at(1_000), &snap, "f", Some(true)), vec![], "no attempt the script would refuse");
    assert_eq!(e.deadline(), Some(at(3_502)), "asked again as the lock expires");
    // A Redisson service's, or this worker's own (unconfirmed), is tried.
    let mut foreign = held_by("8743c9a1-0d3f-4b52-a1e4-6f1c2d3e4f5a:1", 1_000);
    foreign.lock.ttl_ms = Some(2_500);
    assert_eq!(e.look(at(1_000), &foreign, "f", Some(true)), vec![Action::Acquire]);
    assert_eq!(e.look(at(1_000), &held_by("f", 1_000), "f", Some(true)), vec![Action::Acquire]);
}

#[test]
fn flags_that_cannot_be_read_neither_start_nor_stop_the_job() {
    let mut e = running();
    assert_eq!(e.look(at(2_000), &held_by("f", 2_000), "f", None), vec![]);
    assert!(e.holding().is_some());
    let mut idle = engine();
    assert_eq!(idle.look(at(2_000), &Snapshot::default(), "f", None), vec![]);
}

#[test]
fn an_exit_restarts_after_a_growing_pause_or_at_the_next_period() {
    let mut e = running();
    assert_eq!(
        e.exited(at(2_000), "exit status 1".into()),
        Some(Action::Exited { fence: 7, status: "exit status 1".into() })
    );
    assert_eq!(e.exited(at(2_000), "again".into()), None, "an exit is told once");
    assert_eq!(e.tend(at(2_500), Renewal::Renewed(at(1_000))), None);
    assert_eq!(e.tend(at(3_000), Renewal::Renewed(at(1_000))), Some(Action::Start { fence: 7 }), "1 s after");
    e.job_started(at(3_000));
    let _ = e.exited(at(3_100), "exit status 1".into());
    assert_eq!(e.deadline(), Some(at(5_100)), "then 2 s");

    let mut every = Engine::new(rules(Some(Duration::from_secs(60)), None));
    let snap = Snapshot { time_ms: 1_000, ..Snapshot::default() };
    let _ = every.look(at(1_000), &snap, "f", Some(true));
    let _ = every.acquired(at(1_000), at(1_000), acquired(7, Before::Stopped), &snap, "f");
    let _ = every.start_noted(at(1_000), true, Renewal::Renewed(at(1_000)));
    every.job_started(at(1_000));
    let _ = every.exited(at(5_000), "exit status 0".into());
    assert_eq!(every.holding().map(Holding::start_at), Some(at(61_000)), "every 60 s from its start");
}

#[test]
fn a_silent_job_is_stalled() {
    let e = running();
    assert_eq!(e.beat(at(2_000), Some(Duration::from_secs(4))).state, BeatState::Running);
    assert_eq!(e.beat(at(2_000), Some(Duration::from_secs(5))).state, BeatState::Stalled);
}

#[test]
fn an_unconfirmed_acquisition_is_no_holding_and_a_confirmed_one_keeps_what_it_took_over() {
    let mut e = engine();
    let snap = Snapshot { time_ms: 1_000, ..Snapshot::default() };
    let before = Before::Running { node: "srv-b".into(), fence: 6, instance: "srv-b-1".into(), lease_ms: None };
    let first = Acquire::Unconfirmed { fence: 7, before: before.clone(), at_ms: 1_000, counter: Some(6) };
    assert_eq!(e.acquired(at(1_000), at(1_000), first, &snap, "f"), vec![Action::Unconfirmed { fence: 7 }]);
    assert!(e.holding().is_none());
    // The second attempt finds the lock ours already: nothing before it, it says.
    let again = Acquire::Acquired { fence: 7, wait: None, before: Before::Stopped, at_ms: 1_500, counter: None };
    let acts = e.acquired(at(1_500), at(1_500), again, &snap, "f");
    assert!(
        acts.contains(&Action::Waits(Busy { node: "srv-b".into(), left: LEASE.whole() })),
        "waits for what the first attempt took over, from when it took it: {acts:?}"
    );
}

#[test]
fn a_new_holder_waits_for_the_server_before_until_it_beats_idle() {
    let mut e = engine();
    let running_b = |ms: u64, state: BeatState| Beat {
        node: "srv-b".into(),
        state: Some(state),
        lock_field: Some("b:1".into()),
        fence: Some(6),
        beat_ms: Some(ms),
        instance: Some("srv-b-1".into()),
        ..Beat::default()
    };
    let mut snap = Snapshot { time_ms: 10_000, ..Snapshot::default() };
    snap.beats.push(running_b(9_500, BeatState::Running));
    let _ = e.look(at(10_000), &snap, "f", Some(true));
    let before = Before::Running { node: "srv-b".into(), fence: 6, instance: "srv-b-1".into(), lease_ms: None };
    let answer = Acquire::Acquired { fence: 7, wait: None, before, at_ms: 10_000, counter: Some(6) };
    let acts = e.acquired(at(10_000), at(10_000), answer, &snap, "f");
    let left = Duration::from_millis(9_500 + 30_000 - 10_000);
    assert_eq!(acts.last(), Some(&Action::Waits(Busy { node: "srv-b".into(), left })));
    assert_eq!(e.beat(at(10_000), None).wait, Some(("srv-b".into(), 39_500)));
    assert_eq!(e.tend(at(11_000), Renewal::Renewed(at(10_000))), None, "srv-b may still run it");
    // Still running at the next look: said once only.
    let mut later = held_by("f", 11_000);
    later.beats.push(running_b(11_000, BeatState::Running));
    assert_eq!(e.look(at(11_000), &later, "f", Some(true)), vec![]);
    // srv-b beats idle: the job starts at once.
    let mut idle = held_by("f", 12_000);
    idle.beats.push(running_b(12_000, BeatState::Idle));
    assert_eq!(e.look(at(12_000), &idle, "f", Some(true)), vec![]);
    assert_eq!(e.tend(at(12_000), Renewal::Renewed(at(10_000))), Some(Action::NoteStarted));
}

#[test]
fn a_wait_for_redis_is_shown_and_kept() {
    let mut e = engine();
    let snap = Snapshot { time_ms: 5_000, ..Snapshot::default() };
    let _ = e.look(at(5_000), &snap, "f", Some(true));
    let wait = Some(Wait { left: Duration::from_secs(30), why: WaitCause::CounterMissing });
    let answer = Acquire::Acquired { fence: 1, wait, before: Before::Stopped, at_ms: 5_000, counter: None };
    let _ = e.acquired(at(5_000), at(5_000), answer, &snap, "f");
    assert_eq!(e.beat(at(6_000), None).wait, Some((String::new(), 35_000)));
    assert_eq!(e.tend(at(34_000), Renewal::Renewed(at(25_000))), None);
    assert_eq!(e.tend(at(35_000), Renewal::Renewed(at(25_000))), Some(Action::NoteStarted));
}

#[test]
fn in_the_world_a_frozen_worker_loses_its_job_to_the_reaper_and_never_overlaps() {
    let mut w = World::new(Some(true), None);
    w.wait(2 * TICK);
    assert_eq!(w.starts.len(), 1, "started once: {w:?}");
    w.pause(60_000);
    w.wait(60_000);
    assert!(!w.job || w.broken.is_empty());
    w.wait(5 * TICK);
    assert!(w.broken.is_empty(), "{:?}", w.broken);
}

#[test]
fn in_the_world_the_job_starts_after_the_server_before_stops_not_earlier() {
    let before = Predecessor { ends_at: 120_000, last_sign: Some(100_000), says_idle: true, recorded: true };
    let mut w = World::new(Some(true), Some(before));
    w.wait(40_000);
    assert!(w.broken.is_empty(), "{:?}", w.broken);
    let first = w.starts.first().copied();
    assert!(first.is_some_and(|s| (120_000..=120_000 + TICK).contains(&s)), "started at {first:?}");
}

#[test]
fn a_wait_is_counted_from_the_answer_and_the_lease_from_the_call() {
    let mut e = engine();
    let snap = Snapshot { time_ms: 5_000, ..Snapshot::default() };
    let wait = Some(Wait { left: Duration::from_secs(10), why: WaitCause::CounterMissing });
    let answer = Acquire::Acquired { fence: 1, wait, before: Before::Stopped, at_ms: 5_000, counter: None };
    // Sent at 5 s, answered 1.5 s later: the wait ends 10 s after the answer,
    // the lease is vouched for three quarters after the call.
    let _ = e.acquired(at(6_500), at(5_000), answer, &snap, "f");
    assert_eq!(e.holding().map(Holding::start_at), Some(at(16_500)));
    assert_eq!(e.deadline(), Some(at(16_500)));
    assert_eq!(e.lease_word(at(27_499), Renewal::Failing), vec![Action::RenewFailing { fence: 1 }]);
    let stop = e.lease_word(at(27_500), Renewal::Failing);
    assert_eq!(stop, vec![Action::Kill { fence: 1, cause: Cause::Expired, say_idle: false }]);
}

/// The engine after a refused attempt at `at_ms` saw the lock held by
/// `field` (its heartbeat, if any, in `beats`), the fence counter `counter`.
fn refused(field: &str, at_ms: u64, counter: Option<i64>, recorded: bool, beats: Vec<Beat>) -> Engine {
    let mut e = engine();
    refuse(&mut e, field, at_ms, counter, recorded, beats);
    e
}

/// `e` looks at `at_ms` and is refused the lock `field` holds.
fn refuse(e: &mut Engine, field: &str, at_ms: u64, counter: Option<i64>, recorded: bool, beats: Vec<Beat>) {
    let mut snap = held_by(field, at_ms);
    snap.beats = beats;
    let _ = e.look(at(at_ms), &snap, "f", Some(true));
    let seen = HeldSeen { at_ms, counter, recorded };
    let _ = e.acquired(at(at_ms), at(at_ms), Acquire::Held { ttl: Some(Duration::from_secs(30)), seen }, &snap, "f");
}

/// Takes the free lock at `at_ms`, the lock script answering `before`, the
/// counter found and the wait; returns the actions and whether the job may
/// start at once.
fn take(e: &mut Engine, at_ms: u64, before: Before, counter: Option<i64>, wait: Option<Wait>) -> (Vec<Action>, bool) {
    let snap = Snapshot { time_ms: at_ms, ..Snapshot::default() };
    let answer = Acquire::Acquired { fence: 9, wait, before, at_ms, counter };
    let acts = e.acquired(at(at_ms), at(at_ms), answer, &snap, "f");
    let starts = e.tend(at(at_ms), Renewal::Renewed(at(at_ms))) == Some(Action::NoteStarted);
    (acts, starts)
}

const REDISSON: &str = "b1a5c2a6-8a8e-4a6f-9f3e-0c2b7e1d2f11:57";

#[test]
fn after_a_redisson_holder_lets_go_the_job_starts_at_once() {
    // Seen holding from 1 s (and at every look since), the counter at 5; released at 40 s.
    let seen_since_1s = |counter: Option<i64>| {
        let mut e = refused(REDISSON, 1_000, counter, false, vec![]);
        refuse(&mut e, REDISSON, 39_500, counter, false, vec![]);
        e
    };
    let mut e = seen_since_1s(Some(5));
    let (acts, starts) = take(&mut e, 40_000, Before::Unknown, Some(5), None);
    assert!(starts, "{acts:?}");
    assert!(acts.iter().any(|a| matches!(a, Action::Acquired { after_foreign: true, .. })), "{acts:?}");
    // The same after the last lockwatch holding stopped.
    let mut e = seen_since_1s(Some(5));
    assert!(take(&mut e, 40_000, Before::Stopped, Some(5), None).1);
    // A fresh Redis that never had a lockwatch holding: no counter at all.
    let mut e = seen_since_1s(None);
    let missing = Some(Wait { left: LEASE.whole(), why: WaitCause::CounterMissing });
    let (acts, starts) = take(&mut e, 40_000, Before::Unknown, None, missing);
    assert!(starts, "{acts:?}");
}

#[test]
fn a_foreign_holder_last_seen_long_ago_proves_nothing_about_since() {
    // Seen at 1 s, then this worker was frozen or cut off until 40 s: Redis
    // may have lost a lockwatch holding meanwhile, counter and all.
    let mut e = refused(REDISSON, 1_000, None, false, vec![]);
    let missing = Some(Wait { left: LEASE.whole(), why: WaitCause::CounterMissing });
    let (acts, starts) = take(&mut e, 40_000, Before::Unknown, None, missing);
    assert!(!starts, "{acts:?}");
    assert!(acts.iter().any(|a| matches!(a, Action::Acquired { after_foreign: false, .. })), "{acts:?}");
    assert_eq!(e.holding().map(Holding::start_at), Some(at(40_000 + 30_000)));
}

#[test]
fn a_foreign_holder_seen_just_before_leaves_a_lease_from_then() {
    // Seen at 39 s only: a lockwatch holding lost just before may run until 69 s.
    let mut e = refused(REDISSON, 39_000, Some(5), false, vec![]);
    let (acts, starts) = take(&mut e, 40_000, Before::Unknown, Some(5), None);
    assert!(!starts);
    assert!(
        acts.contains(&Action::Waits(Busy { node: String::new(), left: Duration::from_millis(29_000) })),
        "{acts:?}"
    );
    let mut e = refused(REDISSON, 39_000, None, false, vec![]);
    let missing = Some(Wait { left: LEASE.whole(), why: WaitCause::CounterMissing });
    let _ = take(&mut e, 40_000, Before::Unknown, None, missing);
    assert_eq!(e.holding().map(Holding::start_at), Some(at(40_000 + 29_000)));
}

#[test]
fn a_lockwatch_holder_or_one_begun_since_is_no_foreign_holder() {
    let missing = Some(Wait { left: LEASE.whole(), why: WaitCause::CounterMissing });
    let lockwatch_field = crate::work::lock::Lock::new(
        crate::keys::Keys::new("j"),
        "n",
        LEASE,
        &crate::address::Endpoint::new("h", false),
    )
    .field()
    .to_owned();
    let named = Beat { node: "srv-b".into(), lock_field: Some(REDISSON.into()), ..Beat::default() };
    for (what, mut e, counter) in [
        (
            "a lockwatch holding began since (the counter moved)",
            refused(REDISSON, 1_000, Some(5), false, vec![]),
            Some(6),
        ),
        ("the counter appeared since", refused(REDISSON, 1_000, None, false, vec![]), Some(6)),
        ("the handover record names the holder", refused(REDISSON, 1_000, Some(5), true, vec![]), Some(5)),
        ("a heartbeat names the holder", refused(REDISSON, 1_000, Some(5), false, vec![named.clone()]), Some(5)),
        ("a lockwatch field", refused(&lockwatch_field, 1_000, Some(5), false, vec![]), Some(5)),
    ] {
        let (acts, starts) = take(&mut e, 40_000, Before::Unknown, counter, None);
        assert!(!starts, "{what}: {acts:?}");
        assert!(!acts.iter().any(|a| matches!(a, Action::Acquired { after_foreign: true, .. })), "{what}");
    }
    // The counter missing, and a lockwatch holder seen: the whole wait.
    let mut e = refused(&lockwatch_field, 1_000, None, false, vec![]);
    let _ = take(&mut e, 40_000, Before::Unknown, None, missing);
    assert_eq!(e.holding().map(Holding::start_at), Some(at(40_000 + 30_000)));
    // A lockwatch holding the record names is waited for after a foreign one too.
    let mut e = refused(REDISSON, 1_000, Some(5), false, vec![]);
    let before = Before::Running { node: "srv-b".into(), fence: 5, instance: "srv-b-1".into(), lease_ms: None };
    assert!(!take(&mut e, 40_000, before, Some(5), None).1);
}
