//! Test support: a real `redis-server` on a free port, killed on drop, and
//! helpers that write a job's keys the way workers, Redisson and
//! supervisors do.
#![allow(dead_code)]

pub mod journal;
pub mod proxy;
pub mod spy;
pub mod topology;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of the test's own, with its data and log in a temp dir.
pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
    extra: Vec<String>,
}

impl RedisServer {
    /// Starts a server on a free loopback port.
    pub fn start() -> RedisServer {
        RedisServer::with_args(&[])
    }

    /// Starts a server with extra `redis-server` arguments.
    pub fn with_args(extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        let mut server =
            RedisServer { port: free_port(), child: None, dir, extra: extra.iter().map(|s| s.to_string()).collect() };
        server.spawn();
        server
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }

    pub fn conn(&self) -> redis::Connection {
        self.client().get_connection().unwrap()
    }

    fn spawn(&mut self) {
        for _ in 0..5 {
            let log = self.dir.path().join("redis.log");
            let _ = std::fs::remove_file(&log);
            let mut cmd = Command::new("redis-server");
            cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(self.dir.path())
                .arg("--logfile")
                .arg(&log)
                .args(&self.extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            self.child = Some(cmd.spawn().expect("redis-server must be installed (see scripts/setup-test-deps.sh)"));
            if self.extra.iter().any(|a| a == "--tls-port") || self.wait_ready(&log) {
                return;
            }
            // The port was taken between choosing and binding it: take another.
            self.port = free_port();
        }
        panic!("redis-server would not start; see its log in {}", self.dir.path().display());
    }

    /// True once the server answers PING; false if it exited because its port was taken.
    fn wait_ready(&mut self, log: &PathBuf) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let client = self.client();
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(_)) = child.try_wait()
            {
                let text = std::fs::read_to_string(log).unwrap_or_default();
                assert!(text.contains("in use"), "redis-server exited: {text}");
                return false;
            }
            if let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_millis(200)) {
                let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut conn);
                if pong.is_ok() || pong.as_ref().is_err_and(|e| e.code() == Some("NOAUTH")) {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("redis-server did not start on {}: {}", self.port, std::fs::read_to_string(log).unwrap_or_default());
    }

    /// Kills the server at once (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a paused server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        if let Some(pid) = self.pid() {
            // SAFETY: kill(2) on the pid of our own child, which we have not reaped.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
    }

    /// Starts it again on the same port, empty (a snapshot taken is deleted).
    pub fn restart(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(self.dir.path().join("dump.rdb"));
        self.spawn();
    }

    /// Kills it and starts it again on the same port from its last
    /// snapshot (`SAVE`), as a restart with persistence does.
    pub fn restart_from_snapshot(&mut self) {
        self.kill();
        self.spawn();
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
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
        .arg(&[("node", node), ("host", "test-host"), ("lock_field", field), ("state", state)])
        .arg(&[("fence", fence as u64), ("beat_ms", now - age_ms), ("started_ms", now - age_ms - 1), ("pid", 1)])
        .query(conn)
        .unwrap();
    let _: () = redis::cmd("SADD").arg(format!("{{{job}}}:nodes")).arg(node).query(conn).unwrap();
}

/// Sets a supervisor's flag as the CLI would, and registers the user.
pub fn flag(conn: &mut redis::Connection, job: &str, user: &str, on: bool) {
    let now = redis_ms(conn);
    let _: () = redis::cmd("HSET")
        .arg(format!("{{{job}}}:enabled:{user}"))
        .arg("on")
        .arg(if on { "1" } else { "0" })
        .arg("time")
        .arg(now)
        .arg("host")
        .arg("pc-test")
        .query(conn)
        .unwrap();
    let _: () = redis::cmd("SADD").arg(format!("{{{job}}}:users")).arg(user).query(conn).unwrap();
}

/// Waits until `check` holds, or fails naming `what`.
pub async fn eventually<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The major version of the server behind `conn` (Valkey says 7).
pub fn redis_major(conn: &mut redis::Connection) -> u32 {
    let info: String = redis::cmd("INFO").arg("server").query(conn).unwrap();
    let version = info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap();
    version.split('.').next().unwrap().parse().unwrap()
}

/// Runs the `lockwatch` binary against `url`, with no URL from the environment.
pub fn lockwatch(url: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_lockwatch"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .arg("--redis")
        .arg(url)
        .args(args)
        .output()
        .unwrap()
}

/// Registers 3,000 supervisors (all off) and 2,000 servers long gone (half
/// without a heartbeat left), then enables the one supervisor that a single
/// `SSCAN` page from cursor 0 misses; returns that supervisor's name.
pub fn crowd(c: &mut redis::Connection) -> String {
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.sadd("{outbound}:users", format!("user{i}")).ignore();
        pipe.hset_multiple(format!("{{outbound}}:enabled:user{i}"), &[("on", "0"), ("time", "1"), ("host", "pc")])
            .ignore();
    }
    for i in 0..2000 {
        pipe.sadd("{outbound}:nodes", format!("old{i}")).ignore();
        if i % 2 == 0 {
            pipe.hset_multiple(format!("{{outbound}}:node:old{i}"), &[("state", "idle"), ("beat_ms", "1")]).ignore();
        }
    }
    let _: () = pipe.query(c).unwrap();
    let (_, first_page): (u64, Vec<String>) =
        redis::cmd("SSCAN").arg("{outbound}:users").arg(0).arg("COUNT").arg(1000).query(c).unwrap();
    let enabled = (0..3000).map(|i| format!("user{i}")).find(|u| !first_page.contains(u)).unwrap();
    let _: () = redis::cmd("HSET").arg(format!("{{outbound}}:enabled:{enabled}")).arg("on").arg("1").query(c).unwrap();
    enabled
}
