//! The watcher against a real Redis: a scripted sequence of lock, heartbeat
//! and flag writes gives every state and event; a lease running out is
//! noticed at once, not a poll later; Redis killed gives `unknown`, then back.

mod common;

use std::time::{Duration, Instant};

use common::*;
use lockwatch::connect::Target;
use lockwatch::status::{Config, Event};
use lockwatch::watcher::{Options, Watcher};
use lockwatch::{EventKind, Keys, State};
use redis::Commands as _;
use tokio::sync::broadcast;

fn watcher(server: &RedisServer, poll: Duration, engine: Config) -> Watcher {
    let target = Target::new(&server.url(), None).unwrap();
    Watcher::spawn(target, Keys::new("outbound"), Options { poll, engine, ..Options::default() })
}

async fn next_event(rx: &mut broadcast::Receiver<Event>, within: Duration) -> Event {
    tokio::time::timeout(within, rx.recv()).await.expect("no event in time").unwrap()
}

async fn expect(rx: &mut broadcast::Receiver<Event>, kind: EventKind) -> Event {
    let e = next_event(rx, Duration::from_secs(5)).await;
    assert_eq!(e.event, kind, "{e:?}");
    e
}

async fn wait_state(w: &Watcher, state: State) {
    let rx = w.status();
    eventually(&format!("state {state}"), Duration::from_secs(5), || {
        rx.borrow().as_ref().filter(|s| s.state == state).map(|_| ())
    })
    .await;
}

/// Tells the watcher something changed, the way a worker does.
fn announce(c: &mut redis::Connection) {
    let _: () = redis::cmd("XADD").arg("{outbound}:events").arg("*").arg(entry::TYPE).arg("test").query(c).unwrap();
}

#[tokio::test]
async fn a_scripted_sequence_gives_every_state_and_event() {
    let (server, _, mut c) = server_with_flag("alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(1).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 1, "running", 0);

    let engine = Config { failover_window_ms: 1_000, start_grace_ms: 1_000, ..Config::default() };
    let w = watcher(&server, Duration::from_millis(250), engine);
    let mut rx = w.events();
    wait_state(&w, State::Running).await;

    // srv-a gives way to srv-b: one failover naming both.
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "", 1, "idle", 0);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-b:1", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(2).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 2, "running", 0);
    announce(&mut c);
    let e = expect(&mut rx, EventKind::Failover).await;
    assert_eq!(e.from.unwrap().node.as_deref(), Some("srv-a"));
    assert_eq!(e.to.unwrap().node.as_deref(), Some("srv-b"));

    // srv-b's job stops printing: stalled, then recovered.
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 2, "stalled", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Stalled).await;
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 2, "running", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Recovered).await;

    // srv-a wakes up believing it still runs the job: conflict, then recovered.
    tokio::time::sleep(Duration::from_millis(20)).await;
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 1, "running", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Conflict).await;
    wait_state(&w, State::Conflict).await;
    beat(&mut c, "outbound", "srv-a", "", 1, "idle", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Recovered).await;

    // The lock vanishes and nobody takes over within the window: died.
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-b", "", 2, "idle", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Died).await;
    wait_state(&w, State::Down).await;

    // A server takes it again: recovered (after a death, not a failover).
    redisson_lock(&mut c, "{outbound}:lock", "uuid-b:2", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(3).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-b", "uuid-b:2", 3, "running", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Recovered).await;

    // Alice switches it off and the worker lets go: stopped.
    flag(&mut c, "outbound", "alice", false);
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    announce(&mut c);
    expect(&mut rx, EventKind::Stopped).await;
    wait_state(&w, State::Stopped).await;

    // And on again: started.
    flag(&mut c, "outbound", "alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:2", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(4).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "uuid-a:2", 4, "running", 0);
    announce(&mut c);
    expect(&mut rx, EventKind::Started).await;
    assert!(tokio::time::timeout(Duration::from_millis(700), rx.recv()).await.is_err(), "no further events");
    w.stop().await;
}

