//! Workers and the job's registries: every registered user counts however
//! many there are, names of long-gone servers leave `{job}:nodes`, and flags
//! that cannot be read neither start nor stop the job.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

/// Appends a line to `$JOURNAL` every 100 ms while the job runs.
const JOB: &str = r#"while :; do echo run >> "$JOURNAL"; sleep 0.1; done"#;

/// A worker process, killed when the test ends however it ends.
struct Worker(Child);

impl Worker {
    fn start(server: &RedisServer, node: &str, journal: &Path) -> Worker {
        let child = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
            .env_remove("LOCKWATCH_REDIS_URL")
            .args(["--redis", &server.url(), "worker", "--node", node, "--lease", "3s", "--stop-grace", "1s"])
            .args(["--", "sh", "-c", JOB])
            .env("JOURNAL", journal)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Worker(child)
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn lines(journal: &Path) -> usize {
    std::fs::read_to_string(journal).map(|s| s.lines().count()).unwrap_or(0)
}

fn lock_holders(c: &mut redis::Connection) -> Vec<String> {
    redis::cmd("HKEYS").arg("{outbound}:lock").query(c).unwrap()
}

fn event_types(c: &mut redis::Connection) -> Vec<String> {
    let entries: redis::streams::StreamRangeReply =
        redis::cmd("XRANGE").arg("{outbound}:events").arg("-").arg("+").query(c).unwrap();
    entries.ids.iter().filter_map(|e| e.get::<String>("type")).collect()
}

#[tokio::test]
async fn a_worker_starts_the_job_for_the_one_enabled_user_among_thousands() {
    let server = RedisServer::start();
    let mut c = server.conn();
    crowd(&mut c);

    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    let _w = Worker::start(&server, "srv-a", &journal);
    eventually("the job to run", Duration::from_secs(15), || (lines(&journal) > 0).then_some(())).await;
    assert_eq!(lock_holders(&mut c).len(), 1);
}

#[tokio::test]
async fn a_running_worker_removes_servers_gone_for_long_and_its_own_heartbeat_expires() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let _: () = redis::cmd("SADD").arg("{outbound}:nodes").arg("ghost").arg("silent").query(&mut c).unwrap();
    // A heartbeat without expiry, silent for two days (an older version's).
    let two_days_ago = redis_ms(&mut c) - 2 * 86_400_000;
    let _: () = redis::cmd("HSET")
        .arg("{outbound}:node:silent")
        .arg("state")
        .arg("idle")
        .arg("beat_ms")
        .arg(two_days_ago)
        .query(&mut c)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let _w = Worker::start(&server, "srv-a", &dir.path().join("journal"));
    eventually("srv-a to beat", Duration::from_secs(10), || {
        let ttl: i64 = redis::cmd("PTTL").arg("{outbound}:node:srv-a").query(&mut c).unwrap();
        (ttl > 0).then_some(())
    })
    .await;
    let ttl: i64 = redis::cmd("PTTL").arg("{outbound}:node:srv-a").query(&mut c).unwrap();
    assert!(ttl <= 86_400_000, "{ttl}");
    let members = eventually("gone servers to leave the registry", Duration::from_secs(10), || {
        let members: Vec<String> = redis::cmd("SMEMBERS").arg("{outbound}:nodes").query(&mut c).unwrap();
        (members.len() == 1).then_some(members)
    })
    .await;
    assert_eq!(members, vec!["srv-a"]);
    let silent: bool = redis::cmd("EXISTS").arg("{outbound}:node:silent").query(&mut c).unwrap();
    assert!(!silent, "a heartbeat silent for days is removed with its name");
}

#[tokio::test]
async fn unreadable_flags_neither_start_nor_stop_the_job() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let dir = tempfile::tempdir().unwrap();

    // Holding and running: the registry turns unreadable, the job runs on.
    flag(&mut c, "outbound", "alice", true);
    let running = dir.path().join("running");
    let _a = Worker::start(&server, "srv-a", &running);
    eventually("the job to run", Duration::from_secs(10), || (lines(&running) > 0).then_some(())).await;
    // At once: a registry missing for a moment would truly mean nobody is enabled.
    let _: () = redis::pipe().atomic().del("{outbound}:users").set("{outbound}:users", "alice").query(&mut c).unwrap();
    let before = lines(&running);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(lines(&running) > before + 10, "the job kept running");
    assert_eq!(lock_holders(&mut c).len(), 1, "the lock is still held");
    assert!(!event_types(&mut c).iter().any(|t| t == "released"), "{:?}", event_types(&mut c));

    // Not holding: a worker that cannot read the flags does not start it.
    drop(_a);
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    let idle = dir.path().join("idle");
    let _b = Worker::start(&server, "srv-b", &idle);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(lines(&idle), 0, "the job was started on unreadable flags");
    assert!(lock_holders(&mut c).is_empty());
    // Readable again: it starts.
    let _: () = redis::cmd("DEL").arg("{outbound}:users").query(&mut c).unwrap();
    flag(&mut c, "outbound", "alice", true);
    eventually("the job to start", Duration::from_secs(10), || (lines(&idle) > 0).then_some(())).await;
}
