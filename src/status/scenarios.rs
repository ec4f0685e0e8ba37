//! The engine on hand-made scenarios: each state and event, waiting out a
//! grace, first looks dated from what Redis remembers, outages, restarts on
//! the same server, and Redis losing the job's data.

use super::world::*;
use super::*;
use crate::schema::{BeatState, kind};
use crate::snapshot::{Beat, Lock, LockKind, Snapshot};

#[test]
fn first_look_reports_the_state_without_events() {
    let mut t = engine();
    let s = read(&mut t, &World::running("srv-a", "uuid-a:1"));
    assert_eq!(s.status.state, State::Running);
    assert_eq!(s.status.holder.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
    assert!(s.events.is_empty());
}

#[test]
fn the_holder_gone_is_pending_and_a_quick_takeover_is_one_failover() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.hand_to(None);
    w.wait(1_000);
    let gap = read(&mut t, &w);
    assert_eq!(gap.status.state, State::Pending, "nobody runs it: not running");
    assert!(gap.status.holder.is_none());
    let until = w.time_ms + Config::default().failover_window_ms;
    assert_eq!(gap.status.pending_until_ms, Some(until));
    assert!(gap.status.reason.contains("waiting for a server to take over until"), "{}", gap.status.reason);
    assert!(gap.status.reason.contains(&clock_utc(until)), "{}", gap.status.reason);
    assert!(gap.events.is_empty(), "entering pending is no news");
    assert_eq!(gap.next_check_ms, Some(Config::default().failover_window_ms), "the end of the window is armed");
    w.hand_to(Some(("srv-b", "uuid-b:1")));
    w.wait(800);
    let s = read(&mut t, &w);
    assert_eq!(kinds(&s), vec![EventKind::Failover]);
    assert_eq!(s.events[0].from.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
    assert_eq!(s.events[0].to.as_ref().and_then(|h| h.node.as_deref()), Some("srv-b"));
}

#[test]
fn a_long_gap_is_a_death_dated_from_the_gap_then_a_recovery() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.hand_to(None);
    w.wait(1_000);
    let gone_at = w.time_ms;
    let _ = read(&mut t, &w);
    w.wait(Config::default().failover_window_ms);
    let died = read(&mut t, &w);
    assert_eq!(died.status.state, State::Down);
    assert_eq!(kinds(&died), vec![EventKind::Died]);
    assert_eq!(
        died.events[0].from.as_ref().and_then(|h| h.node.as_deref()),
        Some("srv-a"),
        "a death names the server that ran it last"
    );
    assert_eq!(died.status.since_ms, Some(gone_at), "down since the lock went free");
    assert!(died.status.reason.ends_with("(for 5 s)"), "{}", died.status.reason);
    w.hand_to(Some(("srv-b", "uuid-b:1")));
    w.wait(1_000);
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Recovered]);
}

#[test]
fn the_first_look_right_after_enabling_is_pending_then_started() {
    let mut t = engine();
    let mut w = World::free(1_000_000 - 2_000);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Pending, "{}", s.status.reason);
    assert_eq!(s.status.state.exit_code(), 1);
    assert_eq!(s.status.since_ms, Some(w.flag_at_ms));
    assert_eq!(s.status.pending_until_ms, Some(w.flag_at_ms + Config::default().start_grace_ms));
    assert!(s.status.reason.starts_with("enabled by alice; waiting for a server to start it until "));
    w.hand_to(Some(("srv-a", "uuid-a:1")));
    w.wait(1_000);
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Started]);
}

#[test]
fn enabled_and_never_started_within_the_grace_is_a_death() {
    let mut t = engine();
    let mut w = World::free(1_000_000 - 2_000);
    let _ = read(&mut t, &w);
    w.wait(8_000);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Down);
    assert_eq!(kinds(&s), vec![EventKind::Died]);
    assert_eq!(s.status.since_ms, Some(w.flag_at_ms));
}

