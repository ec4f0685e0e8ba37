//! lockwatch on a Redis Cluster of three primaries, always through a seed
//! node that does not own the job's slot: the CLI's commands (also as a
//! supervisor with the rules `lockwatch acl` prints, and with a lock key in
//! another slot, read in two round trips); a Redisson-style release by
//! `DEL` and `SPUBLISH` (or plain `PUBLISH`, as Redisson before 3.22 sends
//! it) wakes the watcher at once; the worker's release reaches sharded and
//! plain subscribers; the job's slot migrated to another primary while the job
//! runs; a `kill -9` of the holder told by its sharded presence subscription
//! closing, and no alarm while the slot is half migrated; no alarm when the
//! slot's owner fails over to its replica, and the workers' presence follows;
//! and the worker's refusal of a lock key outside the job's slot.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::journal::{assert_no_overlap, journal, journal_worker_via, now_ns};
use common::server::connect;
use common::spy::{Spy, window};
use common::topology::{RedisCluster, query};
use common::{
    Recorded, WorkerProcess, beat, enabled_and_replicated, eventually, flag, lockwatch_command, next_push, record_each,
    record_events, record_statuses, redisson_lock, run_capturing, seed_fence, wait,
};
use lockwatch::input::{ConnectionSpec, Topology};
use lockwatch::watcher::{Options, Watcher};
use lockwatch::{EventKind, Keys, State};

const LOCK_KEY: &str = "{outbound}:lock";
const UNLOCK_CHANNEL: &str = "redisson_lock__channel:{outbound}:lock";

/// The `lockwatch` binary with `--cluster`, seeded at `url`.
fn lockwatch(url: &str) -> Command {
    let mut cmd = lockwatch_command();
    cmd.args(["--cluster", "--redis", url]);
    cmd
}

fn status_json(url: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let (out, text) = run_capturing(lockwatch(url).args(extra).args(["status", "--json"]));
    let json = serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
    (out.status.code(), json, text)
}

/// A journaling worker through the seed `url`, with a 3 s lease.
fn worker(url: &str, node: &str, journal: &Path) -> WorkerProcess {
    worker_leased(url, node, journal, "3s")
}

fn worker_leased(url: &str, node: &str, journal: &Path, lease: &str) -> WorkerProcess {
    journal_worker_via(&mut lockwatch(url), node, lease, journal)
}

fn cluster_spec(url: &str) -> ConnectionSpec {
    ConnectionSpec { topology: Topology::Single.or_cluster(true), ..ConnectionSpec::single(url, None) }
}

