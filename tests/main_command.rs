//! The README's main command, `bash scripts/run.sh`, run for real the way a
//! newcomer runs it: a clean environment, no desktop, Ctrl-C at the end.
//! (The desktop half runs in `src-tauri/tests/main_command.rs`.)

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::procs::{self, Seen};
use common::wait;

/// The main command started in a process group of its own, as a shell
/// starts a foreground job; killed with all it started if the test fails.
struct MainCommand {
    child: Child,
    output: Arc<Mutex<String>>,
    seen: Seen,
}

impl MainCommand {
    fn start() -> MainCommand {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut cmd = Command::new("bash");
        cmd.arg("scripts/run.sh").current_dir(root).env_clear();
        // Only what a login shell on a fresh machine has, plus where Rust lives.
        for var in ["PATH", "HOME", "CARGO_HOME", "RUSTUP_HOME", "CARGO_TARGET_DIR"] {
            if let Some(value) = std::env::var_os(var) {
                cmd.env(var, value);
            }
        }
        let (reader, writer) = std::io::pipe().unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(writer.try_clone().unwrap())
            .stderr(writer)
            .process_group(0)
            .spawn()
            .unwrap();
        drop(cmd); // closes our copies of the pipe's write end, so EOF comes when run.sh's side is done
        let output = Arc::new(Mutex::new(String::new()));
        let sink = output.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(reader);
            let mut line = String::new();
            while lines.read_line(&mut line).is_ok_and(|n| n > 0) {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        MainCommand { child, output, seen: Seen::default() }
    }

    fn output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits for `what` in the output, recording the processes meanwhile.
    fn wait_for(&mut self, what: &str, timeout: Duration, check: impl Fn(&str, &Seen) -> bool) -> Duration {
        let start = Instant::now();
        wait::within(timeout, || {
            self.seen.record(self.child.id() as i32);
            if check(&self.output(), &self.seen) {
                return Some(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("run.sh ended ({status}) before {what}:\n{}", self.output());
            }
            None
        })
        .unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}:\n{}", self.output()));
        start.elapsed()
    }

    /// Ctrl-C: SIGINT to the whole foreground process group.
    fn ctrl_c(&mut self) {
        self.seen.record(self.child.id() as i32);
        // SAFETY: kill(2) on the process group this test created for run.sh.
        unsafe {
            libc::kill(-(self.child.id() as i32), libc::SIGINT);
        }
    }
}

impl Drop for MainCommand {
    fn drop(&mut self) {
        self.seen.kill_left();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn port_of(output: &str) -> Option<u16> {
    let at = output.find("redis://127.0.0.1:")? + "redis://127.0.0.1:".len();
    output[at..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
}

#[test]
fn run_sh_without_a_desktop_shows_the_job_running_and_ctrl_c_stops_everything_it_started() {
    let started = Instant::now();
    let mut run = MainCommand::start();
    let built =
        run.wait_for("cargo build to finish", Duration::from_secs(1800), |out, _| out.contains("Finished `dev`"));
    let running = run.wait_for("the watch showing the job running", Duration::from_secs(120), |out, _| {
        out.lines().any(|l| l.starts_with("outbound: RUNNING") || l.contains(" started outbound"))
    });
    run.wait_for("the sample job's process", Duration::from_secs(30), |_, seen| {
        seen.all().any(|p| p.cmdline.contains("shipped outbound order") && p.running())
    });
    let out = run.output();
    println!(
        "run.sh: cargo build done after {:.1} s, the job shown running {:.1} s later ({:.1} s in all)",
        built.as_secs_f64(),
        running.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    assert!(out.contains("Building lockwatch and its tray app"), "run.sh must say what it builds:\n{out}");
    assert!(out.contains("No desktop"), "run.sh must say why it shows the watch:\n{out}");
    let port = port_of(&out).expect("run.sh prints the demo's Redis URL");
    let seen: Vec<String> = run.seen.all().map(|p| p.cmdline.clone()).collect();
    for part in [
        "lockwatch demo",
        "redis-server",
        "worker --node wh-east-1",
        "worker --node wh-west-1",
        "shipped outbound order",
        " watch",
    ] {
        assert!(seen.iter().any(|c| c.contains(part)), "no process running {part:?} among {seen:#?}");
    }
    let demo = run.seen.all().find(|p| p.cmdline.ends_with("lockwatch demo")).map(|p| p.pid).unwrap();

    run.ctrl_c();
    let status = wait::within(Duration::from_secs(60), || run.child.try_wait().unwrap())
        .unwrap_or_else(|| panic!("run.sh did not end within 60 s of Ctrl-C:\n{}", run.output()));
    println!("{}", run.output());
    let left = run.seen.wait_gone(Duration::from_secs(5));
    assert!(left.is_empty(), "left running after Ctrl-C: {left:#?}\n{}", run.output());
    let strays: Vec<_> =
        procs::all().into_iter().filter(|p| p.running() && p.cmdline.contains(&port.to_string())).collect();
    assert!(strays.is_empty(), "still using the demo's port {port}: {strays:#?}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "the demo's Redis still listens on {port}");
    let dir = std::env::temp_dir().join(format!("lockwatch-demo-{demo}"));
    assert!(!dir.exists(), "the demo's temp dir {} is left", dir.display());
    println!(
        "run.sh ended with {status} after Ctrl-C; nothing it started is left ({} processes checked)",
        run.seen.all().count()
    );
}