#[test]
fn a_first_look_dates_a_down_job_from_the_last_holder_and_is_the_same_later() {
    let mut w = World::free(1);
    w.stream.clear();
    w.time_ms -= 50_000;
    w.record(kind::LOST);
    w.time_ms += 50_000;
    let first = read(&mut engine(), &w);
    assert_eq!(first.status.state, State::Down);
    assert_eq!(first.status.since_ms, Some(1_000_000 - 50_000));
    assert!(first.status.reason.ends_with("(for 50 s)"), "{}", first.status.reason);
    w.wait(7_000);
    let later = read(&mut engine(), &w);
    assert_eq!(later.status.since_ms, first.status.since_ms);
    assert!(later.status.reason.ends_with("(for 57 s)"), "{}", later.status.reason);

    // A holder whose last beat named the lock went later than that.
    let mut snap = w.snapshot();
    snap.beats.push(Beat {
        node: "srv-b".into(),
        lock_field: Some("uuid-b:1".into()),
        beat_ms: Some(w.time_ms - 20_000),
        state: Some(BeatState::Running),
        ..Default::default()
    });
    let s = feed(&mut engine(), Observation::Read(snap));
    assert_eq!(s.status.since_ms, Some(w.time_ms - 20_000));
}

#[test]
fn a_first_look_just_after_the_holder_let_go_is_pending_then_dies_at_the_window() {
    let mut w = World::free(0);
    w.record(kind::RELEASED);
    w.wait(2_000);
    w.standby_beat_ms = Some(w.time_ms);
    let mut t = engine();
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Pending);
    assert!(s.status.reason.contains("take over"), "{}", s.status.reason);
    w.wait(3_000);
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Died]);
}

#[test]
fn a_first_look_just_after_a_worker_died_and_its_lock_was_let_go_awaits_a_takeover() {
    // The flag was switched on long ago; the reaper of the killed worker
    // recorded `died` and let go of the lock a moment ago.
    let mut w = World::free(0);
    w.wait(600_000);
    w.record(kind::DIED);
    w.wait(300);
    w.standby_beat_ms = Some(w.time_ms);
    let s = read(&mut engine(), &w);
    assert_eq!(s.status.state, State::Pending, "{}", s.status.reason);
    assert!(s.status.reason.contains("take over"), "{}", s.status.reason);
}

#[test]
fn with_no_server_alive_to_take_over_the_job_is_down_once_a_restart_could_have_come() {
    // The only worker was killed; its reaper let go of the lock at once. Its
    // heartbeat is fresh, but its process is gone (presence closed).
    let mut w = World::running("srv-a", "uuid-a:1");
    let mut t = engine();
    let _ = read(&mut t, &w);
    w.present = Some(false);
    w.hand_to(None);
    let gap = read(&mut t, &w);
    assert_eq!(gap.status.state, State::Pending);
    assert!(gap.status.reason.contains("no other server is alive"), "{}", gap.status.reason);
    assert_eq!(gap.next_check_ms, Some(1_500), "a worker started again has 1.5 s");
    w.wait(1_500);
    let down = read(&mut t, &w);
    assert_eq!((down.status.state, kinds(&down)), (State::Down, vec![EventKind::Died]));

    // The same with a standby alive: the whole failover window.
    let mut w = World::running("srv-a", "uuid-a:1");
    w.standby_beat_ms = Some(w.time_ms);
    let mut t = engine();
    let _ = read(&mut t, &w);
    w.present = Some(false);
    w.hand_to(None);
    w.wait(1_500);
    w.standby_beat_ms = Some(w.time_ms);
    assert_eq!(read(&mut t, &w).status.state, State::Pending, "the standby may still take it");
}

#[test]
fn a_job_down_from_the_moment_it_is_first_seen_says_no_zero_length() {
    // Enabled just now, never run, nothing in the stream: down since this look.
    let mut w = World::free(0);
    w.stream.clear();
    let first = read(&mut engine(), &w);
    assert_eq!(first.status.state, State::Down);
    assert!(!first.status.reason.contains("(for "), "{}", first.status.reason);
}

