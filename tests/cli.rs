//! The `lockwatch` binary as scripts and monitoring systems use it: JSON
//! shapes, Nagios exit codes, watch lines, flag flips, errors on stderr.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// The binary in a clean environment: no LOCKWATCH_* variables, only PATH.
fn lockwatch_clean(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_BACKTRACE", "1")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Checks a usage error as a monitoring system sees it (exit 3, UNKNOWN;
/// nothing on stdout) and as a person reads it (one sentence, then the usage
/// line, no backtrace); returns the sentence.
fn usage_error(out: &Output) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "one sentence and the usage line: {stderr}");
    assert!(lines[0].starts_with("lockwatch: "), "{stderr}");
    assert!(lines[1].starts_with("Usage: lockwatch"), "{stderr}");
    lines[0].to_owned()
}

fn usage_line(out: &Output) -> String {
    text(&out.stderr).lines().nth(1).unwrap_or_default().to_owned()
}

#[test]
fn status_json_and_exit_codes_follow_the_state() {
    let (_server, url, mut c) = server_with_flag("alice", false);
    let (json, code) = status_json(&url, &[]);
    assert_eq!((json["state"].as_str(), code), (Some("stopped"), 0));
    assert_eq!(json["holder"], Value::Null);
    assert_eq!(json["enabled_users"], serde_json::json!([]));

    flag(&mut c, "outbound", "alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(1).query(&mut c).unwrap();
    let (json, code) = status_json(&url, &[]);
    assert_eq!((json["state"].as_str(), code), (Some("down"), 2), "{json}");

    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(7).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 7, "running", 0);
    let (json, code) = status_json(&url, &[]);
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
    let (json, code) = status_json(&url, &[]);
    assert_eq!((json["state"].as_str(), code), (Some("stale"), 1), "{json}");

    beat(&mut c, "outbound", "srv-b", "uuid-b:1", 7, "running", 0);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 7, "running", 0);
    let _: () = redis::cmd("HSET").arg("{outbound}:node:srv-a").arg(beat::STARTED_MS).arg(1).query(&mut c).unwrap();
    let (json, code) = status_json(&url, &[]);
    assert_eq!((json["state"].as_str(), code), (Some("conflict"), 2), "{json}");

    // The human summary says the same in words.
    let out = lockwatch(&url, &["status"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("outbound: CONFLICT"), "{text}");
    assert!(text.contains("enabled  alice"), "{text}");
}

