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

/// Jobs watched together, each run by its own lone worker: the watcher
/// hears none of their beats but calls the roll of their holders in one
/// command twice a second, and a holder killed with its reaper (nobody
/// left to tell it) is told within seconds, for its job only.
#[tokio::test]
async fn many_jobs_watched_together_call_the_roll_of_their_holders_and_a_lone_death_is_told() {
    const JOBS: [&str; 4] = ["outbound", "inbound", "stock", "labels"];
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();
    let mut workers = Vec::new();
    for job in JOBS {
        flag(&mut c, job, "alice", true);
        let _: () = redis::cmd("SET").arg(format!("{{{job}}}:fence")).arg(0).query(&mut c).unwrap();
        let mut cmd = lockwatch_command();
        cmd.args(["--redis", &url, "--job", job]);
        workers.push(WorkerProcess::spawn(worker_args(&mut cmd, "srv-a", "30s", &[], JOB)));
    }
    // The workers' own counts (a worker asks after its own presence now and then).
    tokio::time::sleep(Duration::from_secs(3)).await;
    reset_stats(&mut c);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let workers_own = calls(&mut c, "pubsub|numsub");
    let target = Target::new(&url, None).unwrap();
    let watchers = Watcher::spawn_all(target, JOBS.iter().map(|j| (Keys::new(j), Options::default())).collect());
    for w in &watchers {
        wait_state(w, State::Running, Duration::from_secs(20)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;

    reset_stats(&mut c);
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (rolls, pings) = (calls(&mut c, "pubsub|numsub").saturating_sub(workers_own), calls(&mut c, "ping"));
    println!("6 s of {} jobs watched together: {rolls} roll calls, {pings} PINGs", JOBS.len());
    assert!((3..=7).contains(&rolls), "a roll call every 1.2 s, not one per job: {rolls}");
    assert_eq!(pings, 0, "the roll call tells that Redis answers");
    for job in JOBS {
        let listening: Vec<(String, i64)> =
            redis::cmd("PUBSUB").arg("NUMSUB").arg(format!("{{{job}}}:beat")).query(&mut c).unwrap();
        assert_eq!(listening[0].1, 0, "nobody hears {job}'s beat");
    }

    let mut events: Vec<_> = watchers.iter().map(Watcher::events).collect();
    let killed = Instant::now();
    workers[1].kill9_with_reaper();
    let event = tokio::time::timeout(Duration::from_secs(8), events[1].recv()).await.expect("nothing told").unwrap();
    let took = killed.elapsed();
    println!("inbound's lone holder's death told after {took:?}: {}", event.reason);
    assert_eq!((event.job.as_str(), event.event, event.stall), ("inbound", EventKind::Stalled, Some(Stall::Dying)));
    assert!(took < Duration::from_secs(3), "told after {took:?}");
    for i in [0, 2, 3] {
        assert!(events[i].try_recv().is_err(), "{} was told something", JOBS[i]);
    }

    // Redis frozen: every job is unknown within seconds, none stopped.
    let frozen = Instant::now();
    server.pause();
    let _resume = Resume(server.pid().unwrap() as i32);
    for (w, job) in watchers.iter().zip(JOBS) {
        let status = w.status();
        loop {
            let state = status.borrow().as_ref().map(|s| s.state);
            assert_ne!(state, Some(State::Stopped), "{job}: a frozen Redis was shown as stopped");
            if state == Some(State::Unknown) {
                break;
            }
            assert!(frozen.elapsed() < Duration::from_secs(6), "{job}: still {state:?} 6 s after Redis froze");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    println!("Redis frozen: all {} jobs unknown within {:?}", JOBS.len(), frozen.elapsed());
    drop(_resume);
    for w in watchers {
        w.stop().await;
    }
}
