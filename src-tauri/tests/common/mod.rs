//! Support for the app's end-to-end tests: an Xvfb display of the test's
//! own, the CLI binary, and running a driver script in a private D-Bus
//! session.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// An Xvfb display of the test's own, killed on drop.
pub struct Display {
    pub number: u32,
    child: Child,
}

impl Display {
    /// Starts Xvfb on the first display number it can take (tests run side
    /// by side). Xvfb itself clears lock files left by a display server
    /// that is gone.
    pub fn start() -> Display {
        for number in 140..240 {
            let socket = format!("/tmp/.X11-unix/X{number}");
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
                if let Ok(Some(_)) = child.try_wait() {
                    break; // taken by a live server: try the next number
                }
                // Ours once its lock file names it: another test's Xvfb may
                // answer on this number while ours is still finding out.
                let ours = std::fs::read_to_string(format!("/tmp/.X{number}-lock"))
                    .is_ok_and(|pid| pid.trim().parse() == Ok(child.id()));
                if ours && std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                    return Display { number, child };
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
        // SIGTERM lets Xvfb remove its lock file and socket.
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `lockwatch` CLI beside the tray binary, built when missing.
pub fn lockwatch_cli(tray: &Path) -> PathBuf {
    let cli = tray.with_file_name("lockwatch");
    if !cli.exists() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let status =
            Command::new(env!("CARGO")).args(["build", "--bin", "lockwatch"]).current_dir(root).status().unwrap();
        assert!(status.success(), "cannot build the lockwatch CLI");
    }
    cli
}

/// Runs `tests/e2e/<script>` with `/usr/bin/python3` (Debian's, which has
/// the D-Bus and GObject bindings) in `dbus-run-session` on a fresh display.
///
/// A desktop session has moving parts outside lockwatch (the WebDriver
/// bridge, the bus): a run that fails is run once more, and the test fails
/// only when both runs fail. Both outputs are printed.
pub fn run_e2e(script: &str, env: &[(&str, &std::ffi::OsStr)]) -> String {
    match run_once(script, env) {
        Ok(stdout) => stdout,
        Err(first) => {
            println!("{script}: first run failed, running it once more");
            run_once(script, env).unwrap_or_else(|second| panic!("{script} failed twice:\n{first}\n---\n{second}"))
        }
    }
}

fn run_once(script: &str, env: &[(&str, &std::ffi::OsStr)]) -> Result<String, String> {
    let tray = Path::new(env!("CARGO_BIN_EXE_lockwatch-tray"));
    let cli = lockwatch_cli(tray);
    let display = Display::start();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The bus starts desktop services on demand (portal, keyring,
    // accessibility); give them a home of their own, removed afterwards.
    let home = std::env::temp_dir().join(format!("lockwatch-e2e-home-{}-{script}", std::process::id()));
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let mut cmd = Command::new("dbus-run-session");
    cmd.env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CACHE_HOME", home.join(".cache"));
    cmd.args(["--", "/usr/bin/python3"])
        .arg(manifest.join("tests/e2e").join(script))
        .env("DISPLAY", format!(":{}", display.number))
        .env("LOCKWATCH_BIN", &cli)
        .env("LOCKWATCH_TRAY_BIN", tray)
        .env("ICONS", manifest.join("../icons"))
        .env_remove("LOCKWATCH_REDIS_URL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("dbus-run-session must be installed (bash scripts/setup-test-deps.sh)");
    let _ = std::fs::remove_dir_all(&home);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() { Ok(stdout) } else { Err(stdout) }
}

/// tauri-driver on PATH or in cargo's bin dir (installed by
/// scripts/setup-test-deps.sh), for scripts that drive the webview.
pub fn tauri_driver() -> PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(cargo_home.map(|h| h.join("bin")))
        .map(|dir| dir.join("tauri-driver"))
        .find(|p| p.exists())
        .expect("tauri-driver is missing: run bash scripts/setup-test-deps.sh")
}