#[test]
fn a_down_job_says_nothing_new_after_an_outage() {
    let mut t = engine();
    let mut w = World::free(1_000_000 - 600_000);
    let down = read(&mut t, &w);
    assert_eq!(down.status.state, State::Down);
    let mut seen = Vec::new();
    for _ in 0..4 {
        seen.extend(kinds(&fail(&mut t, 1_000)));
    }
    assert_eq!(seen, vec![EventKind::Unreachable]);
    w.wait(4_000);
    let back = read(&mut t, &w);
    assert_eq!(kinds(&back), vec![EventKind::Reachable]);
    assert_eq!(back.status.state, State::Down);
    assert_eq!(back.status.since_ms, down.status.since_ms);
}

#[test]
fn a_state_seen_again_after_an_outage_keeps_its_since() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let first = read(&mut t, &w);
    let _ = fail(&mut t, 1_000);
    let _ = fail(&mut t, 1_000);
    w.wait(3_000);
    let back = read(&mut t, &w);
    assert_eq!(kinds(&back), vec![EventKind::Reachable]);
    assert_eq!(back.status.since_ms, first.status.since_ms);
}

#[test]
fn an_outage_in_the_middle_of_a_gap_is_still_one_failover() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.hand_to(None);
    w.wait(500);
    let _ = read(&mut t, &w);
    let _ = fail(&mut t, 500);
    let _ = fail(&mut t, 500);
    w.hand_to(Some(("srv-b", "uuid-b:1")));
    w.wait(2_000);
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Reachable, EventKind::Failover]);
}

#[test]
fn the_same_server_taking_the_lock_again_is_a_restart() {
    let mut t = engine();
    let mut w = World::running("wh-east-1", "uuid-a:1");
    let _ = read(&mut t, &w);
    // Lost the lock and took it again through a short gap: new fence, same server.
    w.hand_to(None);
    w.wait(300);
    let _ = read(&mut t, &w);
    w.hand_to(Some(("wh-east-1", "uuid-a:1")));
    w.wait(300);
    let s = read(&mut t, &w);
    assert_eq!(kinds(&s), vec![EventKind::Restarted]);
    assert_eq!(s.events[0].reason, "restarted on wh-east-1");
    // And directly, with a new fence under the same field.
    w.fence = w.fence.map(|f| f + 1);
    w.wait(1_000);
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Restarted]);
}

#[test]
fn a_silent_holder_is_stale_and_says_whether_the_lock_is_renewed() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.beating = false;
    w.wait(1_000);
    let first = read(&mut t, &w);
    assert_eq!(first.status.state, State::Running, "one look is not yet a confirmation");
    w.wait(200);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Stale);
    assert_eq!(kinds(&s), vec![EventKind::Stalled]);
    assert!(s.status.reason.starts_with("dying"), "{}", s.status.reason);
    assert_eq!(s.events[0].stall, Some(Stall::Dying));
    w.wait(1_000);
    w.ttl_ms = 30_000;
    let renewed = read(&mut t, &w);
    assert!(renewed.status.reason.starts_with("hung"), "{}", renewed.status.reason);
    assert!(renewed.events.is_empty());
}

#[test]
fn a_holder_whose_connection_closed_is_dying_at_the_next_confirmation_while_its_beat_is_fresh() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    // kill -9: Redis drops the presence subscription; the last beat is 500 ms old.
    w.present = Some(false);
    w.wait(300);
    let first = read(&mut t, &w);
    assert_eq!(first.status.state, State::Running, "one look is not yet a confirmation");
    assert!(first.next_check_ms.is_some_and(|ms| ms <= Config::default().confirm_delay_ms));
    w.wait(200);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Stale, "{}", s.status.reason);
    assert_eq!(kinds(&s), vec![EventKind::Stalled]);
    assert_eq!(
        s.status.reason,
        "dying: srv-a's connection to Redis closed (its process died or lost its link); the lock expires in 29 s"
    );
    // The facts, for every language: who, why, and when the lock goes.
    let e = &s.events[0];
    assert_eq!(e.from.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
    assert_eq!((e.stall, e.ms), (Some(Stall::Dying), Some(w.ttl_ms)));
    assert_eq!(s.next_check_ms, Some(w.ttl_ms + 1), "looks again when the lease runs out");
}

