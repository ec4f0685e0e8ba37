//! `lockwatch demo` as a real process: a worker killed with `kill -9` is
//! reaped at once and its end is told, the job it ran moves to the other
//! at once, as the demo says; Ctrl-C leaves nothing behind.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::procs::{ProcessInfo, Seen};
use common::wait;

struct Demo {
    child: Child,
    stderr: Arc<Mutex<String>>,
    seen: Seen,
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.seen.kill_left();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Demo {
    fn start() -> Demo {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lockwatch"))
            .arg("demo")
            .env_remove("LOCKWATCH_REDIS_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = sink.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        Demo { child, stderr, seen: Seen::default() }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits for `check` to give a value, recording the processes meanwhile.
    fn wait_for<T>(&mut self, what: &str, mut check: impl FnMut(&Demo) -> Option<T>) -> T {
        let timeout = Duration::from_secs(30);
        wait::within(timeout, || {
            self.seen.record(self.child.id() as i32);
            check(self)
        })
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}; the demo said:\n{}", self.stderr()))
    }
}

/// The pid the demo printed for `node` ("wh-east-1 (pid 123)").
fn pid_of(text: &str, node: &str) -> Option<i32> {
    let at = text.find(&format!("{node} (pid "))? + node.len() + " (pid ".len();
    text[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

#[test]
fn a_killed_demo_worker_is_reaped_at_once_and_its_end_is_told() {
    let mut demo = Demo::start();
    let east = demo.wait_for("the demo's workers", |d| pid_of(&d.stderr(), "wh-east-1"));
    let worker = ProcessInfo::read(east).expect("the worker runs");

    // SAFETY: kill(2) on the worker's pid, which the demo just printed and which still runs.
    unsafe {
        libc::kill(east, libc::SIGKILL);
    }
    demo.wait_for("the killed worker to be reaped (no zombie left)", |_| {
        ProcessInfo::read(east).is_none_or(|now| now.start != worker.start).then_some(())
    });
    let told = demo.wait_for("the demo to tell how the worker ended", |d| {
        d.stderr().lines().find(|l| l.contains("wh-east-1") && l.contains("signal 9")).map(str::to_owned)
    });
    println!("the demo said: {told}");

    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(demo.child.id() as i32, libc::SIGINT);
    }
    wait::until("the demo to end after Ctrl-C", Duration::from_secs(30), || demo.child.try_wait().unwrap());
    let left = demo.seen.wait_gone(Duration::from_secs(5));
    assert!(left.is_empty(), "left running after Ctrl-C: {left:#?}");
}

/// The demo's Redis URL ("Redis at redis://127.0.0.1:PORT,").
fn url_of(text: &str) -> Option<String> {
    let at = text.find("Redis at ")? + "Redis at ".len();
    Some(text[at..].split(|c: char| c == ',' || c.is_whitespace()).next()?.to_owned())
}

/// The server that runs the job, as `lockwatch status --json` names it.
fn running_on(url: &str) -> Option<String> {
    let out = common::lockwatch(url, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    (status["state"] == "running").then(|| status["holder"]["node"].as_str().map(str::to_owned))?
}

#[test]
fn a_killed_demo_holder_hands_the_job_over_at_once_as_the_demo_says() {
    let mut demo = Demo::start();
    let (url, east, west) = demo.wait_for("the demo's address and workers", |d| {
        let text = d.stderr();
        Some((url_of(&text)?, pid_of(&text, "wh-east-1")?, pid_of(&text, "wh-west-1")?))
    });
    let holder = demo.wait_for("a server to run the job", |_| running_on(&url));
    let (killed, other) = if holder == "wh-east-1" { (east, "wh-west-1") } else { (west, "wh-east-1") };

    let started = std::time::Instant::now();
    // SAFETY: kill(2) on the holder's pid, which the demo printed and which still runs.
    unsafe {
        libc::kill(killed, libc::SIGKILL);
    }
    demo.wait_for("the other server to run the job", |_| (running_on(&url).as_deref() == Some(other)).then_some(()));
    let took = started.elapsed();
    // The demo's lease is 10 s: half of it is far more than a handover by the reaper takes.
    assert!(took < Duration::from_secs(5), "{other} took over after {took:?}: the lease ran out");
    let told = demo.wait_for("the demo to tell who takes over", |d| {
        d.stderr()
            .lines()
            .find(|l| l.contains(&format!("worker {holder}")) && l.contains("signal 9"))
            .map(str::to_owned)
    });
    assert!(told.contains(&format!("{other} takes over at once")), "{told}");
    println!("{other} ran the job {took:?} after the kill; the demo said: {told}");

    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(demo.child.id() as i32, libc::SIGINT);
    }
    wait::until("the demo to end after Ctrl-C", Duration::from_secs(30), || demo.child.try_wait().unwrap());
}
