//! A real Redis ACL user made from `lockwatch acl`: reads the whole job,
//! flips their own flag, and is refused, clearly, on anyone else's.

mod common;

use std::process::Command;
use std::time::Duration;

use common::*;
use lockwatch::Keys;
use lockwatch::connect::Target;
use lockwatch::error::RedisFailure;
use lockwatch::probe::probe;
use lockwatch::supervise::flags::{Flip, set_flag};

/// Redis 6.2's rules (the server cannot keep a user's writes to her own
/// keys): she watches the job and writes nothing. Tried on every server:
/// Redis 7 and Valkey take these rules too.
#[tokio::test]
async fn redis_6_rules_let_a_supervisor_watch_the_job_and_write_nothing() {
    let server = RedisServer::start();
    let said = provision_with(&server, "alice", "alice-pw", &["--redis-version", "6.2"]);
    let open = said.lines().next().unwrap_or_default();
    assert!(
        open.contains("not switch her flag") && open.contains("SCRIPT KILL"),
        "one sentence on what stays open: {said}"
    );
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "alice", true);
    redisson_lock(&mut admin, "{outbound}:lock", "uuid-a:1", 30_000);

    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let target = Target::new(&url, None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let snap = probe(&mut conn, &Keys::new("outbound"), target.endpoint()).await.expect("alice may read the job");
    assert_eq!(snap.lock.holders, vec!["uuid-a:1"]);

    let out = lockwatch(&url, &["disable"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let on: String = redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(on, "1", "her flag is untouched");
    for cmd in [
        redis::cmd("HSET").arg("{outbound}:lock").arg("x").arg(1).clone(),
        redis::cmd("DEL").arg("{outbound}:lock").clone(),
        redis::cmd("HSET").arg("{outbound}:enabled:alice").arg("junk").arg("x").clone(),
        redis::cmd("EVAL").arg("return redis.call('DEL', KEYS[1])").arg(1).arg("{outbound}:lock").clone(),
    ] {
        let err = cmd.query_async::<redis::Value>(&mut conn).await.unwrap_err();
        // Refused: NOPERM, or inside the script Redis's "can't run this
        // command" and Valkey's "no permissions to run".
        let text = err.to_string();
        assert!(
            err.code() == Some("NOPERM") || text.contains("can't run this command") || text.contains("no permissions"),
            "{err}"
        );
    }
}

#[tokio::test]
async fn a_supervisor_flips_their_own_flag_and_is_refused_on_another() {
    if !has_selectors("a_supervisor_flips_their_own_flag_and_is_refused_on_another") {
        return;
    }
    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    provision(&server, "bob", "bob-pw");
    let mut admin = server.conn();
    redisson_lock(&mut admin, "{outbound}:lock", "uuid-a:1", 30_000);

    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let target = Target::new(&url, None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let keys = Keys::new("outbound");

    let snap = probe(&mut conn, &keys, target.endpoint()).await.expect("alice may read the job");
    assert_eq!(snap.lock.holders, vec!["uuid-a:1"]);

    let flipped =
        set_flag(&mut conn, &keys, &Flip { user: "alice", on: true, host: "pc-alice", reason: None }).await.unwrap();
    assert!(flipped.warning.is_none(), "{:?}", flipped.warning);
    let on: String = redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(on, "1");

    let err =
        set_flag(&mut conn, &keys, &Flip { user: "bob", on: true, host: "pc-alice", reason: None }).await.unwrap_err();
    assert_eq!(err.redis_failure(), Some(RedisFailure::Permission));
    let msg = err.to_string();
    assert!(
        msg.contains("bob's flag") && msg.to_lowercase().contains("noperm") && msg.contains("only flip its own"),
        "{msg}"
    );
    let bobs: Option<String> =
        redis::cmd("HGET").arg("{outbound}:enabled:bob").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(bobs, None, "bob's flag is untouched");

    // Nor may alice touch the lock itself.
    let del: redis::RedisResult<i64> = redis::cmd("DEL").arg("{outbound}:lock").query_async(&mut conn).await;
    assert_eq!(del.unwrap_err().code(), Some("NOPERM"));
}

#[tokio::test]
async fn a_supervisor_says_they_are_on_it_and_is_refused_for_another() {
    if !has_selectors("a_supervisor_says_they_are_on_it_and_is_refused_for_another") {
        return;
    }
    use lockwatch::supervise::ack::{Ack, clear_ack, set_ack};

    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    provision(&server, "bob", "bob-pw");
    let mut admin = server.conn();
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let target = Target::new(&url, None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let keys = Keys::new("outbound");

    let mine = Ack { user: "alice", lasts: Duration::from_secs(600), note: "looking at wh-a" };
    let acked = set_ack(&mut conn, &keys, &mine).await.expect("alice may say she is on it");
    assert!(acked.warning.is_none(), "{:?}", acked.warning);
    let snap = probe(&mut conn, &keys, target.endpoint()).await.unwrap();
    assert_eq!(snap.acks.len(), 1, "{snap:?}");
    assert_eq!((snap.acks[0].user.as_str(), snap.acks[0].note.as_str()), ("alice", "looking at wh-a"));

    let theirs = Ack { user: "bob", ..mine };
    let err = set_ack(&mut conn, &keys, &theirs).await.unwrap_err();
    assert_eq!(err.redis_failure(), Some(RedisFailure::Permission));
    let msg = err.to_string();
    assert!(msg.starts_with("setting bob's \"on it\" for job outbound on 127.0.0.1"), "{msg}");
    assert!(msg.contains("only say they are on it for themselves"), "{msg}");
    let err = clear_ack(&mut conn, &keys, "bob").await.unwrap_err();
    assert_eq!(err.redis_failure(), Some(RedisFailure::Permission));
    let bobs: bool = redis::cmd("EXISTS").arg("{outbound}:ack:bob").query(&mut admin).unwrap();
    assert!(!bobs, "bob's ack is untouched");

    assert!(clear_ack(&mut conn, &keys, "alice").await.unwrap());
    // Refused: her writes for bob (HSET and PEXPIREAT, then HDEL), nothing else.
    let refused: Vec<std::collections::HashMap<String, redis::Value>> =
        redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    let objects: Vec<String> = refused.iter().map(|e| redis::from_redis_value_ref(&e["object"]).unwrap()).collect();
    let count: i64 = refused.iter().map(|e| redis::from_redis_value_ref::<i64>(&e["count"]).unwrap()).sum();
    assert!(objects.iter().all(|o| o == "{outbound}:ack:bob"), "only writes for bob were refused: {refused:?}");
    assert_eq!(count, 3, "{refused:?}");
}

#[test]
fn the_cli_says_in_one_sentence_when_the_server_refuses_a_flip() {
    if !has_selectors("the_cli_says_in_one_sentence_when_the_server_refuses_a_flip") {
        return;
    }
    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let out = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .args(["--redis", &url, "enable", "--user", "bob"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("lockwatch: setting bob's flag of job outbound on 127.0.0.1"), "{stderr}");
    assert!(!stderr.contains("alice-pw"), "{stderr}");

    let ok = Command::new(env!("CARGO_BIN_EXE_lockwatch")).args(["--redis", &url, "enable"]).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("enabled job outbound for alice"));
}

#[tokio::test]
async fn a_wrong_password_is_an_auth_failure() {
    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    let url = format!("redis://alice:nope@127.0.0.1:{}", server.port);
    let err = Target::new(&url, None).unwrap().manager().await.unwrap_err();
    assert_eq!(err.redis_failure(), Some(RedisFailure::Auth), "{err}");
    assert!(!err.to_string().contains("nope"));
}

#[tokio::test]
async fn a_supervisor_user_is_woken_by_the_stream_and_the_unlock_channel() {
    use lockwatch::watcher::{Options, Watcher};
    use lockwatch::{EventKind, State};

    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "alice", false);
    redisson_lock(&mut admin, "{outbound}:lock", "uuid-a:1", 60_000);
    beat(&mut admin, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    // A 60 s poll: only the wake-ups can make this test pass in time.
    let options = Options { poll: Duration::from_secs(60), ..Options::default() };
    let w = Watcher::spawn(Target::new(&url, None).unwrap(), Keys::new("outbound"), options);
    let mut events = w.events();
    let status = w.status();
    eventually("running", Duration::from_secs(5), || {
        status.borrow().as_ref().filter(|s| s.state == State::Running).map(|_| ())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    // A Redisson unlock (DEL + PUBLISH 0), seen through alice's subscription.
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut admin).unwrap();
    let _: () = redis::cmd("PUBLISH").arg("redisson_lock__channel:{outbound}:lock").arg(0).query(&mut admin).unwrap();
    let e = tokio::time::timeout(Duration::from_secs(3), events.recv())
        .await
        .expect("woken by the unlock channel")
        .unwrap();
    assert_eq!(e.event, EventKind::Stopped);

    // A new holding announced on the stream, seen through alice's XREAD.
    redisson_lock(&mut admin, "{outbound}:lock", "uuid-b:1", 60_000);
    beat(&mut admin, "outbound", "srv-b", "uuid-b:1", 0, "running", 0);
    let _: () = redis::cmd("XADD")
        .arg("{outbound}:events")
        .arg("*")
        .arg(entry::TYPE)
        .arg(kind::ACQUIRED)
        .query(&mut admin)
        .unwrap();
    let e = tokio::time::timeout(Duration::from_secs(3), events.recv()).await.expect("woken by the stream").unwrap();
    assert_eq!(e.event, EventKind::Started);
    w.stop().await;
}

/// What a supervisor must never be able to do, with the error Redis must
/// answer: each would let one desktop stall, blind or break every worker,
/// or rewrite the job's history.
const HARMFUL: &[(&[&str], &str)] = &[
    (&["CLIENT", "PAUSE", "50", "WRITE"], "NOPERM"),
    (&["CLIENT", "KILL", "TYPE", "normal"], "NOPERM"),
    (&["CLIENT", "LIST"], "NOPERM"),
    (&["CLIENT", "NO-EVICT", "on"], "NOPERM"),
    (&["CLIENT", "UNPAUSE"], "NOPERM"),
    (&["CONFIG", "GET", "requirepass"], "NOPERM"),
    (&["CONFIG", "SET", "maxmemory", "1"], "NOPERM"),
    (&["FLUSHALL"], "NOPERM"),
    (&["FLUSHDB"], "NOPERM"),
    (&["DEBUG", "SLEEP", "0"], "NOPERM"),
    (&["SHUTDOWN", "NOSAVE"], "NOPERM"),
    (&["KEYS", "*"], "NOPERM"),
    (&["MONITOR"], "NOPERM"),
    (&["SCRIPT", "LOAD", "return 1"], "NOPERM"),
    (&["SCRIPT", "FLUSH"], "NOPERM"),
    (&["FUNCTION", "LOAD", "#!lua name=evil\nredis.register_function('evil', function() return 1 end)"], "NOPERM"),
    (&["FCALL", "evil", "0"], "NOPERM"),
    (&["DEL", "{outbound}:lock"], "NOPERM"),
    (&["PEXPIRE", "{outbound}:lock", "1"], "NOPERM"),
    (&["INCR", "{outbound}:fence"], "NOPERM"),
    (&["HSET", "{outbound}:node:srv-a", "state", "idle"], "NOPERM"),
    (&["SADD", "{outbound}:users", "mallory"], "NOPERM"),
    (&["SREM", "{outbound}:users", "bob"], "NOPERM"),
    (&["XADD", "{outbound}:events", "*", "type", "released"], "NOPERM"),
    (&["XTRIM", "{outbound}:events", "MAXLEN", "0"], "NOPERM"),
    (&["HSET", "{outbound}:enabled:bob", "on", "0"], "NOPERM"),
    (&["HSET", "{outbound}:ack:bob", "note", "not me"], "NOPERM"),
    (&["HDEL", "{outbound}:ack:bob", "note"], "NOPERM"),
    (&["PEXPIREAT", "{outbound}:ack:bob", "1"], "NOPERM"),
    // Her own flag takes her flip and nothing else: it cannot vanish by her hand.
    (&["HDEL", "{outbound}:enabled:alice", "on"], "NOPERM"),
    (&["PEXPIREAT", "{outbound}:enabled:alice", "1"], "NOPERM"),
    (&["PEXPIRE", "{outbound}:enabled:alice", "1"], "NOPERM"),
    (&["DEL", "{outbound}:enabled:alice"], "NOPERM"),
    (&["PEXPIREAT", "{outbound}:lock", "1"], "NOPERM"),
    (&["HDEL", "{outbound}:lock", "uuid-a:1"], "NOPERM"),
    (&["PUBLISH", "redisson_lock__channel:{outbound}:lock", "0"], "NOPERM"),
    (&["EVAL", "redis.call('HSET', KEYS[1], 'on', '1') return 1", "1", "{outbound}:enabled:alice"], "NOPERM"),
    (&["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "0"], "NOPERM"),
    (&["GET", "other"], "NOPERM"),
    (&["SET", "other", "1"], "NOPERM"),
    (&["RENAME", "{outbound}:lock", "{outbound}:enabled:alice"], "NOPERM"),
    (&["SWAPDB", "0", "1"], "NOPERM"),
    (&["ACL", "SETUSER", "alice", "+@all"], "NOPERM"),
    (&["ACL", "LOG"], "NOPERM"),
    // Nothing whose size or lifetime her rules cannot bound: another
    // database (no worker trims her keys there), a transaction (its replies
    // queue in Redis's memory), a message (any size, to every subscriber).
    (&["SELECT", "1"], "NOPERM"),
    (&["MULTI"], "NOPERM"),
    (&["PUBLISH", "{outbound}:wake", "x"], "NOPERM"),
    (&["SPUBLISH", "{outbound}:wake", "x"], "NOPERM"),
];

/// A connection as `user`. The redis crate's default handshake sends
/// `CLIENT SETINFO`, which the user is not granted: the connection must
/// work all the same.
fn login(server: &RedisServer, user: &str, password: &str) -> redis::Connection {
    let url = format!("redis://{user}:{password}@127.0.0.1:{}", server.port);
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

#[test]
fn a_supervisor_is_refused_everything_that_could_harm_the_job_and_keeps_status_watch_and_own_flip() {
    if !has_selectors("a_supervisor_is_refused_everything_that_could_harm_the_job_and_keeps_status_watch_and_own_flip")
    {
        return;
    }
    // DEBUG enabled, so that only the ACL stands in its way.
    let server = RedisServer::with_args(&["--enable-debug-command", "yes"]);
    provision(&server, "alice", "alice-pw");
    provision(&server, "bob", "bob-pw");
    let mut admin = server.conn();
    redisson_lock(&mut admin, "{outbound}:lock", "uuid-a:1", 60_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(7).query(&mut admin).unwrap();
    beat(&mut admin, "outbound", "srv-a", "uuid-a:1", 7, "running", 0);
    // The worker's presence, as a live worker holds it: alice's probe counts
    // the subscribers of its channel (and would see the holder dying without).
    let _: () = redis::cmd("HSET").arg("{outbound}:node:srv-a").arg(beat::PRESENCE).arg(1).query(&mut admin).unwrap();
    let mut presence = server.conn();
    let _: () = redis::cmd("SUBSCRIBE").arg("{outbound}:alive:srv-a").query(&mut presence).unwrap();
    flag(&mut admin, "outbound", "bob", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:ack:bob").arg(ack::NOTE).arg("bob's own").query(&mut admin).unwrap();
    let _: () = redis::cmd("SET").arg("other").arg("admin's").query(&mut admin).unwrap();
    let _: () = redis::cmd("ACL").arg("LOG").arg("RESET").query(&mut admin).unwrap();

    // What the tray and the CLI do as alice works, and Redis refuses none of
    // it (the ACL log stays empty: no refused handshake or read either).
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_lockwatch"))
            .env_remove("LOCKWATCH_REDIS_URL")
            .args(["--redis", &url])
            .args(args)
            .output()
            .unwrap()
    };
    let status = cli(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", String::from_utf8_lossy(&status.stderr));
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(json["state"], "running", "{json}");
    // The registry of jobs is hers to read (empty here: no worker added one).
    let every = cli(&["--job", "*", "status"]);
    assert!(String::from_utf8_lossy(&every.stderr).contains("no job is registered"), "{every:?}");
    for flip in ["enable", "disable", "enable"] {
        let out = cli(&[flip]);
        assert!(out.status.success(), "{flip}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let on: String = redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(on, "1");
    for args in [&["ack", "--note", "looking"][..], &["unack"], &["ack"]] {
        let out = cli(args);
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut watch = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .args(["--redis", &url, "watch", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(watch.stdout.take().unwrap()), &mut first).unwrap();
    let _ = watch.kill();
    let _ = watch.wait();
    let first: serde_json::Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("{e}: {first}"));
    assert_eq!(first["status"]["state"], "running", "{first}");
    // The holder dies: its subscription goes with its connection. Its claim
    // names this server process, which alice's look must ask (INFO server)
    // before it may say dying on the count.
    let info: String = redis::cmd("INFO").arg("server").query(&mut admin).unwrap();
    let run_id = info.lines().find_map(|l| l.strip_prefix("run_id:")).unwrap().trim().to_owned();
    let _: () =
        redis::cmd("HSET").arg("{outbound}:node:srv-a").arg(beat::PRESENCE_ON).arg(&run_id).query(&mut admin).unwrap();
    drop(presence);
    let subscribers = |admin: &mut redis::Connection| -> i64 {
        let counts: (String, i64) =
            redis::cmd("PUBSUB").arg("NUMSUB").arg("{outbound}:alive:srv-a").query(admin).unwrap();
        counts.1
    };
    while subscribers(&mut admin) > 0 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let status = cli(&["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(json["state"], "stale", "{json}");
    assert!(json["reason"].as_str().unwrap().contains("dying"), "{json}");
    let refused: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert!(refused.is_empty(), "Redis refused alice's ordinary use: {refused:?}");

    // Each harmful command on a connection of its own, so one that got
    // through (MONITOR, CLIENT KILL) cannot hide the next.
    let mut got_through = Vec::new();
    for (command, code) in HARMFUL {
        let mut conn = login(&server, "alice", "alice-pw");
        let mut cmd = redis::Cmd::new();
        for word in *command {
            cmd.arg(*word);
        }
        match cmd.query::<redis::Value>(&mut conn) {
            Err(e) if e.code() == Some(code) => {}
            other => got_through.push(format!("{}: {other:?}", command.join(" "))),
        }
    }
    assert!(HARMFUL.len() >= 20);
    assert!(got_through.is_empty(), "alice may run:\n{}", got_through.join("\n"));

    // And nothing of the job changed.
    let _: () = redis::cmd("CLIENT").arg("UNPAUSE").query(&mut admin).unwrap();
    let ttl: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut admin).unwrap();
    assert!(ttl > 30_000, "lock ttl {ttl}");
    let fence: i64 = redis::cmd("GET").arg("{outbound}:fence").query(&mut admin).unwrap();
    assert_eq!(fence, 7);
    let bobs: String = redis::cmd("HGET").arg("{outbound}:enabled:bob").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(bobs, "1");
    let bobs_ack: String = redis::cmd("HGET").arg("{outbound}:ack:bob").arg(ack::NOTE).query(&mut admin).unwrap();
    assert_eq!(bobs_ack, "bob's own");
    let other: String = redis::cmd("GET").arg("other").query(&mut admin).unwrap();
    assert_eq!(other, "admin's");
}

#[test]
fn a_supervisor_reads_a_job_kept_in_another_database() {
    let server = RedisServer::start();
    // The rules for the job's own database, as `lockwatch acl` prints them for its URL.
    provision_at(&server, &format!("{}/3", server.url()), "alice", "alice-pw");
    let mut admin = redis::Client::open(format!("{}/3", server.url())).unwrap().get_connection().unwrap();
    flag(&mut admin, "outbound", "alice", false);
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}/3", server.port);
    let out = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .args(["--redis", &url, "status", "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["state"], "stopped", "{json}");
    assert_eq!(json["flags"][0]["user"], "alice", "{json}");
}

#[tokio::test]
async fn a_supervisor_can_run_no_script_that_keeps_redis_busy() {
    if !has_selectors("a_supervisor_can_run_no_script_that_keeps_redis_busy") {
        return;
    }
    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let mut alice = redis::Client::open(url).unwrap().get_multiplexed_async_connection().await.unwrap();
    let endless = "local i = 0 while true do i = i + 1 end";
    let library = format!(
        "#!lua name=busy\nredis.register_function{{function_name='busy', callback=function() {endless} end, flags={{'no-writes'}}}}"
    );
    let tries = [
        redis::cmd("EVAL_RO").arg(endless).arg(1).arg("{outbound}:lock").clone(),
        redis::cmd("EVAL").arg(endless).arg(0).clone(),
        redis::cmd("FUNCTION").arg("LOAD").arg(&library).clone(),
        redis::cmd("SCRIPT").arg("LOAD").arg(endless).clone(),
    ];
    for cmd in tries {
        let reply = tokio::time::timeout(Duration::from_secs(3), cmd.query_async::<redis::Value>(&mut alice)).await;
        let err = reply.expect("Redis answered at once: no script of hers ran").unwrap_err();
        assert_eq!(err.code(), Some("NOPERM"), "{err}");
    }
    // Redis is free for everybody, and the job still reads as her.
    let pong: String = redis::cmd("PING").query(&mut server.conn()).unwrap();
    assert_eq!(pong, "PONG");
    let target = Target::new(&format!("redis://alice:alice-pw@127.0.0.1:{}", server.port), None).unwrap();
    let mut conn = target.manager().await.unwrap();
    probe(&mut conn, &Keys::new("outbound"), target.endpoint()).await.expect("alice reads the job");
}

#[tokio::test]
async fn a_supervisor_who_fills_her_own_flag_is_cut_back_and_the_job_runs_on() {
    if !has_selectors("a_supervisor_who_fills_her_own_flag_is_cut_back_and_the_job_runs_on") {
        return;
    }
    use common::journal::{assert_no_overlap, journal, journal_worker};

    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal");
    let _a = journal_worker(&server.url(), "wh-a", "3s", &path);
    let _b = journal_worker(&server.url(), "wh-b", "3s", &path);
    eventually("the job runs", Duration::from_secs(10), || (!journal(&path).is_empty()).then_some(())).await;

    // Her ACL lets her write anything into her own flag: no rule limits a value's size.
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let mut alice = redis::Client::open(url).unwrap().get_connection().unwrap();
    let junk = "x".repeat(10 << 20);
    let () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg("junk").arg(&junk).query(&mut alice).unwrap();
    let written_at = std::time::Instant::now();

    let size = |admin: &mut redis::Connection| -> u64 {
        redis::cmd("MEMORY").arg("USAGE").arg("{outbound}:enabled:alice").query(admin).unwrap()
    };
    assert!(size(&mut admin) > 10 << 20);
    eventually("a worker cuts her flag back", Duration::from_secs(5), || (size(&mut admin) < 1024).then_some(())).await;
    println!("10 MB of junk in her flag lasted {:?}", written_at.elapsed());
    let on: String = redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(on, "1", "her flag itself is kept");
    let junk_left: bool = redis::cmd("HEXISTS").arg("{outbound}:enabled:alice").arg("junk").query(&mut admin).unwrap();
    assert!(!junk_left);

    // The job ran on throughout, on one server at a time.
    let before = journal(&path).len();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lines = journal(&path);
    assert!(lines.len() > before + 10, "the job runs on");
    assert_no_overlap(&lines);
    let fences: std::collections::BTreeSet<i64> = lines.iter().map(|l| l.0).collect();
    assert_eq!(fences.len(), 1, "the job never stopped: one run, one fence: {fences:?}");
}

/// A URL that names a user but gives no password logs in as that user,
/// never as Redis's `default` (open on a fresh Redis, with every right): a
/// user with a password is refused ("sign in"), one without is herself.
#[test]
fn a_user_named_without_a_password_is_never_logged_in_as_default() {
    let (server, _, mut admin) = server_with_flag("alice", true);
    provision(&server, "alice", "alice-pw");
    let url = format!("redis://alice@127.0.0.1:{}", server.port);
    let out = lockwatch(&url, &["enable", "--user", "bob"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "bob's flag switched by alice logged in as default: {said}");
    assert!(said.contains("password"), "{said}");
    let bobs: Option<String> =
        redis::cmd("HGET").arg("{outbound}:enabled:bob").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(bobs, None);
    let status = lockwatch(&url, &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!((status.status.code(), &json["state"]), (Some(3), &serde_json::json!("unknown")), "{json}");
    // A user the admin made without a password is herself (who may write
    // her flag only where ACL selectors exist: Redis 7 and Valkey).
    if redis_major(&mut admin) < 7 {
        return;
    }
    let _: () = redis::cmd("ACL").arg("SETUSER").arg("alice").arg("resetpass").arg("nopass").query(&mut admin).unwrap();
    let out = lockwatch(&url, &["enable"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let hers: String = redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON).query(&mut admin).unwrap();
    assert_eq!(hers, "1");
}

/// The job's reads by every client so far (the probe, as a function or a script).
fn reads(admin: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(admin).unwrap();
    info.lines()
        .filter(|l| ["cmdstat_fcall_ro:", "cmdstat_fcall:", "cmdstat_evalsha:"].iter().any(|p| l.starts_with(p)))
        .filter_map(|l| l.split("calls=").nth(1)?.split(',').next()?.parse::<u64>().ok())
        .sum()
}

/// CPU time (user + system) a process used so far, in clock ticks.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Her writes cost her, not the others: her own flag rewritten at Redis's
/// speed (the same `on`, a new `time` each) adds no flip to the history,
/// and the workers read the job about as often as idle (hearing flips falls
/// back to the look every second while she floods).
#[tokio::test]
async fn a_supervisor_who_floods_her_own_flag_fills_no_history_and_costs_the_workers_little() {
    use common::journal::{assert_no_overlap, journal, journal_worker};

    let server = RedisServer::start();
    let mut admin = server.conn();
    if redis_major(&mut admin) < 7 {
        println!("Redis 6 grants her no write (no ACL selectors): nothing of hers to flood");
        return;
    }
    provision(&server, "alice", "alice-pw");
    flag(&mut admin, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal");
    let a = journal_worker(&server.url(), "wh-a", "3s", &path);
    let b = journal_worker(&server.url(), "wh-b", "3s", &path);
    eventually("the job runs", Duration::from_secs(10), || (!journal(&path).is_empty()).then_some(())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let window = Duration::from_secs(5);
    let cpu = || cpu_ticks(a.pid()) + cpu_ticks(b.pid());
    let flips =
        |admin: &mut redis::Connection| stream_events(admin).iter().filter(|e| e.kind == kind::FLAGS_CHANGED).count();

    let (reads_0, cpu_0) = (reads(&mut admin), cpu());
    tokio::time::sleep(window).await;
    let (reads_idle, cpu_idle) = (reads(&mut admin) - reads_0, cpu() - cpu_0);

    let flips_before = flips(&mut admin);
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let flood = std::thread::spawn(move || {
        let mut alice = redis::Client::open(url).unwrap().get_connection().unwrap();
        flood_flag(&mut alice, window)
    });
    let (reads_1, cpu_1) = (reads(&mut admin), cpu());
    let written = flood.join().unwrap();
    assert!(written > 10_000, "her writes were refused after {written}");
    let (reads_flood, cpu_flood) = (reads(&mut admin) - reads_1, cpu() - cpu_1);
    let added = flips(&mut admin) - flips_before;
    println!(
        "{written} writes of her flag in {window:?}: the workers read the job {reads_flood} times ({reads_idle} idle) and used {cpu_flood} ticks of CPU ({cpu_idle} idle); {added} flips recorded"
    );
    assert_eq!(added, 0, "her flag stayed on: no flip");
    assert!(reads_flood <= 3 * reads_idle, "{reads_flood} reads under her flood, {reads_idle} idle");
    let lines = journal(&path);
    assert_no_overlap(&lines);
    let fences: std::collections::BTreeSet<i64> = lines.iter().map(|l| l.0).collect();
    assert_eq!(fences.len(), 1, "the job never stopped: {fences:?}");
}

/// Replies she never reads are bounded by the server setting `lockwatch acl`
/// prints: her 10 MB flag read twenty times in one write, unread, would
/// hold 200 MB in Redis for as long as she kept the socket.
#[tokio::test]
async fn a_supervisor_who_never_reads_her_replies_is_cut_off_at_the_printed_limit() {
    if !has_selectors("a_supervisor_who_never_reads_her_replies_is_cut_off_at_the_printed_limit") {
        return;
    }
    use std::io::Write;
    let server = RedisServer::start();
    provision(&server, "alice", "alice-pw");
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "alice", true);
    let junk = "x".repeat(10 << 20);
    let mut raw = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let arg = |s: &str| format!("${}\r\n{s}\r\n", s.len());
    let command = |args: &[&str]| format!("*{}\r\n{}", args.len(), args.iter().map(|a| arg(a)).collect::<String>());
    let mut out = command(&["AUTH", "alice", "alice-pw"]);
    out += &command(&["HSET", "{outbound}:enabled:alice", "junk", &junk]);
    for _ in 0..20 {
        out += &command(&["HGETALL", "{outbound}:enabled:alice"]);
    }
    raw.write_all(out.as_bytes()).unwrap();
    // Her replies pile up; Redis closes her connection past the limit.
    let peak = |admin: &mut redis::Connection| -> u64 {
        let info: String = redis::cmd("INFO").arg("memory").query(admin).unwrap();
        info.lines().find_map(|l| l.strip_prefix("used_memory_peak:")).and_then(|v| v.trim().parse().ok()).unwrap()
    };
    let theirs = |admin: &mut redis::Connection| {
        let clients: String = redis::cmd("CLIENT").arg("LIST").query(admin).unwrap();
        clients.lines().any(|l| l.contains("user=alice"))
    };
    let t = std::time::Instant::now();
    while t.elapsed() < Duration::from_secs(5) && theirs(&mut admin) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let most = peak(&mut admin);
    println!("Redis's memory peaked at {} MB; her connection open: {}", most >> 20, theirs(&mut admin));
    assert!(!theirs(&mut admin), "her connection is still open, its replies held");
    assert!(most <= 150 << 20, "{} MB at the peak", most >> 20);
}

/// A flag's time is hers to write: one dated ahead of Redis's clock does
/// not make a dead job look like one about to start.
#[test]
fn a_flag_dated_ahead_of_redis_time_does_not_turn_down_into_pending() {
    let server = RedisServer::start();
    let mut admin = server.conn();
    flag(&mut admin, "outbound", "alice", true);
    let a_year_ahead = redis_ms(&mut admin) + 365 * 86_400_000;
    let _: () =
        redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(a_year_ahead).query(&mut admin).unwrap();
    // A server ran the job once and is gone.
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(7).query(&mut admin).unwrap();
    let out = lockwatch(&server.url(), &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["state"], "down", "{json}");
    assert_eq!(out.status.code(), Some(2), "{json}");
}

/// A job's workers logged in with only the rules `lockwatch acl --worker`
/// prints: they run the job, stop it when the last flag goes off and start
/// it again, hand it over after `kill -9`, stop on SIGTERM, and Redis
/// refuses them nothing (its ACL log stays empty). On every server the
/// test command tries (Redis 6.2, 7, Valkey).
#[tokio::test]
async fn workers_with_only_the_worker_rules_run_the_job_and_are_refused_nothing() {
    let server = RedisServer::start();
    let mut admin = server.conn();
    let out = lockwatch(&server.url(), &["acl", "--worker", "jobs"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run_lines(&mut admin, &String::from_utf8(out.stdout).unwrap());
    let _: () = redis::cmd("ACL").arg("SETUSER").arg("jobs").arg(">jobs-pw").query(&mut admin).unwrap();
    let _: () = redis::cmd("ACL").arg("LOG").arg("RESET").query(&mut admin).unwrap();
    seed_fence(&mut admin);
    flag(&mut admin, "outbound", "alice", true);
    let url = format!("redis://jobs:jobs-pw@127.0.0.1:{}", server.port);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let runs_now = |not: Option<&str>| common::journal::running_now(&j, not);
    let mut a = common::journal::journal_worker(&url, "srv-a", "2s", &j);
    let mut b = common::journal::journal_worker(&url, "srv-b", "2s", &j);
    let first = eventually("the job to run", Duration::from_secs(15), || runs_now(None)).await;
    flag(&mut admin, "outbound", "alice", false);
    eventually("the job to stop", Duration::from_secs(10), || runs_now(None).is_none().then_some(())).await;
    flag(&mut admin, "outbound", "alice", true);
    let holder = eventually("the job to run again", Duration::from_secs(10), || runs_now(None)).await;
    let (killed, other) = if holder == "srv-a" { (&mut a, &mut b) } else { (&mut b, &mut a) };
    killed.kill9();
    eventually("the other server to take it over", Duration::from_secs(15), || runs_now(Some(&holder))).await;
    other.sigterm();
    assert!(other.wait().unwrap().success(), "a worker stops cleanly on SIGTERM");
    let refused: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert!(refused.is_empty(), "Redis refused the workers: {refused:#?}");
    common::journal::assert_no_overlap(&common::journal::journal(&j));
    println!("first ran on {first}, then {holder}; after kill -9 the other; ACL log empty");
}

/// A connection as `mallory`, with the rules `lockwatch acl --worker`
/// prints for the workers of another job, `other`.
fn other_jobs_worker(server: &RedisServer, admin: &mut redis::Connection) -> redis::Connection {
    let out = lockwatch(&server.url(), &["--job", "other", "acl", "--worker", "mallory"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    run_lines(admin, &String::from_utf8(out.stdout).unwrap());
    let _: () = redis::cmd("ACL").arg("SETUSER").arg("mallory").arg(">m-pw").query(admin).unwrap();
    redis::Client::open(format!("redis://mallory:m-pw@127.0.0.1:{}", server.port)).unwrap().get_connection().unwrap()
}

/// lockwatch's read function is shared by every job on a Redis and run by
/// every supervisor: a worker's rules (for any job) may call it but not
/// load or replace it, and the admin's `lockwatch acl` puts back one that
/// was replaced.
#[tokio::test]
async fn a_workers_rules_cannot_replace_the_read_function_and_the_admins_acl_run_puts_it_back() {
    let server = RedisServer::start();
    let mut admin = server.conn();
    if redis_major(&mut admin) < 7 {
        println!("Redis 6 has no Functions: nothing to replace");
        return;
    }
    let mut mallory = other_jobs_worker(&server, &mut admin);
    flag(&mut admin, "outbound", "alice", true);
    let libraries: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(&mut admin).unwrap();
    let listed = format!("{libraries:?}");
    let name = listed
        .split('"')
        .find(|s| s.starts_with("lockwatch_probe_"))
        .or_else(|| {
            listed.split(|c: char| !c.is_alphanumeric() && c != '_').find(|s| s.starts_with("lockwatch_probe_"))
        })
        .expect("lockwatch acl loaded the read function")
        .to_owned();
    let fake = format!(
        "#!lua name={name}\nredis.register_function{{function_name='{name}', callback=function() return redis.error_reply('hijacked') end, flags={{'no-writes'}}}}"
    );

    let refused = redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(&fake).query::<String>(&mut mallory);
    assert_eq!(refused.as_ref().err().and_then(|e| e.code()), Some("NOPERM"), "{refused:?}");

    // An admin's mistake (or an old grant) replaced it: status says so, and the admin's next acl run mends it.
    let _: String = redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(&fake).query(&mut admin).unwrap();
    let said = lockwatch(&server.url(), &["status", "--json"]);
    assert!(String::from_utf8_lossy(&said.stdout).contains("hijacked"), "{}", String::from_utf8_lossy(&said.stdout));
    let out = lockwatch(&server.url(), &["acl", "--user", "alice"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = lockwatch(&server.url(), &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&said.stdout).unwrap();
    assert!(!json.to_string().contains("hijacked"), "{json}");
    assert_ne!(json["state"], "unknown", "{json}");
}

/// Another job's worker rules may turn on tracking redirected to this
/// job's worker (Redis does not tie `CLIENT TRACKING … REDIRECT` to a
/// user) and write keys of its own job at Redis's speed: this job's worker
/// counts none of it, so it neither stops hearing its supervisors' flips
/// nor takes a flag an admin then deletes for a switch-off.
#[tokio::test]
async fn another_jobs_writes_redirected_to_a_workers_tracking_are_not_its_flood() {
    let server = RedisServer::start();
    let mut admin = server.conn();
    if redis_major(&mut admin) < 7 {
        println!("Redis 6 grants no writes by key to check here");
        return;
    }
    let mut mallory = other_jobs_worker(&server, &mut admin);
    seed_fence(&mut admin);
    flag(&mut admin, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let (j, log) = (dir.path().join("journal"), dir.path().join("worker.log"));
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", &server.url()]).env("JOURNAL", &j).env("LOCKWATCH_LOG", "info");
    common::worker_args(&mut cmd, "srv-a", "3s", &[], common::journal::JOURNAL_LOOP);
    let _a = WorkerProcess::spawn(cmd.stderr(std::fs::File::create(&log).unwrap()));
    eventually("the job to run", Duration::from_secs(15), || common::journal::running_now(&j, None)).await;
    let tracking = eventually("the worker's tracking connection", Duration::from_secs(10), || {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut admin).ok()?;
        list.lines()
            .find(|l| l.contains(" flags=t"))
            .and_then(|l| l.split(' ').next()?.strip_prefix("id=").map(str::to_owned))
    })
    .await;

    let _: () = redis::cmd("CLIENT")
        .arg("TRACKING")
        .arg("on")
        .arg("REDIRECT")
        .arg(&tracking)
        .arg("BCAST")
        .arg("PREFIX")
        .arg("{other}:zz")
        .query(&mut mallory)
        .unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(2);
    let mut n = 0u64;
    while std::time::Instant::now() < until {
        let mut pipe = redis::pipe();
        for _ in 0..200 {
            pipe.cmd("SET").arg(format!("{{other}}:zz{}", n % 50)).arg(n).ignore();
            n += 1;
        }
        let _: () = pipe.query(&mut mallory).unwrap();
    }
    // An admin's DEL of the flag that keeps the job on: a loss, heard as one.
    let _: () = redis::cmd("DEL").arg("{outbound}:enabled:alice").query(&mut admin).unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let said = std::fs::read_to_string(&log).unwrap();
    println!("{n} writes of another job's keys redirected to the worker's tracking");
    assert!(!said.contains("more than 50 times a second"), "{said}");
    assert!(common::journal::running_now(&j, None).is_some(), "the job stopped:\n{said}");
}

/// A supervisor of two jobs, her rules for both from one `lockwatch acl`,
/// watches three: the looks the watcher sends together are refused for the
/// third, so it reads one job at a time from then on: hers are told as they
/// are, the other unknown for her rights; and she flips her own flag of
/// either job, and no one else's.
#[test]
fn a_supervisor_of_two_jobs_reads_and_flips_both_and_a_third_is_told_apart() {
    if !has_selectors("a_supervisor_of_two_jobs_reads_and_flips_both_and_a_third_is_told_apart") {
        return;
    }
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let server = RedisServer::start();
    provision_with(&server, "alice", "alice-pw", &["--job", "outbound,inbound"]);
    let mut admin = server.conn();
    for job in ["outbound", "inbound", "stock"] {
        flag(&mut admin, job, "alice", false);
        flag(&mut admin, job, "bob", false);
    }
    let url = format!("redis://alice:alice-pw@127.0.0.1:{}", server.port);
    let mut watch = lockwatch_command()
        .args(["--redis", &url, "--job", "outbound,inbound,stock", "watch", "--json"])
        .env("LOCKWATCH_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < 3 {
        let v: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        if v["event"] == "status" {
            let s = &v["status"];
            seen.insert(s["job"].as_str().unwrap().to_owned(), (s["state"].clone(), s["reason"].clone()));
        }
    }
    watch.kill().unwrap();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut log).unwrap();
    let _ = watch.wait();
    // Under load the first looks may not fall within one gathering, and a
    // call without the third job is not refused: at most once, never again.
    assert!(log.matches("looks go one call each").count() <= 1, "the call together was refused more than once: {log}");
    assert_eq!((&seen["outbound"].0, &seen["inbound"].0), (&"stopped".into(), &"stopped".into()), "{seen:?}");
    let (state, reason) = &seen["stock"];
    assert_eq!(state, "unknown", "{seen:?}");
    assert!(reason.as_str().unwrap().to_lowercase().contains("noperm"), "stock: {reason}");

    for job in ["outbound", "inbound"] {
        let out = lockwatch(&url, &["--job", job, "enable", "--user", "alice"]);
        assert!(out.status.success(), "{job}: {}", String::from_utf8_lossy(&out.stderr));
        let out = lockwatch(&url, &["--job", job, "enable", "--user", "bob"]);
        assert!(!out.status.success(), "{job}: bob's flag flipped by alice");
    }
    let out = lockwatch(&url, &["--job", "stock", "enable", "--user", "alice"]);
    assert!(!out.status.success(), "a job her rules do not name");
    let on = |job: &str, user: &str| -> Option<String> {
        redis::cmd("HGET").arg(format!("{{{job}}}:enabled:{user}")).arg("on").query(&mut server.conn()).unwrap()
    };
    assert_eq!((on("outbound", "alice"), on("inbound", "alice")), (Some("1".into()), Some("1".into())));
    assert_eq!((on("outbound", "bob"), on("stock", "alice")), (Some("0".into()), Some("0".into())));
}