/// Redis frozen past three quarters of the lease: the holder's worker gave
/// the holding up and killed its job; when Redis answers, a renewal it sent
/// before giving up extends the lock once more, and its heartbeat names no
/// lock field. The holder is dying (nothing renews it now), not hung, and
/// is named by its server, as last seen holding that field; the takeover
/// on the same server is a restart.
#[test]
fn a_holder_whose_worker_gave_it_up_is_dying_and_named_by_its_server_though_a_late_renewal_came() {
    let mut t = engine();
    let mut w = World { ttl_ms: 8_000, ..World::running("srv-a", "uuid-a:1") };
    let _ = read(&mut t, &w);
    for _ in 0..7 {
        let _ = fail(&mut t, 1_000);
    }
    w.wait(7_000);
    w.ttl_ms = 8_000;
    w.disowned = true;
    let _ = read(&mut t, &w);
    w.wait(200);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Stale, "{}", s.status.reason);
    assert_eq!(kinds(&s), vec![EventKind::Reachable, EventKind::Stalled]);
    let e = &s.events[1];
    assert_eq!(e.from.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"), "{e:?}");
    assert_eq!((e.stall, e.ms), (Some(Stall::Dying), Some(7_800)), "{}", s.status.reason);
    assert_eq!(
        s.status.reason,
        "dying: srv-a's heartbeat no longer names the lock it held (its worker gave it up); the lock expires in 7 s"
    );
    assert!(!s.status.reason.contains("lock field"), "{}", s.status.reason);
    // The lock expires; the same server takes the job again.
    w.hand_to(None);
    w.wait(7_800);
    let _ = read(&mut t, &w);
    w.disowned = false;
    w.hand_to(Some(("srv-a", "uuid-a:2")));
    w.wait(300);
    let again = read(&mut t, &w);
    assert_eq!(kinds(&again), vec![EventKind::Restarted]);
    assert_eq!(again.events[0].from.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
}

#[test]
fn a_worker_that_subscribes_again_recovers_and_one_that_holds_no_presence_keeps_its_grace() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.present = Some(false);
    for _ in 0..2 {
        w.wait(200);
        let _ = read(&mut t, &w);
    }
    w.present = Some(true);
    w.wait(200);
    let back = read(&mut t, &w);
    assert_eq!(back.status.state, State::Running);
    assert_eq!(kinds(&back), vec![EventKind::Recovered]);

    let mut t = engine();
    let mut w = World { present: None, ..World::running("srv-a", "uuid-a:1") };
    for _ in 0..3 {
        let s = read(&mut t, &w);
        assert_eq!(s.status.state, State::Running, "a heartbeat that claims no presence is judged by its age");
        w.wait(200);
    }
}

#[test]
fn disabling_stops_without_a_death() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.enabled = false;
    w.hand_to(None);
    w.wait(1_000);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Stopped);
    assert_eq!(kinds(&s), vec![EventKind::Stopped]);
}

#[test]
fn losing_redis_is_one_unreachable_then_one_reachable() {
    let mut t = engine();
    let w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    let mut seen = Vec::new();
    for _ in 0..10 {
        let s = fail(&mut t, 1_000);
        assert_ne!(s.status.state, State::Stopped);
        seen.extend(kinds(&s));
    }
    assert_eq!(seen, vec![EventKind::Unreachable]);
    let blank = t.status().unwrap();
    assert_eq!(blank.state, State::Unknown);
    assert_eq!(blank.checked_at_ms, None, "nothing read: the facts are blank and say so");
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Reachable]);
}

#[test]
fn one_failed_or_slow_read_changes_nothing() {
    let mut t = engine();
    let w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    let slow = fail(&mut t, 800);
    assert_eq!(slow.status.state, State::Running);
    assert!(slow.events.is_empty());
    assert!(read(&mut t, &w).events.is_empty());
}

