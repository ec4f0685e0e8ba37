//! One probe of a real Redis, judged by the engine: each layout a lock can
//! have (Redisson's, a string token, a task alternation), strange data, and
//! a lock key outside the job's slot.

mod common;

use common::*;
use lockwatch::address::Endpoint;
use lockwatch::connect::Target;
use lockwatch::probe::probe;
use lockwatch::snapshot::LockKind;
use lockwatch::status::{Config, Engine};
use lockwatch::{Keys, State, Status};

async fn look(server: &RedisServer, keys: &Keys, cfg: &Config) -> Status {
    let target = Target::new(&server.url(), None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let snap = probe(&mut conn, keys, target.endpoint()).await.unwrap();
    Engine::new(&keys.job, &keys.lock, cfg.clone()).handle_read(&snap).status
}

#[tokio::test]
async fn a_redisson_lock_with_a_fresh_heartbeat_is_running_on_that_server() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let field = "6a1e2bf4-3c1d-4f0a-9a57-5e0c1f3b2d11:57";
    redisson_lock(&mut c, "{outbound}:lock", field, 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(4).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", field, 4, "running", 300);
    beat(&mut c, "outbound", "srv-b", "", 3, "idle", 300);
    flag(&mut c, "outbound", "alice", true);
    flag(&mut c, "outbound", "bob", false);

    let s = look(&server, &Keys::new("outbound"), &Config::default()).await;
    assert_eq!(s.state, State::Running, "{}", s.reason);
    let holder = s.holder.unwrap();
    assert_eq!(holder.field, field);
    assert_eq!(holder.node.as_deref(), Some("srv-a"));
    assert!(holder.heartbeat_age_ms.unwrap() < 2_000);
    assert_eq!(s.lock.kind, Some(LockKind::Redisson));
    assert_eq!(s.lock.fence, Some(4));
    assert!(s.lock.ttl_ms.unwrap() > 25_000);
    assert_eq!(s.enabled_users, vec!["alice"]);
    assert_eq!(s.nodes.len(), 2);
}

#[tokio::test]
async fn each_state_from_the_keys_as_written() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let keys = Keys::new("outbound");
    let cfg = Config::default();
    let field = "uuid-a:1";

    // Nobody enabled, no lock: stopped on purpose.
    flag(&mut c, "outbound", "alice", false);
    assert_eq!(look(&server, &keys, &cfg).await.state, State::Stopped);

    // Enabled long ago, no lock: down.
    flag(&mut c, "outbound", "alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(1).query(&mut c).unwrap();
    let down = look(&server, &keys, &cfg).await;
    assert_eq!(down.state, State::Down, "{}", down.reason);

    // Lock held but the holder's heartbeat is 60 s old: stale, dying.
    redisson_lock(&mut c, "{outbound}:lock", field, 30_000);
    beat(&mut c, "outbound", "srv-a", field, 1, "running", 60_000);
    let stale = look(&server, &keys, &cfg).await;
    assert_eq!(stale.state, State::Stale);
    assert!(stale.reason.contains("expires in"), "{}", stale.reason);

    // The job reports itself stalled while beating: stale, hung.
    beat(&mut c, "outbound", "srv-a", field, 1, "stalled", 100);
    let hung = look(&server, &keys, &cfg).await;
    assert_eq!(hung.state, State::Stale);
    assert!(hung.reason.starts_with("hung"), "{}", hung.reason);

    // Fresh beat: running.
    beat(&mut c, "outbound", "srv-a", field, 1, "running", 100);
    assert_eq!(look(&server, &keys, &cfg).await.state, State::Running);

    // A second server beats and says it runs too: conflict.
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 1, "running", 0);
    let _: () = redis::cmd("HSET").arg("{outbound}:node:srv-a").arg(beat::STARTED_MS).arg(1).query(&mut c).unwrap();
    assert_eq!(look(&server, &keys, &cfg).await.state, State::Conflict);

    // Heartbeat names fence 1 while the counter says 2: conflict.
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 1, "idle", 0);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(2).query(&mut c).unwrap();
    let fenced = look(&server, &keys, &cfg).await;
    assert_eq!(fenced.state, State::Conflict);
    assert!(fenced.reason.contains("fence"), "{}", fenced.reason);
}

