//! The `lockwatch` binary as scripts and monitoring systems use it: JSON
//! shapes, Nagios exit codes, watch lines, flag flips, errors on stderr.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

fn lockwatch(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .arg("--redis")
        .arg(url)
        .args(args)
        .output()
        .unwrap()
}

fn status_json(url: &str) -> (Value, i32) {
    let out = lockwatch(url, &["status", "--json"]);
    let json: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    (json, out.status.code().unwrap())
}

#[test]
fn status_json_and_exit_codes_follow_the_state() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();

    flag(&mut c, "outbound", "alice", false);
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("stopped"), 0));
    assert_eq!(json["holder"], Value::Null);
    assert_eq!(json["enabled_users"], serde_json::json!([]));

    flag(&mut c, "outbound", "alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg("time").arg(1).query(&mut c).unwrap();
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("down"), 2), "{json}");

    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(7).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 7, "running", 0);
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("running"), 0), "{json}");
    assert_eq!(json["job"], "outbound");
    assert_eq!(json["holder"]["field"], "uuid-a:1");
    assert_eq!(json["holder"]["node"], "srv-a");
    assert!(json["holder"]["heartbeat_age_ms"].as_u64().unwrap() < 5_000);
    assert_eq!(json["lock"]["key"], "{outbound}:lock");
    assert_eq!(json["lock"]["kind"], "redisson");
    assert_eq!(json["lock"]["holders"], serde_json::json!(["uuid-a:1"]));
    assert_eq!(json["lock"]["fence"], 7);
    assert!(json["lock"]["ttl_ms"].as_u64().unwrap() > 20_000);
    assert_eq!(json["enabled_users"], serde_json::json!(["alice"]));
    assert!(json["checked_at_ms"].as_u64().unwrap() > 1_600_000_000_000);
    assert!(json["reason"].as_str().unwrap().contains("srv-a"));

    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 7, "running", 60_000);
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("stale"), 1), "{json}");

    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 7, "running", 0);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 7, "running", 0);
    let _: () = redis::cmd("HSET").arg("{outbound}:node:srv-a").arg("started_ms").arg(1).query(&mut c).unwrap();
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("conflict"), 2), "{json}");

    // The human summary says the same in words.
    let out = lockwatch(&url, &["status"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("outbound: CONFLICT"), "{text}");
    assert!(text.contains("enabled  alice"), "{text}");
}

#[test]
fn an_unreachable_redis_is_unknown_with_exit_3_and_one_sentence() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let out = lockwatch(&url, &["status", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["state"], "unknown");
    assert!(json["reason"].as_str().unwrap().contains("refused"), "{json}");

    let out = lockwatch(&url, &["enable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("check that redis-server runs there"), "{stderr}");
    assert!(!stderr.contains("panicked"));
}

#[test]
fn bad_input_gets_one_sentence() {
    let out = lockwatch("http://x:secret@host", &["status"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("is not valid") && !stderr.contains("secret"), "{stderr}");

    let out = lockwatch("redis://127.0.0.1:1", &["enable", "--user", "al*ce"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used"));

    let out = lockwatch("redis://127.0.0.1:1", &["--heartbeat-grace", "soon", "status"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn enable_and_disable_write_the_own_flag_with_time_and_host() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let out = lockwatch(&server.url(), &["enable", "--user", "carol"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let flag: std::collections::HashMap<String, String> =
        redis::cmd("HGETALL").arg("{outbound}:enabled:carol").query(&mut c).unwrap();
    assert_eq!(flag["on"], "1");
    assert!(flag["time"].parse::<u64>().unwrap() > 1_600_000_000_000);
    assert!(!flag["host"].is_empty());
    let member: bool = redis::cmd("SISMEMBER").arg("{outbound}:users").arg("carol").query(&mut c).unwrap();
    assert!(member);
    let out = lockwatch(&server.url(), &["disable", "--user", "carol"]);
    assert!(out.status.success());
    let on: String = redis::cmd("HGET").arg("{outbound}:enabled:carol").arg("on").query(&mut c).unwrap();
    assert_eq!(on, "0");
}

#[test]
fn watch_json_prints_the_status_then_one_line_per_event() {
    let server = RedisServer::start();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .args(["--redis", &server.url(), "--interval", "200ms", "watch", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["event"], "status");
    assert_eq!(first["status"]["state"], "running");
    assert_eq!(first["status"]["holder"]["node"], "srv-a");

    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    redisson_lock(&mut c, "{outbound}:lock", "uuid-b:1", 30_000);
    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 0, "running", 0);
    beat(&mut c, "outbound", "srv-a", "", 0, "idle", 0);
    let line = lines.next().unwrap().unwrap();
    let e: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(e["event"], "failover", "{line}");
    assert_eq!(e["job"], "outbound");
    assert!(e["at_ms"].as_u64().unwrap() > 1_600_000_000_000);
    assert_eq!(e["from"], serde_json::json!({"field": "uuid-a:1", "node": "srv-a"}));
    assert_eq!(e["to"], serde_json::json!({"field": "uuid-b:1", "node": "srv-b"}));
    child.kill().unwrap();
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(10));
}
