//! The workers' beat on `{job}:beat`, against real worker processes: while
//! it comes, an idle watcher asks Redis nothing between its looks; a holder
//! killed with no other worker left is told within seconds, by the beat
//! going quiet; a Redis frozen under beating workers is still `unknown`
//! within seconds, never `stopped`.

mod common;

use std::time::{Duration, Instant};

use common::*;
use lockwatch::connect::Target;
use lockwatch::status::Stall;
use lockwatch::watcher::{Options, Watcher};
use lockwatch::{EventKind, Keys, State};

const JOB: &str = "while :; do sleep 0.2; done";

fn watcher(url: &str, job: &str) -> Watcher {
    Watcher::spawn(Target::new(url, None).unwrap(), Keys::new(job), Options::default())
}

async fn wait_state(w: &Watcher, state: State, within: Duration) {
    let rx = w.status();
    eventually(&format!("state {state}"), within, || rx.borrow().as_ref().filter(|s| s.state == state).map(|_| ()))
        .await;
}

/// Calls of `command` Redis has served since its statistics were reset.
fn calls(c: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn reset_stats(c: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(c).unwrap();
}

/// Two workers running the job on a server of the test's own.
fn two_workers() -> (RedisServer, String, redis::Connection, [WorkerProcess; 2]) {
    let (server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let a = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "30s", &[], JOB));
    let b = WorkerProcess::spawn(&mut worker_command(&url, "srv-b", "30s", &[], JOB));
    (server, url, c, [a, b])
}

#[tokio::test]
async fn an_idle_watcher_asks_redis_nothing_while_the_beat_comes_and_pings_without_it() {
    let (_server, url, mut c, _workers) = two_workers();
    let w = watcher(&url, "outbound");
    wait_state(&w, State::Running, Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;

    reset_stats(&mut c);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let beats = calls(&mut c, "publish");
    let pings = calls(&mut c, "ping");
    println!("6 s with the beat: {beats} beats published, {pings} PINGs");
    assert!((2..=5).contains(&beats), "one beat for the job every 1.8 s, not one per worker: {beats}");
    assert_eq!(pings, 0, "the beat tells that Redis answers");

    // A job no worker beats for: the watcher asks, about once a second.
    let quiet = watcher(&url, "quiet");
    tokio::time::sleep(Duration::from_secs(1)).await;
    reset_stats(&mut c);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pings = calls(&mut c, "ping");
    assert!((3..=7).contains(&pings), "{pings} PINGs in 5 s for the job without a beat");
    quiet.stop().await;
    w.stop().await;
}

#[tokio::test]
async fn a_holder_killed_with_no_other_worker_left_is_told_within_seconds() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let mut a = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "30s", &[], JOB));
    let w = watcher(&url, "outbound");
    wait_state(&w, State::Running, Duration::from_secs(20)).await;
    let mut events = w.events();
    tokio::time::sleep(Duration::from_millis(2500)).await;

    // With its reaper, so the lock is not let go: only its death can be told.
    let killed = Instant::now();
    a.kill9_with_reaper();
    let event = tokio::time::timeout(Duration::from_secs(8), events.recv()).await.expect("nothing told").unwrap();
    let took = killed.elapsed();
    println!("the lone holder's death told after {took:?}: {}", event.reason);
    assert_eq!((event.event, event.stall), (EventKind::Stalled, Some(Stall::Dying)), "{event:?}");
    // The next look would have come with the poll (10 s); the lease runs 30 s.
    assert!(took < Duration::from_secs(3), "told after {took:?}");
    w.stop().await;
}

#[tokio::test]
async fn redis_frozen_while_the_beat_comes_is_unknown_within_seconds_never_stopped() {
    let (server, url, _c, _workers) = two_workers();
    let w = watcher(&url, "outbound");
    wait_state(&w, State::Running, Duration::from_secs(20)).await;
    let mut events = w.events();
    let status = w.status();
    tokio::time::sleep(Duration::from_millis(2300)).await;

    let frozen = Instant::now();
    server.pause();
    let resume = Resume(server.pid().unwrap() as i32);
    let took = loop {
        let state = status.borrow().as_ref().map(|s| s.state);
        assert_ne!(state, Some(State::Stopped), "a frozen Redis was shown as stopped");
        if state == Some(State::Unknown) {
            break frozen.elapsed();
        }
        assert!(frozen.elapsed() < Duration::from_secs(4), "still {state:?} 4 s after Redis froze");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("Redis frozen under beating workers shown as unknown after {took:?}");

    drop(resume);
    wait_state(&w, State::Running, Duration::from_secs(10)).await;
    let mut told = Vec::new();
    while let Ok(Ok(event)) = tokio::time::timeout(Duration::from_millis(500), events.recv()).await {
        told.push(event.event);
    }
    assert_eq!(told, [EventKind::Unreachable, EventKind::Reachable]);
    w.stop().await;
}