#[tokio::test]
async fn lock_only_mode_names_the_redisson_field() {
    let server = RedisServer::start();
    let mut c = server.conn();
    redisson_lock(&mut c, "{outbound}:lock", "f00d:1", 30_000);
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = look(&server, &Keys::new("outbound"), &cfg).await;
    assert_eq!(s.state, State::Running);
    assert_eq!(s.holder.unwrap().field, "f00d:1");
}

#[tokio::test]
async fn a_string_lock_with_a_binary_token_is_shown_escaped() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let _: () = redis::cmd("SET")
        .arg("{outbound}:lock")
        .arg(b"\xff\xfeowner\x01".as_slice())
        .arg("PX")
        .arg(10_000)
        .query(&mut c)
        .unwrap();
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = look(&server, &Keys::new("outbound"), &cfg).await;
    assert_eq!(s.lock.kind, Some(LockKind::String));
    assert_eq!(s.holder.unwrap().field, "\\xff\\xfeowner\\u{1}");
    assert_eq!(s.state, State::Running);
}

#[tokio::test]
async fn a_task_alternation_hash_shows_the_next_run() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let _: () = redis::cmd("HSET")
        .arg("{outbound}:lock")
        .arg("invoice-export")
        .arg(1_900_000_000_000u64)
        .query(&mut c)
        .unwrap();
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = look(&server, &Keys::new("outbound"), &cfg).await;
    assert_eq!(s.lock.kind, Some(LockKind::Alternation));
    assert_eq!(s.lock.next_run_ms, Some(1_900_000_000_000));
    assert_eq!(s.holder.unwrap().field, "invoice-export");
}

#[tokio::test]
async fn keys_of_the_wrong_type_make_the_state_unknown_never_stopped() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let keys = Keys::new("outbound");
    let _: () = redis::cmd("RPUSH").arg("{outbound}:lock").arg("x").query(&mut c).unwrap();
    let s = look(&server, &keys, &Config::default()).await;
    assert_eq!(s.state, State::Unknown);
    assert!(s.reason.contains("{outbound}:lock is a list"), "{}", s.reason);

    // Lock fine, but the only flag is unreadable: not "stopped".
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    let _: () = redis::cmd("SADD").arg("{outbound}:users").arg("alice").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("{outbound}:enabled:alice").arg("yes").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("{outbound}:nodes").arg("oops").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg("NaN").query(&mut c).unwrap();
    let s = look(&server, &keys, &Config::default()).await;
    assert_eq!(s.state, State::Unknown, "{}", s.reason);
    assert_eq!(s.problems.len(), 3, "{:?}", s.problems);

    // Her flag written by hand with neither 1 nor 0: on or off cannot be told.
    for key in ["{outbound}:enabled:alice", "{outbound}:nodes", "{outbound}:fence"] {
        let _: () = redis::cmd("DEL").arg(key).query(&mut c).unwrap();
    }
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::ON).arg("yes").query(&mut c).unwrap();
    let s = look(&server, &keys, &Config::default()).await;
    assert_eq!(s.state, State::Unknown, "{}", s.reason);
    assert!(s.reason.contains("holds on=\"yes\", neither 1 nor 0"), "{}", s.reason);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::ON).arg("TRUE").query(&mut c).unwrap();
    assert_eq!(look(&server, &keys, &Config::default()).await.state, State::Down, "true is on");
}

#[tokio::test]
async fn huge_values_are_capped() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let big = vec![b'x'; 5 * 1024 * 1024];
    let _: () = redis::cmd("SET").arg("{outbound}:lock").arg(big).query(&mut c).unwrap();
    let mut pipe = redis::pipe();
    for i in 0..12_000 {
        pipe.sadd("{outbound}:users", format!("user{i}")).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = look(&server, &Keys::new("outbound"), &cfg).await;
    assert!(s.holder.unwrap().field.len() < 2_000);
    assert!(s.problems.iter().any(|p| p.contains("12000 members")), "{:?}", s.problems);
}