#[test]
fn the_cli_works_through_a_seed_node_that_does_not_own_the_jobs_slot() {
    let cluster = RedisCluster::start();
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.url(cluster.a_node_not_owning(LOCK_KEY));

    let (code, status, text) = status_json(&seed, &[]);
    assert_eq!((code, status["state"].as_str()), (Some(3), Some("unknown")), "{text}");
    assert!(status["reason"].as_str().unwrap().starts_with("no job named outbound on this Redis"), "{text}");

    let (out, text) = run_capturing(lockwatch(&seed).args(["enable", "--user", "alice", "--reason", "night shift"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let on: String = query(owner, redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON)).unwrap();
    assert_eq!(on, "1", "the flag lives on the slot's owner");
    let (code, status, text) = status_json(&seed, &[]);
    assert_eq!(status["enabled_users"], serde_json::json!(["alice"]), "{text}");
    assert_ne!(code, Some(3), "{text}");

    let (out, text) = run_capturing(lockwatch(&seed).args(["disable", "--user", "alice", "--reason", "done"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let (out, text) = run_capturing(lockwatch(&seed).args(["history", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{text}");

    // A supervisor with exactly the rules `lockwatch acl` prints, on every
    // node (ACL users are per node): status, her flip, the history.
    let (out, text) = run_capturing(lockwatch(&seed).args(["acl", "--user", "alice"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let rules = String::from_utf8(out.stdout).unwrap();
    for port in cluster.ports() {
        let mut conn = connect(port).unwrap();
        // The registration is a key: on the slot's owner only; the server
        // setting on every node, as the ACL user.
        let lines: Vec<&str> = rules.lines().filter(|l| !l.starts_with("SADD ") || port == owner).collect();
        common::run_lines(&mut conn, &lines.join("\n"));
        let _: () = redis::cmd("ACL").arg("SETUSER").arg("alice").arg(">pw").query(&mut conn).unwrap();
        let _: () = redis::cmd("ACL").arg("LOG").arg("RESET").query(&mut conn).unwrap();
    }
    // A holder that just died: its heartbeat claims a sharded presence, made
    // in the owner's process, that is gone from there. Only alice's probe
    // counting it (PUBSUB SHARDNUMSUB), checking that it reads in that process
    // (INFO server) and on the owner (CLUSTER MYID, KEYSLOT, SLOTS) can tell it
    // dying while its last beat is fresh.
    let mut owner_conn = connect(owner).unwrap();
    common::beat(&mut owner_conn, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let info: String = redis::cmd("INFO").arg("server").query(&mut owner_conn).unwrap();
    let run_id = info.lines().find_map(|l| l.strip_prefix("run_id:")).unwrap().trim().to_owned();
    let _: () = redis::cmd("HSET")
        .arg("{outbound}:node:srv-a")
        .arg(beat::PRESENCE)
        .arg("sharded")
        .arg(beat::PRESENCE_ON)
        .arg(&run_id)
        .query(&mut owner_conn)
        .unwrap();
    redisson_lock(&mut owner_conn, LOCK_KEY, "uuid-a:1", 60_000);
    let as_alice = seed.replace("redis://", "redis://alice:pw@");
    let (out, text) = run_capturing(lockwatch(&as_alice).args(["enable"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let (code, status, text) = status_json(&as_alice, &[]);
    assert_eq!(status["enabled_users"], serde_json::json!(["alice"]), "{text}");
    assert_eq!((code, status["state"].as_str()), (Some(1), Some("stale")), "{text}");
    assert!(status["reason"].as_str().unwrap().contains("dying"), "{text}");
    let (out, text) = run_capturing(lockwatch(&as_alice).args(["history", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    for port in cluster.ports() {
        let log: Vec<redis::Value> = query(port, redis::cmd("ACL").arg("LOG")).unwrap();
        assert!(log.is_empty(), "node {port} refused a command of alice's: {log:?}");
    }

    // A Redisson lock under its own name, in another slot: read apart.
    let other = "outboundLock";
    assert_ne!(cluster.slot_of(other), cluster.slot_of(LOCK_KEY));
    redisson_lock(&mut connect(cluster.owner_of(other)).unwrap(), other, "8d3c-uuid:57", 30_000);
    let (code, status, text) = status_json(&seed, &["--lock-key", other, "--no-heartbeat"]);
    assert_eq!((code, status["state"].as_str()), (Some(0), Some("running")), "{text}");
    assert_eq!(status["lock"]["holders"], serde_json::json!(["8d3c-uuid:57"]), "{text}");
}

#[test]
fn the_worker_refuses_a_lock_key_outside_the_jobs_slot_in_one_sentence() {
    // Said before any connection is made: no server needed.
    let (out, text) = run_capturing(lockwatch("redis://127.0.0.1:1").args([
        "--lock-key",
        "outboundLock",
        "worker",
        "--node",
        "a",
        "--",
        "true",
    ]));
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("the lock key outboundLock is in another Redis Cluster slot"), "{text}");
    assert!(text.contains("{outbound}:lock"), "{text}");
    assert_eq!(text.trim().lines().count(), 1, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redisson_release_by_del_and_publish_or_spublish_wakes_the_watcher_at_once() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let owner = cluster.owner_of(LOCK_KEY);
    let elsewhere = cluster.a_node_not_owning(LOCK_KEY);
    let seed = cluster.url(elsewhere);
    let mut conn = connect(owner).unwrap();
    flag(&mut conn, "outbound", "alice", true);
    redisson_lock(&mut conn, LOCK_KEY, "8d3c-uuid:57", 30_000);

    // A slow poll: only a message can explain a quick look.
    let mut options = Options { poll: Duration::from_secs(10), ..Options::default() };
    options.engine.heartbeats = false;
    let watcher = Watcher::spawn(cluster_spec(&seed).target().unwrap(), Keys::new("outbound"), options);
    let (seen, recorder) = record_statuses(&watcher);
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;
    // Let the subscriber settle on the slot's owner, sharded and plain.
    eventually("a sharded and a plain subscriber on the owner", Duration::from_secs(10), || {
        let sharded: Vec<redis::Value> =
            query(owner, redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(UNLOCK_CHANNEL)).ok()?;
        let plain: Vec<redis::Value> = query(owner, redis::cmd("PUBSUB").arg("NUMSUB").arg(UNLOCK_CHANNEL)).ok()?;
        (sharded.get(1) == Some(&redis::Value::Int(1)) && plain.get(1) == Some(&redis::Value::Int(1))).then_some(())
    })
    .await;

    // Redisson 3.22+ publishes sharded on the owner; older Redisson plain,
    // on whichever node it is connected to: the cluster passes it on.
    for (publish, on) in [("SPUBLISH", owner), ("PUBLISH", elsewhere)] {
        if publish == "PUBLISH" {
            redisson_lock(&mut conn, LOCK_KEY, "8d3c-uuid:57", 30_000);
            eventually("the watcher to say running again", Duration::from_secs(15), || running().then_some(())).await;
        }
        let released = Instant::now();
        let () = redis::cmd("DEL").arg(LOCK_KEY).query(&mut conn).unwrap();
        let receivers: u32 = query(on, redis::cmd(publish).arg(UNLOCK_CHANNEL).arg("0")).unwrap();
        if publish == "SPUBLISH" {
            assert_eq!(receivers, 1);
        }
        let after = eventually("the watcher to see the lock gone", Duration::from_secs(8), || {
            let seen = seen.lock().unwrap();
            seen.iter().any(|(t, s, _)| *t > released && *s != State::Running).then(|| released.elapsed())
        })
        .await;
        eprintln!("DEL + {publish} -> watcher saw it after {} ms", after.as_millis());
        assert!(after < Duration::from_secs(2), "the watcher took {after:?}: {publish} did not wake it");
    }
    watcher.stop().await;
    recorder.abort();
}

#[test]
fn the_workers_release_and_a_flip_reach_sharded_subscribers() {
    let cluster = RedisCluster::start();
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.url(cluster.a_node_not_owning(LOCK_KEY));
    let mut conn = connect(owner).unwrap();
    flag(&mut conn, "outbound", "alice", true);
    seed_fence(&mut conn);

    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _worker = worker(&seed, "srv-a", &j);
    wait::until("the job to start", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(()));

    let mut sub = connect(owner).unwrap();
    sub.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    sub.send_packed_command(&redis::cmd("SSUBSCRIBE").arg(UNLOCK_CHANNEL).arg("{outbound}:wake").get_packed_command())
        .unwrap();
    // Redisson before 3.22 listens plain, on any node.
    let mut plain = connect(cluster.a_node_not_owning(LOCK_KEY)).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    plain.send_packed_command(&redis::cmd("SUBSCRIBE").arg(UNLOCK_CHANNEL).get_packed_command()).unwrap();
    assert_eq!(next_push(&mut plain)[0], "subscribe");
    let (out, text) = run_capturing(lockwatch(&seed).args(["disable", "--user", "alice"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let mut pushes = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !pushes.contains(&format!("smessage {UNLOCK_CHANNEL} 0")) {
        assert!(Instant::now() < deadline, "no unlock message; got {pushes:?}");
        pushes.push(next_push(&mut sub).join(" "));
    }
    // Announced by the worker that saw the flip (a supervisor may not publish).
    assert!(pushes.contains(&"smessage {outbound}:wake srv-a".to_owned()), "{pushes:?}");
    assert_eq!(next_push(&mut plain), ["message", UNLOCK_CHANNEL, "0"], "the plain unlock message");
    let held: bool = query(owner, redis::cmd("EXISTS").arg(LOCK_KEY)).unwrap();
    assert!(!held, "released");
}

/// The job enabled by alice, its fence at 0, on the slot's owner: the
/// owner's port and the URL of a seed node that does not own the slot.
fn enabled(cluster: &RedisCluster) -> (u16, String) {
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.url(cluster.a_node_not_owning(LOCK_KEY));
    let mut c = connect(owner).unwrap();
    flag(&mut c, "outbound", "alice", true);
    seed_fence(&mut c);
    (owner, seed)
}

/// [`enabled`], and a watcher (200 ms poll) through the seed node.
fn enabled_and_watched(cluster: &RedisCluster) -> (u16, String, Watcher) {
    let (owner, seed) = enabled(cluster);
    let options = Options { poll: Duration::from_millis(200), ..Options::default() };
    let watcher = Watcher::spawn(cluster_spec(&seed).target().unwrap(), Keys::new("outbound"), options);
    (owner, seed, watcher)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_jobs_slot_migrating_to_another_primary_keeps_the_job_running_once_without_stopped() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let (owner, seed, watcher) = enabled_and_watched(&cluster);
    let (seen, recorder) = record_statuses(&watcher);

    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let workers = [worker(&seed, "srv-a", &j), worker(&seed, "srv-b", &j)];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let slot = cluster.slot_of(LOCK_KEY);
    let target = cluster.ports().into_iter().find(|&p| p != owner).unwrap();
    let started = Instant::now();
    tokio::task::block_in_place(|| cluster.migrate_slot(slot, target));
    let moved_ns = now_ns();
    eprintln!("slot {slot} moved from {owner} to {target} in {} ms", started.elapsed().as_millis());

    let at = eventually("the job to run after the move", Duration::from_secs(10), || {
        journal(&j).iter().any(|l| l.2 > moved_ns + 500_000_000).then(|| started.elapsed())
    })
    .await;
    eprintln!("job running after the move, {:.1} s after it began", at.as_secs_f64());
    let since = Instant::now();
    eventually("the watcher to say running after the move", Duration::from_secs(10), || {
        seen.lock().unwrap().iter().any(|(t, s, _)| *t > since && *s == State::Running).then_some(())
    })
    .await;
    let holders: Vec<String> = query(target, redis::cmd("HKEYS").arg(LOCK_KEY)).unwrap();
    assert_eq!(holders.len(), 1, "the new owner holds the lock of one server: {holders:?}");

    tokio::time::sleep(Duration::from_secs(2)).await;
    drop(workers);
    watcher.stop().await;
    recorder.abort();
    let lines = journal(&j);
    assert_no_overlap(&lines);
    let seen = seen.lock().unwrap();
    let states: Vec<String> =
        seen.iter().map(|(t, s, _)| format!("{:+.1}s {s:?}", t.duration_since(started).as_secs_f64())).collect();
    eprintln!("statuses around the move: {states:?}");
    for (_, state, reason) in seen.iter() {
        assert_ne!(*state, State::Stopped, "the watcher said stopped: {reason}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holder_is_told_dying_within_a_second_and_a_half_and_healthy_running_raises_no_alarm() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let (owner, seed) = enabled(&cluster);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    // A lease and a grace far beyond the bound: only the holder's closed
    // connection can explain a verdict in time.
    let mut workers =
        [("srv-a", worker_leased(&seed, "srv-a", &j, "30s")), ("srv-b", worker_leased(&seed, "srv-b", &j, "30s"))];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    let watcher = Watcher::spawn(cluster_spec(&seed).target().unwrap(), Keys::new("outbound"), Options::default());
    let (seen, recorder) = record_statuses(&watcher);
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;

    let healthy_from = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    for (t, state, reason) in seen.lock().unwrap().iter().filter(|(t, _, _)| *t > healthy_from) {
        assert_eq!(*state, State::Running, "healthy running, {:?} in: {reason}", t.duration_since(healthy_from));
    }

    let holder = journal(&j).last().map(|l| l.1.clone()).unwrap();
    let i = workers.iter().position(|(n, _)| *n == holder).unwrap();
    // With its reaper, so the lock is not let go: only the death can be told.
    let killed = Instant::now();
    workers[i].1.kill9_with_reaper();
    let (after, reason) = eventually("the watcher to say the holder is dying", Duration::from_secs(15), || {
        let seen = seen.lock().unwrap();
        seen.iter()
            .find(|(t, s, r)| *t > killed && *s == State::Stale && r.contains("dying"))
            .map(|(t, _, r)| (t.duration_since(killed), r.clone()))
    })
    .await;
    eprintln!(
        "kill -9 of the holder {holder} (lease 30 s, grace 10 s) -> stale after {} ms: {reason}",
        after.as_millis()
    );
    assert!(after < Duration::from_millis(1_500), "told after {after:?}, not within 1.5 s: {reason}");
    assert!(reason.contains("expires in"), "says when the lease ends: {reason}");

    // The survivor's presence is counted where the probe reads it: on the slot's owner.
    let survivor = workers[1 - i].0;
    let counts: Vec<redis::Value> =
        query(owner, redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(format!("{{outbound}}:alive:{survivor}"))).unwrap();
    assert_eq!(counts.get(1), Some(&redis::Value::Int(1)), "{survivor}'s presence on the owner: {counts:?}");
    watcher.stop().await;
    recorder.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_slot_owner_is_unknown_within_seconds_and_never_stopped() {
    let mut cluster = tokio::task::block_in_place(RedisCluster::start);
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.url(cluster.a_node_not_owning(LOCK_KEY));
    let mut conn = connect(owner).unwrap();
    flag(&mut conn, "outbound", "alice", true);
    redisson_lock(&mut conn, LOCK_KEY, "8d3c-uuid:57", 60_000);
    let mut options = Options { poll: Duration::from_millis(500), ..Options::default() };
    options.engine.heartbeats = false;
    let watcher = Watcher::spawn(cluster_spec(&seed).target().unwrap(), Keys::new("outbound"), options);
    let (seen, recorder) = record_statuses(&watcher);
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;

    let killed = Instant::now();
    cluster.kill_node(owner);
    let after = eventually("the watcher to say unknown", Duration::from_secs(15), || {
        let seen = seen.lock().unwrap();
        seen.iter().any(|(t, s, _)| *t > killed && *s == State::Unknown).then(|| killed.elapsed())
    })
    .await;
    eprintln!("kill -9 of the slot's owner -> unknown after {} ms (poll 500 ms)", after.as_millis());
    tokio::time::sleep(Duration::from_secs(3)).await;
    watcher.stop().await;
    recorder.abort();
    let seen = seen.lock().unwrap();
    let reason = seen.iter().rev().find(|(_, s, _)| *s == State::Unknown).map(|(_, _, r)| r.clone()).unwrap();
    eprintln!("reason: {reason}");
    // The read fails with its cause, rather than hanging in the cluster
    // client's retries until the watcher's patience runs out.
    assert!(reason.contains("refused"), "{reason}");
    for (_, state, reason) in seen.iter() {
        assert_ne!(*state, State::Stopped, "the watcher said stopped: {reason}");
    }
}

/// Freezes a cluster node (SIGSTOP) until dropped, even when the test fails halfway.
struct Frozen(libc::pid_t);

impl Frozen {
    fn node(port: u16) -> Frozen {
        let info: String = query(port, redis::cmd("INFO").arg("server")).unwrap();
        let pid = info.lines().find_map(|l| l.strip_prefix("process_id:")).unwrap().trim().parse().unwrap();
        // SAFETY: kill(2) on one of the test's own redis-server processes.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGSTOP) }, 0);
        Frozen(pid)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        // SAFETY: kill(2) on one of the test's own redis-server processes.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_slot_owner_is_unknown_within_4_s_and_another_frozen_primary_changes_nothing() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.a_node_not_owning(LOCK_KEY);
    let mut conn = connect(owner).unwrap();
    flag(&mut conn, "outbound", "alice", true);
    redisson_lock(&mut conn, LOCK_KEY, "8d3c-uuid:57", 60_000);
    // The defaults: a look every 10 s, a liveness check every second between looks.
    let mut options = Options::default();
    options.engine.heartbeats = false;
    let watcher = Watcher::spawn(cluster_spec(&cluster.url(seed)).target().unwrap(), Keys::new("outbound"), options);
    let (seen, recorder) = record_statuses(&watcher);
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;

    // Another primary frozen for 3 s (under the cluster's node timeout): the job's slot still answers.
    let other = cluster.ports().into_iter().find(|&p| p != owner).unwrap();
    let frozen = Frozen::node(other);
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(frozen);
    assert!(running(), "a frozen primary that does not serve the job changed the status: {:?}", seen.lock().unwrap());

    let frozen = Frozen::node(owner);
    let stopped = Instant::now();
    let after = eventually("the watcher to say unknown", Duration::from_secs(4), || {
        let seen = seen.lock().unwrap();
        seen.iter().any(|(t, s, _)| *t > stopped && *s == State::Unknown).then(|| stopped.elapsed())
    })
    .await;
    eprintln!("SIGSTOP of the slot's owner -> unknown after {} ms (default options)", after.as_millis());
    drop(frozen);
    eventually("the watcher to say running again", Duration::from_secs(5), || running().then_some(())).await;
    watcher.stop().await;
    recorder.abort();
    for (_, state, reason) in seen.lock().unwrap().iter() {
        assert_ne!(*state, State::Stopped, "the watcher said stopped: {reason}");
    }
}

/// The figure for the README: 100 jobs spread over the three primaries,
/// each with a flag, a holder's heartbeat and a Redisson lock; one cluster
/// connection probes them all, round after round, and the same on one
/// Redis for comparison. Run with
/// `cargo test --release --test cluster a_hundred_jobs -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a figure, not a test: run it by name with --ignored --nocapture"]
async fn a_hundred_jobs_spread_over_the_cluster_probe_p50_p99() {
    const JOBS: usize = 100;
    const ROUNDS: usize = 30;
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let single = common::RedisServer::start();
    let jobs: Vec<String> = (0..JOBS).map(|i| format!("job-{i}")).collect();
    let mut per_node = std::collections::BTreeMap::new();
    for job in &jobs {
        let owner = cluster.owner_of(&format!("{{{job}}}:lock"));
        *per_node.entry(owner).or_insert(0) += 1;
        for conn in [&mut connect(owner).unwrap(), &mut single.conn()] {
            flag(conn, job, "alice", true);
            redisson_lock(conn, &format!("{{{job}}}:lock"), "8d3c-uuid:57", 600_000);
            common::beat(conn, job, "srv-a", "8d3c-uuid:57", 7, "running", 0);
        }
    }
    eprintln!("jobs per primary: {:?}", per_node.values().collect::<Vec<_>>());
    for (name, spec) in [
        ("cluster (3 primaries)", cluster_spec(&cluster.url(cluster.ports()[0]))),
        ("one Redis", ConnectionSpec::single(single.url(), None)),
    ] {
        let target = spec.target().unwrap();
        let mut conn = target.manager().await.unwrap();
        let keys: Vec<Keys> = jobs.iter().map(|j| Keys::new(j)).collect();
        for k in &keys {
            lockwatch::probe::probe(&mut conn, k, target.endpoint()).await.unwrap();
        }
        let mut times = Vec::with_capacity(JOBS * ROUNDS);
        for _ in 0..ROUNDS {
            for k in &keys {
                let t = Instant::now();
                let snap = lockwatch::probe::probe(&mut conn, k, target.endpoint()).await.unwrap();
                times.push(t.elapsed());
                assert_eq!(snap.lock.holders.len(), 1);
            }
        }
        times.sort();
        let q = |p: usize| times[(times.len() * p / 100).min(times.len() - 1)].as_secs_f64() * 1e6;
        eprintln!("{name}: {} probes of {JOBS} jobs, p50 {:.0} µs, p99 {:.0} µs", times.len(), q(50), q(99));
    }
}

/// A slot whose keys have moved but whose ownership has not yet (a
/// resharding between `MIGRATE` and `SETSLOT … NODE`): the probe reaches the
/// keys on the importing node by `ASK`, where no worker's sharded presence
/// is; that must not pass for the holder dying.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_left_half_migrated_raises_no_alarm_and_the_presence_follows_the_slot() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let (owner, seed, watcher) = enabled_and_watched(&cluster);
    let (seen, recorder) = record_statuses(&watcher);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _workers = [worker_leased(&seed, "srv-a", &j, "30s"), worker_leased(&seed, "srv-b", &j, "30s")];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let slot = cluster.slot_of(LOCK_KEY);
    let target = cluster.ports().into_iter().find(|&p| p != owner).unwrap();
    let started = Instant::now();
    let from = tokio::task::block_in_place(|| {
        let from = cluster.begin_migration(slot, target);
        cluster.move_keys(slot, from, target, 100);
        from
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let looks_while_half = seen.lock().unwrap().iter().filter(|(t, _, _)| *t > started).count();
    tokio::task::block_in_place(|| cluster.finish_migration(slot, from, target));

    // Each worker claims its presence again, now counted on the new owner.
    let alive = ["{outbound}:alive:srv-a", "{outbound}:alive:srv-b"];
    eventually("both presences claimed and counted on the new owner", Duration::from_secs(10), || {
        let counts: Vec<redis::Value> = query(target, redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(&alive)).ok()?;
        let claims: Vec<Option<String>> = ["srv-a", "srv-b"]
            .iter()
            .map(|n| {
                query(target, redis::cmd("HGET").arg(format!("{{outbound}}:node:{n}")).arg(beat::PRESENCE)).unwrap()
            })
            .collect();
        (counts.get(1) == Some(&redis::Value::Int(1))
            && counts.get(3) == Some(&redis::Value::Int(1))
            && claims.iter().all(|c| c.as_deref() == Some("sharded")))
        .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    watcher.stop().await;
    recorder.abort();
    let seen = seen.lock().unwrap();
    let after: Vec<String> = seen
        .iter()
        .filter(|(t, _, _)| *t > started)
        .map(|(t, s, r)| format!("{:+.2}s {s:?} {r}", t.duration_since(started).as_secs_f64()))
        .collect();
    eprintln!("{} statuses in the 3 s the slot was half migrated", looks_while_half);
    for (t, state, reason) in seen.iter().filter(|(t, _, _)| *t > started) {
        assert_eq!(*state, State::Running, "{:?} after the move began: {reason}; all: {after:#?}", *t - started);
    }
    // Looks come every 200 ms: a wake-up storm (workers announcing a live
    // holder gone, over and over) would show as far more.
    assert!(looks_while_half < 40, "{looks_while_half} statuses in 3 s: {after:#?}");
}

/// The owner of the job's slot fails over to its replica (`CLUSTER
/// FAILOVER`, as before maintenance) while two workers run the job. The new
/// owner has the holder's sharded presence claim, replicated, without its
/// subscription until the worker subscribes there again: neither the watcher
/// nor a look in that window may take it for a death.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_failover_never_tells_the_healthy_holder_dying() {
    let mut cluster = tokio::task::block_in_place(RedisCluster::start);
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.url(cluster.a_node_not_owning(LOCK_KEY));
    let replica = tokio::task::block_in_place(|| cluster.add_replica(owner));
    enabled_and_replicated(owner);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _workers = [worker_leased(&seed, "srv-a", &j, "30s"), worker_leased(&seed, "srv-b", &j, "30s")];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    let watcher = Watcher::spawn(cluster_spec(&seed).target().unwrap(), Keys::new("outbound"), Options::default());
    let (seen, recorder) = record_statuses(&watcher);
    let (events, event_recorder) = record_events(&watcher);
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let spy = Spy::start(vec![replica], owner);
    let started = Instant::now();
    let started_ns = now_ns();
    tokio::task::block_in_place(|| cluster.fail_over_to(replica));
    let promoted = started.elapsed();
    // A look as soon as the new owner serves the slot.
    let (code, first_look, text) = tokio::task::block_in_place(|| status_json(&seed, &[]));
    let looked = started.elapsed();
    eventually("the job to run after the failover", Duration::from_secs(30), || {
        journal(&j).iter().any(|l| l.2 > started_ns + 1_000_000_000).then_some(())
    })
    .await;
    // The demoted owner keeps the workers' sharded subscriptions, where no
    // probe counts them: each worker subscribes again on the new owner. (The
    // window in which the new owner has the holder's claim without it is
    // short here, as the paused holder beats there first; before the worker
    // subscribed again it lasted until the connection broke.)
    let alive = ["{outbound}:alive:srv-a", "{outbound}:alive:srv-b"];
    let counted = eventually("both presences counted on the new owner", Duration::from_secs(10), || {
        let counts: Vec<redis::Value> = query(replica, redis::cmd("PUBSUB").arg("SHARDNUMSUB").arg(&alive)).ok()?;
        let one = Some(&redis::Value::Int(1));
        (counts.get(1) == one && counts.get(3) == one).then_some(started.elapsed())
    })
    .await;
    // Past the watcher's regular look (every 10 s by default).
    tokio::time::sleep(Duration::from_secs(11)).await;
    let sighting = spy.stop().await;
    let holders: Vec<String> = query(replica, redis::cmd("HKEYS").arg(LOCK_KEY)).unwrap();
    watcher.stop().await;
    recorder.abort();
    event_recorder.abort();

    let when = |t: &Instant| format!("{:+.2}s", t.duration_since(started).as_secs_f64());
    let seen = seen.lock().unwrap();
    let events = events.lock().unwrap();
    let said: Vec<String> =
        seen.iter().filter(|(t, ..)| *t >= started).map(|(t, s, r)| format!("{} {s:?}: {r}", when(t))).collect();
    let told: Vec<String> =
        events.iter().filter(|(t, ..)| *t >= started).map(|(t, e, r)| format!("{} {e:?}: {r}", when(t))).collect();
    eprintln!(
        "shard failover: new owner after {:.2} s, both presences counted there after {:.2} s; on it the holder's \
         claim without a subscriber: {}; the probe said it gone: {}\nstatus at {:.2} s: {} {}\n\
         statuses: {said:#?}\nevents: {told:#?}",
        promoted.as_secs_f64(),
        counted.as_secs_f64(),
        window(&sighting.claim_without_subscriber, started),
        window(&sighting.probe_said_gone, started),
        looked.as_secs_f64(),
        first_look["state"],
        first_look["reason"],
    );
    assert_no_overlap(&journal(&j));
    assert_eq!(holders.len(), 1, "the new owner holds the lock of one server: {holders:?}");
    assert!(sighting.probe_said_gone.is_empty(), "the probe read the healthy holder gone on the new owner");
    assert_eq!((code, first_look["state"].as_str()), (Some(0), Some("running")), "{text}");
    for (_, state, reason) in seen.iter() {
        assert_ne!(*state, State::Stale, "the watcher said the healthy holder {reason}");
        assert_ne!(*state, State::Stopped, "the watcher said stopped: {reason}");
    }
    for (_, event, reason) in events.iter() {
        assert!(!matches!(event, EventKind::Stalled | EventKind::Died), "the watcher told {event:?}: {reason}");
    }
}

/// Three jobs on their own slots, watched by one process through a seed
/// node; one job's slot migrated to another primary while all run: that job
/// runs on once, and no job is said stopped, nor any but the moved one told
/// anything at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_of_several_watched_jobs_whose_slot_moves_runs_on_and_the_others_hear_nothing() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let jobs = ["outbound", "inbound", "stock"];
    let seed = cluster.url(cluster.a_node_not_owning(LOCK_KEY));
    for job in jobs {
        let mut c = connect(cluster.owner_of(&format!("{{{job}}}:lock"))).unwrap();
        flag(&mut c, job, "alice", true);
        let _: () = redis::cmd("SET").arg(format!("{{{job}}}:fence")).arg(0).query(&mut c).unwrap();
    }
    let options = Options { poll: Duration::from_millis(200), ..Options::default() };
    let target = cluster_spec(&seed).target().unwrap();
    let watchers = Watcher::spawn_all(target, jobs.iter().map(|j| (Keys::new(j), options.clone())).collect());
    let recorded = record_each(&watchers);
    let dir = tempfile::tempdir().unwrap();
    let journals: Vec<_> = jobs.iter().map(|job| dir.path().join(job)).collect();
    let mut workers = Vec::new();
    for (job, j) in jobs.iter().zip(&journals) {
        for node in ["srv-a", "srv-b"] {
            workers.push(journal_worker_via(lockwatch(&seed).args(["--job", job]), node, "3s", j));
        }
    }
    let all_running = || recorded.iter().all(Recorded::running);
    eventually("every job to run", Duration::from_secs(30), || all_running().then_some(())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let owner = cluster.owner_of(LOCK_KEY);
    let slot = cluster.slot_of(LOCK_KEY);
    let to = cluster.ports().into_iter().find(|&p| p != owner).unwrap();
    let started = Instant::now();
    tokio::task::block_in_place(|| cluster.migrate_slot(slot, to));
    let moved_ns = now_ns();
    eventually("outbound to run after the move", Duration::from_secs(10), || {
        journal(&journals[0]).iter().any(|l| l.2 > moved_ns + 500_000_000).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    eventually("every job to be running", Duration::from_secs(10), || all_running().then_some(())).await;
    // What the workers' end makes the watchers say is not the scenario's.
    let ended = Instant::now();
    drop(workers);
    for watcher in watchers {
        watcher.stop().await;
    }

    for ((job, j), r) in jobs.iter().zip(&journals).zip(&recorded) {
        assert_no_overlap(&journal(j));
        let said = r.said_between(started, ended);
        eprintln!("{job}: {said:#?}");
        for (_, state, reason) in r.statuses.lock().unwrap().iter() {
            assert_ne!(*state, State::Stopped, "{job} was said stopped: {reason}");
        }
        if *job != "outbound" {
            assert!(said.iter().all(|s| s.contains("Running")), "{job} heard of another job's move: {said:?}");
            let told = r.events.lock().unwrap().iter().filter(|(t, ..)| (started..ended).contains(t)).count();
            assert_eq!(told, 0, "{job} was told of another job's move");
        }
    }
}
