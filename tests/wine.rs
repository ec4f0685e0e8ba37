//! The Windows build of the `lockwatch` command (`lockwatch.exe`, made by
//! `scripts/build-windows.sh`) run under Wine against a real redis-server on
//! loopback: status in words and JSON with its exit codes, a supervisor's
//! flag flipped and read back as an admin, a watch that prints an event, and
//! the demo's one sentence. Without the `.exe` or Wine these fail, never skip.

mod common;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::*;
use serde_json::Value;

const TARGET: &str = "x86_64-pc-windows-gnu";

/// What to do when the build or Wine is missing.
const SETUP: &str = "run `bash scripts/build-windows.sh`, which installs Wine and mingw-w64 \
    and builds lockwatch.exe with the DLL Wine needs beside it";

/// Wine's loader, the `.exe`, and the Wine prefix the tests share.
struct Wine {
    loader: PathBuf,
    exe: PathBuf,
    /// Made once under the target dir and kept: a new prefix takes seconds.
    prefix: PathBuf,
}

/// Checks that the build and Wine are there and that the `.exe` starts,
/// making the prefix on the first call; panics with what to do otherwise.
fn wine() -> &'static Wine {
    static WINE: OnceLock<Wine> = OnceLock::new();
    WINE.get_or_init(|| {
        let loader = wine64().unwrap_or_else(|| panic!("wine64 is not installed: {SETUP}"));
        let dir = target_dir().join(TARGET).join("debug");
        let exe = dir.join("lockwatch.exe");
        assert!(exe.is_file(), "{} is missing: {SETUP}", exe.display());
        let dll = dir.join("bcryptprimitives.dll");
        assert!(dll.is_file(), "{} (Wine's stand-in for a DLL it lacks) is missing: {SETUP}", dll.display());
        let wine = Wine { loader, exe, prefix: target_dir().join("wine-prefix") };
        let out = run(wine.command(&["--version"]));
        assert!(
            out.status.success() && text(&out.stdout).starts_with("lockwatch "),
            "lockwatch.exe does not start under Wine ({}): {}",
            out.status,
            text(&out.stderr)
        );
        wine
    })
}

impl Wine {
    /// `lockwatch.exe ARGS` under Wine, quiet, with no URL from the environment.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.loader);
        cmd.arg(&self.exe)
            .args(args)
            .env("WINEPREFIX", &self.prefix)
            .env("WINEDEBUG", "-all")
            // No Mono or Gecko installer when the prefix is made.
            .env("WINEDLLOVERRIDES", "mscoree,mshtml=")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("LOCKWATCH_REDIS_URL")
            .stdin(Stdio::null());
        cmd
    }
}

/// `wine64` on PATH, else where Debian's wine64 package puts it.
fn wine64() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("wine64"))
        .chain([PathBuf::from("/usr/lib/wine/wine64")])
        .find(|p| p.is_file())
}

/// Where scripts/build-windows.sh puts its build: `CARGO_TARGET_DIR`, else the workspace's.
fn target_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), |dir| root.join(dir))
}

/// Runs `lockwatch.exe --redis URL ARGS` to its end.
fn exe(url: &str, args: &[&str]) -> Output {
    run(wine().command(&[&["--redis", url], args].concat()))
}

/// Runs `cmd` to its end with stdout and stderr in files, not pipes: a
/// wineserver that a run starts keeps the descriptors it inherited for
/// seconds after the `.exe` ended, and reading a pipe to its end would wait
/// for that.
fn run(mut cmd: Command) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let status = cmd.stdout(File::create(&out).unwrap()).stderr(File::create(&err).unwrap()).status().unwrap();
    Output { status, stdout: std::fs::read(&out).unwrap(), stderr: std::fs::read(&err).unwrap() }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn status_json(url: &str) -> (Value, Option<i32>) {
    let out = exe(url, &["status", "--json"]);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&out.stdout), text(&out.stderr)));
    (json, out.status.code())
}