#[test]
fn redis_losing_the_data_is_unknown_with_one_data_lost_until_a_new_holding() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    w.fence = Some(57);
    let _ = read(&mut t, &w);
    w.flush();
    w.wait(500);
    let lost = read(&mut t, &w);
    assert_eq!(lost.status.state, State::Unknown);
    assert_eq!(kinds(&lost), vec![EventKind::DataLost]);
    assert!(lost.status.reason.starts_with("Redis lost the job's data (the fence counter was at 57"));
    assert!(lost.status.checked_at_ms.is_some(), "what Redis holds now was read");
    // The worker says it lost the lock; nobody has it enabled any more: still no news.
    w.record(kind::LOST);
    for _ in 0..3 {
        w.wait(1_000);
        let s = read(&mut t, &w);
        assert_eq!(s.status.state, State::Unknown);
        assert!(s.events.is_empty(), "{:?}", s.events);
        assert_eq!(s.status.since_ms, lost.status.since_ms);
    }
    // Alice enables it again: pending; the server takes it: restarted there.
    w.flags_present = true;
    w.enabled = true;
    w.flag_at_ms = w.time_ms;
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Pending, "{}", s.status.reason);
    assert!(s.status.reason.contains("start it"), "{}", s.status.reason);
    w.hand_to(Some(("srv-a", "uuid-a:1")));
    w.wait(1_000);
    let back = read(&mut t, &w);
    assert_eq!(back.status.state, State::Running);
    assert_eq!(kinds(&back), vec![EventKind::Restarted]);
}

#[test]
fn redis_restarted_empty_is_unreachable_then_reachable_and_data_lost() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    let _ = fail(&mut t, 1_000);
    assert_eq!(kinds(&fail(&mut t, 1_000)), vec![EventKind::Unreachable]);
    w.flush();
    w.wait(3_000);
    let s = read(&mut t, &w);
    assert_eq!(kinds(&s), vec![EventKind::Reachable, EventKind::DataLost]);
    assert_eq!(s.status.state, State::Unknown);
    // Lost from sight again, and back: one more unreachable, no second data_lost.
    let _ = fail(&mut t, 1_000);
    assert_eq!(kinds(&fail(&mut t, 1_000)), vec![EventKind::Unreachable]);
    w.wait(3_000);
    assert_eq!(kinds(&read(&mut t, &w)), vec![EventKind::Reachable]);
}

#[test]
fn two_fresh_claims_are_a_conflict() {
    let mut t = engine();
    let w = World::running("srv-a", "uuid-a:1");
    let mut snap = w.snapshot();
    snap.beats.push(Beat {
        node: "srv-b".into(),
        lock_field: Some("uuid-b:1".into()),
        beat_ms: Some(w.time_ms - 100),
        state: Some(BeatState::Running),
        ..Default::default()
    });
    let s = feed(&mut t, Observation::Read(snap));
    assert_eq!(s.status.state, State::Conflict, "{}", s.status.reason);
}

#[test]
fn a_predecessor_that_stopped_beating_before_the_takeover_is_no_conflict() {
    let mut t = engine();
    let w = World::running("srv-b", "uuid-b:1");
    let mut snap = w.snapshot();
    // srv-a died a moment before srv-b took over; its last beat is still young.
    snap.beats[0].started_ms = Some(w.time_ms - 1_000);
    snap.beats.push(Beat {
        node: "srv-a".into(),
        lock_field: Some("uuid-a:1".into()),
        beat_ms: Some(w.time_ms - 2_000),
        state: Some(BeatState::Running),
        ..Default::default()
    });
    assert_eq!(feed(&mut t, Observation::Read(snap)).status.state, State::Running);
}

#[test]
fn an_unreadable_lock_is_unknown_and_its_lease_unknown() {
    let mut t = engine();
    let mut snap = World::running("srv-a", "uuid-a:1").snapshot();
    snap.lock = Lock { kind: LockKind::Unreadable, redis_type: "list".into(), ..Default::default() };
    snap.problems.push("the lock key {outbound}:lock is a list, not a hash or string lock".into());
    let s = feed(&mut t, Observation::Read(snap));
    assert_eq!(s.status.state, State::Unknown);
    assert_eq!(s.status.lock.ttl_ms, None);
}

