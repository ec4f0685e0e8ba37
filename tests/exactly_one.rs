//! Exactly one run where Redis itself works against the lock: eviction
//! taking the lock with the heartbeats, an older snapshot that holds a live
//! worker's old lock, two workers started under one name, a reaper killed,
//! a supervisor's flag emptied (a reaper killed is `worker.rs`'s, beside
//! the other ways the job's tree must die). Each case runs real workers whose job
//! journals every 50 ms, and checks that no two runs overlapped and that
//! fences only grew in start order.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::journal::{JOURNAL_LOOP, Two, assert_no_overlap, journal, journal_worker, overlap_ms, running_now};
use common::*;

const LEASE: &str = "3s";

/// The node whose job wrote the journal's last line, once it runs.
async fn running_node(path: &Path, not: Option<&str>) -> String {
    eventually("the job to run", Duration::from_secs(15), || running_now(path, not)).await
}

/// Stops (SIGSTOP) the worker `pid` until the returned guard is dropped.
fn freeze(pid: i32) -> Resume {
    // SAFETY: kill(2) on a worker this test started.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    Resume(pid)
}

fn exists(c: &mut redis::Connection, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query(c).unwrap()
}

/// Fills memory under `policy` with keys that have no expiry until Redis
/// has evicted the lock and every heartbeat (or 5 s pass); then frees it
/// and lifts the limit. Returns whether they all went.
fn evict_lock_and_heartbeats(c: &mut redis::Connection, policy: &str) -> bool {
    let info: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    let used: u64 =
        info.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok()).unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg(policy)
        .arg("maxmemory")
        .arg(used + 2 * 1024 * 1024)
        .query(c)
        .unwrap();
    let value = vec![b'x'; 32 * 1024];
    let gone = |c: &mut redis::Connection| {
        !exists(c, "{outbound}:lock") && !exists(c, "{outbound}:node:srv-a") && !exists(c, "{outbound}:node:srv-b")
    };
    let t = Instant::now();
    let mut n = 0;
    while t.elapsed() < Duration::from_secs(5) && !gone(c) {
        // Under volatile-ttl, once nothing with an expiry is left, Redis refuses the write.
        let _: redis::RedisResult<()> = redis::cmd("SET").arg(format!("filler:{n}")).arg(&value).query(c);
        n += 1;
    }
    let all_gone = gone(c);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).query(c).unwrap();
    let mut pipe = redis::pipe();
    for i in 0..n {
        pipe.del(format!("filler:{i}")).ignore();
    }
    let _: () = pipe.query(c).unwrap();
    all_gone
}

