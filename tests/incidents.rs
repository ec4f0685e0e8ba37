//! Exactly one server runs the job through the incidents production has:
//! the holder's worker paused past its lease, the lock deleted or force
//! unlocked under it, evicted by `maxmemory`, and Redis restarted from an
//! older snapshot. Two real workers journal every 50 ms; no two runs may
//! overlap and no fence may repeat. Each test prints the overlap it saw.

mod common;

use std::time::Duration;

use serde_json::json;

use common::journal::{Two, assert_no_overlap, journal, journal_worker, now_ns, overlap_ms, still_runs};
use common::*;

const LOCK: &str = "{outbound}:lock";

impl Two {
    /// Waits until the other server writes to the journal after `since_ns`.
    async fn taken_over(&self, since_ns: u128, within: Duration) {
        eventually("the other server's run", within, || {
            journal(&self.j).iter().any(|l| l.1 != self.holder && l.2 > since_ns).then_some(())
        })
        .await;
    }

    /// Waits until the job runs again under a new fence after `since_ns`, on
    /// either server: with the lock gone from under it, the holder may win
    /// it back when the other is slow.
    async fn runs_again(&self, since_ns: u128, within: Duration) {
        let before = journal(&self.j).iter().filter(|l| l.2 <= since_ns).map(|l| l.0).max().unwrap_or(0);
        eventually("a run under a new fence", within, || {
            journal(&self.j).iter().any(|l| l.0 > before && l.2 > since_ns).then_some(())
        })
        .await;
    }

    /// Lets both run on for 2 s, stops them, checks and prints the journal.
    async fn verdict(self, what: &str) {
        tokio::time::sleep(Duration::from_secs(2)).await;
        verdict(what, &self.j, vec![self.a, self.b]);
    }
}

/// Stops the workers, then checks and prints the journal.
fn verdict(what: &str, j: &std::path::Path, workers: Vec<WorkerProcess>) {
    drop(workers);
    let lines = journal(j);
    println!("{what}: {} ms of two servers at once", overlap_ms(&lines));
    assert_no_overlap(&lines);
}

#[tokio::test]
async fn a_holder_paused_past_its_lease_has_its_job_killed_by_the_reaper() {
    let server = RedisServer::start();
    let two = Two::start(&server, "3s").await;
    let pid = two.holder_pid();
    let paused_at = now_ns();
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    let resume = Resume(pid);
    two.taken_over(paused_at, Duration::from_secs(8)).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    drop(resume);
    two.verdict("worker paused 9 s (SIGSTOP), lease 3 s").await;
}

#[tokio::test]
async fn a_forced_unlock_stops_the_holder_before_the_next_one_starts() {
    let server = RedisServer::start();
    let two = Two::start(&server, "15s").await;
    let mut c = server.conn();
    // Redisson's forceUnlock: DEL, then the unlock message.
    let unlocked_at = now_ns();
    force_unlock(&mut c).unwrap();
    two.runs_again(unlocked_at, Duration::from_secs(20)).await;
    two.verdict("forced unlock (DEL + unlock message), lease 15 s").await;
}

#[tokio::test]
async fn a_lock_evicted_under_volatile_ttl_stops_the_holder_before_the_next_one_starts() {
    let server = RedisServer::with_args(&["--maxmemory", "8mb", "--maxmemory-policy", "volatile-ttl"]);
    let two = Two::start(&server, "15s").await;
    let mut c = server.conn();
    // A cache with an hour's expiry fills memory: the lock, with the
    // shortest expiry, goes first.
    let evicted_at = now_ns();
    let value = vec![b'x'; 64 * 1024];
    for i in 0.. {
        let _: () = redis::cmd("SET").arg(format!("cache:{i}")).arg(&value).arg("EX").arg(3600).query(&mut c).unwrap();
        let exists: bool = redis::cmd("EXISTS").arg(LOCK).query(&mut c).unwrap();
        if !exists {
            break;
        }
        assert!(i < 2_000, "the lock was never evicted");
    }
    two.runs_again(evicted_at, Duration::from_secs(20)).await;
    two.verdict("lock evicted (maxmemory, volatile-ttl), lease 15 s").await;
}