#[test]
fn lock_only_mode_counts_a_held_lock_as_running() {
    let mut w = World::running("srv-a", "uuid-a:1");
    w.beating = false;
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = Engine::new(JOB, LOCK, cfg).handle_read(&w.snapshot());
    assert_eq!(s.status.state, State::Running);
}

#[test]
fn pending_is_amber_between_running_and_stale() {
    assert_eq!(State::Pending.exit_code(), 1);
    assert!(State::Pending.severity() > State::Stopped.severity());
    assert!(State::Pending.severity() < State::Stale.severity());
    assert!(State::ALL.contains(&State::Pending));
    assert_eq!(State::Pending.as_str(), "pending");
    assert_eq!(EventKind::Restarted.as_str(), "restarted");
    assert_eq!(EventKind::DataLost.as_str(), "data_lost");
}

/// The lock handed to srv-b, whose heartbeat says it waits until `until`
/// before starting the job (for `waits_for`, or for Redis's sake).
fn taken_by_a_waiting_b(w: &mut World, until: u64, waits_for: Option<&str>) -> Snapshot {
    w.hand_to(Some(("srv-b", "uuid-b:1")));
    let mut snap = w.snapshot();
    for b in snap.beats.iter_mut() {
        b.state = Some(BeatState::Starting);
        b.wait_until_ms = Some(until);
        b.waits_for = waits_for.map(str::to_owned);
    }
    snap
}

#[test]
fn a_holder_that_waits_before_starting_is_pending_then_the_takeover_is_one_failover() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    // srv-b took the lock on a Redis that lost its data and waits out a lease.
    let until = w.time_ms + 30_000;
    let waiting = feed(&mut t, Observation::Read(taken_by_a_waiting_b(&mut w, until, None)));
    assert_eq!(waiting.status.state, State::Pending, "{}", waiting.status.reason);
    assert!(waiting.events.is_empty(), "waiting is no news: {:?}", waiting.events);
    assert_eq!(waiting.status.pending_until_ms, Some(until));
    assert!(waiting.status.reason.contains("srv-b holds the lock and waits for 30 s"), "{}", waiting.status.reason);
    assert!(waiting.next_check_ms.is_some_and(|ms| ms <= 30_001), "{:?}", waiting.next_check_ms);
    w.wait(30_000);
    let s = read(&mut t, &w);
    assert_eq!(s.status.state, State::Running);
    assert_eq!(kinds(&s), vec![EventKind::Failover]);
}

#[test]
fn a_holder_that_waits_for_another_servers_job_says_which() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    // The lock was deleted under srv-a; srv-b took it and waits for srv-a's job.
    let until = w.time_ms + 2_000;
    let waiting = feed(&mut t, Observation::Read(taken_by_a_waiting_b(&mut w, until, Some("srv-a"))));
    assert_eq!(waiting.status.state, State::Pending, "{}", waiting.status.reason);
    assert!(
        waiting.status.reason.contains(
            "srv-b holds the lock and waits for 2 s before starting the job: srv-a's heartbeat still says it runs it"
        ),
        "{}",
        waiting.status.reason
    );
}

#[test]
fn a_standby_gone_silent_is_said_once_and_its_return_too() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    w.standby_beat_ms = Some(w.time_ms);
    let first = read(&mut t, &w);
    assert_eq!((first.status.no_standby.as_deref(), first.status.exit_code()), (None, 0));
    // srv-s stops beating: past the grace it is silent, and nobody could take over.
    w.wait(Config::default().heartbeat_grace_ms + 1_000);
    let lost = read(&mut t, &w);
    assert_eq!(kinds(&lost), vec![EventKind::StandbyLost]);
    let e = &lost.events[0];
    assert_eq!(
        (e.from.as_ref().and_then(|h| h.node.as_deref()), e.to.as_ref().and_then(|h| h.node.as_deref())),
        (Some("srv-a"), Some(STANDBY))
    );
    let said = lost.status.no_standby.clone().unwrap();
    assert!(said.contains("srv-s (heartbeat 11 s old)") && said.contains("if srv-a stops"), "{said}");
    assert_eq!(lost.status.state, State::Running);
    assert_eq!(lost.status.exit_code(), 1, "a monitoring check warns");
    w.wait(1_000);
    assert!(read(&mut t, &w).events.is_empty(), "said once");
    // Its heartbeat expires (a day later): it no longer counts, and nothing came back.
    let mut retired = w.clone();
    retired.standby_beat_ms = None;
    let mut t2 = t.clone();
    let gone = read(&mut t2, &retired);
    assert_eq!((gone.status.no_standby.as_deref(), gone.events.len()), (None, 0), "no standby_back for nobody");
    // srv-s beats again.
    w.standby_beat_ms = Some(w.time_ms);
    let back = read(&mut t, &w);
    assert_eq!(kinds(&back), vec![EventKind::StandbyBack]);
    assert_eq!((back.status.no_standby.as_deref(), back.status.exit_code()), (None, 0));
}