/// Two workers; the holder's worker is frozen while Redis evicts the lock
/// and both heartbeats, and for two seconds after: its job runs on meanwhile.
/// The other server takes the lock, finds no heartbeat to wait for, and
/// must still not start the job until the holder's job has stopped.
async fn eviction_starts_no_second_run(policy: &str) {
    let server = RedisServer::start();
    let two = Two::start(&server, "6s").await;
    let (mut c, path, holder) = (server.conn(), &two.j, &two.holder);
    {
        let _frozen = freeze(two.holder_pid());
        assert!(evict_lock_and_heartbeats(&mut c, policy), "Redis evicted the lock and both heartbeats");
        // allkeys-* may take the flag too: the supervisor switches it on again.
        flag(&mut c, "outbound", "alice", true);
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let other = running_node(path, Some(holder)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let lines = journal(path);
    println!("{policy}: {holder} → {other}, {} ms of two runs", overlap_ms(&lines));
    assert_eq!(overlap_ms(&lines), 0, "{policy}: two runs at once");
    assert_no_overlap(&lines);
}

#[tokio::test]
async fn volatile_ttl_eviction_of_the_lock_and_heartbeats_starts_no_second_run() {
    eviction_starts_no_second_run("volatile-ttl").await;
}

#[tokio::test]
async fn allkeys_lru_eviction_starts_no_second_run() {
    eviction_starts_no_second_run("allkeys-lru").await;
}

/// srv-a holds; a snapshot is taken; the lock is force-unlocked and wh-b
/// runs the job; Redis comes back from the snapshot (the lock naming
/// wh-a's old holding) while wh-b's worker is frozen: wh-a must not take
/// the old lock up as its own, nor run under its old fence.
#[tokio::test]
async fn an_older_snapshot_with_a_live_workers_old_lock_starts_no_second_run() {
    let mut server = RedisServer::start();
    let two = Two::start(&server, "6s").await;
    let (mut c, path, first) = (server.conn(), &two.j, &two.holder);
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    force_unlock(&mut c).unwrap();
    let second = running_node(path, Some(first)).await;
    let runner = if second == "srv-a" { &two.a } else { &two.b };
    {
        let _frozen = freeze(runner.pid());
        server.restart_from_snapshot();
        let mut c = server.conn();
        assert!(exists(&mut c, "{outbound}:lock"), "the snapshot brought the old lock back");
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    let lines = journal(path);
    println!("{first} → {second}, snapshot restored: {} ms of two runs", overlap_ms(&lines));
    assert_eq!(overlap_ms(&lines), 0, "two runs at once");
    assert_no_overlap(&lines);
}

/// A supervisor empties her own flag (or Redis loses it) while bob's is
/// on; the holder dies: the other server takes over, since one flag on is
/// enough to run.
#[tokio::test]
async fn an_emptied_flag_of_one_supervisor_does_not_stop_the_job_anothers_keeps_on() {
    let server = RedisServer::start();
    flag(&mut server.conn(), "outbound", "bob", true);
    let mut two = Two::start(&server, LEASE).await;
    let mut c = server.conn();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _: () = redis::cmd("HDEL").arg("{outbound}:enabled:alice").arg(&["on", "time", "host"]).query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let holder = two.holder.clone();
    if holder == "srv-a" {
        two.a.kill9()
    } else {
        two.b.kill9()
    };
    let t = Instant::now();
    let other = running_node(&two.j, Some(&holder)).await;
    println!("{holder} killed, {other} took over in {:?} with alice's flag emptied", t.elapsed());
}

/// A second worker started under a name another live worker runs as (a
/// cloned host, `--node %H`) stops at once, saying so, and never runs the
/// job; the first runs on, even while it is stopped (SIGSTOP) and its lock
/// is deleted.
#[tokio::test]
async fn a_second_worker_under_a_name_in_use_refuses_in_one_sentence() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal");
    let first = journal_worker(&url, "wh-a", LEASE, &path);
    running_node(&path, None).await;
    // Alive as a live worker is: its heartbeat claims its presence
    // subscription (made just after the name is claimed; a worker frozen
    // before that is silent past a lease when the second asks, and its
    // name rightly free).
    eventually("the first worker's presence", Duration::from_secs(5), || {
        let presence: Option<String> =
            redis::cmd("HGET").arg("{outbound}:node:wh-a").arg(beat::PRESENCE).query(&mut c).ok()?;
        presence.filter(|p| !p.is_empty())
    })
    .await;
    let frozen = freeze(first.pid());
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    let mut second = WorkerProcess::spawn(
        worker_command(&url, "wh-a", LEASE, &[], JOURNAL_LOOP)
            .env("JOURNAL", &path)
            .stderr(std::process::Stdio::piped()),
    );
    let code = eventually("the second worker to stop", Duration::from_secs(10), || second.try_wait().unwrap()).await;
    drop(frozen);
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(code.code(), Some(1), "{stderr}");
    let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("lockwatch: ")).collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("another worker already runs as node wh-a (pid"), "{stderr}");
    assert!(said[0].contains("give each server its own --node"), "{stderr}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lines = journal(&path);
    assert!(lines.iter().all(|l| l.1 == "wh-a"));
    assert_eq!(overlap_ms(&lines), 0, "two runs at once");
    assert_no_overlap(&lines);
}

/// Workers started with the default name on hosts that share a host name
/// (a cloned host; here one host twice) take distinct names, and the pause
/// and DEL that ran the job twice under one name run it once.
#[tokio::test]
async fn workers_on_cloned_hosts_get_distinct_default_names_and_never_run_twice() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal");
    let default_worker = || {
        let mut cmd = lockwatch_command();
        cmd.args(["--redis", &url, "worker", "--lease", LEASE, "--stop-grace", "1s", "--", "sh", "-c", JOURNAL_LOOP]);
        WorkerProcess::spawn(
            cmd.env("JOURNAL", &path).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()),
        )
    };
    let a = default_worker();
    let holder = running_node(&path, None).await;
    let b = default_worker();
    let names = eventually("two names", Duration::from_secs(10), || {
        let names: Vec<String> = redis::cmd("SMEMBERS").arg("{outbound}:nodes").query(&mut c).ok()?;
        (names.len() == 2).then_some(names)
    })
    .await;
    assert!(names.contains(&holder) && names.contains(&format!("{holder}@127.0.0.1")), "{names:?}");
    {
        let _frozen = freeze(a.pid());
        let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    running_node(&path, Some(&holder)).await;
    let lines = journal(&path);
    assert_eq!(overlap_ms(&lines), 0, "two runs at once");
    assert_no_overlap(&lines);
    drop(b);
}

