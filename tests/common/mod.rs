//! Test support, shared by every test file: the opening most tests share
//! ([`server_with_flag`]); `lockwatch worker` processes killed on drop;
//! helpers that write a job's keys the way workers, Redisson and supervisors
//! do; and, in the modules, the one Redis guard (`server`: a real
//! `redis-server` on a free port, killed on drop, its log shown when a test
//! fails), the one way to wait (`wait`), the Sentinel and Cluster
//! topologies, the fault proxy, the journaling job with the no-overlap
//! check, a failover spy, the processes a command started and the loopback
//! chat robots `lockwatch serve` posts to.
#![allow(dead_code)]

pub mod journal;
pub mod procs;
pub mod proxy;
pub mod robots;
pub mod server;
pub mod spy;
pub mod topology;
pub mod unit;
pub mod wait;

// What nearly every test file uses, at hand with `use common::*`.
#[allow(unused_imports)]
pub use lockwatch::schema::{ack, beat, claim, entry, flag, kind};
pub use server::RedisServer;
pub use wait::eventually;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lockwatch::watcher::Watcher;
use lockwatch::{EventKind, State};

/// The opening most tests share: a server of the test's own, its URL, and a
/// connection to it on which `user`'s flag for the job `outbound` is set
/// (`on` or off) as the CLI would, the user registered.
pub fn server_with_flag(user: &str, on: bool) -> (RedisServer, String, redis::Connection) {
    let server = RedisServer::start();
    let url = server.url();
    let mut conn = server.conn();
    flag(&mut conn, "outbound", user, on);
    (server, url, conn)
}

/// A `lockwatch worker` process (or any child of the test's), killed and
/// reaped when the test ends however it ends.
pub struct WorkerProcess(pub Child);

impl WorkerProcess {
    /// Starts `cmd`.
    pub fn spawn(cmd: &mut Command) -> WorkerProcess {
        WorkerProcess(cmd.spawn().unwrap())
    }

    /// `kill -9`, and reaps it.
    pub fn kill9(&mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }

    /// `kill -9` of the worker and of its job's reaper together, the case
    /// only the lease covers (a worker killed alone has its reaper let go
    /// of the lock at once): frozen first, so its reaper dies before it.
    /// Reaps it.
    pub fn kill9_with_reaper(&mut self) {
        let reaper = procs::all().into_iter().find(|p| p.ppid == self.pid() && p.cmdline.contains("lockwatch"));
        // SAFETY: signals to our own child, not reaped yet, and to its reaper.
        unsafe {
            libc::kill(self.pid(), libc::SIGSTOP);
            if let Some(reaper) = reaper {
                libc::kill(reaper.pid, libc::SIGKILL);
            }
        }
        self.kill9();
    }

    /// SIGKILL of the worker, its reaper and its job's whole tree together,
    /// as systemd kills what is left of the unit when its main process dies
    /// (`KillMode=mixed`): nothing of it is left to let go of the lock.
    /// Reaps it.
    pub fn kill9_unit(&mut self) {
        procs::kill_whole_tree(self.pid());
        self.0.wait().unwrap();
    }

    /// Asks it to stop (SIGTERM), as systemd does.
    pub fn sigterm(&self) {
        // SAFETY: kill(2) on the pid of our own child, which we have not reaped.
        unsafe { libc::kill(self.pid(), libc::SIGTERM) };
    }

    pub fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for WorkerProcess {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for WorkerProcess {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

/// The `lockwatch` binary, with no URL from the environment.
pub fn lockwatch_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    cmd.env_remove("LOCKWATCH_REDIS_URL");
    cmd
}

/// Makes `cmd` (`lockwatch` with its connection options) run `worker` for
/// `node` with `lease`, a stop grace of 1 s unless `extra` gives one, then
/// `extra`, and `sh -c script` as the job; its output discarded.
pub fn worker_args<'c>(cmd: &'c mut Command, node: &str, lease: &str, extra: &[&str], script: &str) -> &'c mut Command {
    cmd.args(["worker", "--node", node, "--lease", lease]);
    if !extra.contains(&"--stop-grace") {
        cmd.args(["--stop-grace", "1s"]);
    }
    cmd.args(extra).args(["--", "sh", "-c", script]).stdout(Stdio::null()).stderr(worker_log(node))
}