#[tokio::test]
async fn an_expiring_lease_is_noticed_at_once_not_a_poll_later() {
    let (server, _, mut c) = server_with_flag("alice", false);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 1_500);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let start = Instant::now();
    let w = watcher(&server, Duration::from_secs(30), Config::default());
    let mut rx = w.events();
    wait_state(&w, State::Running).await;
    let e = next_event(&mut rx, Duration::from_secs(5)).await;
    let late = start.elapsed().saturating_sub(Duration::from_millis(1_500));
    assert_eq!(e.event, EventKind::Stopped, "{e:?}");
    println!("lease expiry noticed {late:?} after it ran out (poll interval 30 s)");
    assert!(late < Duration::from_secs(2), "noticed {late:?} late");
    w.stop().await;
}

#[tokio::test]
async fn redis_killed_is_unknown_once_then_back() {
    let (mut server, _, mut c) = server_with_flag("alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    let status = w.status();
    wait_state(&w, State::Running).await;

    server.kill();
    expect(&mut rx, EventKind::Unreachable).await;
    wait_state(&w, State::Unknown).await;
    // Several more failed polls: still one notification, never "stopped".
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        assert_ne!(status.borrow().as_ref().map(|s| s.state), Some(State::Stopped));
        if let Ok(e) = rx.try_recv() {
            panic!("unexpected event while down: {e:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    server.restart();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let back = next_event(&mut rx, Duration::from_secs(15)).await;
    assert_eq!(back.event, EventKind::Reachable, "{back:?}");
    wait_state(&w, State::Running).await;
    w.stop().await;
}

/// The events that arrive within `window`.
async fn events_within(rx: &mut broadcast::Receiver<Event>, window: Duration) -> Vec<Event> {
    let until = tokio::time::Instant::now() + window;
    let mut seen = Vec::new();
    while let Ok(Ok(e)) = tokio::time::timeout_at(until, rx.recv()).await {
        seen.push(e);
    }
    seen
}

fn names(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.event.as_str()).collect()
}

async fn wait_named(w: &Watcher, state: &str, within: Duration) -> lockwatch::Status {
    let rx = w.status();
    eventually(&format!("state {state}"), within, || rx.borrow().clone().filter(|s| s.state.as_str() == state)).await
}

/// Takes the lock as a worker does: the lock, the fence, the heartbeat, an `acquired` entry.
fn take(c: &mut redis::Connection, node: &str, field: &str, fence: i64) {
    redisson_lock(c, "{outbound}:lock", field, 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(fence).query(c).unwrap();
    beat(c, "outbound", node, field, fence, "running", 0);
    let _: () = redis::cmd("XADD")
        .arg("{outbound}:events")
        .arg("*")
        .arg(entry::TYPE)
        .arg(kind::ACQUIRED)
        .arg(entry::NODE)
        .arg(node)
        .arg(entry::FENCE)
        .arg(fence)
        .query(c)
        .unwrap();
}

/// Lets go of the lock as a worker does: idle heartbeat, lock deleted, a `released` entry.
fn let_go(c: &mut redis::Connection, node: &str, fence: i64) {
    beat(c, "outbound", node, "", fence, "idle", 0);
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(c).unwrap();
    let _: () = redis::cmd("XADD")
        .arg("{outbound}:events")
        .arg("*")
        .arg(entry::TYPE)
        .arg(kind::RELEASED)
        .arg(entry::NODE)
        .arg(node)
        .query(c)
        .unwrap();
}

/// The pid of the test's redis-server, to stop and continue it.
fn redis_pid(c: &mut redis::Connection) -> i32 {
    let info: String = redis::cmd("INFO").arg("server").query(c).unwrap();
    info.lines().find_map(|l| l.strip_prefix("process_id:")).unwrap().trim().parse().unwrap()
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) on the test's own redis-server.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

#[tokio::test]
async fn a_job_just_enabled_is_pending_until_a_server_starts_it() {
    let (server, _, mut c) = server_with_flag("alice", true);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    let first = wait_named(&w, "pending", Duration::from_secs(5)).await;
    assert!(first.reason.contains("waiting for a server to start it until"), "{}", first.reason);
    assert_eq!(first.state.exit_code(), 1, "Nagios WARNING while it waits");
    take(&mut c, "srv-a", "uuid-a:1", 1);
    assert_eq!(names(&[expect(&mut rx, EventKind::Started).await]), ["started"]);
    w.stop().await;
}

#[tokio::test]
async fn the_holder_gone_is_pending_not_running_and_a_takeover_through_it_is_one_failover() {
    let (server, _, mut c) = server_with_flag("alice", true);
    take(&mut c, "srv-a", "uuid-a:1", 1);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    wait_state(&w, State::Running).await;

    let_go(&mut c, "srv-a", 1);
    let waiting = wait_named(&w, "pending", Duration::from_secs(3)).await;
    assert!(waiting.reason.contains("take over until"), "{}", waiting.reason);
    assert!(waiting.holder.is_none());
    take(&mut c, "srv-b", "uuid-b:1", 2);
    wait_state(&w, State::Running).await;
    let seen = events_within(&mut rx, Duration::from_millis(600)).await;
    assert_eq!(names(&seen), ["failover"], "{seen:?}");
    assert_eq!(seen[0].from.as_ref().and_then(|h| h.node.as_deref()), Some("srv-a"));
    assert_eq!(seen[0].to.as_ref().and_then(|h| h.node.as_deref()), Some("srv-b"));
    w.stop().await;
}

#[tokio::test]
async fn the_same_server_taking_the_lock_again_is_a_restart() {
    let (server, _, mut c) = server_with_flag("alice", true);
    take(&mut c, "wh-east-1", "uuid-a:1", 1);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    wait_state(&w, State::Running).await;

    // The worker lost the lock and took it again: same server, new fence.
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    announce(&mut c);
    tokio::time::sleep(Duration::from_millis(300)).await;
    take(&mut c, "wh-east-1", "uuid-a:1", 2);
    let seen = events_within(&mut rx, Duration::from_secs(2)).await;
    assert_eq!(names(&seen), ["restarted"], "{seen:?}");
    assert_eq!(seen[0].reason, "restarted on wh-east-1");
    w.stop().await;
}

#[tokio::test]
async fn a_down_job_says_nothing_new_after_redis_comes_back() {
    let (mut server, _, mut c) = server_with_flag("alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(1).query(&mut c).unwrap();
    take(&mut c, "srv-a", "uuid-a:1", 3);
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 3, "running", 120_000);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    let down = wait_named(&w, "down", Duration::from_secs(5)).await;

    // Frozen, then killed and started again from its saved data.
    let pid = redis_pid(&mut c);
    signal(pid, libc::SIGSTOP);
    let resume = Resume(pid);
    wait_state(&w, State::Unknown).await;
    drop(resume);
    wait_state(&w, State::Down).await;
    let _: () = redis::cmd("SAVE").query(&mut server.conn()).unwrap();
    server.kill();
    let _unknown = wait_named(&w, "unknown", Duration::from_secs(10)).await;
    server.restart_from_snapshot();
    let again = wait_named(&w, "down", Duration::from_secs(20)).await;
    let seen = events_within(&mut rx, Duration::from_millis(500)).await;
    assert!(seen.iter().all(|e| matches!(e.event.as_str(), "unreachable" | "reachable")), "{seen:?}");
    assert_eq!(names(&seen), ["unreachable", "reachable", "unreachable", "reachable"], "{seen:?}");
    assert_eq!(again.since_ms, down.since_ms, "down since the same moment");
    w.stop().await;
}

#[tokio::test]
async fn redis_frozen_is_unknown_within_3_s_and_one_slow_reply_changes_nothing() {
    let server = RedisServer::with_args(&["--enable-debug-command", "yes"]);
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
    take(&mut c, "srv-a", "uuid-a:1", 1);
    let engine = Config { heartbeat_grace_ms: 120_000, ..Config::default() };
    let w = watcher(&server, Duration::from_millis(500), engine);
    let mut rx = w.events();
    let status = w.status();
    wait_state(&w, State::Running).await;

    // One slow reply (a 1.2 s script-like stall) is not yet a confirmation.
    let stall = {
        let url = server.url();
        std::thread::spawn(move || {
            let mut other = redis::Client::open(url).unwrap().get_connection().unwrap();
            let _: () = redis::cmd("DEBUG").arg("SLEEP").arg(1.2).query(&mut other).unwrap();
        })
    };
    let until = Instant::now() + Duration::from_millis(2_500);
    while Instant::now() < until {
        assert_eq!(status.borrow().as_ref().map(|s| s.state), Some(State::Running), "a single slow reply flipped it");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stall.join().unwrap();
    assert!(names(&events_within(&mut rx, Duration::from_millis(100)).await).is_empty());

    // Stopped for good: unknown within 3 s.
    let pid = redis_pid(&mut c);
    let stopped = Instant::now();
    signal(pid, libc::SIGSTOP);
    let resume = Resume(pid);
    let unknown = wait_named(&w, "unknown", Duration::from_secs(20)).await;
    let took = stopped.elapsed();
    println!("frozen Redis shown as unknown after {took:?} (poll 500 ms)");
    assert!(took < Duration::from_secs(3), "unknown only after {took:?}");
    assert!(unknown.reason.contains("not answered"), "{}", unknown.reason);
    assert_eq!(names(&[expect(&mut rx, EventKind::Unreachable).await]), ["unreachable"]);
    drop(resume);
    wait_state(&w, State::Running).await;
    assert_eq!(names(&events_within(&mut rx, Duration::from_millis(300)).await), ["reachable"]);
    w.stop().await;
}

#[tokio::test]
async fn redis_frozen_between_looks_is_unknown_within_4_s_with_the_default_options() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    take(&mut c, "srv-a", "uuid-a:1", 1);
    let target = Target::new(&url, None).unwrap();
    let w = Watcher::spawn(target, Keys::new("outbound"), Options::default());
    let mut rx = w.events();
    let status = w.status();
    wait_state(&w, State::Running).await;
    // Just after a look, the next regular one is a whole poll interval (10 s) away.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let pid = redis_pid(&mut c);
    let stopped = Instant::now();
    signal(pid, libc::SIGSTOP);
    let resume = Resume(pid);
    let deadline = stopped + Duration::from_secs(4);
    let took = loop {
        let state = status.borrow().as_ref().map(|s| s.state);
        assert_ne!(state, Some(State::Stopped), "a frozen Redis was shown as stopped");
        if state == Some(State::Unknown) {
            break stopped.elapsed();
        }
        assert!(Instant::now() < deadline, "still {state:?} 4 s after Redis froze (default options)");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    println!("frozen Redis shown as unknown after {took:?} (default options: poll 10 s)");
    let reason = status.borrow().as_ref().map(|s| s.reason.clone()).unwrap_or_default();
    assert!(reason.contains("not answered"), "{reason}");

    drop(resume);
    wait_state(&w, State::Running).await;
    let seen = events_within(&mut rx, Duration::from_millis(300)).await;
    assert_eq!(names(&seen), ["unreachable", "reachable"], "{seen:?}");
    w.stop().await;
}

#[tokio::test]
async fn redis_losing_the_jobs_data_is_unknown_with_one_data_lost_never_stopped() {
    let (server, _, mut c) = server_with_flag("alice", true);
    take(&mut c, "srv-a", "uuid-a:1", 57);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    let status = w.status();
    wait_state(&w, State::Running).await;

    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    // The worker keeps beating and says it lost the lock: still no news of the job.
    beat(&mut c, "outbound", "srv-a", "", 57, "idle", 0);
    let lost = wait_named(&w, "unknown", Duration::from_secs(5)).await;
    assert!(lost.reason.starts_with("Redis lost the job's data"), "{}", lost.reason);
    let _: () =
        redis::cmd("XADD").arg("{outbound}:events").arg("*").arg(entry::TYPE).arg(kind::LOST).query(&mut c).unwrap();
    let until = Instant::now() + Duration::from_secs(2);
    while Instant::now() < until {
        assert_ne!(status.borrow().as_ref().map(|s| s.state), Some(State::Stopped));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(names(&events_within(&mut rx, Duration::from_millis(100)).await), ["data_lost"]);

    // Alice enables it again and a server takes it: the loss is over.
    flag(&mut c, "outbound", "alice", true);
    wait_named(&w, "pending", Duration::from_secs(5)).await;
    take(&mut c, "srv-a", "uuid-a:1", 1);
    wait_state(&w, State::Running).await;
    assert_eq!(names(&events_within(&mut rx, Duration::from_millis(300)).await), ["restarted"]);
    w.stop().await;
}

#[tokio::test]
async fn redis_restarted_empty_is_unreachable_then_data_lost() {
    let (mut server, _, mut c) = server_with_flag("alice", true);
    take(&mut c, "srv-a", "uuid-a:1", 5);
    let w = watcher(&server, Duration::from_millis(200), Config::default());
    let mut rx = w.events();
    wait_state(&w, State::Running).await;
    server.kill();
    wait_state(&w, State::Unknown).await;
    server.restart();
    let lost = wait_named(&w, "unknown", Duration::from_secs(20)).await;
    let lost = if lost.reason.starts_with("Redis lost") {
        lost
    } else {
        let rx = w.status();
        eventually("the loss", Duration::from_secs(20), || {
            rx.borrow().clone().filter(|s| s.reason.starts_with("Redis lost"))
        })
        .await
    };
    assert_eq!(lost.state, State::Unknown);
    assert_eq!(
        names(&events_within(&mut rx, Duration::from_millis(500)).await),
        ["unreachable", "reachable", "data_lost"]
    );
    w.stop().await;
}

/// The job's full reads Redis has served so far: calls of the probe, by
/// whichever way it was called.
fn probe_calls(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    info.lines()
        .filter(|l| ["cmdstat_fcall_ro:", "cmdstat_evalsha_ro:", "cmdstat_evalsha:"].iter().any(|p| l.starts_with(p)))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

#[test]
fn a_flood_of_wake_ups_costs_a_few_reads_a_second_per_process_not_one_per_message() {
    let (server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let _worker = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "3s", &[], "while :; do sleep 0.2; done"));
    let mut watch = WorkerProcess::spawn(
        lockwatch_command().args(["--redis", &url, "watch", "--json"]).stdout(std::process::Stdio::null()),
    );
    std::thread::sleep(Duration::from_secs(2));
    // As alice may: 200 messages a second on the wake channel, for 3 s.
    let before = probe_calls(&mut c);
    let start = Instant::now();
    let mut sent = 0u32;
    while start.elapsed() < Duration::from_secs(3) {
        let _: i64 = redis::cmd("PUBLISH").arg("{outbound}:wake").arg("x").query(&mut c).unwrap();
        sent += 1;
        std::thread::sleep(Duration::from_millis(5));
    }
    let reads = probe_calls(&mut c) - before;
    // Two processes, a wake-up look at most every 250 ms each, plus their own
    // looks: measured 41; paced by nothing, it was 1,305 (2.3 per message).
    assert!(reads <= 60, "{reads} full reads for {sent} wake-ups");
    assert!(sent > 300, "the flood was sent: {sent}");
    // A flip after the flood is still seen at once.
    std::thread::sleep(Duration::from_millis(300));
    let off = lockwatch(&url, &["disable", "--user", "alice"]);
    assert!(off.status.success());
    let started = Instant::now();
    while c.exists::<_, bool>("{outbound}:lock").unwrap() {
        assert!(started.elapsed() < Duration::from_secs(2), "the worker did not let go at once");
        std::thread::sleep(Duration::from_millis(20));
    }
    println!(
        "{sent} wake-ups in 3 s: {reads} full reads; the lock let go {} ms after the flip",
        started.elapsed().as_millis()
    );
    watch.kill9();
    drop(server);
}