/// Where Redis may evict the job's keys, the worker and `status` say so.
#[tokio::test]
async fn the_worker_and_status_say_when_redis_may_evict_the_jobs_keys() {
    use std::io::BufRead;
    let server = RedisServer::with_args(&["--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru"]);
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
    let mut worker = WorkerProcess::spawn(
        worker_command(&server.url(), "wh-a", LEASE, &[], "sleep 600").stderr(std::process::Stdio::piped()),
    );
    let stderr = std::io::BufReader::new(worker.stderr.take().unwrap());
    let said =
        tokio::task::spawn_blocking(move || stderr.lines().map_while(Result::ok).find(|l| l.contains("may evict")));
    let said = tokio::time::timeout(Duration::from_secs(10), said).await.expect("said within 10 s").unwrap();
    let said = said.expect("the worker says Redis may evict");
    assert!(said.contains("allkeys-lru") && said.contains("noeviction"), "{said}");
    let out = lockwatch(&server.url(), &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let eviction = json["eviction"].as_str().unwrap_or_default();
    assert!(eviction.contains("maxmemory-policy allkeys-lru, maxmemory 100 MB"), "{json}");
    let text = lockwatch(&server.url(), &["status"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("warning  Redis may evict"), "{text:?}");
}

/// A heartbeat an older snapshot brings back (a restore, a replica promoted
/// with old data) names the process that had the name before: older than
/// the running worker's own last beat, it took nothing from it, and the
/// worker beats on instead of stopping as if a cloned host had its name;
/// also when the worker takes the lock in the same moment (an acquisition
/// writes the heartbeat before the worker's next beat does).
#[tokio::test]
async fn an_older_heartbeat_brought_back_does_not_stop_the_worker_that_has_the_name() {
    for acquiring in [false, true] {
        let (_server, url, mut c) = server_with_flag("alice", !acquiring);
        seed_fence(&mut c);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal");
        let mut worker = journal_worker(&url, "wh-a", LEASE, &path);
        let key = "{outbound}:node:wh-a";
        let own: String = eventually("the worker's first beat", Duration::from_secs(10), || {
            redis::cmd("HGET").arg(key).arg(beat::INSTANCE).query::<Option<String>>(&mut c).ok().flatten()
        })
        .await;
        if !acquiring {
            running_node(&path, None).await;
        }
        let older = redis_ms(&mut c) - 1_500;
        let mut restore = redis::pipe();
        restore
            .atomic()
            .cmd("HSET")
            .arg(key)
            .arg(beat::INSTANCE)
            .arg("the-process-before")
            .arg(beat::BEAT_MS)
            .arg(older);
        if acquiring {
            let flag = "{outbound}:enabled:alice";
            restore.cmd("HSET").arg(flag).arg(flag::ON).arg("1").arg(flag::TIME).arg(older + 1_000);
            restore.cmd("PUBLISH").arg("{outbound}:wake").arg("test");
        }
        let _: () = restore.query(&mut c).unwrap();
        if acquiring {
            running_node(&path, None).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            worker.try_wait().unwrap().is_none(),
            "the worker stopped over an old heartbeat (acquiring: {acquiring})"
        );
        let now: String = redis::cmd("HGET").arg(key).arg(beat::INSTANCE).query(&mut c).unwrap();
        assert_eq!(now, own, "its own beat replaced the old one");
        let lines = journal(&path);
        assert_no_overlap(&lines);
    }
}

/// srv-a with an 8 s lease running the job, srv-b with a 2 s lease
/// standing by, on a job alice has on.
struct Mixed {
    server: RedisServer,
    c: redis::Connection,
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    a: WorkerProcess,
    _b: WorkerProcess,
}

impl Mixed {
    async fn start() -> Mixed {
        let server = RedisServer::start();
        let mut c = server.conn();
        seed_fence(&mut c);
        flag(&mut c, "outbound", "alice", true);
        let _dir = tempfile::tempdir().unwrap();
        let path = _dir.path().join("journal");
        let a = journal_worker(&server.url(), "srv-a", "8s", &path);
        assert_eq!(running_node(&path, None).await, "srv-a");
        let _b = journal_worker(&server.url(), "srv-b", "2s", &path);
        tokio::time::sleep(Duration::from_secs(2)).await;
        Mixed { server, c, _dir, path, a, _b }
    }
}

/// Workers started with different `--lease`: the holder's (8 s) is frozen
/// and its lock force-unlocked; its reaper kills its job by its own lease,
/// so the other (2 s) waits by that one, as the holder's heartbeat names it,
/// not by its own.
#[tokio::test]
async fn a_worker_with_a_shorter_lease_waits_for_a_frozen_holder_by_the_holders_lease() {
    let Mixed { server: _server, mut c, _dir, path, a, _b } = Mixed::start().await;
    {
        let _frozen = freeze(a.pid());
        tokio::time::sleep(Duration::from_millis(200)).await;
        force_unlock(&mut c).unwrap();
        running_node(&path, Some("srv-a")).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lines = journal(&path);
    println!(
        "srv-a (lease 8 s) frozen and force-unlocked, srv-b (lease 2 s) took over: {} ms of two runs",
        overlap_ms(&lines)
    );
    assert_eq!(overlap_ms(&lines), 0, "two runs at once");
    assert_no_overlap(&lines);
}

/// The same with the frozen holder's heartbeat deleted too (an admin's
/// clean-up, or eviction): its lease is still known from the handover
/// record, written with the lock.
#[tokio::test]
async fn a_worker_with_a_shorter_lease_waits_by_the_holders_lease_when_its_heartbeat_is_gone() {
    let Mixed { server: _server, mut c, _dir, path, a, _b } = Mixed::start().await;
    {
        let _frozen = freeze(a.pid());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let _: () = redis::cmd("DEL").arg("{outbound}:node:srv-a").query(&mut c).unwrap();
        force_unlock(&mut c).unwrap();
        tokio::time::sleep(Duration::from_secs(9)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let lines = journal(&path);
    println!(
        "srv-a (lease 8 s) frozen, its heartbeat deleted and its lock force-unlocked; srv-b (2 s) took over: {} ms of two runs",
        overlap_ms(&lines)
    );
    assert!(lines.iter().any(|l| l.1 == "srv-b"), "srv-b took over");
    assert_eq!(overlap_ms(&lines), 0, "two runs at once");
    assert_no_overlap(&lines);
}

/// With both the heartbeat and the handover record lost nothing names a
/// longer lease: a worker with a shorter one says so once, at start.
#[tokio::test]
async fn a_worker_with_a_shorter_lease_says_to_give_every_worker_the_same() {
    let server = RedisServer::start();
    let mut c = server.conn();
    seed_fence(&mut c);
    flag(&mut c, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let _a = journal_worker(&server.url(), "srv-a", "8s", &dir.path().join("journal"));
    let log = dir.path().join("srv-b.log");
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", &server.url(), "worker", "--node", "srv-b", "--lease", "2s", "--", "sleep", "1000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _b = WorkerProcess::spawn(&mut cmd);
    let said = eventually("srv-b's warning", Duration::from_secs(10), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines().find(|l| l.contains("runs the job with a lease of")).map(str::to_owned)
    })
    .await;
    println!("{said}");
    assert!(said.contains("srv-a runs the job with a lease of 8 s, this worker with 2 s"), "{said}");
    assert!(said.contains("give every worker of the job the same --lease"), "{said}");
}

/// The name of a frozen holder with a longer lease is kept by that lease:
/// srv-a (8 s) is frozen, its connections cut and its lock force-unlocked,
/// and a new worker started under its name with a 2 s lease must not take
/// the name (and so end srv-b's wait for srv-a) before srv-a's reaper has
/// killed its job.
#[tokio::test]
async fn a_new_worker_under_a_frozen_holders_name_waits_out_the_holders_lease() {
    let Mixed { server, mut c, _dir, path, a, _b } = Mixed::start().await;
    let _again;
    {
        let _frozen = freeze(a.pid());
        tokio::time::sleep(Duration::from_millis(200)).await;
        let cut = cut_connections(&mut c, a.pid());
        assert!(cut > 0, "srv-a's connections were found");
        force_unlock(&mut c).unwrap();
        _again = journal_worker(&server.url(), "srv-a", "2s", &path);
        tokio::time::sleep(Duration::from_secs(9)).await;
    }
    let lines = journal(&path);
    println!(
        "srv-a (8 s) frozen, cut off, force-unlocked; srv-a started again with 2 s: {} ms of two runs",
        overlap_ms(&lines)
    );
    assert_eq!(overlap_ms(&lines), 0, "two runs at once");
    assert_no_overlap(&lines);
}