/// Where a test worker's log goes: nowhere, or
/// `$LOCKWATCH_TEST_LOGS/<test>/<node>.log` (appended) when that is set, to
/// see what the workers did in a failed run.
fn worker_log(node: &str) -> Stdio {
    let Some(dir) = std::env::var_os("LOCKWATCH_TEST_LOGS") else { return Stdio::null() };
    let test = std::thread::current().name().unwrap_or("main").replace("::", "-");
    let dir = Path::new(&dir).join(test);
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{node}.log"));
    std::fs::OpenOptions::new().create(true).append(true).open(path).map_or_else(|_| Stdio::null(), Stdio::from)
}

/// `lockwatch --redis <url> worker …` as [`worker_args`] makes it, not started.
pub fn worker_command(url: &str, node: &str, lease: &str, extra: &[&str], script: &str) -> Command {
    let mut cmd = lockwatch_command();
    cmd.args(["--redis", url]);
    worker_args(&mut cmd, node, lease, extra, script);
    cmd
}

/// Lets a stopped process (SIGSTOP) go on when the test ends however it ends.
pub struct Resume(pub i32);

impl Drop for Resume {
    fn drop(&mut self) {
        // SAFETY: kill(2) on a process the test started and stopped itself.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Redis `TIME` in ms.
pub fn redis_ms(conn: &mut redis::Connection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query(conn).unwrap();
    s * 1000 + us / 1000
}

/// Takes the lock exactly as Redisson's RLock does: hash field
/// `<uuid>:<thread-id>` → hold count, expiry = lease.
pub fn redisson_lock(conn: &mut redis::Connection, key: &str, field: &str, lease_ms: u64) {
    let _: () = redis::pipe().hincr(key, field, 1).ignore().pexpire(key, lease_ms as i64).ignore().query(conn).unwrap();
}

/// Writes a worker's heartbeat hash and registers the node.
pub fn beat(conn: &mut redis::Connection, job: &str, node: &str, field: &str, fence: i64, state: &str, age_ms: u64) {
    let now = redis_ms(conn);
    let key = format!("{{{job}}}:node:{node}");
    let _: () = redis::cmd("HSET")
        .arg(&key)
        .arg(&[(beat::NODE, node), (beat::HOST, "test-host"), (beat::LOCK_FIELD, field), (beat::STATE, state)])
        .arg(&[
            (beat::FENCE, fence as u64),
            (beat::BEAT_MS, now - age_ms),
            (beat::STARTED_MS, now - age_ms - 1),
            (beat::PID, 1),
        ])
        .query(conn)
        .unwrap();
    let _: () = redis::cmd("SADD").arg(format!("{{{job}}}:nodes")).arg(node).query(conn).unwrap();
}

/// Starts the fence counter (if there is none), as the demo does on its own
/// new Redis: the first start then does not wait a lease for an earlier
/// holder. For tests with a long lease that need a quick first start.
pub fn seed_fence(c: &mut redis::Connection) {
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(0).arg("NX").query(c).unwrap();
}

/// Redisson's `forceUnlock` of the job `outbound`'s lock: the lock deleted
/// and the unlock message sent, in one pipeline.
pub fn force_unlock(c: &mut redis::Connection) -> redis::RedisResult<()> {
    redis::pipe().del("{outbound}:lock").ignore().publish("redisson_lock__channel:{outbound}:lock", 0).ignore().query(c)
}

/// The node whose heartbeat names the lock's holder field, and its job's
/// pid as the heartbeat says, while one holds the lock.
pub fn holder_job(c: &mut redis::Connection) -> Option<(String, u32)> {
    let field: Option<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query::<Vec<String>>(c).ok()?.pop();
    let nodes: Vec<String> = redis::cmd("SMEMBERS").arg("{outbound}:nodes").query(c).ok()?;
    nodes.into_iter().find_map(|node| {
        let (lock_field, child): (Option<String>, Option<u32>) = redis::cmd("HMGET")
            .arg(format!("{{outbound}}:node:{node}"))
            .arg(beat::LOCK_FIELD)
            .arg(beat::CHILD_PID)
            .query(c)
            .ok()?;
        (lock_field.is_some() && lock_field == field).then_some(child.map(|pid| (node, pid))).flatten()
    })
}

/// alice's flag on and the fence counter at 0 (so the first start need not
/// wait a lease) on the primary at `port`, confirmed by its replica.
pub fn enabled_and_replicated(port: u16) {
    let mut c = server::connect(port).unwrap();
    flag(&mut c, "outbound", "alice", true);
    seed_fence(&mut c);
    let acked: u32 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut c).unwrap();
    assert_eq!(acked, 1);
}

/// Sets a supervisor's flag as the CLI would, and registers the user.
pub fn flag(conn: &mut redis::Connection, job: &str, user: &str, on: bool) {
    let now = redis_ms(conn);
    let _: () = redis::cmd("HSET")
        .arg(format!("{{{job}}}:enabled:{user}"))
        .arg(flag::ON)
        .arg(if on { "1" } else { "0" })
        .arg(flag::TIME)
        .arg(now)
        .arg(flag::HOST)
        .arg("pc-test")
        .query(conn)
        .unwrap();
    let _: () = redis::cmd("SADD").arg(format!("{{{job}}}:users")).arg(user).query(conn).unwrap();
}

/// Rewrites alice's flag of `outbound` (on, a new time each) as fast as
/// Redis takes it, for `hold` or until a write fails; returns how many.
pub fn flood_flag(conn: &mut redis::Connection, hold: std::time::Duration) -> u64 {
    let started = std::time::Instant::now();
    let mut written = 0u64;
    while started.elapsed() < hold {
        let mut pipe = redis::pipe();
        for _ in 0..500 {
            written += 1;
            pipe.cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::ON).arg(1).arg(flag::TIME).arg(written).ignore();
        }
        if pipe.query::<()>(conn).is_err() {
            break;
        }
    }
    written
}

