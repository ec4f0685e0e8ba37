//! lockwatch through Sentinel, against a real primary, replica and three
//! `redis-sentinel`s: `status` finds the primary by the sentinels; a wrong
//! primary name or no sentinel is one sentence and UNKNOWN; and a `kill -9`
//! of the primary while two workers run the job leaves the job running on
//! one server within 30 s, the watcher never saying `stopped`, and the
//! workers' journal without overlap; a failover (asked, or a `kill -9` of the
//! primary) never has a healthy holder told dying; and a worker follows a
//! switchover to the new primary, its presence with it.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::journal::{assert_no_overlap, journal, journal_worker_via, now_ns};
use common::server::connect;
use common::spy::{Spy, window};
use common::topology::{SentinelSet, is_primary, query};
use common::{
    Recorded, WorkerProcess, beat, enabled_and_replicated, eventually, flag, free_port, record_each, record_events,
    record_statuses, run_capturing,
};
use lockwatch::input::{ConnectionSpec, Topology};
use lockwatch::watcher::{Options, Watcher};
use lockwatch::{EventKind, Keys, State};

/// Only user, password and TLS of this URL count with Sentinel: its host
/// is one where nothing listens.
const URL: &str = "redis://127.0.0.1:1";

fn lockwatch(set: &SentinelSet, master: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    cmd.args(["--redis", URL, "--sentinel", &set.sentinel_addrs().join(","), "--sentinel-master", master]);
    cmd
}

/// A journaling worker through the set's sentinels, with a 3 s lease.
fn worker(set: &SentinelSet, node: &str, journal: &Path) -> WorkerProcess {
    leased_worker(set, node, journal, "3s")
}

fn leased_worker(set: &SentinelSet, node: &str, journal: &Path, lease: &str) -> WorkerProcess {
    journal_worker_via(&mut lockwatch(set, &set.master_name), node, lease, journal)
}

fn sentinel_spec(set: &SentinelSet) -> ConnectionSpec {
    let addrs = set.sentinel_addrs().join(",");
    ConnectionSpec {
        topology: Topology::from_inputs(Some(&addrs), Some(&set.master_name)),
        ..ConnectionSpec::single(URL, None)
    }
}

#[test]
fn status_finds_the_primary_through_the_sentinels_and_a_bad_name_or_no_sentinel_is_unknown() {
    let set = SentinelSet::start();
    // The job exists (a job this Redis never saw is `unknown`, exit 3).
    flag(&mut connect(set.primary_port()).unwrap(), "outbound", "alice", false);
    let (out, text) = run_capturing(lockwatch(&set, &set.master_name).args(["status", "--json"]));
    assert_eq!(out.status.code(), Some(0), "{text}");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["state"], "stopped", "{text}");

    let (out, text) = run_capturing(lockwatch(&set, "no-such-primary").arg("status"));
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("no sentinel knows a primary named \"no-such-primary\""), "{text}");
    assert!(text.contains("--sentinel-master"), "{text}");

    let nobody = format!("127.0.0.1:{},127.0.0.1:{}", free_port(), free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    cmd.args(["--redis", URL, "--sentinel", &nobody, "--sentinel-master", &set.master_name, "status"]);
    let (out, text) = run_capturing(&mut cmd);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("no sentinel answered") && text.contains("redis-sentinel"), "{text}");
    assert_eq!(text.trim().lines().filter(|l| l.contains("sentinel")).count(), 1, "{text}");

    // Half of the pair, or a sentinel without a port: a usage error, UNKNOWN.
    let mut half = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    let (out, text) = run_capturing(half.args(["--sentinel", "127.0.0.1:26379", "status"]));
    assert_eq!(out.status.code(), Some(3), "{text}");
    let mut portless = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    let (out, text) = run_capturing(portless.args(["--sentinel", "db", "--sentinel-master", "m", "status"]));
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("HOST:PORT"), "{text}");
}

