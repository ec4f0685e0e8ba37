//! The shared history with real workers against a real Redis: a failover
//! after `kill -9`, a restart on the same server, a supervisor's flip with
//! a reason, and the death of the last server by `kill -9` (which it could
//! not write itself), as `lockwatch history` prints them.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// A worker for `node` with a 2 s lease, whose job sleeps.
fn worker(url: &str, node: &str) -> WorkerProcess {
    WorkerProcess::spawn(&mut worker_command(url, node, "2s", &[], "exec sleep 600"))
}

/// `lockwatch history --json` with a short grace and window, as JSON values.
fn history(url: &str) -> Vec<Value> {
    let out = lockwatch(url, &["history", "--json", "--heartbeat-grace", "1s", "--failover-window", "3s"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The node whose heartbeat names the lock's holder field and says it runs.
fn running_on(c: &mut redis::Connection) -> Option<String> {
    let fields: Vec<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query(c).ok()?;
    let field = fields.first()?;
    ["srv-a", "srv-b"].into_iter().map(str::to_owned).find(|n| {
        let (f, state): (Option<String>, Option<String>) = redis::cmd("HMGET")
            .arg(format!("{{outbound}}:node:{n}"))
            .arg(beat::LOCK_FIELD)
            .arg(beat::STATE)
            .query(c)
            .unwrap();
        f.as_deref() == Some(field.as_str()) && state.as_deref() == Some("running")
    })
}

/// The index of the first item after `after` that matches.
fn find(items: &[Value], after: usize, what: &str, check: impl Fn(&Value) -> bool) -> usize {
    items
        .iter()
        .enumerate()
        .skip(after)
        .find(|(_, i)| check(i))
        .map(|(n, _)| n)
        .unwrap_or_else(|| panic!("no {what} after item {after} in {items:#?}"))
}

#[tokio::test]
async fn failover_restart_flip_and_a_kill_9_death_are_in_the_history_in_order() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();
    seed_fence(&mut c);
    let enable = lockwatch(&url, &["enable", "--user", "alice", "--reason", "morning shift"]);
    assert!(enable.status.success(), "{}", String::from_utf8_lossy(&enable.stderr));
    // carol is registered but never flipped anything: no flip of hers may appear.
    let _: () = redis::cmd("SADD").arg("{outbound}:users").arg("carol").query(&mut c).unwrap();

    // A failover: the holder is killed, the other server takes over.
    let mut a = worker(&url, "srv-a");
    eventually("srv-a to run the job", Duration::from_secs(10), || running_on(&mut c).filter(|n| n == "srv-a")).await;
    let mut b = worker(&url, "srv-b");
    eventually("srv-b to beat", Duration::from_secs(10), || {
        let s: Option<String> = redis::cmd("HGET").arg("{outbound}:node:srv-b").arg(beat::STATE).query(&mut c).unwrap();
        s
    })
    .await;
    a.kill9();
    eventually("srv-b to take over", Duration::from_secs(10), || running_on(&mut c).filter(|n| n == "srv-b")).await;

    // A restart on the same server: srv-b stops (SIGTERM) and starts again.
    b.sigterm();
    assert!(b.wait().unwrap().success());
    let mut b = worker(&url, "srv-b");
    eventually("srv-b to run the job again", Duration::from_secs(10), || running_on(&mut c)).await;

    // A supervisor's flip with a reason, seen and recorded by the worker.
    let flip = lockwatch(&url, &["enable", "--user", "bob", "--reason", "night shift covers the inventory"]);
    assert!(flip.status.success(), "{}", String::from_utf8_lossy(&flip.stderr));
    eventually("the worker to record bob's flip", Duration::from_secs(5), || {
        let entries: redis::streams::StreamRangeReply =
            redis::cmd("XRANGE").arg("{outbound}:events").arg("-").arg("+").query(&mut c).unwrap();
        entries
            .ids
            .iter()
            .any(|e| {
                e.get::<String>(entry::TYPE).as_deref() == Some(kind::FLAGS_CHANGED)
                    && e.get::<String>("user").as_deref() == Some("bob")
                    && e.get::<String>("reason").as_deref() == Some("night shift covers the inventory")
            })
            .then_some(())
    })
    .await;

    // The last server dies without a word, after a beat that followed the
    // flip (the death is dated at the last beat, so it comes after the flip).
    let seq = |c: &mut redis::Connection| -> u64 {
        let s: Option<u64> = redis::cmd("HGET").arg("{outbound}:node:srv-b").arg(beat::SEQ).query(c).unwrap();
        s.unwrap_or(0)
    };
    let recorded = seq(&mut c);
    eventually("srv-b to beat after the flip", Duration::from_secs(10), || (seq(&mut c) > recorded).then_some(()))
        .await;
    b.kill9();
    // alice switches off after all: her switching on, before any worker ran, stays in the history.
    let off = lockwatch(&url, &["disable", "--user", "alice", "--reason", "done"]);
    assert!(off.status.success(), "{}", String::from_utf8_lossy(&off.stderr));
    let items = eventually("the death of srv-b", Duration::from_secs(20), || {
        let items = history(&url);
        items.iter().any(|i| i["kind"] == "death").then_some(items)
    })
    .await;

    let at: Vec<u64> = items.iter().map(|i| i["at_ms"].as_u64().unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "oldest first: {at:?}");
    let first = find(&items, 0, "alice's flip", |i| {
        i["kind"] == "flag" && i["user"] == "alice" && i["on"] == true && i["reason"] == "morning shift"
    });
    let failover = find(&items, 0, "the failover", |i| {
        i["kind"] == "failover" && i["from"]["node"] == "srv-a" && i["to"]["node"] == "srv-b" && i["cause"] == "silent"
    });
    assert!(first < failover);
    // srv-a's run ends when its reaper saw the job's tree gone, and the
    // failover's outage is the gap to srv-b's start: well inside the 2 s
    // lease, which the reaper's letting go cut short.
    let down = items[failover]["down_ms"].as_u64().expect("the outage of a kill -9 is measured");
    assert!(down < 1_500, "the reaper let go of the lock; the lease did not run out: {down} ms");
    let a_run = items[..failover].iter().rfind(|i| i["kind"] == "run" && i["node"] == "srv-a").unwrap();
    assert_eq!(a_run["until_ms"].as_u64(), Some(items[failover]["at_ms"].as_u64().unwrap() - down));
    let restart = find(&items, failover, "the restart", |i| {
        i["kind"] == "restart" && i["to"]["node"] == "srv-b" && i["cause"] == "shutdown" && i["down_ms"].is_u64()
    });
    let flip = find(&items, restart, "bob's flip", |i| {
        i["kind"] == "flag"
            && i["user"] == "bob"
            && i["on"] == true
            && i["reason"] == "night shift covers the inventory"
            && i["host"].is_string()
    });
    let death =
        find(&items, flip, "the death", |i| i["kind"] == "death" && i["node"] == "srv-b" && i["cause"] == "silent");
    assert_eq!(items.iter().filter(|i| i["kind"] == "death").count(), 1, "{items:#?}");
    assert_eq!(
        items.iter().filter(|i| i["kind"] == "flag" && i["user"] == "bob").count(),
        1,
        "one flip, however many saw it"
    );
    assert!(items.iter().all(|i| i["user"] != "carol"), "a registered user with no flag flipped nothing: {items:#?}");
    let alice: Vec<(bool, &str)> = items
        .iter()
        .filter(|i| i["kind"] == "flag" && i["user"] == "alice")
        .map(|i| (i["on"].as_bool().unwrap(), i["reason"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(alice, [(true, "morning shift"), (false, "done")], "every flip of alice's, once each");
    let last_run = items.iter().rfind(|i| i["kind"] == "run").unwrap();
    assert_eq!(last_run["until_ms"], items[death]["at_ms"], "the run ends at the last heartbeat");

    let text = lockwatch(&url, &["history", "--heartbeat-grace", "1s", "--failover-window", "3s"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains(" UTC failover srv-a → srv-b: "), "{text}");
    assert!(text.contains(" UTC flag     bob switched it on from "), "{text}");
    assert!(text.contains(": night shift covers the inventory"), "{text}");
    assert!(text.contains(" UTC death    srv-b"), "{text}");
}

/// `kill -9` of the holder's worker, restarted at once on the same server
/// (systemd's `Restart=always`): the new process's beat replaces the dead
/// one's, yet the history still shows when the dead run last lived and how
/// long nobody ran the job until the next holding (on either server).
#[tokio::test]
async fn a_holder_killed_and_restarted_on_its_server_shows_the_outage() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();
    seed_fence(&mut c);
    assert!(lockwatch(&url, &["enable", "--user", "alice"]).status.success());
    let mut a = worker(&url, "srv-a");
    eventually("srv-a to run the job", Duration::from_secs(10), || running_on(&mut c).filter(|n| n == "srv-a")).await;
    let _b = worker(&url, "srv-b");
    tokio::time::sleep(Duration::from_millis(500)).await;
    a.kill9();
    let _a_again = worker(&url, "srv-a");
    let items = eventually("the next holding", Duration::from_secs(20), || {
        let items = history(&url);
        items.iter().any(|i| i["kind"] == "failover" || i["kind"] == "restart").then_some(items)
    })
    .await;
    let next = find(&items, 0, "the takeover", |i| i["kind"] == "failover" || i["kind"] == "restart");
    let down = items[next]["down_ms"].as_u64().unwrap_or_else(|| panic!("the outage is not measured: {items:#?}"));
    assert!(down < 1_500, "the dead worker's reaper let go of the lock; the lease did not run out: {down} ms");
    let run = items[..next].iter().rfind(|i| i["kind"] == "run" && i["node"] == "srv-a").unwrap();
    assert_eq!(run["until_ms"].as_u64(), Some(items[next]["at_ms"].as_u64().unwrap() - down), "{items:#?}");
}

#[test]
fn a_reason_too_long_is_refused_in_one_sentence_before_redis_is_asked() {
    let long = "x".repeat(201);
    let out = lockwatch("redis://127.0.0.1:1", &["disable", "--user", "alice", "--reason", &long]);
    assert_eq!(out.status.code(), Some(3), "a command line it cannot use");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(": 201 characters long; give at most 200, one sentence"), "{err}");
}

#[test]
fn history_since_needs_a_duration() {
    let out = lockwatch("redis://127.0.0.1:1", &["history", "--since", "yesterday"]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn a_supervisor_with_only_the_acl_rules_reads_the_history_and_flips_with_a_reason() {
    let server = RedisServer::start();
    // As an admin provisions her: `lockwatch acl` also loads the read function she calls.
    provision(&server, "alice", "pw");
    let url = format!("redis://alice:pw@127.0.0.1:{}", server.port);
    let flip = lockwatch(&url, &["disable", "--reason", "stock count"]);
    assert!(flip.status.success(), "{}", String::from_utf8_lossy(&flip.stderr));
    let out = lockwatch(&url, &["history", "--json", "--since", "1h"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let items: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(
        (&items[0]["kind"], &items[0]["user"], &items[0]["on"]),
        (&"flag".into(), &"alice".into(), &false.into())
    );
    assert_eq!(items[0]["reason"], "stock count");
}

/// A day of her flood leaves a week of runs: flipping her flag on and off
/// twenty times a second (fewer than the tracking's flood mark, each a real
/// flip) records at most her burst of flips per worker, while her flag still
/// counts at once: the job runs whenever she left it on.
#[tokio::test]
async fn flips_faster_than_a_person_makes_them_are_recorded_within_her_budget() {
    let server = RedisServer::start();
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "bob", true);
    let _a = worker(&server.url(), "srv-a");
    let _b = worker(&server.url(), "srv-b");
    eventually("the job runs", Duration::from_secs(10), || running_on(&mut admin)).await;
    let flips = |c: &mut redis::Connection| stream_events(c).iter().filter(|e| e.kind == kind::FLAGS_CHANGED).count();
    let before = flips(&mut admin);
    let mut made = 0;
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_secs(6) {
        flag(&mut admin, "outbound", "alice", made % 2 == 0);
        made += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let added = flips(&mut admin) - before;
    println!("{made} flips of alice's flag in 6 s: {added} recorded by the two workers");
    assert!(made >= 60, "only {made} flips made");
    assert!(added >= 2, "her first flips are recorded: {added}");
    assert!(added <= 2 * 10, "{added} of her {made} flips recorded: past her budget");
}

/// Her flag the only one on, flipped on and off faster than a person does:
/// each worker starts the job again after a switch-off a few times at once,
/// then holds back and says until when, so the status reads `pending`
/// (never `down`) and the history keeps a bounded number of runs.
#[tokio::test]
async fn her_on_and_off_flood_starts_the_job_a_bounded_number_of_times_then_holds_back() {
    let server = RedisServer::start();
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "alice", true);
    let _a = worker(&server.url(), "srv-a");
    let _b = worker(&server.url(), "srv-b");
    eventually("the job runs", Duration::from_secs(10), || running_on(&mut admin)).await;
    let runs = |c: &mut redis::Connection| stream_events(c).iter().filter(|e| e.kind == kind::ACQUIRED).count();
    let mut ons = 0;
    for i in 0..40 {
        let on = i % 2 == 1;
        flag(&mut admin, "outbound", "alice", on);
        ons += usize::from(on);
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
    flag(&mut admin, "outbound", "alice", true);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let started = runs(&mut admin);
    println!("{ons} times switched on again: the job was started {started} times");
    // On each of the two servers: its first start, then at most the burst after its switch-offs.
    let most = 2 * (1 + usize::try_from(lockwatch::work::engine::RESTART_BURST).unwrap());
    assert!(started > 3, "her first switches start the job: {started}");
    assert!(started <= most, "{started} starts for {ons} switches on: past the budget of {most}");
    let (status, code) = status_json(&server.url(), &[]);
    assert_eq!(status["state"], "pending", "{status:#}");
    assert!(status["reason"].as_str().unwrap().contains("hold back and start it again at"), "{status:#}");
    assert_eq!(code, 1, "pending is a warning");
    // Her switches spent her budget, not bob's: his switch-on starts it.
    flag(&mut admin, "outbound", "bob", true);
    let state = eventually("bob's switch-on starts the job", Duration::from_secs(5), || {
        let (status, _) = status_json(&server.url(), &[]);
        (status["state"] == "running").then_some(status)
    })
    .await;
    println!("after bob switched on: {}", state["reason"]);
}

/// A day scripted on the stream, as workers would have written it: alice
/// switches the job on, srv-a runs it, fails over to srv-b after 30 s,
/// srv-b loses it and nobody runs it for 10 minutes, srv-a again, then
/// alice switches it off with a reason. `report` adds it up: runs,
/// failovers, the death, the outages, the uptime, and who switched it off,
/// the same in JSON, CSV and text.
#[test]
fn the_report_adds_up_a_scripted_day() {
    use lockwatch::history::{Cause, FlagFlip, Record};
    const H: u64 = 3_600_000;
    const M: u64 = 60_000;
    let server = RedisServer::start();
    let mut c = server.conn();
    let t0 = redis_ms(&mut c) - 10 * H;
    let mut add = |at: u64, node: &str, record: Record| {
        let mut cmd = redis::cmd("XADD");
        cmd.arg("{outbound}:events").arg(format!("{at}-0"));
        for (name, value) in record.encode(node) {
            cmd.arg(name).arg(value);
        }
        let _: String = cmd.query(&mut c).unwrap();
    };
    let flip = |at: u64, on: bool, reason: Option<&str>| {
        Record::FlagsChanged(FlagFlip {
            user: "alice".into(),
            on,
            at_ms: Some(at),
            host: Some("pc-7".into()),
            reason: reason.map(Into::into),
        })
    };
    let acquired = |fence: i64, field: &str, prev_beat_ms: Option<u64>| Record::Acquired {
        fence: Some(fence),
        field: Some(field.into()),
        wait: None,
        prev_beat_ms,
    };
    add(t0, "srv-a", flip(t0, true, None));
    add(t0 + 1, "srv-a", acquired(1, "a:1", None));
    add(t0 + 2 * H + 30_000, "srv-b", acquired(2, "b:1", Some(t0 + 2 * H)));
    add(t0 + 5 * H, "srv-b", Record::Lost { fence: Some(2), cause: Some(Cause::Expired) });
    add(t0 + 5 * H + 10 * M, "srv-a", acquired(3, "a:2", None));
    add(t0 + 8 * H, "srv-a", flip(t0 + 8 * H, false, Some("stock count")));
    add(t0 + 8 * H + 1, "srv-a", Record::Released { fence: Some(3), cause: Some(Cause::Disabled) });
    let _: () = redis::cmd("HSET")
        .arg("{outbound}:enabled:alice")
        .arg(flag::ON)
        .arg("0")
        .arg(flag::TIME)
        .arg(t0 + 8 * H)
        .arg(flag::REASON)
        .arg("stock count")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SADD").arg("{outbound}:users").arg("alice").query(&mut c).unwrap();

    let out = lockwatch(&server.url(), &["report", "--since", "12h", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["job"], "outbound");
    let counts: Vec<i64> = ["runs", "failovers", "restarts", "deaths"].map(|k| r[k].as_i64().unwrap()).into();
    assert_eq!(counts, [3, 1, 0, 1], "{r}");
    let down = 30_000 + 10 * M;
    assert_eq!(r["enabled_ms"].as_u64(), Some(8 * H), "{r}");
    // srv-a's first run ends at its last heartbeat the next holder found.
    assert_eq!(r["not_running_ms"].as_u64(), Some(down + 1), "{r}");
    assert_eq!((r["outage_total_ms"].as_u64(), r["outage_longest_ms"].as_u64()), (Some(down), Some(10 * M)), "{r}");
    let uptime = r["uptime"].as_f64().unwrap();
    assert!((uptime - (8 * H - down - 1) as f64 / (8 * H) as f64).abs() < 1e-9, "{r}");
    assert_eq!(r["switched_off"][0]["user"], "alice");
    assert_eq!(r["switched_off"][0]["reason"], "stock count");

    let csv = String::from_utf8(lockwatch(&server.url(), &["report", "--since", "12h", "--csv"]).stdout).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(rows.len(), 2, "{csv}");
    assert!(rows[0].starts_with("job,from,to,enabled_s,"), "{csv}");
    assert!(rows[1].starts_with("outbound,") && rows[1].contains(",3,1,0,1,630.0,600.0,"), "{csv}");
    let text = String::from_utf8(lockwatch(&server.url(), &["report", "--since", "12h"]).stdout).unwrap();
    assert!(text.contains("runs          3 (1 failover, 0 restarts, 1 death)"), "{text}");
    assert!(text.contains("by alice from pc-7: stock count"), "{text}");
    // A window before any of it: nothing happened, nobody had it on.
    let out = lockwatch(&server.url(), &["report", "--since", "1h", "--json"]);
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((r["runs"].as_i64(), r["enabled_ms"].as_u64(), r["uptime"].as_f64()), (Some(0), Some(0), None), "{r}");
    // A job name Redis holds nothing of is said, not reported as idle.
    let out = lockwatch(&server.url(), &["--job", "outbound,outbnd", "report", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1, "outbound's report alone");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("nothing of the job outbnd is on") && said.lines().count() == 1, "{said}");
}