/// One entry of the event stream of the job `outbound`.
pub struct StreamEvent {
    /// Its `type` field (empty if it has none).
    pub kind: String,
    /// Redis time of the entry (its stream id).
    pub ms: u64,
    pub fields: Vec<(String, String)>,
}

impl StreamEvent {
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The entries of `{outbound}:events`, oldest first.
pub fn stream_events(c: &mut redis::Connection) -> Vec<StreamEvent> {
    let reply: redis::streams::StreamRangeReply =
        redis::cmd("XRANGE").arg("{outbound}:events").arg("-").arg("+").query(c).unwrap();
    reply
        .ids
        .into_iter()
        .map(|entry| {
            let ms = entry.id.split('-').next().unwrap().parse().unwrap();
            let fields: Vec<(String, String)> =
                entry.map.into_iter().map(|(k, v)| (k, redis::from_redis_value::<String>(v).unwrap())).collect();
            let kind = fields.iter().find(|(k, _)| k == entry::TYPE).map(|(_, v)| v.clone()).unwrap_or_default();
            StreamEvent { kind, ms, fields }
        })
        .collect()
}

/// The major version of the server behind `conn` (Valkey says 7).
pub fn redis_major(conn: &mut redis::Connection) -> u32 {
    let info: String = redis::cmd("INFO").arg("server").query(conn).unwrap();
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap();
    version.split('.').next().unwrap().parse().unwrap()
}

/// Closes, from Redis's side, every connection process `pid` has to the
/// Redis behind `admin` (as a proxy's reset or an admin's `CLIENT KILL`
/// would); returns how many.
pub fn cut_connections(admin: &mut redis::Connection, pid: i32) -> usize {
    let ports = tcp_ports(pid, None);
    let mut cut = 0;
    for port in ports {
        let killed: redis::RedisResult<i64> =
            redis::cmd("CLIENT").arg("KILL").arg("ADDR").arg(format!("127.0.0.1:{port}")).query(admin);
        cut += usize::from(killed.is_ok());
    }
    cut
}

/// The local ports of process `pid`'s TCP connections (to `remote` only,
/// when given), from `/proc`.
pub fn tcp_ports(pid: i32, remote: Option<u16>) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']').map(str::to_owned))
        .collect();
    let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap();
    let port = |address: &str| u16::from_str_radix(address.split(':').nth(1)?, 16).ok();
    // Each line: sl local_address rem_address st … uid timeout inode.
    tcp.lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let inode = cols.get(9)?;
            let to = port(cols.get(2)?);
            if !inodes.iter().any(|i| i == inode) || remote.is_some_and(|r| to != Some(r)) {
                return None;
            }
            port(cols.get(1)?)
        })
        .collect()
}