#[tokio::test]
async fn a_lock_in_another_slot_is_read_too() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let keys = Keys::new("outbound").with_lock_key("outboundLock");
    assert!(!keys.lock_shares_slot());
    redisson_lock(&mut c, "outboundLock", "abc:9", 20_000);
    let cfg = Config { heartbeats: false, ..Config::default() };
    let s = look(&server, &keys, &cfg).await;
    assert_eq!(s.state, State::Running);
    assert_eq!(s.holder.unwrap().field, "abc:9");
    assert_eq!(s.lock.key, "outboundLock");
}

/// One probe measured: bytes Redis sent (its reply, and the reply to one
/// `INFO`), microseconds Redis spent in the script, and the whole call.
async fn measured_probe(
    admin: &mut redis::Connection,
    conn: &mut lockwatch::connect::Conn,
    keys: &Keys,
) -> (u64, u64, std::time::Duration, lockwatch::snapshot::Snapshot) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(admin).unwrap();
    let started = std::time::Instant::now();
    let snap = probe(conn, keys, &Endpoint::new("test", false)).await.unwrap();
    let took = started.elapsed();
    let info: String = redis::cmd("INFO").arg("all").query(admin).unwrap();
    let line = |prefix: &str| info.lines().find_map(|l| l.strip_prefix(prefix)).unwrap_or_default().to_owned();
    let bytes = line("total_net_output_bytes:").trim().parse().unwrap();
    let script = line("cmdstat_evalsha_ro:");
    let usec = script.split(',').find_map(|kv| kv.strip_prefix("usec=")).and_then(|u| u.parse().ok()).unwrap_or(0);
    (bytes, usec, took, snap)
}

#[tokio::test]
async fn a_huge_or_sprawling_flag_makes_only_that_flag_unreadable_and_the_probe_stays_small() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let keys = Keys::new("outbound");
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    flag(&mut c, "outbound", "alice", true);
    // What a supervisor may write into their own flag: a 10 MB value, 10,000 fields.
    flag(&mut c, "outbound", "mallory", false);
    let _: () = redis::cmd("HSET")
        .arg("{outbound}:enabled:mallory")
        .arg(flag::HOST)
        .arg(vec![b'x'; 10 * 1024 * 1024])
        .query(&mut c)
        .unwrap();
    flag(&mut c, "outbound", "eve", false);
    let mut fields = redis::cmd("HSET");
    fields.arg("{outbound}:enabled:eve");
    for i in 0..10_000 {
        fields.arg(format!("f{i}")).arg(i);
    }
    let _: () = fields.query(&mut c).unwrap();

    let target = Target::new(&server.url(), None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let _ = probe(&mut conn, &keys, target.endpoint()).await.unwrap();
    let mut runs = Vec::new();
    for _ in 0..5 {
        runs.push(measured_probe(&mut c, &mut conn, &keys).await);
    }
    runs.sort_by_key(|r| r.0);
    let (bytes, redis_us, took, snap) = runs.swap_remove(2);
    println!(
        "probe with a 10 MB flag and a 10,000-field flag: ~{bytes} bytes sent, {redis_us} µs in Redis, {took:?} in all (median of 5)"
    );
    assert!(bytes < 64 * 1024, "the probe reply is {bytes} bytes");

    let on = |user: &str| snap.flags.iter().find(|f| f.user == user).map(|f| f.on);
    assert_eq!(on("alice"), Some(Some(true)));
    assert_eq!(on("mallory"), Some(None));
    assert_eq!(on("eve"), Some(None));
    for key in ["{outbound}:enabled:mallory", "{outbound}:enabled:eve"] {
        assert!(snap.problems.iter().any(|p| p.contains(key)), "{key}: {:?}", snap.problems);
    }
    let s = Engine::new(&keys.job, &keys.lock, Config::default()).handle_read(&snap).status;
    assert_eq!(s.state, State::Running, "{}", s.reason);
    assert_eq!(s.enabled_users, vec!["alice"]);

    // With alice off, either odd flag could be the one that keeps the job
    // enabled: unknown, never stopped.
    flag(&mut c, "outbound", "alice", false);
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    let s = look(&server, &keys, &Config::default()).await;
    assert_eq!(s.state, State::Unknown, "{}", s.reason);
    assert!(s.reason.contains("{outbound}:enabled:"), "{}", s.reason);
}