#[test]
fn status_on_windows_reads_redis_in_words_and_json_with_nagios_exit_codes() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();

    flag(&mut c, "outbound", "alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg("time").arg(1).query(&mut c).unwrap();
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("down"), Some(2)), "{json}");
    assert_eq!(json["enabled_users"], serde_json::json!(["alice"]));

    redisson_lock(&mut c, "{outbound}:lock", "uuid-a:1", 30_000);
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(7).query(&mut c).unwrap();
    beat(&mut c, "outbound", "srv-a", "uuid-a:1", 7, "running", 0);
    let (json, code) = status_json(&url);
    assert_eq!((json["state"].as_str(), code), (Some("running"), Some(0)), "{json}");
    assert_eq!(json["holder"]["node"], "srv-a");
    assert_eq!(json["lock"]["fence"], 7);

    let out = exe(&url, &["status"]);
    let words = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{words}{}", text(&out.stderr));
    assert!(words.starts_with("outbound: RUNNING"), "{words}");
    assert!(words.contains("enabled  alice"), "{words}");

    // Windows' own socket error still becomes the one state and sentence.
    let (json, code) = status_json(&format!("redis://127.0.0.1:{}", free_port()));
    assert_eq!((json["state"].as_str(), code), (Some("unknown"), Some(3)), "{json}");
    assert!(json["reason"].as_str().unwrap().contains("refused"), "{json}");
}

#[test]
fn enable_and_disable_on_windows_write_the_supervisors_flag() {
    let server = RedisServer::start();
    let url = server.url();
    let mut admin = server.conn();
    let on = |admin: &mut redis::Connection| -> Option<String> {
        redis::cmd("HGET").arg("{outbound}:enabled:alice").arg("on").query(admin).unwrap()
    };

    let out = exe(&url, &["enable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("enabled job outbound for alice"), "{}", text(&out.stdout));
    assert_eq!(on(&mut admin).as_deref(), Some("1"));
    let member: bool = redis::cmd("SISMEMBER").arg("{outbound}:users").arg("alice").query(&mut admin).unwrap();
    assert!(member, "alice is not among the job's supervisors");

    let out = exe(&url, &["disable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("disabled job outbound for alice"), "{}", text(&out.stdout));
    assert_eq!(on(&mut admin).as_deref(), Some("0"));
}

/// A `lockwatch.exe watch --json` whose stdout lines arrive on a channel;
/// killed when dropped, however the test ends.
struct Watch {
    child: Child,
    lines: Receiver<String>,
}

impl Watch {
    fn start(url: &str, args: &[&str]) -> Watch {
        let mut child = wine()
            .command(&[&["--redis", url], args].concat())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Watch { child, lines }
    }

    fn next(&self, what: &str, within: Duration) -> Value {
        let line = self.lines.recv_timeout(within).unwrap_or_else(|_| panic!("no {what} from watch within {within:?}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn watch_on_windows_prints_the_status_then_an_event_when_a_flag_flips() {
    let server = RedisServer::start();
    let url = server.url();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg("time").arg(1).query(&mut c).unwrap();

    // Reads a minute apart: the event can only come from the watcher being
    // woken through its pub/sub connection, Windows sockets under Wine.
    let watch = Watch::start(&url, &["--interval", "60s", "watch", "--json"]);
    let first = watch.next("first status", Duration::from_secs(30));
    assert_eq!(first["event"], "status", "{first}");
    assert_eq!(first["status"]["state"], "down", "{first}");

    let out = exe(&url, &["disable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let event = watch.next("event after the flip", Duration::from_secs(20));
    assert_eq!(event["event"], "stopped", "{event}");
    assert_eq!(event["job"], "outbound");
    assert!(event["at_ms"].as_u64().unwrap() > 1_600_000_000_000, "{event}");
}

#[test]
fn demo_on_windows_says_in_one_sentence_that_it_needs_unix() {
    let out = run(wine().command(&["demo"]));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one sentence: {stderr}");
    assert!(stderr.starts_with("lockwatch: the demo runs on Linux"), "{stderr}");
    assert!(stderr.contains("on Windows, point the tray app or `lockwatch"), "{stderr}");
}