/// Whether the `redis-server` on PATH has ACL selectors (Redis 7+, Valkey),
/// which a supervisor's writes to her own keys need; Redis 6.2 makes her
/// rules read-only (and has no functions or `--enable-debug-command`). When
/// not, says that `test` has nothing to check there.
pub fn has_selectors(test: &str) -> bool {
    let out = Command::new("redis-server").arg("--version").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().find_map(|w| w.strip_prefix("v=")).unwrap();
    let major: u32 = version.split('.').next().unwrap().parse().unwrap();
    let has = major >= 7;
    if !has {
        println!(
            "{test}: redis-server {version} has no ACL selectors, so a supervisor writes nothing of her own there: nothing to check"
        );
    }
    has
}

/// `lockwatch status --json` against `url`, with `extra` options: the
/// status as JSON and the exit code.
pub fn status_json(url: &str, extra: &[&str]) -> (serde_json::Value, i32) {
    let out = lockwatch(url, &[&["status", "--json"], extra].concat());
    let text = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (json, out.status.code().unwrap())
}

/// Runs the `lockwatch` binary against `url`, with no URL from the environment.
pub fn lockwatch(url: &str, args: &[&str]) -> Output {
    lockwatch_command().arg("--redis").arg(url).args(args).output().unwrap()
}

/// Runs `cmd` to its end: its output, and its stdout and stderr as one text.
pub fn run_capturing(cmd: &mut Command) -> (Output, String) {
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out, text)
}