#[tokio::test]
async fn a_users_registry_of_the_wrong_type_is_unknown_naming_the_key() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let _: () = redis::cmd("SET").arg("{outbound}:users").arg("alice").query(&mut c).unwrap();
    let s = look(&server, &Keys::new("outbound"), &Config::default()).await;
    assert_eq!(s.state, State::Unknown, "{}", s.reason);
    assert!(s.reason.contains("{outbound}:users"), "{}", s.reason);
}

#[tokio::test]
async fn every_registered_user_counts_however_many_there_are() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let keys = Keys::new("outbound");
    // The one enabled user is one a single SSCAN page from cursor 0 misses.
    let enabled = crowd(&mut c);

    let target = Target::new(&server.url(), None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let _ = probe(&mut conn, &keys, target.endpoint()).await.unwrap();
    let (bytes, redis_us, took, _) = measured_probe(&mut c, &mut conn, &keys).await;
    println!("probe of 3,000 users and 2,000 nodes: ~{bytes} bytes sent, {redis_us} µs in Redis, {took:?} in all");

    let s = look(&server, &keys, &Config::default()).await;
    assert_eq!(s.state, State::Down, "{}", s.reason);
    assert_eq!(s.enabled_users, vec![enabled]);
    assert_eq!(s.flags.len(), 3000);
    assert_eq!(s.nodes.len(), 2000);
    assert!(s.problems.is_empty(), "{:?}", s.problems);
}

#[tokio::test]
async fn a_registry_too_large_to_read_is_unknown_never_stopped() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let mut pipe = redis::pipe();
    for i in 0..12_000 {
        pipe.sadd("{outbound}:users", format!("user{i}")).ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    let s = look(&server, &Keys::new("outbound"), &Config::default()).await;
    assert_eq!(s.state, State::Unknown, "{}", s.reason);
    assert!(s.reason.contains("{outbound}:users") && s.reason.contains("12000"), "{}", s.reason);
}

/// Adds a stream entry at an explicit Redis time, as a worker did back then.
fn entry_at(c: &mut redis::Connection, ms: u64, kind: &str, node: &str) {
    let _: () = redis::cmd("XADD")
        .arg("{outbound}:events")
        .arg(format!("{ms}-0"))
        .arg(entry::TYPE)
        .arg(kind)
        .arg(entry::NODE)
        .arg(node)
        .query(c)
        .unwrap();
}

#[tokio::test]
async fn a_first_look_dates_a_down_job_from_what_redis_remembers_the_same_on_every_run() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let keys = Keys::new("outbound");
    let now = redis_ms(&mut c);
    // Enabled an hour ago; srv-a took it, then lost it 40 s ago; nobody since.
    flag(&mut c, "outbound", "alice", true);
    let _: () =
        redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(now - 3_600_000).query(&mut c).unwrap();
    entry_at(&mut c, now - 3_000_000, kind::ACQUIRED, "srv-a");
    entry_at(&mut c, now - 40_000, "lost", "srv-a");
    beat(&mut c, "outbound", "srv-a", "", 1, "idle", 0);

    let first = look(&server, &keys, &Config::default()).await;
    assert_eq!(first.state, State::Down, "{}", first.reason);
    assert_eq!(first.since_ms, Some(now - 40_000), "down since the holder went, not since the check");
    assert!(first.reason.ends_with("(for 40 s)"), "{}", first.reason);
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let again = look(&server, &keys, &Config::default()).await;
    assert_eq!(again.since_ms, first.since_ms, "the same on every run");

    // A server that died while holding it, 25 s ago: dated from its last beat.
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 2, "running", 25_000);
    let died = look(&server, &keys, &Config::default()).await;
    assert!(died.reason.ends_with("(for 25 s)"), "{}", died.reason);

    // Nobody held it since it was enabled: dated from the enabling.
    let fresh = Keys::new("inbound");
    let now = redis_ms(&mut c);
    flag(&mut c, "inbound", "bob", true);
    let _: () =
        redis::cmd("HSET").arg("{inbound}:enabled:bob").arg(flag::TIME).arg(now - 90_000).query(&mut c).unwrap();
    let never = look(&server, &fresh, &Config::default()).await;
    assert_eq!(never.since_ms, Some(now - 90_000), "{}", never.reason);
    assert!(never.reason.ends_with("(for 1 min 30 s)"), "{}", never.reason);
}

