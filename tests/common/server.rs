//! The one guard for a Redis process a test starts, after redis-rs's
//! `redis-test` server: a `redis-server` or `redis-sentinel` on a loopback
//! port of its own with its log in a directory of the test's, waited for
//! until it answers, killed and reaped on drop, and its log printed when the
//! test fails. [`RedisServer`] is a lone server in a temp dir of its own;
//! the Sentinel and Cluster topologies (`topology.rs`) are made of
//! [`RedisProcess`]es.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{free_port, wait};

/// One `redis-server` or `redis-sentinel` process of a test.
pub struct RedisProcess {
    /// Names the process in failure output ("redis-server", "primary", "sentinel 2", …).
    pub name: String,
    pub port: u16,
    child: Option<Child>,
    log: PathBuf,
}

impl RedisProcess {
    /// Starts `program` in `dir` on `port`, with the arguments `args(port,
    /// log)` gives, and waits until it answers PING. When the port (or a
    /// cluster node's bus port) was taken between choosing and binding it,
    /// tries again on a port from `pick`.
    pub fn start(
        name: &str,
        program: &str,
        dir: &Path,
        port: u16,
        pick: fn() -> u16,
        mut args: impl FnMut(u16, &Path) -> Vec<String>,
    ) -> RedisProcess {
        let log = dir.join(format!("{}.log", name.replace(' ', "-")));
        let mut port = port;
        for _ in 0..5 {
            let _ = std::fs::remove_file(&log);
            let args = args(port, &log);
            let child = Command::new(program)
                .args(&args)
                .current_dir(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{program} must be installed (see scripts/setup-test-deps.sh): {e}"));
            let mut process = RedisProcess { name: name.to_string(), port, child: Some(child), log: log.clone() };
            // A server with only a TLS port does not answer a plain PING:
            // its test waits for it over TLS.
            if args.iter().any(|a| a == "--tls-port") || process.wait_answering() {
                return process;
            }
            port = pick();
        }
        panic!("{name} ({program}) would not start; see {}", log.display());
    }

    /// True once it answers PING (or asks for a password first); false if
    /// it exited because a port was taken.
    fn wait_answering(&mut self) -> bool {
        let port = self.port;
        let child = self.child.as_mut().expect("just started");
        let answered = wait::within(Duration::from_secs(10), || {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(Err(status));
            }
            let mut conn = connect(port).ok()?;
            let pong: redis::RedisResult<String> = redis::cmd("PING").query(&mut conn);
            (pong.is_ok() || pong.is_err_and(|e| e.code() == Some("NOAUTH"))).then_some(Ok(()))
        });
        match answered {
            Some(Ok(())) => true,
            Some(Err(status)) => {
                self.child = None;
                let text = std::fs::read_to_string(&self.log).unwrap_or_default();
                assert!(text.contains("in use"), "{} exited ({status}): {text}", self.name);
                false
            }
            None => panic!("{} did not answer on {}: {}", self.name, self.port, self.log_tail(40)),
        }
    }

    /// SIGKILL, then reap it (a killed child stays a zombie otherwise).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Its process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        self.kill();
        // The log's temp dir goes with the test's guard: show it while it still exists.
        if std::thread::panicking() {
            eprintln!("---- {} (port {}) log, last lines ----\n{}", self.name, self.port, self.log_tail(30));
        }
    }
}

/// A plain connection to the server on `port`, with a read timeout so that
/// a test never hangs on a dead or frozen one.
pub fn connect(port: u16) -> redis::RedisResult<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}"))?;
    let conn = client.get_connection_with_timeout(Duration::from_millis(500))?;
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    Ok(conn)
}

/// The arguments of a `redis-server` on `port` with its data in `dir`
/// (created) and its log in `log`: loopback only, no persistence.
pub fn server_args(port: u16, log: &Path, dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    [
        "--port",
        &port.to_string(),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &dir.display().to_string(),
        "--logfile",
        &log.display().to_string(),
    ]
    .map(String::from)
    .to_vec()
}

/// A `redis-server` of the test's own, with its data and log in a temp dir.
pub struct RedisServer {
    pub port: u16,
    process: Option<RedisProcess>,
    dir: tempfile::TempDir,
    /// Given after the usual arguments, so they may override them.
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
        let extra = extra.iter().map(|s| s.to_string()).collect();
        let mut server = RedisServer { port: free_port(), process: None, dir, extra };
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

    /// Starts it on `self.port`, or on another free port if that was taken meanwhile.
    fn spawn(&mut self) {
        let dir = self.dir.path();
        let process = RedisProcess::start("redis-server", "redis-server", dir, self.port, free_port, |port, log| {
            let mut args = server_args(port, log, dir);
            args.extend(self.extra.iter().cloned());
            args
        });
        self.port = process.port;
        self.process = Some(process);
    }

    /// Kills the server at once (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.kill();
        }
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(RedisProcess::pid)
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
