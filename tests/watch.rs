//! The watcher against a real Redis: a scripted sequence of lock, heartbeat
//! and flag writes gives every state and event; a lease running out is
//! noticed at once, not a poll later; Redis killed gives `unknown`, then back.

mod common;

use std::time::{Duration, Instant};

use common::*;
use lockwatch::connect::Target;
use lockwatch::status::{Config, Event};
use lockwatch::watch::{Options, Watcher};
use lockwatch::{EventKind, Keys, State};
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
    let _: () = redis::cmd("XADD").arg("{outbound}:events").arg("*").arg("type").arg("test").query(c).unwrap();
}

#[tokio::test]
async fn a_scripted_sequence_gives_every_state_and_event() {
    let server = RedisServer::start();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
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
    let server = RedisServer::start();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", false);
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
    let mut server = RedisServer::start();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
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