#[tokio::test]
async fn a_job_just_enabled_is_pending_and_the_cli_exits_1() {
    let (server, url, _) = server_with_flag("alice", true);
    let s = look(&server, &Keys::new("outbound"), &Config::default()).await;
    assert_eq!(s.state.as_str(), "pending", "{}", s.reason);
    assert!(s.reason.starts_with("enabled by alice; waiting for a server to start it until "), "{}", s.reason);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .args(["--redis", &url, "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("outbound: PENDING — enabled by alice; waiting"), "{text}");
    assert_eq!(out.status.code(), Some(1), "{text}");
}

/// The `calls` of one command in `INFO commandstats` (0 when never called).
fn calls(c: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    let line = info.lines().find(|l| l.starts_with(&format!("cmdstat_{command}:"))).unwrap_or("");
    line.split([':', ',']).find_map(|part| part.strip_prefix("calls=")).map_or(0, |n| n.parse().unwrap())
}

#[tokio::test]
async fn several_jobs_looked_at_in_one_call_read_as_each_alone() {
    use lockwatch::probe::{Known, Way, look, look_many};
    let server = RedisServer::start();
    let mut c = server.conn();
    // Running, stopped, and one whose flag is of the wrong type.
    let field = "6a1e2bf4-3c1d-4f0a-9a57-5e0c1f3b2d11:57";
    redisson_lock(&mut c, "{inbound}:lock", field, 30_000);
    beat(&mut c, "inbound", "srv-a", field, 4, "running", 300);
    flag(&mut c, "inbound", "alice", true);
    flag(&mut c, "stock", "bob", false);
    flag(&mut c, "labels", "carol", true);
    let _: () = redis::cmd("DEL").arg("{labels}:enabled:carol").query(&mut c).unwrap();
    let _: () = redis::cmd("SET").arg("{labels}:enabled:carol").arg("junk").query(&mut c).unwrap();
    let keys = ["inbound", "stock", "labels"].map(Keys::new);

    let target = Target::new(&server.url(), None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let (mut alone, mut together) = ([(); 3].map(|_| Known::default()), [(); 3].map(|_| Known::default()));
    let mut way = Way::default();
    for round in ["full reads", "glances"] {
        let mut each = Vec::new();
        for (k, known) in keys.iter().zip(alone.iter_mut()) {
            each.push(look(&mut conn, k, target.endpoint(), known).await.unwrap());
        }
        // Redis 6.2 has no functions: the probe is a script there.
        let looks = |c: &mut redis::Connection| calls(c, "fcall_ro") + calls(c, "evalsha");
        let before = looks(&mut c);
        let mut jobs: Vec<_> = keys.iter().zip(together.iter_mut()).collect();
        let all = look_many(&mut conn, &mut jobs, target.endpoint(), &mut way).await.unwrap();
        assert_eq!(looks(&mut c) - before, 1, "{round}: one call for three jobs");
        assert_eq!(all.len(), 3);
        for ((one, many), k) in each.iter().zip(all).zip(&keys) {
            let mut many = many.unwrap();
            // Read a moment apart: Redis's clock and the lease moved on.
            assert!(many.time_ms >= one.time_ms && many.time_ms < one.time_ms + 1_000, "{round} {}", k.job);
            many.time_ms = one.time_ms;
            many.lock.ttl_ms = one.lock.ttl_ms;
            assert_eq!(&many, one, "{round}: {}", k.job);
        }
    }
    let judged = Engine::new("labels", "{labels}:lock", Config::default())
        .handle_read(&look(&mut conn, &keys[2], target.endpoint(), &mut Known::default()).await.unwrap());
    assert!(judged.status.reason.contains("{labels}:enabled:carol"), "{}", judged.status.reason);
}