#[test]
fn a_job_one_server_runs_has_no_standby_to_lose_and_a_failover_says_the_move_not_the_standby() {
    let mut t = engine();
    let mut w = World::running("srv-a", "uuid-a:1");
    let _ = read(&mut t, &w);
    w.wait(60_000);
    let alone = read(&mut t, &w);
    assert_eq!((alone.status.no_standby.as_deref(), alone.events.len()), (None, 0));
    // A standby that was there, then the holder moves to it: the old holder is silent,
    // and the failover says so; no second notification of a lost standby.
    w.standby_beat_ms = Some(w.time_ms);
    let _ = read(&mut t, &w);
    let died_at = w.time_ms;
    w.hand_to(Some((STANDBY, "uuid-s:1")));
    w.standby_beat_ms = None;
    w.wait(300);
    // srv-a's heartbeat stays as it last beat: it died.
    let with_dead_a = |w: &World| {
        let mut snap = w.snapshot();
        snap.beats.push(Beat {
            node: "srv-a".into(),
            beat_ms: Some(died_at),
            state: Some(BeatState::Idle),
            ..Beat::default()
        });
        Observation::Read(snap)
    };
    let moved = feed(&mut t, with_dead_a(&w));
    assert_eq!(kinds(&moved), vec![EventKind::Failover]);
    let e = &moved.events[0];
    assert!(e.no_standby && e.reason.ends_with("no other server is left to take it over"), "{e:?}");
    // The server it moved from stays silent: told with the move, not again.
    for _ in 0..5 {
        w.wait(10_000);
        let later = feed(&mut t, with_dead_a(&w));
        assert!(later.events.is_empty(), "{:?}", later.events);
    }
    let later = feed(&mut t, with_dead_a(&w));
    assert!(later.status.no_standby.is_some(), "still shown, and warned by status's exit code");
}

#[test]
fn a_worker_holding_back_after_too_many_switches_is_pending_until_then_not_down() {
    let mut t = engine();
    let mut w = World::free(1_000);
    w.standby_beat_ms = Some(w.time_ms - 300);
    let until = w.time_ms + 400_000;
    let mut snap = w.snapshot();
    snap.beats[0].held_until_ms = Some(until);
    let s = t.handle_read(&snap);
    assert_eq!(s.status.state, State::Pending, "{}", s.status.reason);
    assert!(s.status.reason.contains(&format!("start it again at {}", clock_utc(until))), "{}", s.status.reason);
    assert_eq!(s.status.pending_until_ms, Some(until + Config::default().start_grace_ms), "then a start grace");
    // Its beat gone stale, its word is no more: a start is awaited from the
    // hold's end, for a start grace, and then the job is down.
    let mut stale = snap.clone();
    stale.time_ms += 200_000;
    stale.beats[0].beat_ms = Some(stale.time_ms - 100_000);
    let s = t.handle_read(&stale);
    assert_eq!(s.status.state, State::Pending);
    assert!(s.status.reason.contains("waiting for a server to start it"), "{}", s.status.reason);
    stale.time_ms = until + Config::default().start_grace_ms;
    assert_eq!(t.handle_read(&stale).status.state, State::Down);
}
