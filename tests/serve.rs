//! `lockwatch serve` with real parts: real `redis-server`s, real workers,
//! real `lockwatch serve` processes, and robots on loopback that answer as
//! DingTalk, WeCom and Feishu do and check their signatures
//! (`common::robots`). Two serve processes post one message per incident,
//! also when the one that claimed it is killed while it posts, through
//! Sentinel and on a Cluster; a dying holder is told by what follows it; a
//! flapping job is one message and a summary; a burst is folded and the
//! rate limit kept, also among three serve processes; "too fast" is tried again; a refusal is one sentence;
//! `--check` prints each answer; `/metrics` is scraped and parsed.

mod common;

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::journal::{Two, holder_of, journal, journal_worker_via};
use common::robots::{Play, Robot, SECRET, TOKEN};
use common::server::connect;
use common::topology::{RedisCluster, SentinelSet};
use common::*;

/// Writes a robots file (mode 0600) with one table per `(robot, extra lines)`.
fn robots_file(dir: &Path, robots: &[(&Robot, &str)]) -> PathBuf {
    let mut text = String::new();
    for (robot, extra) in robots {
        let kind = match robot.play {
            Play::DingTalk => "dingtalk",
            Play::WeCom => "wecom",
            Play::Feishu => "feishu",
            Play::Webhook => "webhook",
        };
        text.push_str(&format!("[[robot]]\nkind = \"{kind}\"\nurl = \"{}\"\n{extra}\n\n", robot.url()));
    }
    let path = dir.join(format!("robots-{}.toml", free_port()));
    std::fs::write(&path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    path
}

/// A `lockwatch serve` process named `node`; its stderr goes to `log`.
fn serve(url: &str, node: &str, robots: &Path, log: &Path, extra: &[&str]) -> WorkerProcess {
    serve_via(&["--redis", url], node, robots, log, extra)
}

/// [`serve`] with the connection options `via` (a Sentinel set's).
fn serve_via(via: &[&str], node: &str, robots: &Path, log: &Path, extra: &[&str]) -> WorkerProcess {
    let mut cmd = lockwatch_command();
    cmd.args(via)
        .args(["--interval", "200ms", "serve", "--node", node, "--robots"])
        .arg(robots)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    WorkerProcess::spawn(&mut cmd)
}

/// Waits until `n` serve processes beat in Redis, and their first look is done.
async fn serves_ready(c: &mut redis::Connection, n: usize) {
    eventually("the serve processes to beat", Duration::from_secs(10), || {
        let live: usize = redis::cmd("HLEN").arg("{outbound}:serves").query(c).unwrap();
        (live >= n).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// Hands the lock to `node` (lock field `<node>-uuid:1`) under `fence`, with a
/// fresh heartbeat, in one transaction, and wakes the watchers: a failover.
fn move_to(c: &mut redis::Connection, node: &str, other: &str, fence: i64) {
    let field = format!("{node}-uuid:1");
    let _: () = redis::pipe()
        .atomic()
        .del("{outbound}:lock")
        .hset("{outbound}:lock", &field, 1)
        .pexpire("{outbound}:lock", 30_000)
        .set("{outbound}:fence", fence)
        .query(c)
        .unwrap();
    beat(c, "outbound", other, "", fence - 1, "idle", 0);
    beat(c, "outbound", node, &field, fence, "running", 0);
    let _: () = redis::cmd("XADD").arg("{outbound}:events").arg("*").arg(entry::TYPE).arg("test").query(c).unwrap();
}

fn log_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test]
async fn two_serve_processes_post_one_signed_message_per_incident_within_two_seconds() {
    let server = RedisServer::start();
    let two = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let ding = Robot::start(Play::DingTalk);
    let hook = Robot::start(Play::Webhook);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(
        dir.path(),
        &[(&ding, &format!("secret = \"{SECRET}\"\nmention = [\"13800000000\"]\nlanguage = \"en\"")), (&hook, "")],
    );
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let _s1 = serve(&server.url(), "serve-1", &file, &log1, &[]);
    let _s2 = serve(&server.url(), "serve-2", &file, &log2, &[]);
    serves_ready(&mut c, 2).await;

    let killed = Instant::now();
    let other = if two.holder == "srv-a" { "srv-b" } else { "srv-a" };
    // SAFETY: kill(2) on the holder's worker, which this test started.
    unsafe { libc::kill(two.holder_pid(), libc::SIGKILL) };
    let got = eventually("the failover's message", Duration::from_secs(15), || ding.taken().first().cloned()).await;
    // Both serve processes saw it; give the slower one time to post a second.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let (taken, events) = (ding.taken(), hook.taken());
    let text = got.text();
    println!("{text}");
    println!(
        "posted {} ms after the kill, {} ms after the event (Redis time {} → robot {})",
        got.at.duration_since(killed).as_millis(),
        got.at_ms as i64 - events[0].body["at_ms"].as_i64().unwrap(),
        events[0].body["at_ms"],
        got.at_ms
    );
    assert_eq!(
        taken.len(),
        1,
        "one message, not one per serve process: {taken:#?}\n{}{}",
        log_of(&log1),
        log_of(&log2)
    );
    assert_eq!(ding.got().len(), 1, "nothing refused either");
    assert!(text.contains(&format!("outbound moved from {} to {other}", two.holder)), "{text}");
    assert!(text.ends_with("@13800000000"), "{text}");
    assert_eq!(got.body["at"]["atMobiles"][0], "13800000000");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0].body["event"], "failover");
    assert_eq!(events[0].body["to"]["node"], other);
    let after_event = got.at_ms.saturating_sub(events[0].body["at_ms"].as_u64().unwrap());
    assert!(after_event < 2_000, "posted {after_event} ms after the event");
    // Exactly one of them claimed it, and says which.
    let keys: Vec<String> = redis::cmd("KEYS").arg("{outbound}:posted:*").query(&mut c).unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    let by: String = redis::cmd("HGET").arg(&keys[0]).arg(claim::BY).query(&mut c).unwrap();
    assert!(by == "serve-1" || by == "serve-2", "{by}");
    let finished: Option<String> = redis::cmd("HGET").arg(&keys[0]).arg(claim::FINISHED).query(&mut c).unwrap();
    assert_eq!(finished.as_deref(), Some("1"), "each robot has it, and the claim says so");
    for log in [&log1, &log2] {
        let log = log_of(log);
        assert!(!log.contains(TOKEN) && !log.contains(SECRET), "{log}");
    }
}

#[tokio::test]
async fn a_flapping_job_is_one_message_and_a_summary() {
    let (server, url, mut c) = server_with_flag("alice", true);
    move_to(&mut c, "srv-a", "srv-b", 1);
    let wecom = Robot::start(Play::WeCom);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(dir.path(), &[(&wecom, "language = \"en\"")]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let _s1 = serve(&url, "serve-1", &file, &log1, &["--repeat-window", "4s"]);
    let _s2 = serve(&url, "serve-2", &file, &log2, &["--repeat-window", "4s"]);
    serves_ready(&mut c, 2).await;

    // The job moves back and forth four times within the window.
    for (i, (to, from)) in
        [("srv-b", "srv-a"), ("srv-a", "srv-b"), ("srv-b", "srv-a"), ("srv-a", "srv-b")].iter().enumerate()
    {
        move_to(&mut c, to, from, 2 + i as i64);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    eventually("the summary", Duration::from_secs(10), || (wecom.taken().len() >= 2).then_some(())).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let taken = wecom.taken();
    let texts: Vec<String> = taken.iter().map(|g| g.text()).collect();
    println!("{}", texts.join("\n---\n"));
    assert_eq!(taken.len(), 2, "{texts:#?}\n{}{}", log_of(&log1), log_of(&log2));
    assert!(texts[0].contains("### outbound moved from srv-a to srv-b"), "{}", texts[0]);
    assert!(texts[1].contains("### outbound: 3 more times since the last message"), "{}", texts[1]);
    assert!(texts[1].contains("moved 3×"), "{}", texts[1]);
    assert!(texts[1].contains("Now: running on srv-a"), "{}", texts[1]);
    drop(server);
}

/// A serve process frozen through a failover and the failover back sees the
/// second as a restart on the same server: still one message per failover.
#[tokio::test]
async fn a_serve_process_frozen_through_two_failovers_posts_nothing_twice() {
    let (server, url, mut c) = server_with_flag("alice", true);
    move_to(&mut c, "srv-a", "srv-b", 1);
    let hook = Robot::start(Play::Webhook);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(dir.path(), &[(&hook, "")]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let _s1 = serve(&url, "serve-1", &file, &log1, &["--repeat-window", "0s"]);
    let s2 = serve(&url, "serve-2", &file, &log2, &["--repeat-window", "0s"]);
    serves_ready(&mut c, 2).await;
    {
        let _thaw = Resume(s2.pid());
        // SAFETY: SIGSTOP to a serve process this test started.
        unsafe { libc::kill(s2.pid(), libc::SIGSTOP) };
        move_to(&mut c, "srv-b", "srv-a", 2);
        eventually("the first failover", Duration::from_secs(10), || (!hook.taken().is_empty()).then_some(())).await;
        move_to(&mut c, "srv-a", "srv-b", 3);
        eventually("the failover back", Duration::from_secs(10), || (hook.taken().len() >= 2).then_some(())).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    let texts: Vec<String> = hook.taken().iter().map(|g| g.text()).collect();
    assert_eq!(texts.len(), 2, "{texts:#?}\n{}{}", log_of(&log1), log_of(&log2));
    drop(server);
}

#[tokio::test]
async fn too_fast_is_tried_again_and_a_refused_signature_is_one_sentence_not_a_send() {
    let (server, url, mut c) = server_with_flag("alice", true);
    move_to(&mut c, "srv-a", "srv-b", 1);
    let ding = Robot::start(Play::DingTalk);
    ding.force(r#"{"errcode":130101,"errmsg":"send too fast, exceed 20 times per minute"}"#);
    let feishu = Robot::start(Play::Feishu);
    let dir = tempfile::tempdir().unwrap();
    let wrong = "SECnot-the-robots-secret-42";
    let file = robots_file(
        dir.path(),
        &[(&ding, &format!("secret = \"{SECRET}\"")), (&feishu, &format!("secret = \"{wrong}\""))],
    );
    let log = dir.path().join("s.log");
    let s = serve(&url, "serve-1", &file, &log, &[]);
    serves_ready(&mut c, 1).await;
    move_to(&mut c, "srv-b", "srv-a", 2);
    eventually("the message, on the second try", Duration::from_secs(10), || ding.taken().first().cloned()).await;
    eventually("the refusal", Duration::from_secs(10), || feishu.got().first().cloned()).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let said = log_of(&log);
    println!("{said}");
    let tries: Vec<String> = ding.got().iter().map(|g| g.answer.clone()).collect();
    assert_eq!(tries.len(), 2, "{tries:?}");
    assert!(tries[0].contains("130101") && tries[1].contains("\"errcode\":0"), "{tries:?}");
    assert!(ding.taken()[0].text().contains("已从 srv-a 切换到 srv-b"), "{}", ding.taken()[0].text());
    assert_eq!(feishu.got().len(), 1, "a refused signature is not tried again");
    assert!(feishu.taken().is_empty());
    let refusals: Vec<&str> = said.lines().filter(|l| l.contains("refused")).collect();
    assert_eq!(refusals.len(), 1, "{said}");
    assert!(
        refusals[0].contains(&format!(
            "feishu robot 2 (127.0.0.1:{}) refused the message, which was not sent: code 19021, \"sign match fail",
            feishu.port
        )) && refusals[0].contains("check the robot's secret (sign) and this server's clock"),
        "{}",
        refusals[0]
    );
    assert!(said.contains("trying again"), "{said}");
    // No secret anywhere: the log, the process list, Redis.
    for secret in [TOKEN, SECRET, wrong] {
        assert!(!said.contains(secret), "{said}");
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", s.pid())).unwrap();
        assert!(!String::from_utf8_lossy(&cmdline).contains(secret));
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
        for key in keys {
            let dump: Option<Vec<u8>> = redis::cmd("DUMP").arg(&key).query(&mut c).unwrap();
            assert!(!String::from_utf8_lossy(&dump.unwrap_or_default()).contains(secret), "{key}");
        }
    }
    drop(server);
}

/// 26 failovers in 9 s to a DingTalk robot whose file keeps it to 2 posts
/// in 2 s (`limit`, kept besides DingTalk's own 20 a minute, which
/// `limit.rs` tests by the clock): what comes while it must wait is folded
/// into one message, the robot never says too fast, and every failover is
/// told. (Against DingTalk's 20 a minute alone this took 75 s.)
#[tokio::test]
async fn a_burst_is_folded_into_one_message_and_the_rate_limit_is_kept() {
    let (server, url, mut c) = server_with_flag("alice", true);
    move_to(&mut c, "srv-a", "srv-b", 1);
    let ding = Robot::start(Play::DingTalk);
    let dir = tempfile::tempdir().unwrap();
    let file =
        robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"\nlimit = \"2/2s\""))]);
    let log = dir.path().join("s.log");
    let _s = serve(&url, "serve-1", &file, &log, &["--repeat-window", "0s"]);
    serves_ready(&mut c, 1).await;
    // 26 failovers, 350 ms apart: more than the robot takes in that time.
    let started = Instant::now();
    flap_26(&mut c).await;
    until_told(&ding, &mut c, Duration::from_secs(20), Duration::from_millis(2_500), || log_of(&log)).await;
    let got = ding.got();
    println!("{} posts for {} failovers in {:.1} s", got.len(), told(&got), started.elapsed().as_secs_f64());
    assert!(got.iter().all(|g| g.taken()), "the robot never had to say too fast: {got:#?}");
    for g in &got {
        let within = got.iter().filter(|h| h.at >= g.at && h.at.duration_since(g.at) < Duration::from_secs(2)).count();
        assert!(within <= 2, "{within} posts within 2 s: {}", log_of(&log));
    }
    assert!(got.len() < 20, "{} posts", got.len());
    let folded: Vec<&common::robots::Got> = got.iter().filter(|g| g.text().matches("### ").count() >= 2).collect();
    assert!(!folded.is_empty(), "what came while the robot had to wait is folded");
    for g in folded {
        let n = g.text().matches("### ").count();
        assert_eq!(g.body["markdown"]["title"], format!("lockwatch: {n} incidents"), "{}", g.text());
    }
    drop(server);
}

#[test]
fn check_posts_a_test_message_to_each_robot_and_prints_each_answer() {
    let (_server, url, _) = server_with_flag("alice", true);
    let (ding, wecom, feishu, hook) = (
        Robot::start(Play::DingTalk),
        Robot::start(Play::WeCom),
        Robot::start(Play::Feishu),
        Robot::start(Play::Webhook),
    );
    let dir = tempfile::tempdir().unwrap();
    let wrong_key = format!("http://127.0.0.1:{}/cgi-bin/webhook/send?key=not-the-key-4711", wecom.port);
    let file = robots_file(
        dir.path(),
        &[
            (&ding, &format!("secret = \"{SECRET}\"")),
            (&feishu, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"")),
            (&hook, ""),
        ],
    );
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push_str("[[robot]]\nkind = \"wecom\"\nname = \"ops\"\nurl_env = \"WECOM_URL\"\n");
    std::fs::write(&file, text).unwrap();
    let out = lockwatch_command()
        .args(["--redis", &url, "serve", "--check", "--node", "wh-a", "--robots"])
        .arg(&file)
        .env("WECOM_URL", &wrong_key)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert_eq!(
        lines[0],
        format!("dingtalk robot 1 (127.0.0.1:{}): sent; it answered {{\"errcode\":0,\"errmsg\":\"ok\"}}", ding.port)
    );
    assert_eq!(
        lines[1],
        format!(
            "feishu robot 2 (127.0.0.1:{}): sent; it answered {{\"code\":0,\"data\":{{}},\"msg\":\"success\"}}",
            feishu.port
        )
    );
    assert_eq!(lines[2], format!("webhook robot 3 (127.0.0.1:{}): sent; it answered ok", hook.port));
    assert!(
        lines[3].starts_with(&format!(
            "wecom robot \"ops\" (127.0.0.1:{}): NOT sent: code 93000, \"invalid webhook url",
            wecom.port
        )) && lines[3].ends_with("check the key in its url"),
        "{}",
        lines[3]
    );
    assert_eq!(out.status.code(), Some(1), "a robot refused");
    assert!(!stdout.contains("not-the-key-4711") && !stdout.contains(SECRET) && !stderr.contains(SECRET));
    assert!(ding.taken()[0].text().contains("lockwatch 测试消息"), "{}", ding.taken()[0].text());
    assert!(feishu.taken()[0].text().contains("Sent by lockwatch serve on wh-a"));
    assert_eq!(hook.taken()[0].body["event"], "test");
    assert_eq!(wecom.got().len(), 1);
}

/// Every series `serve` writes, by name, as the issue lists them.
const METRICS: [&str; 11] = [
    "lockwatch_build_info",
    "lockwatch_enabled_users",
    "lockwatch_failovers_total",
    "lockwatch_fence",
    "lockwatch_flags_lost",
    "lockwatch_holder_info",
    "lockwatch_job_state",
    "lockwatch_last_heartbeat_timestamp_seconds",
    "lockwatch_lock_held",
    "lockwatch_lock_ttl_seconds",
    "lockwatch_redis_up",
];

/// `GET path` on `port`: the status line, the headers and the body.
pub fn http_get(port: u16, path: &str) -> (String, String, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    let (head, body) = reply.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap();
    (status.to_owned(), headers.to_owned(), body.to_owned())
}

/// One sample of an OpenMetrics text: name, labels, value.
type Sample = (String, Vec<(String, String)>, f64);

/// The samples of an OpenMetrics text.
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => {
                    let labels = rest
                        .trim_end_matches('}')
                        .split(',')
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').unwrap();
                            (k.to_owned(), v.trim_matches('"').to_owned())
                        })
                        .collect();
                    (name.to_owned(), labels)
                }
                None => (series.to_owned(), vec![]),
            };
            (name, labels, value.parse().unwrap())
        })
        .collect()
}

