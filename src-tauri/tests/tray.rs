//! The real tray app under Xvfb and a private D-Bus session, driven by
//! `tests/e2e/tray.py` (a fake tray host and notification daemon, a real
//! Redis and real workers). See that script for the checks.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An Xvfb display of the test's own, killed on drop.
struct Display {
    number: u32,
    child: Child,
}

impl Display {
    fn start() -> Display {
        for number in 140..200 {
            if Path::new(&format!("/tmp/.X11-unix/X{number}")).exists()
                || Path::new(&format!("/tmp/.X{number}-lock")).exists()
            {
                continue;
            }
            let mut child = Command::new("Xvfb")
                .args([
                    format!(":{number}"),
                    "-screen".into(),
                    "0".into(),
                    "1280x800x24".into(),
                    "-nolisten".into(),
                    "tcp".into(),
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("Xvfb must be installed (bash scripts/setup-test-deps.sh)");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if Path::new(&format!("/tmp/.X11-unix/X{number}")).exists() {
                    return Display { number, child };
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("no free X display for Xvfb");
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `lockwatch` CLI beside the tray binary, built when missing.
fn lockwatch_cli(tray: &Path) -> PathBuf {
    let cli = tray.with_file_name("lockwatch");
    if !cli.exists() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let status =
            Command::new(env!("CARGO")).args(["build", "--bin", "lockwatch"]).current_dir(root).status().unwrap();
        assert!(status.success(), "cannot build the lockwatch CLI");
    }
    cli
}

#[test]
fn the_tray_tells_the_truth_on_a_real_session_bus() {
    let tray = Path::new(env!("CARGO_BIN_EXE_lockwatch-tray"));
    let cli = lockwatch_cli(tray);
    let display = Display::start();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("dbus-run-session")
        .args(["--", "/usr/bin/python3"])
        .arg(manifest.join("tests/e2e/tray.py"))
        .env("DISPLAY", format!(":{}", display.number))
        .env("LOCKWATCH_BIN", &cli)
        .env("LOCKWATCH_TRAY_BIN", tray)
        .env("ICONS", manifest.join("../icons"))
        .env_remove("LOCKWATCH_REDIS_URL")
        .output()
        .expect("dbus-run-session must be installed (bash scripts/setup-test-deps.sh)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the tray end-to-end checks failed");
    assert!(stdout.contains("6 passed, 0 failed"), "{stdout}");
}