#[tokio::test]
async fn an_older_snapshot_restored_neither_repeats_a_fence_nor_starts_a_second_run() {
    // `server.url()` throughout: a restart may move it to another port.
    let (mut server, _, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    // srv-a runs the job once and hands it back (SIGTERM releases the lock);
    // the snapshot a restore will bring back is taken then: the counter at
    // that first fence, the flags on, nobody holding the lock.
    let mut a = journal_worker(&server.url(), "srv-a", "6s", &j);
    let first = eventually("srv-a's first run", Duration::from_secs(15), || journal(&j).first().map(|l| l.0)).await;
    a.sigterm();
    a.wait().unwrap();
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    let a = journal_worker(&server.url(), "srv-a", "6s", &j);
    eventually("srv-a's second run", Duration::from_secs(15), || {
        journal(&j).iter().any(|l| l.0 != first).then_some(())
    })
    .await;

    // Redis dies and comes back from that snapshot; a worker that has seen
    // no fence yet starts beside the one still running its job.
    server.restart_from_snapshot();
    let restored_at = now_ns();
    let b = journal_worker(&server.url(), "srv-b", "6s", &j);
    eventually("srv-b's run after the restore", Duration::from_secs(30), || {
        journal(&j).iter().any(|l| l.2 > restored_at && l.1 == "srv-b").then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let lines = journal(&j);
    let mut runs: Vec<(i64, &str)> = lines.iter().map(|l| (l.0, l.1.as_str())).collect();
    runs.sort();
    runs.dedup();
    println!("fences by server, the snapshot taken after fence {first}: {runs:?}");
    for pair in runs.windows(2) {
        assert!(pair[0].0 != pair[1].0, "fence {} was given to {} and {}", pair[0].0, pair[0].1, pair[1].1);
    }
    verdict("Redis restored from an older snapshot, lease 6 s", &j, vec![a, b]);
}

/// The fence `holder`'s heartbeat names: its run's.
fn fence_of(c: &mut redis::Connection, holder: &str) -> i64 {
    redis::cmd("HGET").arg(format!("{{outbound}}:node:{holder}")).arg(beat::FENCE).query(c).unwrap()
}

/// Waits until both workers hear every write (their tracking connections
/// up, and a look after): a loss the moment tracking begins is not proved
/// by that worker, and these tests are about the loss of a settled pair.
async fn settled(c: &mut redis::Connection) {
    eventually("both workers tracking", Duration::from_secs(10), || {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(c).ok()?;
        let tracking =
            list.lines().filter(|l| l.split(' ').any(|f| f.starts_with("flags=") && f.contains('t'))).count();
        (tracking >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
}

/// alice's flag deleted (nobody switched it off), once `status` names it lost.
async fn lose_alices_flag(c: &mut redis::Connection, status: &dyn Fn() -> (serde_json::Value, i32)) {
    settled(c).await;
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(c).unwrap();
    eventually("the lost flag named", Duration::from_secs(5), || {
        (status().0["flags_lost"] == json!(["alice"])).then_some(())
    })
    .await;
}

#[tokio::test]
async fn a_lost_flag_or_users_registry_neither_stops_the_job_nor_reads_as_stopped() {
    let server = RedisServer::start();
    let Two { j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let fence = fence_of(&mut c, &holder);
    settled(&mut c).await;

    // alice's flag evicted or deleted: nobody switched it off.
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
    let deleted_at = now_ns();
    still_runs(&j, fence, deleted_at, "alice's flag deleted").await;
    assert_eq!(fence_of(&mut c, &holder), fence, "the holder let go");
    // Named wherever it is seen: never "running, nobody enabled, no problem".
    let status = || status_json(&server.url(), &[]);
    let (json, code) = status();
    assert_eq!((code, &json["state"], &json["flags_lost"]), (1, &json!("running"), &json!(["alice"])), "{json}");
    let text = lockwatch(&server.url(), &["status"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("warning  Redis lost the flag of alice"), "{text:?}");
    assert!(String::from_utf8_lossy(&text.stdout).contains("enabled  alice (lost)\n"), "counted as on: {text:?}");
    // Her flip writes it again: nothing is lost any more.
    flag(&mut c, "outbound", "alice", true);
    let (code, json) = eventually("the lost flag no longer named", Duration::from_secs(5), || {
        let (json, code) = status();
        (json["flags_lost"] == json!([])).then_some((code, json))
    })
    .await;
    assert_eq!((code, &json["state"]), (0, &json!("running")), "{json}");

    // The registry of users gone too: a look says Redis lost it.
    let _: () = redis::cmd("DEL").arg("{outbound}:users").query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fence_of(&mut c, &holder), fence, "the holder let go");
    let out = lockwatch(&server.url(), &["status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // Both workers stopped (SIGTERM releases the lock): nobody holds it, and
    // the status must still not say stopped.
    for mut w in [a, b] {
        w.sigterm();
        w.wait().unwrap();
    }
    let out2 = lockwatch(&server.url(), &["status"]);
    let stdout2 = String::from_utf8_lossy(&out2.stdout);
    println!("{stdout}{stdout2}");
    assert_eq!(out2.status.code(), Some(3), "{stdout2}");
    assert!(stdout2.contains("Redis lost the registry {outbound}:users"), "{stdout2}");
    assert!(!stdout.to_lowercase().contains("stopped"), "{stdout}");
}

/// The registry of users lost together with the fence counter (one
/// eviction can take both): the lock and the servers still show the job
/// ran, so whose flags count cannot be told. The holder neither stops nor
/// lets go, and the status names the loss, never "stopped, nobody enabled".
#[tokio::test]
async fn the_users_registry_lost_with_the_fence_counter_neither_stops_the_job_nor_reads_as_stopped() {
    let server = RedisServer::start();
    let Two { j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let fence = fence_of(&mut c, &holder);
    settled(&mut c).await;
    let _: () = redis::cmd("DEL").arg("{outbound}:users").arg("{outbound}:fence").query(&mut c).unwrap();
    let at = now_ns();
    // Past the start grace and a few looks.
    still_runs(&j, fence, at, "the registry and the fence counter lost").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    still_runs(&j, fence, at + 3_000_000_000, "the registry and the fence counter lost").await;
    let (json, code) = status_json(&server.url(), &[]);
    println!("the registry and the fence counter lost: {json}");
    assert_ne!(json["state"], json!("stopped"), "{json}");
    assert_ne!(code, 0, "{json}");
    assert!(json["problems"].to_string().contains("Redis lost the registry {outbound}:users"), "{json}");
    drop((a, b));
}

/// A lost flag is remembered in Redis, not only in a worker's memory: after
/// the holder's `kill -9` and after both workers restart, the status still
/// names it and never reads "stopped, nobody enabled, no problem".
#[tokio::test]
async fn a_lost_flag_is_still_named_after_a_failover_and_after_both_workers_restart() {
    let server = RedisServer::start();
    let Two { j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let status = || status_json(&server.url(), &["--heartbeat-grace", "2s"]);
    lose_alices_flag(&mut c, &status).await;

    let (mut dead, standby) = if holder == "srv-a" { (a, b) } else { (b, a) };
    dead.kill9();
    dead.wait().unwrap();
    tokio::time::sleep(Duration::from_secs(8)).await;
    let (json, code) = status();
    println!("after the holder's kill -9: {json}");
    assert_eq!((&json["flags_lost"], code != 0), (&json!(["alice"]), true), "{json}");
    assert_ne!(json["state"], json!("stopped"), "{json}");

    let mut standby = standby;
    standby.sigterm();
    standby.wait().unwrap();
    let _a = journal_worker(&server.url(), "srv-a", "3s", &j);
    let _b = journal_worker(&server.url(), "srv-b", "3s", &j);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (json, code) = status();
    println!("after both workers restarted: {json}");
    assert_eq!((&json["flags_lost"], code != 0), (&json!(["alice"]), true), "{json}");
    assert_ne!(json["state"], json!("stopped"), "{json}");
}

/// The standby's connections cut as her flag is lost, while the holder is
/// paused for a moment: the standby cannot prove the loss itself (tracking
/// began again meanwhile) and nobody has named it yet; the holder proves it
/// when it goes on. Nothing was written to the flag since the standby found
/// it missing, so it takes the holder's word, and after the holder's
/// `kill -9` it runs the job with the loss named, not "stopped".
#[tokio::test]
async fn a_standby_that_missed_the_loss_takes_the_holders_word() {
    let server = RedisServer::start();
    let Two { j: _j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let status = || status_json(&server.url(), &["--heartbeat-grace", "2s"]);
    settled(&mut c).await;
    let (mut dead, standby) = if holder == "srv-a" { (a, b) } else { (b, a) };
    let _resume = Resume(dead.pid());
    // SAFETY: kill(2) on a worker this test started.
    unsafe { libc::kill(dead.pid(), libc::SIGSTOP) };
    assert!(cut_connections(&mut c, standby.pid()) > 0);
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    unsafe { libc::kill(dead.pid(), libc::SIGCONT) };
    eventually("the lost flag named", Duration::from_secs(5), || {
        (status().0["flags_lost"] == json!(["alice"])).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    dead.kill9();
    dead.wait().unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (json, code) = status();
    println!("after the holder's kill -9: {json}");
    assert_eq!((&json["state"], &json["flags_lost"], code), (&json!("running"), &json!(["alice"]), 1), "{json}");
    drop(standby);
}

/// With every worker gone after the loss, their last heartbeats still
/// carry the word: the job enabled by a lost flag and run by nobody is
/// `down`, never "stopped, nobody enabled".
#[tokio::test]
async fn a_lost_flag_with_every_worker_gone_reads_as_down_not_stopped() {
    let server = RedisServer::start();
    let Two { j: _j, a, b, _dir, .. } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let status = || status_json(&server.url(), &["--heartbeat-grace", "2s", "--failover-window", "2s"]);
    lose_alices_flag(&mut c, &status).await;
    for mut w in [a, b] {
        w.kill9();
        w.wait().unwrap();
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (json, code) = status();
    println!("every worker gone: {json}");
    assert_eq!((code, &json["state"], &json["flags_lost"]), (2, &json!("down"), &json!(["alice"])), "{json}");
}

/// A lost flag its user wrote again is forgotten for good: a heartbeat of a
/// worker killed before she wrote it still names it, but the latest word is
/// the live worker's, so her off flag lost in turn stops nothing and starts
/// nothing, also after the live worker restarts.
#[tokio::test]
async fn a_lost_flag_written_again_does_not_come_back_from_a_dead_workers_heartbeat() {
    let server = RedisServer::start();
    let Two { j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let status = || status_json(&server.url(), &[]);
    lose_alices_flag(&mut c, &status).await;
    let (live, mut standby) = if holder == "srv-a" { (a, b) } else { (b, a) };
    standby.kill9();
    standby.wait().unwrap();
    flag(&mut c, "outbound", "alice", false);
    eventually("stopped", Duration::from_secs(5), || (status().0["state"] == json!("stopped")).then_some(())).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (json, code) = status();
    println!("her off flag lost too: {json}");
    assert_eq!((code, &json["state"], &json["flags_lost"]), (0, &json!("stopped"), &json!([])), "{json}");
    live.sigterm();
    let node = holder.clone();
    drop(live);
    let _again = journal_worker(&server.url(), &node, "3s", &j);
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (json, code) = status();
    println!("after {node} restarted: {json}");
    assert_eq!((code, &json["state"]), (0, &json!("stopped")), "{json}");
}

/// A standby paused while her flag was lost, switched off and lost again
/// does not bring the lost flag back from its memory: a worker whose look
/// came late takes the latest word of the heartbeats, as one that starts does.
#[tokio::test]
async fn a_paused_standby_does_not_bring_back_a_lost_flag_that_was_switched_off_meanwhile() {
    let server = RedisServer::start();
    let Two { j: _j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let status = || status_json(&server.url(), &[]);
    lose_alices_flag(&mut c, &status).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let standby = if holder == "srv-a" { &b } else { &a };
    {
        // SAFETY: kill(2) on a worker this test started.
        unsafe { libc::kill(standby.pid(), libc::SIGSTOP) };
        flag(&mut c, "outbound", "alice", false);
        tokio::time::sleep(Duration::from_millis(1_600)).await;
        let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
        unsafe { libc::kill(standby.pid(), libc::SIGCONT) };
    }
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (json, code) = status();
    println!("the standby paused through her switching off: {json}");
    assert_eq!((code, &json["state"], &json["flags_lost"]), (0, &json!("stopped"), &json!([])), "{json}");
}

/// Her switch-off and then the loss of her flag (the only one on), while
/// one worker was paused for less than a look's gap or had its connections
/// cut: that worker's memory says the flag was on, but the other worker saw
/// it off and the history says so. The job stops and stays stopped, and
/// nothing is named lost.
async fn switched_off_then_lost_while_one_worker_missed_it(paused: Which, how: Miss) {
    let server = RedisServer::start();
    let Two { j: _j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let status = || status_json(&server.url(), &[]);
    let holder_first = holder == "srv-a";
    let worker = if (paused == Which::Holder) == holder_first { &a } else { &b };
    match how {
        Miss::Paused(ms) => {
            // SAFETY: kill(2) on a worker this test started.
            unsafe { libc::kill(worker.pid(), libc::SIGSTOP) };
            flag(&mut c, "outbound", "alice", false);
            tokio::time::sleep(Duration::from_millis(ms / 2)).await;
            let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
            tokio::time::sleep(Duration::from_millis(ms / 2)).await;
            unsafe { libc::kill(worker.pid(), libc::SIGCONT) };
        }
        Miss::Cut => {
            assert!(cut_connections(&mut c, worker.pid()) > 0);
            flag(&mut c, "outbound", "alice", false);
            tokio::time::sleep(Duration::from_millis(30)).await;
            let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
        }
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (json, code) = status();
    println!("{paused:?} {how:?} through her switch-off and the loss: {json}");
    assert_eq!((code, &json["state"], &json["flags_lost"]), (0, &json!("stopped"), &json!([])), "{json}");
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Which {
    Holder,
    Standby,
}

#[derive(Debug, Clone, Copy)]
enum Miss {
    Paused(u64),
    Cut,
}

#[tokio::test]
async fn a_holder_paused_through_her_switch_off_and_the_loss_stops_its_job() {
    switched_off_then_lost_while_one_worker_missed_it(Which::Holder, Miss::Paused(800)).await;
}

#[tokio::test]
async fn a_standby_paused_through_her_switch_off_and_the_loss_does_not_start_the_job() {
    switched_off_then_lost_while_one_worker_missed_it(Which::Standby, Miss::Paused(1_000)).await;
}

#[tokio::test]
async fn a_standby_cut_off_through_her_switch_off_and_the_loss_does_not_start_the_job() {
    switched_off_then_lost_while_one_worker_missed_it(Which::Standby, Miss::Cut).await;
}

/// The switch-offs of `user` the workers recorded in the history.
fn switch_offs(c: &mut redis::Connection, user: &str) -> usize {
    let entries: Vec<(String, std::collections::HashMap<String, String>)> =
        redis::cmd("XRANGE").arg("{outbound}:events").arg("-").arg("+").query(c).unwrap();
    let field = |e: &std::collections::HashMap<String, String>, k: &str| e.get(k).cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|(_, e)| field(e, entry::TYPE) == kind::FLAGS_CHANGED && field(e, entry::USER) == user)
        .filter(|(_, e)| field(e, entry::ON) == "0")
        .count()
}

/// Her only flag, on under a running job, made unreadable: its `on`
/// written far too long (which the workers cut back) or deleted alone
/// (`HDEL`). Neither is a switch-off: the job runs on, the status names the
/// problem and never reads `stopped`, and the history records no switch-off.
#[tokio::test]
async fn an_unreadable_or_missing_on_is_no_switch_off() {
    let server = RedisServer::start();
    let Two { j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let fence = fence_of(&mut c, &holder);
    let long_on = "1".repeat(20_000);
    let writes = [
        (
            "an `on` 20,000 bytes long",
            redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::ON).arg(&long_on).to_owned(),
        ),
        ("`on` deleted alone", redis::cmd("HDEL").arg("{outbound}:enabled:alice").arg(flag::ON).to_owned()),
    ];
    for (what, write) in writes {
        flag(&mut c, "outbound", "alice", true);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let _: () = write.query(&mut c).unwrap();
        let at = now_ns();
        still_runs(&j, fence, at, what).await;
        let (json, code) = status_json(&server.url(), &[]);
        println!("{what}: {json}");
        assert_ne!(json["state"], json!("stopped"), "{what}: {json}");
        assert_ne!(code, 0, "{what}: {json}");
        let problems = json["problems"].to_string();
        assert!(problems.contains("{outbound}:enabled:alice"), "{what}: {json}");
        assert_eq!(switch_offs(&mut c, "alice"), 0, "{what}: a switch-off recorded");
    }
    drop((a, b));
}

/// Her flag unreadable under the running job (`on` deleted alone), then
/// lost: it was on before it turned unreadable, so its loss keeps the job
/// running, named, and is no switch-off.
#[tokio::test]
async fn a_flag_unreadable_then_lost_is_lost_not_a_switch_off() {
    let server = RedisServer::start();
    let Two { j, a, b, holder, _dir } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let fence = fence_of(&mut c, &holder);
    settled(&mut c).await;
    let _: () = redis::cmd("HDEL").arg("{outbound}:enabled:alice").arg(flag::ON).query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
    let at = now_ns();
    still_runs(&j, fence, at, "unreadable, then lost").await;
    let (json, code) = status_json(&server.url(), &[]);
    println!("unreadable, then lost: {json}");
    assert_eq!((code, &json["state"], &json["flags_lost"]), (1, &json!("running"), &json!(["alice"])), "{json}");
    assert_eq!(switch_offs(&mut c, "alice"), 0);
    drop((a, b));
}

/// Her own flood of writes turns the workers' hearing off for a while;
/// her switch-off and then a loss of her flag in that while is a
/// switch-off: nothing heard, nothing proves a loss.
#[tokio::test]
async fn after_her_flood_her_switch_off_then_a_loss_is_a_switch_off() {
    let server = RedisServer::start();
    let Two { j: _j, a, b, _dir, .. } = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let now = redis_ms(&mut c);
    // One write a round trip, as fast as Redis answers, for 2 s.
    let began = std::time::Instant::now();
    let mut written = 0;
    while began.elapsed() < Duration::from_secs(2) {
        let _: () = redis::cmd("HSET")
            .arg("{outbound}:enabled:alice")
            .arg(flag::ON)
            .arg(1)
            .arg(flag::TIME)
            .arg(now)
            .query(&mut c)
            .unwrap();
        written += 1;
    }
    println!("{written} writes of her flag in 2 s");
    tokio::time::sleep(Duration::from_secs(2)).await;
    flag(&mut c, "outbound", "alice", false);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (json, code) = status_json(&server.url(), &[]);
    println!("her flood, then her switch-off and a loss: {json}");
    assert_eq!((code, &json["state"], &json["flags_lost"]), (0, &json!("stopped"), &json!([])), "{json}");
    drop((a, b));
}

#[test]
fn a_job_this_redis_has_never_seen_is_unknown() {
    let (_server, url, _) = server_with_flag("alice", true);
    let out = lockwatch(&url, &["--job", "outbond", "status"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("no job named outbond on this Redis"), "{stdout}");
    let out = lockwatch(&url, &["--job", "outbond", "status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["state"], "unknown");
    // The job that exists is read as before.
    let out = lockwatch(&url, &["status"]);
    assert_ne!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stdout));
}