#[tokio::test]
async fn metrics_are_openmetrics_with_every_series_and_count_a_failover() {
    let server = RedisServer::start();
    let two = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.log");
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", &server.url(), "serve", "--node", "serve-1", "--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _s = WorkerProcess::spawn(&mut cmd);
    // With no robot it takes no part among the serve processes: its first look, in its metrics.
    eventually("the first look in the metrics", Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        let (_, _, body) = http_get(port, "/metrics");
        body.contains("state=\"running\"} 1").then_some(())
    })
    .await;
    let serves: usize = redis::cmd("HLEN").arg("{outbound}:serves").query(&mut c).unwrap();
    assert_eq!(serves, 0, "a serve process with no robot does not beat among those that post");
    let other = if two.holder == "srv-a" { "srv-b" } else { "srv-a" };
    // SAFETY: kill(2) on the holder's worker, which this test started.
    unsafe { libc::kill(two.holder_pid(), libc::SIGKILL) };
    let text = eventually("the failover in the metrics", Duration::from_secs(15), || {
        let (_, _, body) = http_get(port, "/metrics");
        body.contains("lockwatch_failovers_total{job=\"outbound\"} 1").then_some(body)
    })
    .await;
    let (status, headers, _) = http_get(port, "/metrics");
    println!("{headers}\n{text}");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8"), "{headers}");
    assert!(text.ends_with("# EOF\n"));
    let s = samples(&text);
    let value = |name: &str, labels: &[(&str, &str)]| {
        s.iter()
            .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.iter().any(|(lk, lv)| lk == k && lv == v)))
            .map(|x| x.2)
            .unwrap_or_else(|| panic!("{name} {labels:?} missing:\n{text}"))
    };
    let names: std::collections::BTreeSet<&str> = s.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(names.into_iter().collect::<Vec<_>>(), METRICS);
    let fence: f64 = redis::cmd("GET").arg("{outbound}:fence").query::<i64>(&mut c).unwrap() as f64;
    assert_eq!(value("lockwatch_job_state", &[("job", "outbound"), ("state", "running")]), 1.0);
    assert_eq!(s.iter().filter(|x| x.0 == "lockwatch_job_state" && x.2 == 1.0).count(), 1);
    assert_eq!(value("lockwatch_holder_info", &[("job", "outbound"), ("node", other)]), 1.0);
    assert_eq!(s.iter().filter(|x| x.0 == "lockwatch_holder_info").count(), 1, "the old holder is gone");
    assert_eq!(value("lockwatch_lock_held", &[("job", "outbound")]), 1.0);
    assert_eq!(value("lockwatch_fence", &[("job", "outbound")]), fence);
    assert_eq!(value("lockwatch_enabled_users", &[("job", "outbound")]), 1.0);
    assert_eq!(value("lockwatch_redis_up", &[]), 1.0);
    assert_eq!(value("lockwatch_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    let ttl = value("lockwatch_lock_ttl_seconds", &[("job", "outbound")]);
    assert!(ttl > 0.0 && ttl <= 3.0, "{ttl}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let beat = value("lockwatch_last_heartbeat_timestamp_seconds", &[("job", "outbound")]);
    assert!((now - beat).abs() < 5.0, "{now} {beat}");
    // Redis gone: up 0 and the state unknown.
    drop(two);
    let mut server = server;
    server.kill();
    let text = eventually("redis_up 0", Duration::from_secs(15), || {
        let (_, _, body) = http_get(port, "/metrics");
        body.contains("lockwatch_redis_up 0").then_some(body)
    })
    .await;
    assert!(text.contains("lockwatch_job_state{job=\"outbound\",state=\"unknown\"} 1"), "{text}");
}

/// `GET` of Prometheus's query API at `port`: the JSON answer.
fn prometheus_api(port: u16, path: &str, params: &[(&str, &str)]) -> serde_json::Value {
    let url = url::Url::parse_with_params(&format!("http://127.0.0.1:{port}{path}"), params).unwrap();
    match ureq::get(url.as_str()).call() {
        Ok(mut answer) => serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).unwrap(),
        Err(_) => serde_json::Value::Null,
    }
}

/// The shipped rules, each `for:` cut to 0s: whether they fire at all is
/// tried against a real Prometheus here, their timing by `promtool test rules`.
fn rules_firing_at_once() -> String {
    let rules = std::fs::read_to_string("packaging/prometheus/lockwatch.rules.yml").unwrap();
    rules
        .lines()
        .map(|l| if l.trim_start().starts_with("for:") { "        for: 0s" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_real_prometheus_scrapes_serve_and_the_shipped_rules_fire_on_a_killed_worker() {
    let (server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let mut worker = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "3s", &[], "sleep 600"));
    let metrics_port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", &url, "serve", "--node", "serve-1", "--metrics", &format!("127.0.0.1:{metrics_port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _serve = WorkerProcess::spawn(&mut cmd);
    std::fs::write(dir.path().join("rules.yml"), rules_firing_at_once()).unwrap();
    std::fs::write(
        dir.path().join("prometheus.yml"),
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files: [rules.yml]\nscrape_configs:\n  - job_name: lockwatch\n    honor_labels: true\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let mut prometheus = std::process::Command::new("prometheus");
    prometheus
        .arg(format!("--config.file={}", dir.path().join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap());
    let _prometheus =
        WorkerProcess(prometheus.spawn().expect("prometheus must be installed (scripts/setup-test-deps.sh)"));
    let query = |q: &str| prometheus_api(port, "/api/v1/query", &[("query", q)]);
    let value = |answer: &serde_json::Value| answer["data"]["result"][0]["value"][1].as_str().map(str::to_owned);
    eventually("Prometheus scraping serve (up 1, the job running)", Duration::from_secs(30), || {
        let running = value(&query(r#"lockwatch_job_state{job="outbound",state="running"}"#));
        (value(&query(r#"up{job="lockwatch"}"#)).as_deref() == Some("1") && running.as_deref() == Some("1"))
            .then_some(())
    })
    .await;
    let names = query(r#"count by (__name__) ({__name__=~"lockwatch_.*"})"#);
    let mut names: Vec<String> = names["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"]["__name__"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, METRICS);
    assert_eq!(value(&query(r#"lockwatch_holder_info{job="outbound",node="srv-a"}"#)).as_deref(), Some("1"));
    let firing = || {
        let alerts = prometheus_api(port, "/api/v1/alerts", &[]);
        alerts["data"]["alerts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| a["state"] == "firing")
            .map(|a| a["labels"]["alertname"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    // Nothing fires while the job runs, once the rules saw serve answer (with
    // `for: 0s`, LockwatchNotWatched fires until the first scrape is evaluated).
    eventually("nothing firing while the job runs", Duration::from_secs(15), || firing().is_empty().then_some(()))
        .await;

    worker.kill9();
    let fired = eventually("LockwatchJobDown firing", Duration::from_secs(40), || {
        let f = firing();
        f.contains(&"LockwatchJobDown".to_owned()).then_some(f)
    })
    .await;
    println!("firing after the worker was killed: {fired:?}");
    let alert = prometheus_api(port, "/api/v1/alerts", &[]);
    let down = alert["data"]["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["labels"]["alertname"] == "LockwatchJobDown")
        .unwrap();
    assert_eq!(down["labels"]["job"], "outbound");
    assert_eq!(down["annotations"]["summary"], "outbound is down: enabled, yet no server runs it");
    drop(server);
}

#[test]
fn the_shipped_alert_rules_pass_promtool_check_and_their_tests() {
    let promtool = |args: &[&str], dir: &Path| {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("promtool must be installed (prometheus, scripts/setup-test-deps.sh)");
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };
    let shipped = Path::new("packaging/prometheus");
    let (ok, said) = promtool(&["check", "rules", "lockwatch.rules.yml"], shipped);
    assert!(ok && said.contains("SUCCESS: 6 rules found"), "{said}");
    let (ok, said) = promtool(&["test", "rules", "lockwatch.rules.test.yml"], shipped);
    assert!(ok, "{said}");
    // The tests can fail: the same tests against a rule that waits longer.
    let dir = tempfile::tempdir().unwrap();
    let rules = std::fs::read_to_string(shipped.join("lockwatch.rules.yml")).unwrap();
    std::fs::write(dir.path().join("lockwatch.rules.yml"), rules.replacen("for: 1m", "for: 5m", 1)).unwrap();
    std::fs::copy(shipped.join("lockwatch.rules.test.yml"), dir.path().join("lockwatch.rules.test.yml")).unwrap();
    let (ok, said) = promtool(&["test", "rules", "lockwatch.rules.test.yml"], dir.path());
    assert!(!ok && said.contains("LockwatchJobDown"), "{said}");
    // And the watchers' watch: absent() of the series alone misses serve processes that are down.
    let blind = rules.replace(r#"absent(up{job="lockwatch"} == 1)"#, r#"absent(up{job="lockwatch"})"#);
    assert_ne!(blind, rules);
    std::fs::write(dir.path().join("lockwatch.rules.yml"), blind).unwrap();
    let (ok, said) = promtool(&["test", "rules", "lockwatch.rules.test.yml"], dir.path());
    assert!(!ok && said.contains("LockwatchNotWatched"), "{said}");
}

#[test]
fn serve_needs_robots_or_metrics_and_a_bad_robots_file_is_one_sentence_without_its_secret() {
    let out = lockwatch_command().args(["serve"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.starts_with("lockwatch: lockwatch serve needs --robots <FILE> or --metrics <ADDR>"), "{stderr}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("robots.toml");
    std::fs::write(&file, format!("[[robot]]\nkind = \"dingtalk\"\nurl = \"https://oapi.dingtalk.com/robot/send?access_token={TOKEN}\"\nsecret = \"{SECRET}\n")).unwrap();
    let out = lockwatch_command()
        .args(["--redis", "redis://127.0.0.1:1", "serve", "--check", "--robots"])
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with(&format!("lockwatch: robots file {}: line 4:", file.display())), "{stderr}");
    assert!(!stderr.contains(SECRET) && !stderr.contains(TOKEN), "{stderr}");
}

/// Redis frozen past three quarters of the lease, but not past the lease
/// (7 s of 8, from just after a renewal): the holder's worker gives up and
/// kills its job; when Redis answers again, the renewal queued before the
/// freeze extends the lock once more and the worker's heartbeat says it no
/// longer holds it. That holder is dying, not hung: what follows (the
/// takeover when the lock expires) tells the incident, in one message that
/// names servers, never a lock field.
#[tokio::test]
async fn after_a_redis_freeze_a_holder_that_gave_up_is_told_by_what_follows_not_as_stalled() {
    let server = RedisServer::start();
    let two = Two::start(&server, "8s").await;
    let mut c = server.conn();
    let ding = Robot::start(Play::DingTalk);
    let hook = Robot::start(Play::Webhook);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"")), (&hook, "")]);
    let log = dir.path().join("s.log");
    let _s = serve(&server.url(), "serve-1", &file, &log, &["--repeat-window", "0s"]);
    serves_ready(&mut c, 1).await;
    // Just after a renewal, so the lock outlives the freeze.
    eventually("a renewal", Duration::from_secs(10), || {
        let ttl: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut c).unwrap();
        (ttl > 7_700).then_some(())
    })
    .await;
    server.pause();
    let thaw = Resume(server.pid().unwrap() as i32);
    tokio::time::sleep(Duration::from_secs(7)).await;
    drop(thaw);
    let resumed = Instant::now();
    // The lock expires within the lease, and the other server takes the job.
    tokio::time::sleep(Duration::from_secs(14)).await;
    let events: Vec<serde_json::Value> = hook.taken().iter().map(|g| g.body.clone()).collect();
    let texts: Vec<String> = ding.taken().iter().map(|g| g.text()).collect();
    println!("{events:#?}\n{}", texts.join("\n---\n"));
    for g in ding.taken() {
        println!("posted {} ms after Redis answered again", g.at.saturating_duration_since(resumed).as_millis());
    }
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    assert!(!kinds.contains(&"stalled"), "a dying holder is told by what follows it: {kinds:?}\n{}", log_of(&log));
    for text in &texts {
        assert!(!text.contains("lock field"), "a holder is named by its server: {text}");
    }
    let told: Vec<&&str> = kinds.iter().filter(|k| !matches!(**k, "unreachable" | "reachable")).collect();
    assert_eq!(told.len(), 1, "one message tells what happened to the job: {kinds:?}\n{}", log_of(&log));
    drop(two);
}

/// The serve process that claimed an incident is killed (`kill -9`) while
/// it posts, its robot hanging: its claim is a lease, which the other
/// serve process takes over once it runs out, and posts. Each robot gets
/// the message once: the webhook, which the first process posted to before
/// it was killed, is not posted to again. A hanging robot blocks neither
/// the other robots nor `/metrics`.
#[tokio::test]
async fn a_serve_process_killed_while_it_posts_is_taken_over_and_each_robot_gets_the_message_once() {
    let server = RedisServer::start();
    let two = Two::start(&server, "3s").await;
    let mut c = server.conn();
    let ding = Robot::start(Play::DingTalk);
    let hook = Robot::start(Play::Webhook);
    ding.hang(1);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"")), (&hook, "")]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let (m1, m2) = (free_port(), free_port());
    let mut s1 = serve(&server.url(), "serve-1", &file, &log1, &["--metrics", &format!("127.0.0.1:{m1}")]);
    let mut s2 = serve(&server.url(), "serve-2", &file, &log2, &["--metrics", &format!("127.0.0.1:{m2}")]);
    serves_ready(&mut c, 2).await;

    // SAFETY: kill(2) on the holder's worker, which this test started.
    unsafe { libc::kill(two.holder_pid(), libc::SIGKILL) };
    let hung =
        eventually("the post the robot never answers", Duration::from_secs(15), || ding.hung().first().cloned()).await;
    // The webhook has the event, and the claim says so.
    let key = eventually("the webhook's post, recorded in the claim", Duration::from_secs(5), || {
        let keys: Vec<String> = redis::cmd("KEYS").arg("{outbound}:posted:*").query(&mut c).unwrap();
        let key = keys.into_iter().find(|k| k.contains(":holder:"))?;
        let claim: std::collections::HashMap<String, String> = redis::cmd("HGETALL").arg(&key).query(&mut c).unwrap();
        (hook.taken().len() == 1 && claim.keys().any(|f| f.starts_with(claim::DONE))).then_some(key)
    })
    .await;
    let by: String = redis::cmd("HGET").arg(&key).arg(claim::BY).query(&mut c).unwrap();
    let ((claimant, port), (other, other_log)) = match by.as_str() {
        "serve-1" => ((&mut s1, m1), ("serve-2", &log2)),
        _ => ((&mut s2, m2), ("serve-1", &log1)),
    };
    // The claimant's metrics answer while its robot hangs.
    let (status, _, body) = http_get(port, "/metrics");
    assert!(status.contains("200") && body.contains("lockwatch_redis_up 1"), "{status}\n{body}");
    claimant.kill9();
    let killed = Instant::now();
    let got =
        eventually("the other serve process's post", Duration::from_secs(15), || ding.taken().first().cloned()).await;
    let after_kill = got.at.duration_since(killed).as_millis();
    let after_claim = got.at.duration_since(hung.at).as_millis();
    println!("taken over and posted {after_kill} ms after the kill, {after_claim} ms after the first post began");
    tokio::time::sleep(Duration::from_secs(4)).await;
    // Only the failover: the killed worker's server goes silent as a standby after 10 s.
    let moved = format!("### outbound moved from {}", two.holder);
    let taken: Vec<_> = ding.taken().into_iter().filter(|g| g.text().contains(&moved)).collect();
    let events: Vec<_> = hook.taken().into_iter().filter(|g| g.body["event"] == "failover").collect();
    assert_eq!(taken.len(), 1, "{taken:#?}\n{}", log_of(other_log));
    assert_eq!(got.text(), taken[0].text(), "the first message after the kill is the failover's");
    assert_eq!(events.len(), 1, "the webhook had it from the first: {events:#?}");
    assert!(after_kill < 8_000, "{after_kill} ms");
    let claim: std::collections::HashMap<String, String> = redis::cmd("HGETALL").arg(&key).query(&mut c).unwrap();
    assert_eq!(claim.get("by").map(String::as_str), Some(other), "{claim:?}");
    assert_eq!(claim.get("finished").map(String::as_str), Some("1"), "{claim:?}");
}

/// The node whose heartbeat names the holder of the lock on the Redis at `port`.
fn holder_on(port: u16) -> Option<String> {
    let mut c = connect(port).ok()?;
    let fields: Vec<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query(&mut c).ok()?;
    let field = fields.first()?;
    ["srv-a", "srv-b"].into_iter().map(str::to_owned).find(|n| {
        let f: Option<String> = redis::cmd("HGET")
            .arg(format!("{{outbound}}:node:{n}"))
            .arg(beat::LOCK_FIELD)
            .query(&mut c)
            .unwrap_or(None);
        f.as_deref() == Some(field.as_str())
    })
}

/// Two serve processes through a real Sentinel set (a primary, its replica,
/// three `redis-sentinel`s): the holder's worker killed is one message;
/// then the primary killed (`kill -9`) and a replica promoted; then the new
/// holder's worker killed is one message again, agreed on the new primary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_sentinel_each_killed_holder_is_one_message_also_after_the_primary_fails_over() {
    let started = Instant::now();
    let mut set = tokio::task::block_in_place(SentinelSet::start);
    let sentinels = set.sentinel_addrs().join(",");
    let via = ["--redis", "redis://127.0.0.1:1", "--sentinel", &sentinels, "--sentinel-master", &set.master_name];
    enabled_and_replicated(set.primary_port());
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let worker = |node: &str| {
        let mut cmd = lockwatch_command();
        cmd.args(via);
        // A lease the primary's failover (2–3 s) does not outlast: the holder keeps the job.
        journal_worker_via(&mut cmd, node, "10s", &j)
    };
    let mut workers = vec![("srv-a", worker("srv-a")), ("srv-b", worker("srv-b"))];
    let ding = Robot::start(Play::DingTalk);
    let hook = Robot::start(Play::Webhook);
    let file = robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"")), (&hook, "")]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let _s1 = serve_via(&via, "serve-1", &file, &log1, &["--repeat-window", "0s"]);
    let _s2 = serve_via(&via, "serve-2", &file, &log2, &["--repeat-window", "0s"]);
    let holder = eventually("a holder running the job", Duration::from_secs(20), || {
        let h = holder_on(set.primary_port())?;
        journal(&j).iter().any(|l| l.1 == h).then_some(h)
    })
    .await;
    eventually("the serve processes to beat", Duration::from_secs(10), || {
        let live: usize =
            redis::cmd("HLEN").arg("{outbound}:serves").query(&mut connect(set.primary_port()).ok()?).ok()?;
        (live >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let moved =
        |ding: &Robot| ding.taken().into_iter().filter(|g| g.text().contains("### outbound moved from")).count();

    // One: the holder's worker killed.
    let kill = |workers: &mut Vec<(&str, WorkerProcess)>, node: &str| {
        let (_, w) = workers.iter_mut().find(|(n, _)| *n == node).unwrap();
        w.kill9();
    };
    kill(&mut workers, &holder);
    let killed = Instant::now();
    let first =
        eventually("the first failover's message", Duration::from_secs(15), || ding.taken().first().cloned()).await;
    println!("posted {} ms after the kill", first.at.duration_since(killed).as_millis());
    let other = if holder == "srv-a" { "srv-b" } else { "srv-a" };
    assert!(first.text().contains(&format!("moved from {holder} to {other}")), "{}", first.text());
    // Its server's worker again, as systemd restarts it: the standby.
    let again = worker(&holder);
    workers.retain(|(n, _)| *n != holder);
    workers.push((if holder == "srv-a" { "srv-a" } else { "srv-b" }, again));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(moved(&ding), 1, "{}{}", log_of(&log1), log_of(&log2));

    // The primary killed; the sentinels promote its replica.
    let old = tokio::task::block_in_place(|| set.kill_primary());
    let new = tokio::task::block_in_place(|| set.wait_for_new_primary(Duration::from_secs(20)));
    assert_ne!(old, new);
    eventually("the job on the new primary", Duration::from_secs(15), || {
        (holder_on(new).as_deref() == Some(other)).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Two: the new holder's worker killed, agreed on the new primary.
    kill(&mut workers, other);
    let killed = Instant::now();
    let second = eventually("the second failover's message", Duration::from_secs(15), || {
        ding.taken().into_iter().find(|g| g.text().contains(&format!("moved from {other} to {holder}")))
    })
    .await;
    println!("posted {} ms after the kill, on the new primary", second.at.duration_since(killed).as_millis());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let texts: Vec<String> = ding.taken().iter().map(|g| g.text()).collect();
    println!("{}", texts.join("\n---\n"));
    assert_eq!(moved(&ding), 2, "one message per killed holder: {texts:#?}\n{}{}", log_of(&log1), log_of(&log2));
    let failovers = hook.taken().into_iter().filter(|g| g.body["event"] == "failover").count();
    assert_eq!(failovers, 2);
    for text in &texts {
        assert!(!text.contains("died") && !text.contains("stuck") && !text.contains("dying"), "{text}");
    }
    println!("{:.1} s in all", started.elapsed().as_secs_f64());
}

/// Two serve processes on a Redis Cluster, seeded at a node that does not
/// own the job's slot: the holder's worker killed is one message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_killed_holder_is_one_message() {
    let cluster = tokio::task::block_in_place(RedisCluster::start);
    let owner = cluster.owner_of("{outbound}:lock");
    let seed = cluster.url(cluster.a_node_not_owning("{outbound}:lock"));
    {
        let mut c = connect(owner).unwrap();
        flag(&mut c, "outbound", "alice", true);
        seed_fence(&mut c);
    }
    let via = ["--cluster", "--redis", &seed];
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let worker = |node: &str| {
        let mut cmd = lockwatch_command();
        cmd.args(via);
        journal_worker_via(&mut cmd, node, "3s", &j)
    };
    let mut workers = [("srv-a", worker("srv-a")), ("srv-b", worker("srv-b"))];
    let ding = Robot::start(Play::DingTalk);
    let file = robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\""))]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let _s1 = serve_via(&via, "serve-1", &file, &log1, &[]);
    let _s2 = serve_via(&via, "serve-2", &file, &log2, &[]);
    let holder = eventually("a holder running the job", Duration::from_secs(20), || {
        let h = holder_on(owner)?;
        journal(&j).iter().any(|l| l.1 == h).then_some(h)
    })
    .await;
    let mut c = connect(owner).unwrap();
    serves_ready(&mut c, 2).await;
    workers.iter_mut().find(|(n, _)| *n == holder).unwrap().1.kill9();
    let killed = Instant::now();
    let got = eventually("the failover's message", Duration::from_secs(15), || ding.taken().first().cloned()).await;
    println!("posted {} ms after the kill", got.at.duration_since(killed).as_millis());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let taken = ding.taken();
    assert_eq!(taken.len(), 1, "{taken:#?}\n{}{}", log_of(&log1), log_of(&log2));
    assert!(taken[0].text().contains(&format!("### outbound moved from {holder}")), "{}", taken[0].text());
}

/// Keeps the job running on `node` under `fence` as a worker would: its
/// heartbeat fresh, the other server's idle, the lock renewed.
/// 26 failovers between srv-a and srv-b, 350 ms apart (fences 2 to 27):
/// more than a robot takes in that time.
async fn flap_26(c: &mut redis::Connection) {
    for i in 0..26 {
        let (to, from) = if i % 2 == 0 { ("srv-b", "srv-a") } else { ("srv-a", "srv-b") };
        move_to(c, to, from, 2 + i);
        tokio::time::sleep(Duration::from_millis(350)).await;
    }
}

/// The failovers the robot's posts tell.
fn told(got: &[common::robots::Got]) -> usize {
    got.iter().map(|g| g.text().matches("### outbound moved from").count()).sum()
}

/// Waits until `robot` has told at least 24 of [`flap_26`]'s failovers and
/// nothing more came for `quiet`, the job running on srv-a meanwhile (its
/// heartbeat fresh, its lock renewed); fails with `logs` past `within`.
async fn until_told(
    robot: &Robot,
    c: &mut redis::Connection,
    within: Duration,
    quiet: Duration,
    logs: impl Fn() -> String,
) {
    let deadline = Instant::now() + within;
    let mut last = (0, Instant::now());
    loop {
        let got = robot.got();
        if got.len() != last.0 {
            last = (got.len(), Instant::now());
        }
        if told(&got) >= 24 && last.1.elapsed() > quiet {
            return;
        }
        assert!(Instant::now() < deadline, "not every failover was told ({} of 26): {}", told(&got), logs());
        keep_running(c, "srv-a", "srv-b", 27);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn keep_running(c: &mut redis::Connection, node: &str, other: &str, fence: i64) {
    beat(c, "outbound", node, &format!("{node}-uuid:1"), fence, "running", 0);
    beat(c, "outbound", other, "", fence - 1, "idle", 0);
    let _: () = redis::cmd("PEXPIRE").arg("{outbound}:lock").arg(30_000).query(c).unwrap();
}

/// The serve process that claimed an incident is frozen (SIGSTOP) while
/// its robot's rate limit holds the post back: the other takes the claim
/// over when it runs out and posts; when the first goes on, it asks
/// whether the claim is still its own before it posts, and posts nothing.
/// The robot's limit holds across both: the other posts no sooner either.
#[tokio::test]
async fn a_serve_process_frozen_past_its_claim_does_not_post_what_another_took_over() {
    let (server, url, mut c) = server_with_flag("alice", true);
    move_to(&mut c, "srv-a", "srv-b", 1);
    let ding = Robot::start(Play::DingTalk);
    let dir = tempfile::tempdir().unwrap();
    let file =
        robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"\nlimit = \"1/12s\""))]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let p = serve(&url, "serve-1", &file, &log1, &["--repeat-window", "0s"]);
    let q = serve(&url, "serve-2", &file, &log2, &["--repeat-window", "0s"]);
    serves_ready(&mut c, 2).await;
    // serve-2 frozen: serve-1 claims both incidents.
    let thaw_q = Resume(q.pid());
    // SAFETY: SIGSTOP to a serve process this test started.
    unsafe { libc::kill(q.pid(), libc::SIGSTOP) };
    move_to(&mut c, "srv-b", "srv-a", 2);
    eventually("the first message", Duration::from_secs(10), || (ding.taken().len() == 1).then_some(())).await;
    // The second waits in serve-1 for the robot's limit (one in 12 s).
    move_to(&mut c, "srv-a", "srv-b", 3);
    eventually("serve-1's claim of the second", Duration::from_secs(10), || {
        let keys: Vec<String> = redis::cmd("KEYS").arg("{outbound}:posted:holder:3:*").query(&mut c).unwrap();
        let by: Option<String> = redis::cmd("HGET").arg(keys.first()?).arg(claim::BY).query(&mut c).unwrap();
        (by.as_deref() == Some("serve-1")).then_some(())
    })
    .await;
    {
        let _thaw_p = Resume(p.pid());
        // SAFETY: SIGSTOP to a serve process this test started.
        unsafe { libc::kill(p.pid(), libc::SIGSTOP) };
        drop(thaw_q);
        let deadline = ding.taken()[0].at + Duration::from_secs(17);
        while ding.taken().len() < 2 {
            assert!(Instant::now() < deadline, "serve-2 did not take the claim over: {}", log_of(&log2));
            keep_running(&mut c, "srv-a", "srv-b", 3);
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let (first, second) = (ding.taken()[0].at, ding.taken()[1].at);
    assert!(
        second.duration_since(first) >= Duration::from_secs(12),
        "the robot's limit, one in 12 s, holds across serve processes"
    );
    // serve-1 goes on; its robot's limit would let it post now.
    let quiet_until = second + Duration::from_secs(3);
    while Instant::now() < quiet_until {
        keep_running(&mut c, "srv-a", "srv-b", 3);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let texts: Vec<String> = ding.taken().iter().map(|g| g.text()).collect();
    println!("{}", texts.join("\n---\n"));
    assert_eq!(texts.len(), 2, "{texts:#?}\n{}", log_of(&log1));
    assert!(texts[1].contains("srv-a"), "the second is the move back: {}", texts[1]);
    assert!(log_of(&log1).contains("another serve process took"), "{}", log_of(&log1));
    drop(server);
}

/// A job that is unknown stays unknown for each new cause, and each is
/// logged: no such job, then Redis gone, then Redis restarted without the
/// ACL user serve logs in as (the password refused, not only the
/// connection).
#[tokio::test]
async fn serve_logs_a_new_cause_while_redis_still_cannot_be_read() {
    let mut server = RedisServer::start();
    let mut admin = server.conn();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("mon")
        .arg("on")
        .arg(">mon-pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query(&mut admin)
        .unwrap();
    let port = free_port();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let mut cmd = lockwatch_command();
    let url = format!("redis://mon:mon-pw@127.0.0.1:{}", server.port);
    cmd.args([
        "--redis",
        &url,
        "--interval",
        "200ms",
        "serve",
        "--node",
        "serve-1",
        "--metrics",
        &format!("127.0.0.1:{port}"),
    ])
    .env("LOCKWATCH_LOG", "info")
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log).unwrap());
    let _s = WorkerProcess::spawn(&mut cmd);
    let said = || std::fs::read_to_string(&log).unwrap_or_default();
    // Redis answered first: the job is unknown because there is none, and
    // then because Redis is gone, each said once.
    eventually("no such job logged", Duration::from_secs(20), || said().contains("no job named").then_some(())).await;
    server.kill();
    if common::wait::within(Duration::from_secs(20), || said().contains("Connection refused").then_some(())).is_none() {
        panic!("serve did not log that Redis refused the connection within 20 s; its log:\n{}", said());
    }
    server.restart();
    let text = eventually("the refused password logged", Duration::from_secs(30), || {
        let text = said();
        text.contains("Password authentication failed").then_some(text)
    })
    .await;
    println!("{text}");
}

/// Idle connections to `/metrics` by the hundred (the port may face a whole
/// network) hold a bounded number of the process's file descriptors, and a
/// scrape still answers.
#[tokio::test]
async fn a_flood_of_idle_metrics_connections_stays_bounded() {
    let server = RedisServer::start();
    let port = free_port();
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", &server.url(), "serve", "--node", "serve-1", "--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let s = WorkerProcess::spawn(&mut cmd);
    eventually("the metrics", Duration::from_secs(10), || std::net::TcpStream::connect(("127.0.0.1", port)).ok()).await;
    let fds = || std::fs::read_dir(format!("/proc/{}/fd", s.pid())).unwrap().count();
    let before = fds();
    let idle: Vec<_> = (0..300).filter_map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).ok()).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let during = fds();
    let (status, _, body) = http_get(port, "/metrics");
    println!("{} idle connections: {before} fds before, {during} during", idle.len());
    assert!(during <= before + 40, "{during} fds with {} idle connections (before: {before})", idle.len());
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(body.ends_with("# EOF\n"));
}

/// Three serve processes on one Redis and one DingTalk robot whose file
/// keeps it to 3 posts in 10 s: 26 failovers in 9 s, each claimed by one
/// of them, reach the robot as at most 3 posts in any 10 s however the
/// claims fall (the limit holds per robot, across serve processes, not per
/// process), and every failover is still told, folded.
#[tokio::test]
async fn three_serve_processes_keep_one_robots_rate_limit_between_them() {
    let (server, url, mut c) = server_with_flag("alice", true);
    move_to(&mut c, "srv-a", "srv-b", 1);
    let ding = Robot::start(Play::DingTalk);
    let dir = tempfile::tempdir().unwrap();
    let file =
        robots_file(dir.path(), &[(&ding, &format!("secret = \"{SECRET}\"\nlanguage = \"en\"\nlimit = \"3/10s\""))]);
    let logs: Vec<PathBuf> = (1..=3).map(|i| dir.path().join(format!("s{i}.log"))).collect();
    let _serves: Vec<WorkerProcess> = logs
        .iter()
        .enumerate()
        .map(|(i, log)| serve(&url, &format!("serve-{}", i + 1), &file, log, &["--repeat-window", "0s"]))
        .collect();
    serves_ready(&mut c, 3).await;
    let all_logs = || logs.iter().map(|l| log_of(l)).collect::<Vec<_>>().join("\n");
    let started = Instant::now();
    flap_26(&mut c).await;
    // Nothing more for longer than the robot's window.
    until_told(&ding, &mut c, Duration::from_secs(45), Duration::from_secs(11), all_logs).await;
    let got = ding.got();
    let most = got
        .iter()
        .map(|g| got.iter().filter(|h| h.at >= g.at && h.at.duration_since(g.at) < Duration::from_secs(10)).count())
        .max()
        .unwrap_or(0);
    println!(
        "{} posts for {} failovers in {:.1} s; at most {most} in 10 s",
        got.len(),
        told(&got),
        started.elapsed().as_secs_f64()
    );
    assert!(got.iter().all(|g| g.taken()), "the robot never had to say too fast: {got:#?}");
    assert!(most <= 3, "{most} posts within 10 s from three serve processes: {}", all_logs());
    assert!(told(&got) <= 26, "nothing told twice");
    drop(server);
}

/// One serve process for three jobs on one Redis, each with two workers:
/// the holder of one killed is one message naming that job, posted once,
/// the other jobs untouched; `/metrics` carries each job's series.
#[tokio::test]
async fn one_serve_for_three_jobs_tells_the_killed_jobs_failover_once_and_labels_each_jobs_metrics() {
    let server = RedisServer::start();
    let mut c = server.conn();
    let jobs = ["outbound", "inbound", "stock"];
    let mut workers = Vec::new();
    for job in jobs {
        let _: () = redis::cmd("SET").arg(format!("{{{job}}}:fence")).arg(0).query(&mut c).unwrap();
        flag(&mut c, job, "alice", true);
        for node in ["srv-a", "srv-b"] {
            let mut cmd = lockwatch_command();
            cmd.args(["--redis", &server.url(), "--job", job]);
            workers.push((job, node, WorkerProcess::spawn(worker_args(&mut cmd, node, "3s", &[], "sleep 1000"))));
        }
    }
    for job in jobs {
        eventually("each job running", Duration::from_secs(15), || holder_of(&mut c, job)).await;
    }
    let hook = Robot::start(Play::Webhook);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(dir.path(), &[(&hook, "")]);
    let log = dir.path().join("s.log");
    let port = free_port();
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", &server.url(), "--job", "outbound,inbound,stock", "--interval", "200ms", "serve"])
        .args(["--node", "serve-1", "--robots"])
        .arg(&file)
        .args(["--metrics", &format!("127.0.0.1:{port}")])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let _s = WorkerProcess::spawn(&mut cmd);
    eventually("every job's first look in the metrics", Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
        let (_, _, body) = http_get(port, "/metrics");
        jobs.iter()
            .all(|job| body.contains(&format!("lockwatch_job_state{{job=\"{job}\",state=\"running\"}} 1")))
            .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    let holder = holder_of(&mut c, "inbound").unwrap();
    let pid = workers.iter().find(|(j, n, _)| *j == "inbound" && *n == holder).map(|w| w.2.pid()).unwrap();
    // SAFETY: kill(2) on a worker this test started.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    eventually("the failover's message", Duration::from_secs(15), || hook.taken().first().cloned()).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let taken = hook.taken();
    println!("{:#?}", taken.iter().map(|t| t.body.clone()).collect::<Vec<_>>());
    assert_eq!(taken.len(), 1, "one message: {taken:#?}\n{}", log_of(&log));
    assert_eq!(taken[0].body["event"], "failover");
    assert_eq!(taken[0].body["job"], "inbound");
    let (_, _, text) = http_get(port, "/metrics");
    for job in jobs {
        let failovers = if job == "inbound" { 1 } else { 0 };
        assert!(text.contains(&format!("lockwatch_failovers_total{{job=\"{job}\"}} {failovers}")), "{job}: {text}");
        assert!(text.contains(&format!("lockwatch_lock_held{{job=\"{job}\"}} 1")), "{job}: {text}");
    }
    drop(workers);
}

/// A death nobody takes on: the first-line robot is told at once, and the
/// escalation robot (`escalate_after = "3s"`) once, 3 s later, naming the
/// robot told first, by the other of two serve processes when the one that
/// posted the death is killed right after. Then a second death acknowledged
/// (`lockwatch ack`) before those 3 s: no escalation. Then a third death, a
/// repeat within the window (counted; only webhooks get it): escalated all
/// the same.
#[tokio::test]
async fn a_death_nobody_takes_on_is_escalated_once_and_an_ack_before_stops_it() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let first = Robot::start(Play::Webhook);
    let lead = Robot::start(Play::Webhook);
    let dir = tempfile::tempdir().unwrap();
    let file = robots_file(dir.path(), &[(&first, "name = \"warehouse\""), (&lead, "escalate_after = \"3s\"")]);
    let (log1, log2) = (dir.path().join("s1.log"), dir.path().join("s2.log"));
    let mut serves = [
        ("serve-1", serve(&url, "serve-1", &file, &log1, &[])),
        ("serve-2", serve(&url, "serve-2", &file, &log2, &[])),
    ];
    serves_ready(&mut c, 2).await;
    let logs = || format!("{}{}", log_of(&log1), log_of(&log2));

    for round in ["nobody on it, its poster killed", "alice on it", "a repeat"] {
        if round == "a repeat" {
            let out = lockwatch(&url, &["unack", "--user", "alice"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        let mut worker = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "2s", &[], "exec sleep 600"));
        eventually("the job to run", Duration::from_secs(15), || holder_of(&mut c, "outbound")).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let (told_before, escalated_before) = (first.taken().len(), lead.taken().len());
        worker.kill9_with_reaper();
        // A webhook gets each event, a repeat counted in the window too.
        let died = eventually("the death's message", Duration::from_secs(20), || {
            first.taken().into_iter().skip(told_before).find(|g| g.body["event"] == "died")
        })
        .await;
        if round == "nobody on it, its poster killed" {
            // The serve process that claimed the death goes; the other escalates.
            let claims: Vec<String> = redis::cmd("KEYS").arg("{outbound}:posted:died:*").query(&mut c).unwrap();
            assert_eq!(claims.len(), 1, "{claims:?}");
            let by: String = redis::cmd("HGET").arg(&claims[0]).arg(claim::BY).query(&mut c).unwrap();
            serves.iter_mut().find(|(name, _)| *name == by).map(|(_, s)| s.kill9()).unwrap();
        }
        if round == "alice on it" {
            let out = lockwatch(&url, &["ack", "--user", "alice", "--note", "restarting srv-a"]);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        // The escalation is due 3 s after the message; wait past it.
        tokio::time::sleep(Duration::from_secs(6)).await;
        let escalated: Vec<_> = lead.taken().into_iter().skip(escalated_before).collect();
        let bodies: Vec<_> = escalated.iter().map(|g| g.body.clone()).collect();
        if round == "alice on it" {
            assert!(escalated.is_empty(), "{round}: escalated although alice is on it: {bodies:#?}");
            continue;
        }
        assert_eq!(escalated.len(), 1, "{round}: one escalation: {bodies:#?}\n{}", logs());
        let e = &escalated[0];
        assert_eq!((e.body["event"].as_str(), e.body["after_ms"].as_u64()), (Some("escalated"), Some(3_000)));
        assert_eq!(e.body["incident"]["event"], "died");
        assert!(e.body["told"][0].as_str().unwrap().contains("\"warehouse\""), "{}", e.body);
        let late = e.at.duration_since(died.at);
        assert!(late >= Duration::from_millis(2_900), "escalated {late:?} after the message");
        assert!(first.taken().iter().all(|g| g.body["event"] != "escalated"), "the first line is not told again");
    }
}