#[test]
fn the_urls_user_and_password_log_in_to_the_data_nodes_found_through_the_sentinels() {
    // The data nodes know alice; a wrong password is refused there.
    let set = SentinelSet::start_with(&["--user", "alice", "on", ">s3cret", "~*", "&*", "+@all"]);
    let sentinels = set.sentinel_addrs().join(",");
    let with = |url: &str, args: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
        cmd.args(["--redis", url, "--sentinel", &sentinels, "--sentinel-master", &set.master_name]).args(args);
        run_capturing(&mut cmd)
    };
    let (out, text) = with("redis://alice:s3cret@127.0.0.1:1", &["enable"]);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let on: String =
        query(set.primary_port(), redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON)).unwrap();
    assert_eq!(on, "1", "alice (the URL's user) flipped her flag on the primary");
    let (out, text) = with("redis://alice:s3cret@127.0.0.1:1", &["status"]);
    assert_eq!(out.status.code(), Some(1), "enabled, no worker yet: pending; {text}");

    let (out, text) = with("redis://alice:wrong@127.0.0.1:1", &["status"]);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("check the user and password"), "{text}");
    assert!(!text.contains("wrong@") && !text.contains(":wrong"), "the password is never shown: {text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_primary_leaves_the_job_running_on_one_server_without_overlap_or_stopped() {
    let mut set = SentinelSet::start();
    let primary = set.primary_port();
    enabled_and_replicated(primary);

    let keys = Keys::new("outbound");
    let options = Options { poll: Duration::from_millis(200), ..Options::default() };
    let watcher = Watcher::spawn(sentinel_spec(&set).target().unwrap(), keys, options);
    let (seen, recorder) = record_statuses(&watcher);

    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _workers = [worker(&set, "srv-a", &j), worker(&set, "srv-b", &j)];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    let running = || seen.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(10), || running().then_some(())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let killed_ns = now_ns();
    let killed = Instant::now();
    let old = tokio::task::block_in_place(|| set.kill_primary());
    let new = tokio::task::block_in_place(|| set.wait_for_new_primary(Duration::from_secs(30)));
    assert_ne!(old, new);
    let promoted_ns = now_ns();
    eprintln!("new primary after {:.1} s", killed.elapsed().as_secs_f64());

    // Running again: the job writes after the promotion, and the watcher,
    // reading the new primary, says running.
    let at = eventually("the job to run after the failover", Duration::from_secs(30), || {
        journal(&j).iter().any(|l| l.2 > promoted_ns + 500_000_000).then_some(killed.elapsed())
    })
    .await;
    eprintln!("job running after the failover, {:.1} s after the kill", at.as_secs_f64());
    let since = Instant::now();
    eventually("the watcher to say running again", Duration::from_secs(30).saturating_sub(at), || {
        seen.lock().unwrap().iter().any(|(t, s, _)| *t > since && *s == State::Running).then_some(())
    })
    .await;
    assert!(killed.elapsed() < Duration::from_secs(30), "running again only after {:?}", killed.elapsed());
    let holders: Vec<String> = query(new, redis::cmd("HKEYS").arg("{outbound}:lock")).unwrap();
    assert_eq!(holders.len(), 1, "the new primary holds the lock of one server: {holders:?}");

    // A few more seconds of running, then the journal and the statuses.
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(_workers);
    watcher.stop().await;
    recorder.abort();
    let lines = journal(&j);
    assert_no_overlap(&lines);
    let after: Vec<&String> = lines.iter().filter(|l| l.2 > killed_ns).map(|l| &l.1).collect();
    assert!(!after.is_empty());
    let seen = seen.lock().unwrap();
    let states: Vec<String> =
        seen.iter().map(|(t, s, _)| format!("{:+.1}s {s:?}", t.duration_since(killed).as_secs_f64())).collect();
    eprintln!("statuses after the kill: {states:?}");
    for (_, state, reason) in seen.iter() {
        assert_ne!(*state, State::Stopped, "the watcher said stopped: {reason}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_primary_answering_readonly_is_dropped_and_the_worker_follows_to_the_new_one() {
    let mut set = SentinelSet::start();
    let old = set.primary_port();
    enabled_and_replicated(old);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _worker = worker(&set, "srv-a", &j);
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    // What the old primary refused: a write (READONLY), or, while it syncs
    // from the new one, a read of the probe function it no longer has.
    let failed_calls = |port: u16| -> u64 {
        let stats: String = query(port, redis::cmd("INFO").arg("commandstats")).unwrap_or_default();
        stats
            .split([',', '\n'])
            .filter_map(|kv| kv.trim().strip_prefix("failed_calls="))
            .map(|n| n.parse::<u64>().unwrap_or(0))
            .sum()
    };
    let failed_before = failed_calls(old);
    let swapped_ns = now_ns();
    let new = tokio::task::block_in_place(|| set.demote_primary());
    // The worker's next write on the old primary answers READONLY; it
    // connects again through the sentinels and beats on the new primary.
    let seq = |port: u16| -> u64 {
        query::<Option<u64>>(port, redis::cmd("HGET").arg("{outbound}:node:srv-a").arg(beat::SEQ))
            .ok()
            .flatten()
            .unwrap_or(0)
    };
    let before = seq(new);
    let beats_on_new = eventually("the worker to beat on the new primary", Duration::from_secs(15), || {
        (seq(new) > before + 1).then_some(())
    });
    beats_on_new.await;
    let errors: String = query(old, redis::cmd("INFO").arg("errorstats")).unwrap();
    let refused = errors.contains("errorstat_READONLY") || failed_calls(old) > failed_before;
    assert!(refused, "the old primary refused the worker nothing: {errors}");
    let ttl: i64 = query(new, redis::cmd("PTTL").arg("{outbound}:lock")).unwrap();
    assert!(ttl > 0, "the lock is held and renewed on the new primary");
    // Its presence subscription stayed on the old primary (no CLIENT KILL),
    // where no probe counts it: the worker makes it again on the new one.
    let counted = || {
        let counts: (String, i64) =
            query(new, redis::cmd("PUBSUB").arg("NUMSUB").arg("{outbound}:alive:srv-a")).unwrap_or_default();
        (counts.1 == 1).then_some(())
    };
    eventually("the worker's presence counted on the new primary", Duration::from_secs(5), counted).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lines = journal(&j);
    assert_no_overlap(&lines);
    assert!(lines.iter().any(|l| l.2 > swapped_ns + 1_000_000_000), "the job kept running after the switch");
}

/// How the primary goes in a failover test.
#[derive(Debug, Clone, Copy)]
enum Failover {
    /// `SENTINEL FAILOVER`: the old primary lives on as the new one's replica.
    Asked,
    /// `kill -9` of the primary.
    Killed,
}

/// Two workers run the job while a watcher with default options looks
/// through the sentinels; the primary is failed over `how`. The job runs
/// on after it, and the watcher never says the healthy holder is dying
/// (`stale`), nor tells a `stalled` or `died`, although the new primary
/// has the holder's heartbeat claiming a presence subscription that was
/// made on the old one (subscriptions are not replicated).
async fn failover_keeps_a_healthy_holder_healthy(how: Failover) {
    let mut set = SentinelSet::start();
    let primary = set.primary_port();
    enabled_and_replicated(primary);

    let watcher = Watcher::spawn(sentinel_spec(&set).target().unwrap(), Keys::new("outbound"), Options::default());
    let (statuses, status_recorder) = record_statuses(&watcher);
    let (events, event_recorder) = record_events(&watcher);

    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    // The default lease: it outlasts the old primary's life as a primary
    // after an asked failover (until a sentinel converts it, up to 10 s).
    let _workers = [leased_worker(&set, "srv-a", &j, "30s"), leased_worker(&set, "srv-b", &j, "30s")];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    let running = || statuses.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running);
    eventually("the watcher to say running", Duration::from_secs(15), || running().then_some(())).await;
    // Both workers beat with their presence held.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let started = Instant::now();
    let started_ns = now_ns();
    let old = match how {
        Failover::Asked => tokio::task::block_in_place(|| set.fail_over()),
        Failover::Killed => tokio::task::block_in_place(|| set.kill_primary()),
    };
    let spy = Spy::start(set.server_ports(), old);
    let new = tokio::task::block_in_place(|| set.wait_for_new_primary(Duration::from_secs(30)));
    let promoted = started.elapsed();
    // A look that begins while the new primary shows the claim made on the
    // old one, as a monitoring system's check or a desktop starting would.
    let shown = || (!spy.sighting().claim_without_subscriber.is_empty()).then_some(started.elapsed());
    let shown_at = eventually("the holder's claim without a subscriber", Duration::from_secs(10), shown).await;
    let (out, text) =
        tokio::task::block_in_place(|| run_capturing(lockwatch(&set, &set.master_name).args(["status", "--json"])));
    let first_look: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let first_look = format!("{} at {:.2} s: {}", first_look["state"], shown_at.as_secs_f64(), first_look["reason"]);
    if matches!(how, Failover::Asked) {
        // The workers and the watcher stay on the old primary until a
        // sentinel turns it into a replica and closes their connections.
        let converted = || tokio::task::block_in_place(|| (!is_primary(old)).then_some(()));
        eventually("the old primary to become a replica", Duration::from_secs(30), converted).await;
    }
    let promoted_ns = now_ns();

    let at = eventually("the job to run after the failover", Duration::from_secs(30), || {
        journal(&j).iter().any(|l| l.2 > promoted_ns + 500_000_000).then_some(started.elapsed())
    })
    .await;
    // Long enough for a resubscription, the heartbeat's grace and the lease.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let sighting = spy.stop().await;
    let holders: Vec<String> = query(new, redis::cmd("HKEYS").arg("{outbound}:lock")).unwrap();
    drop(_workers);
    watcher.stop().await;
    status_recorder.abort();
    event_recorder.abort();

    let lines = journal(&j);
    let when = |t: &Instant| format!("{:+.2}s", t.duration_since(started).as_secs_f64());
    eprintln!("runs: {:#?}", describe_runs(&lines, started_ns));
    if matches!(how, Failover::Killed) {
        assert_no_overlap(&lines);
    }
    let statuses = statuses.lock().unwrap();
    let events = events.lock().unwrap();
    let said: Vec<String> =
        statuses.iter().filter(|(t, ..)| *t >= started).map(|(t, s, r)| format!("{} {s:?}: {r}", when(t))).collect();
    let told: Vec<String> =
        events.iter().filter(|(t, ..)| *t >= started).map(|(t, e, r)| format!("{} {e:?}: {r}", when(t))).collect();
    eprintln!(
        "{how:?}: new primary after {:.2} s, job running after {:.2} s; on the new primary the holder's claim \
         without a subscriber: {}; the probe said it gone: {}\nstatus in that window: {first_look}\n\
         statuses: {said:#?}\nevents: {told:#?}",
        promoted.as_secs_f64(),
        at.as_secs_f64(),
        window(&sighting.claim_without_subscriber, started),
        window(&sighting.probe_said_gone, started),
    );
    assert_eq!(holders.len(), 1, "the new primary holds the lock of one server: {holders:?}");
    assert!(out.status.code() == Some(0) && first_look.starts_with("\"running\""), "status said {first_look}; {text}");
    // The test proves something only if the new primary did show the claim
    // made on the old one with nobody subscribed.
    assert!(
        !sighting.claim_without_subscriber.is_empty(),
        "the spy never saw the holder's claim without a subscriber on the new primary"
    );
    for (_, state, reason) in statuses.iter() {
        assert_ne!(*state, State::Stale, "the watcher said the healthy holder {reason}");
        assert_ne!(*state, State::Stopped, "the watcher said stopped: {reason}");
    }
    for (_, event, reason) in events.iter() {
        assert!(!matches!(event, EventKind::Stalled | EventKind::Died), "the watcher told {event:?}: {reason}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_never_tells_the_healthy_holder_dying() {
    failover_keeps_a_healthy_holder_healthy(Failover::Asked).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_the_primary_never_tells_the_healthy_holder_dying() {
    failover_keeps_a_healthy_holder_healthy(Failover::Killed).await;
}

/// Runs of the journal, one line each, with times from `started_ns`.
fn describe_runs(lines: &[(i64, String, u128)], started_ns: u128) -> Vec<String> {
    let mut runs: Vec<(i64, String, u128, u128)> = Vec::new();
    for (fence, node, ns) in lines {
        match runs.iter_mut().find(|r| r.0 == *fence && r.1 == *node) {
            Some(run) => run.3 = *ns,
            None => runs.push((*fence, node.clone(), *ns, *ns)),
        }
    }
    let ms = |ns: u128| (ns as f64 - started_ns as f64) / 1e6;
    runs.iter().map(|(f, n, a, b)| format!("fence {f} on {n} from {:+.0} ms to {:+.0} ms", ms(*a), ms(*b))).collect()
}

/// After `SENTINEL FAILOVER` the old primary stays a primary, without its
/// replica, until a sentinel converts it (up to ~10 s): a holder still
/// renewing there must stop before its lease, as the promoted replica knows
/// it, runs out and another server takes the job on the new primary (the
/// other worker once it follows, or a third one started after the switch,
/// which finds the new primary at once), and must not take the lock still
/// its own there again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asked_failover_with_a_short_lease_never_runs_the_job_on_two_servers() {
    let mut set = SentinelSet::start();
    enabled_and_replicated(set.primary_port());
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _workers = [worker(&set, "srv-a", &j), worker(&set, "srv-b", &j)];
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let started_ns = now_ns();
    let old = tokio::task::block_in_place(|| set.fail_over());
    let new = tokio::task::block_in_place(|| set.wait_for_new_primary(Duration::from_secs(30)));
    assert_ne!(old, new);
    let promoted_ns = now_ns();
    let _late = worker(&set, "srv-c", &j);
    // The old primary's conversion to a replica, the lease on the new one
    // and a take-over there all fall in this time.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let converted = !tokio::task::block_in_place(|| is_primary(old));
    drop(_workers);
    drop(_late);

    let lines = journal(&j);
    eprintln!("old primary converted to a replica: {converted}; runs: {:#?}", describe_runs(&lines, started_ns));
    assert_no_overlap(&lines);
    assert!(lines.iter().any(|l| l.2 > promoted_ns + 10_000_000_000), "the job runs again after the failover");
}

/// A split brain: the sentinels promote the replica while the old primary,
/// cut off from them (here: forgotten by them), stays a writable primary
/// with a replica of its own that confirms every renewal there. The holder
/// on the old primary must stop before its lease on the new one runs out
/// and another server starts there (or renew on the new one, where its lock
/// was replicated): a renewal counts only while a majority of the sentinels
/// names its server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_the_sentinels_left_behind_with_a_replica_of_its_own_keeps_no_holding() {
    let mut set = SentinelSet::start();
    let old = set.primary_port();
    enabled_and_replicated(old);
    let follower = common::server::RedisServer::start();
    let mut f = follower.conn();
    let _: () = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(old).query(&mut f).unwrap();
    eventually("the second replica's link", Duration::from_secs(10), || {
        let info: String = query(follower.port, redis::cmd("INFO").arg("replication")).ok()?;
        info.contains("master_link_status:up").then_some(())
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _a = worker(&set, "srv-a", &j);
    eventually("the job to run", Duration::from_secs(20), || (!journal(&j).is_empty()).then_some(())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    let started_ns = now_ns();
    let new = tokio::task::block_in_place(|| set.leave_primary_behind());
    assert_ne!(old, new);
    let _b = worker(&set, "srv-b", &j);
    tokio::time::sleep(Duration::from_secs(12)).await;
    drop(_a);
    drop(_b);

    let lines = journal(&j);
    eprintln!("runs: {:#?}", describe_runs(&lines, started_ns));
    assert_no_overlap(&lines);
    assert!(lines.iter().any(|l| l.2 > started_ns + 8_000_000_000), "the job runs on the primary the sentinels name");
}

/// Three jobs watched by one process through the sentinels, their looks
/// sent together, each job run by two workers; the primary killed: each job
/// runs on after the failover on one server at a time, and none is told
/// stopped or stale, nor `died` or `stalled`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_jobs_watched_together_ride_out_a_kill_9_of_the_primary() {
    let mut set = SentinelSet::start();
    let primary = set.primary_port();
    let jobs = ["outbound", "inbound", "stock"];
    let mut c = connect(primary).unwrap();
    for job in jobs {
        flag(&mut c, job, "alice", true);
        let _: () = redis::cmd("SET").arg(format!("{{{job}}}:fence")).arg(0).query(&mut c).unwrap();
    }
    let acked: u32 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut c).unwrap();
    assert_eq!(acked, 1);

    let target = sentinel_spec(&set).target().unwrap();
    let watchers = Watcher::spawn_all(target, jobs.iter().map(|j| (Keys::new(j), Options::default())).collect());
    let recorded = record_each(&watchers);
    let dir = tempfile::tempdir().unwrap();
    let journals: Vec<_> = jobs.iter().map(|job| dir.path().join(job)).collect();
    let mut workers = Vec::new();
    for (job, j) in jobs.iter().zip(&journals) {
        for node in ["srv-a", "srv-b"] {
            let mut cmd = lockwatch(&set, &set.master_name);
            cmd.args(["--job", job]);
            workers.push(journal_worker_via(&mut cmd, node, "30s", j));
        }
    }
    let all_running = || recorded.iter().all(Recorded::running);
    eventually("every job to run", Duration::from_secs(30), || all_running().then_some(())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let started = Instant::now();
    tokio::task::block_in_place(|| set.kill_primary());
    tokio::task::block_in_place(|| set.wait_for_new_primary(Duration::from_secs(30)));
    let promoted_ns = now_ns();
    for j in &journals {
        eventually("each job to run after the failover", Duration::from_secs(40), || {
            journal(j).iter().any(|l| l.2 > promoted_ns + 500_000_000).then_some(())
        })
        .await;
    }
    // The heartbeats' grace and a lease's worth of renewals on the new primary.
    tokio::time::sleep(Duration::from_secs(10)).await;
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
            assert!(!matches!(state, State::Stopped | State::Stale), "{job} was said {state:?}: {reason}");
        }
        for (_, event, reason) in r.events.lock().unwrap().iter() {
            assert!(!matches!(event, EventKind::Stalled | EventKind::Died), "{job} was told {event:?}: {reason}");
        }
    }
}
