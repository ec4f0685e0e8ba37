//! "I'm on it" for real: `lockwatch ack`/`unack` write the user's own
//! `{job}:ack:<user>` with Redis time and a Redis expiry, `status` shows the
//! acknowledgements still in force, and a hostile one cannot stall the read.

mod common;

use std::process::Output;

use common::*;
use serde_json::Value;

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A usage error: exit 3, nothing on stdout, one sentence and the usage line.
fn usage_error(out: &Output) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "one sentence and the usage line: {stderr}");
    assert!(lines[1].starts_with("Usage: lockwatch ack"), "{stderr}");
    lines[0].to_owned()
}

#[test]
fn ack_shows_in_status_with_redis_time_and_an_expiry_and_unack_withdraws_it() {
    let (_server, url, mut c) = server_with_flag("alice", false);
    flag(&mut c, "outbound", "bob", false);

    let before = redis_ms(&mut c);
    let out = lockwatch(&url, &["ack", "--user", "alice", "--for", "30m", "--note", "looking at wh-a"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "a registered user gets no warning");
    assert!(text(&out.stdout).contains(" alice is on job outbound until "), "{}", text(&out.stdout));

    let json = status_json(&url, &[]).0;
    let acks = json["acks"].as_array().unwrap();
    assert_eq!(acks.len(), 1, "{json}");
    assert_eq!(acks[0]["user"], "alice");
    assert_eq!(acks[0]["note"], "looking at wh-a");
    let at = acks[0]["at_ms"].as_u64().unwrap();
    let until = acks[0]["until_ms"].as_u64().unwrap();
    assert!(at >= before && at <= json["checked_at_ms"].as_u64().unwrap(), "dated by Redis time: {json}");
    assert_eq!(until - at, 30 * 60_000);
    // Redis itself drops it at its end.
    let expires: u64 = redis::cmd("PEXPIRETIME").arg("{outbound}:ack:alice").query(&mut c).unwrap();
    assert_eq!(expires, until);

    let shown = text(&lockwatch(&url, &["status"]).stdout);
    assert!(shown.contains("  on it    alice is on it since ") && shown.contains(" UTC: looking at wh-a"), "{shown}");

    // Without --for: an hour; without --note: none.
    let out = lockwatch(&url, &["ack", "--user", "bob"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = status_json(&url, &[]).0;
    let bob = &json["acks"][1];
    assert_eq!((bob["user"].as_str(), bob["note"].as_str()), (Some("bob"), Some("")), "{json}");
    assert_eq!(bob["until_ms"].as_u64().unwrap() - bob["at_ms"].as_u64().unwrap(), 3_600_000);

    let out = lockwatch(&url, &["unack", "--user", "alice"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "alice is no longer on job outbound\n");
    let exists: bool = redis::cmd("EXISTS").arg("{outbound}:ack:alice").query(&mut c).unwrap();
    assert!(!exists);
    let json = status_json(&url, &[]).0;
    assert_eq!(json["acks"].as_array().unwrap().len(), 1, "{json}");
    assert_eq!(json["acks"][0]["user"], "bob");
    let again = lockwatch(&url, &["unack", "--user", "alice"]);
    assert_eq!(text(&again.stdout), "alice was not on job outbound\n");
}

#[test]
fn an_ack_past_its_end_by_redis_time_is_not_shown_even_before_redis_drops_it() {
    let (_server, url, mut c) = server_with_flag("alice", false);
    flag(&mut c, "outbound", "bob", false);
    let now = redis_ms(&mut c);
    // No Redis expiry on these: only the Redis time in until_ms decides.
    for (user, until) in [("alice", now - 1), ("bob", now + 600_000)] {
        let _: () = redis::cmd("HSET")
            .arg(format!("{{outbound}}:ack:{user}"))
            .arg(ack::AT_MS)
            .arg(now - 60_000)
            .arg(ack::UNTIL_MS)
            .arg(until)
            .arg(ack::NOTE)
            .arg("x")
            .query(&mut c)
            .unwrap();
    }
    let json = status_json(&url, &[]).0;
    let users: Vec<&str> = json["acks"].as_array().unwrap().iter().map(|a| a["user"].as_str().unwrap()).collect();
    assert_eq!(users, ["bob"], "{json}");
}

#[test]
fn for_and_note_are_checked_before_anything_is_written() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let url = server.url();
    let sentence = usage_error(&lockwatch(&url, &["ack", "--user", "alice", "--for", "90"]));
    assert!(sentence.starts_with("lockwatch: --for 90: give a unit"), "{sentence}");
    let sentence = usage_error(&lockwatch(&url, &["ack", "--user", "alice", "--for", "13h"]));
    assert!(sentence.starts_with("lockwatch: --for 13h: out of range; give 1m to 12h"), "{sentence}");
    let sentence = usage_error(&lockwatch(&url, &["ack", "--user", "alice", "--for", "10s"]));
    assert!(sentence.contains("out of range"), "{sentence}");
    let long = "x".repeat(201);
    let sentence = usage_error(&lockwatch(&url, &["ack", "--user", "alice", "--note", &long]));
    assert!(sentence.ends_with(": 201 characters long; give at most 200, one line"), "{sentence}");
    let exists: bool = redis::cmd("EXISTS").arg("{outbound}:ack:alice").query(&mut c).unwrap();
    assert!(!exists, "nothing written");

    let out = lockwatch(&url, &["ack", "--user", "alice", "--for", "1.5h"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let fields: Vec<u64> =
        redis::cmd("HMGET").arg("{outbound}:ack:alice").arg(ack::AT_MS).arg(ack::UNTIL_MS).query(&mut c).unwrap();
    assert_eq!(fields[1] - fields[0], 90 * 60_000);
}

#[test]
fn an_unregistered_user_is_told_that_nobody_sees_their_ack() {
    let server = RedisServer::start();
    let out = lockwatch(&server.url(), &["ack", "--user", "carol"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("nobody sees carol's \"on it\"") && stderr.contains("SADD {outbound}:users carol"),
        "{stderr}"
    );
}

#[test]
fn a_hostile_ack_is_a_problem_named_not_a_stalled_read() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    flag(&mut c, "outbound", "mallory", false);
    flag(&mut c, "outbound", "trudy", false);
    let out = lockwatch(&url, &["ack", "--user", "alice", "--note", "on it"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let now = redis_ms(&mut c);
    let _: () = redis::cmd("HSET")
        .arg("{outbound}:ack:mallory")
        .arg(ack::AT_MS)
        .arg(now)
        .arg(ack::UNTIL_MS)
        .arg(now + 600_000)
        .arg(ack::NOTE)
        .arg(vec![b'x'; 10 * 1024 * 1024])
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("RPUSH").arg("{outbound}:ack:trudy").arg("x").query(&mut c).unwrap();

    let json = status_json(&url, &[]).0;
    let users: Vec<&str> = json["acks"].as_array().unwrap().iter().map(|a| a["user"].as_str().unwrap()).collect();
    assert_eq!(users, ["alice"], "{json}");
    let problems: Vec<&str> = json["problems"].as_array().unwrap().iter().map(|p| p.as_str().unwrap()).collect();
    assert!(
        problems.iter().any(|p| p.starts_with("{outbound}:ack:mallory has a note of 10485760 bytes")),
        "{problems:?}"
    );
    assert!(problems.iter().any(|p| p.starts_with("{outbound}:ack:trudy is a list")), "{problems:?}");
    // The 10 MB never left Redis.
    assert!(json.to_string().len() < 10_000, "{} bytes", json.to_string().len());
}

#[test]
fn the_history_says_who_is_on_it() {
    let (_server, url, _) = server_with_flag("alice", false);
    let out = lockwatch(&url, &["ack", "--user", "alice", "--note", "looking at wh-a"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = lockwatch(&url, &["history", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let ack = lines.iter().find(|l| l["kind"] == "ack").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!((ack["user"].as_str(), ack["note"].as_str()), (Some("alice"), Some("looking at wh-a")));
    let shown = text(&lockwatch(&url, &["history"]).stdout);
    assert!(shown.contains(" ack      alice is on it until ") && shown.ends_with(": looking at wh-a\n"), "{shown}");
}