/// `--job a,b,c` reads every job on one connection: one block each, an
/// array of the one-job objects in JSON, and the worst exit code of all
/// (critical, then unknown, then warning); other commands take one job.
#[test]
fn status_reads_several_jobs_and_exits_with_the_worst_code() {
    let (_server, url, mut c) = server_with_flag("alice", false);
    // outbound: stopped; inbound: running; stock: never seen (unknown).
    flag(&mut c, "inbound", "bob", true);
    redisson_lock(&mut c, "{inbound}:lock", "uuid-a:1", 30_000);
    let _: () = redis::cmd("SET").arg("{inbound}:fence").arg(7).query(&mut c).unwrap();
    beat(&mut c, "inbound", "srv-a", "uuid-a:1", 7, "running", 0);
    let out = lockwatch(&url, &["--job", "outbound,inbound,stock", "status", "--json"]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let states: Vec<(&str, &str)> =
        all.as_array().unwrap().iter().map(|s| (s["job"].as_str().unwrap(), s["state"].as_str().unwrap())).collect();
    assert_eq!(states, [("outbound", "stopped"), ("inbound", "running"), ("stock", "unknown")]);
    assert_eq!(out.status.code(), Some(3), "unknown is the worst of them");

    // A job down (critical) is worse than one unknown.
    flag(&mut c, "outbound", "alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(1).query(&mut c).unwrap();
    let out = lockwatch(&url, &["--job", "outbound, inbound,stock", "status"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    for head in ["outbound: DOWN", "inbound: RUNNING", "stock: UNKNOWN"] {
        assert!(text.lines().any(|l| l.starts_with(head)), "{head}: {text}");
    }

    // One job: one object, as before; other commands take one job.
    let (json, _) = status_json(&url, &[]);
    assert_eq!(json["job"], "outbound");
    let out = lockwatch(&url, &["--job", "outbound,inbound", "enable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "lockwatch: --job names 2 jobs; only status, watch, history, report, serve and a supervisor's acl take several: give this command one job"
    );
}

/// `--job '*'` reads every job the workers registered on this Redis: none
/// yet is one sentence; two jobs' workers started, both are read, and a
/// command that takes one job refuses it.
#[tokio::test]
async fn every_job_this_redis_knows_is_read_with_a_star() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let out = lockwatch(&url, &["--job", "*", "status"]);
    assert_eq!(out.status.code(), Some(3));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.starts_with("lockwatch: no job is registered on 127.0.0.1:"), "{said}");
    assert!(said.trim_end().ends_with("name the jobs with --job a,b,c"), "{said}");
    flag(&mut c, "inbound", "bob", true);
    let mut workers = Vec::new();
    for job in ["outbound", "inbound"] {
        let mut cmd = lockwatch_command();
        cmd.args(["--redis", &url, "--job", job]);
        workers.push(WorkerProcess::spawn(worker_args(&mut cmd, "srv-a", "3s", &[], "sleep 1000")));
    }
    let all = eventually("both jobs registered and running", Duration::from_secs(15), || {
        let out = lockwatch(&url, &["--job", "*", "status", "--json"]);
        let all: Value = serde_json::from_slice(&out.stdout).ok()?;
        let states: Vec<(String, String)> = all
            .as_array()?
            .iter()
            .map(|s| (s["job"].as_str().unwrap_or("").to_owned(), s["state"].as_str().unwrap_or("").to_owned()))
            .collect();
        (states.len() == 2 && states.iter().all(|s| s.1 == "running")).then_some(states)
    })
    .await;
    let jobs: Vec<&str> = all.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(jobs, ["inbound", "outbound"]);
    let out = lockwatch(&url, &["--job", "*", "enable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--job '*' names every job this Redis knows"));
    // Any worker's user may write the registry: a name that would be more
    // than a word in a command line or an ACL rule is left out, and said.
    for odd in ["x +@all ~*", "y\nACL SETUSER evil on >pw +@all ~*", "z\"q"] {
        let _: () = redis::cmd("ZADD").arg("lockwatch:jobs").arg(1).arg(odd).query(&mut c).unwrap();
    }
    let out = lockwatch(&url, &["--job", "*", "status", "--json"]);
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs: Vec<&str> = all.as_array().unwrap().iter().map(|s| s["job"].as_str().unwrap()).collect();
    assert_eq!(jobs, ["inbound", "outbound"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("holds 3 name(s) that are no job's name, left out"), "{said}");
    // Nor are rights granted from it.
    let out = lockwatch(&url, &["--job", "*", "acl", "--user", "alice", "--redis-version", "7.2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("acl --job '*': name the jobs whose rules to print"));
    drop(workers);
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
fn a_job_that_cannot_start_is_one_sentence_naming_the_command_line() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(0).query(&mut c).unwrap();
    let mut worker = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .args(["--redis", &url, "worker", "--node", "srv-a", "--lease", "3s", "--"])
        .args(["/nonexistent/sync-job", "--since", "last week"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(status) = wait::within(Duration::from_secs(30), || worker.try_wait().unwrap()) else {
        worker.kill().unwrap();
        panic!("the worker kept running with a job that cannot start");
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut worker.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let said = stderr.lines().find(|l| l.starts_with("lockwatch: ")).unwrap_or_default();
    assert!(
        said.starts_with("lockwatch: cannot start the job /nonexistent/sync-job --since \"last week\": "),
        "{stderr}"
    );
    assert!(said.ends_with("; check the command after --"), "{stderr}");
}

#[test]
fn bad_input_gets_one_sentence() {
    let out = lockwatch("http://x:secret@host", &["status"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("is not valid") && !stderr.contains("secret"), "{stderr}");

    // A name that cannot be used is a mistake in the command line: exit 3.
    let out = lockwatch("redis://127.0.0.1:1", &["enable", "--user", "al*ce"]);
    assert!(usage_error(&out).starts_with("lockwatch: --user al*ce: "));
    let out = lockwatch("redis://127.0.0.1:1", &["--job", "out bound", "status"]);
    assert!(usage_error(&out).starts_with("lockwatch: --job \"out bound\": "));

    let out = lockwatch("redis://127.0.0.1:1", &["--heartbeat-grace", "soon", "status"]);
    let err = usage_error(&out);
    assert!(err.starts_with("lockwatch: --heartbeat-grace soon: "), "{err}");
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
    let on: String = redis::cmd("HGET").arg("{outbound}:enabled:carol").arg(flag::ON).query(&mut c).unwrap();
    assert_eq!(on, "0");
}

#[test]
fn watch_json_prints_the_status_then_one_line_per_event() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .args(["--redis", &url, "--interval", "200ms", "watch", "--json"])
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

/// Polls `status --json` until `want` holds of its exit code and JSON, or 15 s pass.
fn status_until(url: &str, what: &str, want: impl Fn(Option<i32>, &Value) -> bool) -> (Option<i32>, Value) {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let out = lockwatch(url, &["--heartbeat-grace", "2s", "status", "--json"]);
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if want(out.status.code(), &json) {
            return (out.status.code(), json);
        }
        assert!(std::time::Instant::now() < deadline, "{what}: {} / {json}", out.status.code().unwrap_or(-1));
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_standby_killed_is_a_warning_monitoring_sees_and_told_once_and_its_return_too() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let job = "while :; do sleep 0.2; done";
    let _a = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "3s", &[], job));
    status_until(&url, "srv-a runs", |_, s| s["holder"]["node"] == "srv-a");
    let mut b = WorkerProcess::spawn(&mut worker_command(&url, "srv-b", "3s", &[], job));
    let fresh_b =
        |s: &Value| s["nodes"].as_array().is_some_and(|n| n.iter().any(|n| n["node"] == "srv-b" && n["fresh"] == true));
    let (code, _) = status_until(&url, "srv-b standing by", |_, s| fresh_b(s) && s["no_standby"].is_null());
    assert_eq!(code, Some(0));
    let mut watch = lockwatch_command()
        .args(["--redis", &url, "--heartbeat-grace", "2s", "--interval", "300ms", "watch", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.contains("\"event\":\"status\""), "{first}");

    // kill -9 of the server that was not running the job: silent once its heartbeat passes the grace.
    b.kill9();
    let (code, s) = status_until(&url, "no standby", |_, s| !s["no_standby"].is_null());
    assert_eq!(code, Some(1), "a monitoring check warns: {s}");
    assert_eq!(s["state"], "running", "the job itself runs on");
    let said = s["no_standby"].as_str().unwrap();
    assert!(said.contains("srv-b") && said.contains("if srv-a stops"), "{said}");
    let text = String::from_utf8(lockwatch(&url, &["--heartbeat-grace", "2s", "status"]).stdout).unwrap();
    assert!(text.contains("  warning  no standby: srv-b"), "{text}");
    let lost: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!((lost["event"].as_str(), lost["to"]["node"].as_str()), (Some("standby_lost"), Some("srv-b")), "{lost}");

    let _b = WorkerProcess::spawn(&mut worker_command(&url, "srv-b", "3s", &[], job));
    let (code, s) = status_until(&url, "srv-b back", |_, s| fresh_b(s) && s["no_standby"].is_null());
    assert_eq!((code, s["holder"]["node"].as_str()), (Some(0), Some("srv-a")));
    let back: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!((back["event"].as_str(), back["to"]["node"].as_str()), (Some("standby_back"), Some("srv-b")), "{back}");
    watch.kill().unwrap();
    let _ = watch.wait();
}

#[test]
fn usage_errors_exit_3_with_one_sentence_and_the_usage_line() {
    let out = lockwatch_clean(&["status", "--jason"]);
    let err = usage_error(&out);
    assert!(err.contains("'--jason'") && err.contains("did you mean '--json'"), "{err}");
    assert_eq!(usage_line(&out), "Usage: lockwatch status [OPTIONS]");

    let out = lockwatch_clean(&["statsu"]);
    let err = usage_error(&out);
    assert!(err.contains("'statsu'") && err.contains("did you mean 'status'"), "{err}");

    let out = lockwatch_clean(&["--redis-url", "redis://h", "status"]);
    let err = usage_error(&out);
    assert!(err.contains("'--redis-url'") && err.contains("did you mean '--redis'"), "{err}");

    let out = lockwatch_clean(&["acl"]);
    let err = usage_error(&out);
    assert!(err.contains("--user"), "{err}");

    let out = lockwatch_clean(&["worker", "--node", "srv-a"]);
    let err = usage_error(&out);
    assert!(err.contains("CMD"), "{err}");
    assert!(usage_line(&out).starts_with("Usage: lockwatch worker "), "{}", usage_line(&out));

    let out = lockwatch_clean(&["status", "extra"]);
    assert!(usage_error(&out).contains("'extra'"));

    let out = lockwatch_clean(&[]);
    let err = usage_error(&out);
    assert!(err.contains("status") && err.contains("worker"), "names the commands: {err}");
}

#[test]
fn help_and_version_print_to_stdout_and_exit_0() {
    for args in [&["--help"][..], &["-h"], &["status", "--help"], &["help", "worker"], &["--version"], &["-V"]] {
        let out = lockwatch_clean(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?}");
        assert!(text(&out.stdout).contains("lockwatch"), "{args:?}");
    }
}

#[test]
fn a_duration_without_a_unit_is_refused_naming_the_flag() {
    let out = lockwatch_clean(&["status", "--heartbeat-grace", "10"]);
    assert_eq!(usage_error(&out), "lockwatch: --heartbeat-grace 10: give a unit: 500ms, 10s, 5m or 1h");

    let out = lockwatch_clean(&["--failover-window", "5", "watch"]);
    assert!(usage_error(&out).starts_with("lockwatch: --failover-window 5: give a unit"));

    let out = lockwatch_clean(&["worker", "--node", "srv-a", "--lease", "30", "--", "true"]);
    assert!(usage_error(&out).starts_with("lockwatch: --lease 30: give a unit"));

    let out = lockwatch_clean(&["worker", "--node", "srv-a", "--lease", "5y", "--", "true"]);
    assert!(usage_error(&out).starts_with("lockwatch: --lease 5y: "));
}

#[test]
fn engine_options_work_before_and_after_the_command() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 0, "running", 7_000);

    // A 7 s old heartbeat is fresh by the default grace (10 s), stale by 5 s.
    let state = |args: &[&str]| {
        let out = lockwatch(&url, args);
        let json: Value = serde_json::from_slice(&out.stdout).unwrap();
        (json["state"].as_str().unwrap().to_owned(), out.status.code().unwrap())
    };
    assert_eq!(state(&["status", "--json"]), ("running".to_owned(), 0));
    assert_eq!(state(&["--heartbeat-grace", "5s", "status", "--json"]), ("stale".to_owned(), 1));
    assert_eq!(state(&["status", "--heartbeat-grace", "5s", "--json"]), ("stale".to_owned(), 1));
    assert_eq!(
        state(&["--heartbeat-grace", "5s", "status", "--heartbeat-grace", "1m", "--json"]),
        ("running".to_owned(), 0)
    );
    assert_eq!(state(&["--no-heartbeat", "--heartbeat-grace", "5s", "status", "--json"]), ("running".to_owned(), 0));
}

#[test]
fn help_names_environment_variables_without_their_values() {
    for args in
        [&["--help"][..], &["status", "--help"], &["watch", "--help"], &["worker", "--help"], &["acl", "--help"]]
    {
        let help = text(&lockwatch_clean(args).stdout);
        assert!(!help.contains("=]"), "{args:?}: {help}");
        assert!(help.contains("[env: LOCKWATCH_JOB]"), "{args:?}: {help}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env("LOCKWATCH_REDIS_URL", "redis://alice:s3cret@db:6379")
        .env("LOCKWATCH_TLS_CA", "/etc/ca-private.pem")
        .env("LOCKWATCH_JOB", "nightly")
        .args(["status", "--help"])
        .output()
        .unwrap();
    let help = text(&out.stdout);
    assert!(help.contains("[env: LOCKWATCH_REDIS_URL]") && help.contains("[env: LOCKWATCH_TLS_CA]"), "{help}");
    assert!(!help.contains("s3cret") && !help.contains("ca-private") && !help.contains("nightly"), "{help}");
}

#[test]
fn each_command_help_lists_only_the_options_it_uses() {
    let help = |args: &[&str]| text(&lockwatch_clean(args).stdout);
    let has = |help: &str, option: &str| help.contains(&format!("{option} "));
    let engine = ["--heartbeat-grace", "--failover-window", "--start-grace", "--no-heartbeat"];

    let worker = help(&["worker", "--help"]);
    for option in engine.iter().chain(&["--interval"]) {
        assert!(!has(&worker, option), "worker --help shows {option}: {worker}");
    }
    for option in ["--node", "--lease", "--redis", "--job"] {
        assert!(has(&worker, option), "worker --help lacks {option}: {worker}");
    }

    let status = help(&["status", "--help"]);
    for option in engine.iter().chain(&["--redis", "--json"]) {
        assert!(has(&status, option), "status --help lacks {option}: {status}");
    }
    assert!(!has(&status, "--interval"), "{status}");

    let watch = help(&["watch", "--help"]);
    for option in engine.iter().chain(&["--interval"]) {
        assert!(has(&watch, option), "watch --help lacks {option}: {watch}");
    }

    for command in ["enable", "disable"] {
        let h = help(&[command, "--help"]);
        assert!(has(&h, "--user") && has(&h, "--redis"), "{h}");
        assert!(!engine.iter().chain(&["--interval"]).any(|o| has(&h, o)), "{h}");
    }

    let acl = help(&["acl", "--help"]);
    // It asks the Redis its version, so it names the connection's options.
    assert!(has(&acl, "--user") && has(&acl, "--job") && has(&acl, "--redis-version") && has(&acl, "--redis"), "{acl}");
    assert!(!has(&acl, "--interval") && !engine.iter().any(|o| has(&acl, o)), "{acl}");

    let top = help(&["--help"]);
    assert!(has(&top, "--redis") && has(&top, "--no-heartbeat"), "{top}");
    assert!(!has(&top, "--interval") && !has(&top, "--lease"), "{top}");
}

#[test]
fn acl_without_user_shows_only_what_is_required() {
    let out = lockwatch("redis://127.0.0.1:1", &["acl"]);
    let err = usage_error(&out);
    assert!(err.contains("--user"), "{err}");
    let usage = usage_line(&out);
    assert!(usage.starts_with("Usage: lockwatch acl ") && usage.contains("--user <USER>"), "{usage}");
    assert!(!usage.contains("--redis"), "{usage}");

    // Options the command does not read are still accepted, as scripts give them.
    let out = lockwatch("redis://127.0.0.1:1", &["--interval", "2s", "acl", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ACL SETUSER alice"));
}

/// The design's `acl --worker --user U` and the shorter `acl --worker U`
/// print the same rules; two different names are one sentence.
#[test]
fn acl_takes_the_workers_user_either_way() {
    let short = lockwatch("redis://127.0.0.1:1", &["acl", "--redis-version", "7", "--worker", "jobs"]);
    let long = lockwatch("redis://127.0.0.1:1", &["acl", "--redis-version", "7", "--worker", "--user", "jobs"]);
    assert_eq!(short.status.code(), Some(0), "{}", text(&short.stderr));
    assert_eq!(text(&long.stdout), text(&short.stdout));
    assert!(text(&long.stdout).starts_with("ACL SETUSER jobs "), "{}", text(&long.stdout));
    let both = lockwatch("redis://127.0.0.1:1", &["acl", "--redis-version", "7", "--worker", "a", "--user", "b"]);
    assert_ne!(both.status.code(), Some(0));
    assert!(text(&both.stdout).is_empty());
    let said = text(&both.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(said.contains("name the workers' Redis user once"), "{said}");
}

/// `watch` follows several jobs of one Redis: each one's first status, then
/// one incident for the job whose holder was killed, naming it, and
/// nothing from the others.
#[test]
fn watch_follows_several_jobs_and_tells_each_ones_incident_by_its_name() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();
    let jobs = ["outbound", "inbound", "stock"];
    let mut workers = Vec::new();
    for job in jobs {
        flag(&mut c, job, "alice", true);
        let _: () = redis::cmd("SET").arg(format!("{{{job}}}:fence")).arg(0).query(&mut c).unwrap();
        let mut cmd = lockwatch_command();
        cmd.args(["--redis", &url, "--job", job]);
        worker_args(&mut cmd, "srv-a", "2s", &[], "exec sleep 600");
        workers.push(WorkerProcess::spawn(&mut cmd));
    }
    for job in jobs {
        status_until_job(&url, job, "running", |s| s["state"] == "running");
    }
    let mut watch = lockwatch_command()
        .args(["--redis", &url, "--job", "outbound,inbound,stock", "--heartbeat-grace", "2s", "watch", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut first: Vec<String> = (0..3)
        .map(|_| {
            let v: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
            assert_eq!((v["event"].as_str(), v["status"]["state"].as_str()), (Some("status"), Some("running")), "{v}");
            v["status"]["job"].as_str().unwrap().to_owned()
        })
        .collect();
    first.sort();
    assert_eq!(first, ["inbound", "outbound", "stock"]);
    // One set of connections for the three: looks, streams, channels.
    assert_eq!(tcp_ports(watch.id() as i32, Some(server.port)).len(), 3);

    // inbound's only worker killed: its job died; the others say nothing.
    workers[1].kill9();
    let died: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!((died["event"].as_str(), died["job"].as_str()), (Some("died"), Some("inbound")), "{died}");
    std::thread::sleep(Duration::from_secs(3));
    watch.kill().unwrap();
    let _ = watch.wait();
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(rest.iter().all(|l| l.contains("\"job\":\"inbound\"")), "only inbound's events: {rest:?}");

    // The history of all three, oldest first, each item naming its job.
    let out = lockwatch(&url, &["--job", "outbound,inbound,stock", "history", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let items: Vec<Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let runs = |job: &str| items.iter().filter(|i| i["job"] == job && i["kind"] == "run").count();
    assert_eq!((runs("outbound"), runs("inbound"), runs("stock")), (1, 1, 1), "{items:#?}");
    assert!(items.windows(2).all(|w| w[0]["at_ms"].as_u64() <= w[1]["at_ms"].as_u64()), "oldest first");
    let text = String::from_utf8(lockwatch(&url, &["--job", "outbound,inbound", "history"]).stdout).unwrap();
    assert!(text.lines().all(|l| l.starts_with("outbound: ") || l.starts_with("inbound: ")), "{text}");
}

/// Polls one job's `status --json` until `done` holds.
fn status_until_job(url: &str, job: &str, what: &str, done: impl Fn(&Value) -> bool) {
    let started = std::time::Instant::now();
    loop {
        let (s, _) = status_json(url, &["--job", job]);
        if done(&s) {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{job} never {what}: {s}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
