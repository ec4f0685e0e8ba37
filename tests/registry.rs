//! Workers and the job's registries: every registered user counts however
//! many there are, names of long-gone servers leave `{job}:nodes`, and flags
//! that cannot be read neither start nor stop the job.

mod common;

use std::time::Duration;

use common::journal::{journal, journal_worker};
use common::*;

fn lock_holders(c: &mut redis::Connection) -> Vec<String> {
    redis::cmd("HKEYS").arg("{outbound}:lock").query(c).unwrap()
}

#[tokio::test]
async fn a_worker_starts_the_job_for_the_one_enabled_user_among_thousands() {
    let server = RedisServer::start();
    let mut c = server.conn();
    crowd(&mut c);

    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let _w = journal_worker(&server.url(), "srv-a", "3s", &j);
    eventually("the job to run", Duration::from_secs(15), || (!journal(&j).is_empty()).then_some(())).await;
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
        .arg(beat::STATE)
        .arg("idle")
        .arg(beat::BEAT_MS)
        .arg(two_days_ago)
        .query(&mut c)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let _w = journal_worker(&server.url(), "srv-a", "3s", &dir.path().join("journal"));
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
    let _a = journal_worker(&server.url(), "srv-a", "3s", &running);
    eventually("the job to run", Duration::from_secs(10), || (!journal(&running).is_empty()).then_some(())).await;
    // At once: a registry missing for a moment would truly mean nobody is enabled.
    let _: () = redis::pipe().atomic().del("{outbound}:users").set("{outbound}:users", "alice").query(&mut c).unwrap();
    let before = journal(&running).len();
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(journal(&running).len() > before + 10, "the job kept running");
    assert_eq!(lock_holders(&mut c).len(), 1, "the lock is still held");
    let kinds: Vec<String> = stream_events(&mut c).into_iter().map(|e| e.kind).collect();
    assert!(!kinds.iter().any(|t| t == "released"), "{kinds:?}");

    // Not holding: a worker that cannot read the flags does not start it.
    drop(_a);
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    let idle = dir.path().join("idle");
    let _b = journal_worker(&server.url(), "srv-b", "3s", &idle);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(journal(&idle).is_empty(), "the job was started on unreadable flags");
    assert!(lock_holders(&mut c).is_empty());
    // Readable again: it starts.
    let _: () = redis::cmd("DEL").arg("{outbound}:users").query(&mut c).unwrap();
    flag(&mut c, "outbound", "alice", true);
    eventually("the job to start", Duration::from_secs(10), || (!journal(&idle).is_empty()).then_some(())).await;
}