/// The next push on a RESP2 subscriber connection, as strings
/// (`["smessage", channel, payload]`, `["sunsubscribe", channel, count]`),
/// within the connection's read timeout.
pub fn next_push(conn: &mut redis::Connection) -> Vec<String> {
    let value = conn.recv_response().expect("a push within the read timeout");
    let redis::Value::Array(items) = value else { panic!("not a push: {value:?}") };
    items
        .into_iter()
        .map(|item| match item {
            redis::Value::BulkString(b) => String::from_utf8(b).unwrap(),
            redis::Value::Int(n) => n.to_string(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// Every status a watcher published: when, the state, the reason.
pub type StatusLog = Arc<Mutex<Vec<(Instant, State, String)>>>;

/// Records every status the watcher publishes, with when, until the task is aborted.
pub fn record_statuses(watcher: &Watcher) -> (StatusLog, tokio::task::JoinHandle<()>) {
    let log: StatusLog = Arc::default();
    let mut rx = watcher.status();
    let into = log.clone();
    let task = tokio::spawn(async move {
        loop {
            if let Some(s) = rx.borrow_and_update().clone() {
                into.lock().unwrap().push((Instant::now(), s.state, s.reason.clone()));
            }
            if rx.changed().await.is_err() {
                break;
            }
        }
    });
    (log, task)
}

/// Every event a watcher told: when, what, why.
pub type EventLog = Arc<Mutex<Vec<(Instant, EventKind, String)>>>;

/// Records every event the watcher tells, with when, until the task is aborted.
pub fn record_events(watcher: &Watcher) -> (EventLog, tokio::task::JoinHandle<()>) {
    let log: EventLog = Arc::default();
    let mut rx = watcher.events();
    let into = log.clone();
    let task = tokio::spawn(async move {
        while let Ok(e) = rx.recv().await {
            into.lock().unwrap().push((Instant::now(), e.event, e.reason.clone()));
        }
    });
    (log, task)
}

/// One watcher's statuses and events, recorded until it is dropped.
pub struct Recorded {
    pub statuses: StatusLog,
    pub events: EventLog,
    tasks: [tokio::task::JoinHandle<()>; 2],
}

/// Records the statuses and events of each of `watchers`.
pub fn record_each(watchers: &[Watcher]) -> Vec<Recorded> {
    let each = |w: &Watcher| {
        let ((statuses, s), (events, e)) = (record_statuses(w), record_events(w));
        Recorded { statuses, events, tasks: [s, e] }
    };
    watchers.iter().map(each).collect()
}

impl Recorded {
    /// Whether its last status is `running`.
    pub fn running(&self) -> bool {
        self.statuses.lock().unwrap().last().is_some_and(|(_, s, _)| *s == State::Running)
    }

    /// Its statuses from `started` until `ended`, each a line: `+1.25s Running: why`.
    pub fn said_between(&self, started: Instant, ended: Instant) -> Vec<String> {
        let statuses = self.statuses.lock().unwrap();
        let since = statuses.iter().filter(|(t, ..)| (started..ended).contains(t));
        since.map(|(t, s, r)| format!("{:+.2}s {s:?}: {r}", t.duration_since(started).as_secs_f64())).collect()
    }
}

impl Drop for Recorded {
    fn drop(&mut self) {
        self.tasks.iter().for_each(tokio::task::JoinHandle::abort);
    }
}

/// Applies the rules `lockwatch acl --user USER` prints for this server (it
/// asks the server its version), as an admin would; returns what it said on stderr.
pub fn provision(server: &RedisServer, user: &str, password: &str) -> String {
    provision_with(server, user, password, &[])
}

/// [`provision`] with more arguments for `lockwatch acl`.
pub fn provision_with(server: &RedisServer, user: &str, password: &str, extra: &[&str]) -> String {
    provision_via(server, &server.url(), user, password, extra)
}

/// [`provision`] with `lockwatch acl` given `url` (another database of the server).
pub fn provision_at(server: &RedisServer, url: &str, user: &str, password: &str) -> String {
    provision_via(server, url, user, password, &[])
}

/// Sends each line of `lines` (what `lockwatch acl` prints) as redis-cli
/// reads a line: words, or "quoted words with spaces".
pub fn run_lines(conn: &mut redis::Connection, lines: &str) {
    for line in lines.lines() {
        let mut cmd = redis::Cmd::new();
        for (i, part) in line.split('"').enumerate() {
            if i % 2 == 1 {
                cmd.arg(part);
            } else {
                part.split_whitespace().for_each(|word| {
                    cmd.arg(word);
                });
            }
        }
        let _: () = cmd.query(conn).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
}

fn provision_via(server: &RedisServer, url: &str, user: &str, password: &str, extra: &[&str]) -> String {
    let out = lockwatch(url, &[&["acl", "--user", user], extra].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut admin = server.conn();
    run_lines(&mut admin, &String::from_utf8(out.stdout).unwrap());
    let _: () = redis::cmd("ACL").arg("SETUSER").arg(user).arg(format!(">{password}")).query(&mut admin).unwrap();
    // A supervisor may not load the read function she calls: `lockwatch acl`
    // did, as the admin, where it asked the server its version (a worker
    // does when it starts).
    if redis_major(&mut admin) >= 7 && extra.is_empty() {
        let libraries: Vec<redis::Value> = redis::cmd("FUNCTION").arg("LIST").query(&mut admin).unwrap();
        assert_eq!(libraries.len(), 1, "lockwatch acl loaded the read function");
    }
    String::from_utf8(out.stderr).unwrap()
}

/// Registers 3,000 supervisors (all off) and 2,000 servers long gone (half
/// without a heartbeat left), then enables the one supervisor that a single
/// `SSCAN` page from cursor 0 misses; returns that supervisor's name.
pub fn crowd(c: &mut redis::Connection) -> String {
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.sadd("{outbound}:users", format!("user{i}")).ignore();
        pipe.hset_multiple(
            format!("{{outbound}}:enabled:user{i}"),
            &[(flag::ON, "0"), (flag::TIME, "1"), (flag::HOST, "pc")],
        )
        .ignore();
    }
    for i in 0..2000 {
        pipe.sadd("{outbound}:nodes", format!("old{i}")).ignore();
        if i % 2 == 0 {
            pipe.hset_multiple(format!("{{outbound}}:node:old{i}"), &[(beat::STATE, "idle"), (beat::BEAT_MS, "1")])
                .ignore();
        }
    }
    let _: () = pipe.query(c).unwrap();
    let (_, first_page): (u64, Vec<String>) =
        redis::cmd("SSCAN").arg("{outbound}:users").arg(0).arg("COUNT").arg(1000).query(c).unwrap();
    let enabled = (0..3000).map(|i| format!("user{i}")).find(|u| !first_page.contains(u)).unwrap();
    let _: () =
        redis::cmd("HSET").arg(format!("{{outbound}}:enabled:{enabled}")).arg(flag::ON).arg("1").query(c).unwrap();
    enabled
}
