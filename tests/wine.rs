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
        self.program(&self.exe.to_string_lossy(), args)
    }

    /// `PROGRAM ARGS` under Wine (a path, or a Windows program such as `msiexec`).
    fn program(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.loader);
        cmd.arg(program)
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
    let (_server, url, mut c) = server_with_flag("alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(1).query(&mut c).unwrap();
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
        redis::cmd("HGET").arg("{outbound}:enabled:alice").arg(flag::ON).query(admin).unwrap()
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
    let (_server, url, mut c) = server_with_flag("alice", true);
    let _: () = redis::cmd("HSET").arg("{outbound}:enabled:alice").arg(flag::TIME).arg(1).query(&mut c).unwrap();

    // Reads a minute apart: the event can only come from the watcher being
    // woken through its pub/sub connection, Windows sockets under Wine.
    let watch = Watch::start(&url, &["--interval", "60s", "watch", "--json"]);
    let first = watch.next("first status", Duration::from_secs(30));
    assert_eq!(first["event"], "status", "{first}");
    assert_eq!(first["status"]["state"], "down", "{first}");

    let out = exe(&url, &["disable", "--user", "alice"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // A supervisor does not publish: a worker that sees the flip announces it.
    let _: () = redis::cmd("PUBLISH").arg("{outbound}:wake").arg("srv-a").query(&mut c).unwrap();
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

/// One install at a time in the shared prefix, as Windows Installer allows.
static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The installer `name` of the build, as a Windows path; and a guard that
/// keeps other installs out until it is dropped.
fn installer(name: &str) -> (String, std::sync::MutexGuard<'static, ()>) {
    let msi = wine().exe.with_file_name(name);
    assert!(msi.is_file(), "{} is missing: {SETUP}", msi.display());
    let guard = INSTALLING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    (format!("Z:{}", msi.display()).replace('/', "\\"), guard)
}

/// The value `name` under the registry key `key`, as `reg query` prints it
/// (`TYPE    DATA`), or `None`.
fn registry(key: &str, name: &str) -> Option<String> {
    let out = run(wine().program("reg", &["query", key, "/v", name]));
    let prefix = format!("{name} ");
    text(&out.stdout)
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().to_owned())
}

/// Whether a key exists.
fn registry_key(key: &str) -> bool {
    run(wine().program("reg", &["query", key])).status.success()
}

/// The prefix's own user's folder: Wine names it after the Unix one.
fn wine_user_home() -> PathBuf {
    std::fs::read_dir(wine().prefix.join("drive_c/users"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n != "Public") && p.join("AppData").is_dir())
        .expect("the Wine prefix has a user")
}

/// Runs the installed `lockwatch.exe --version` (`program`: its path, or
/// its bare name for a lookup on the system PATH) with Wine's stand-in DLL
/// beside it for this one call.
fn installed_version(dir: &Path, program: &str) -> String {
    let stub = dir.join("bcryptprimitives.dll");
    std::fs::copy(wine().exe.with_file_name("bcryptprimitives.dll"), &stub).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let out = run({
        let mut cmd = wine().program(program, &["--version"]);
        cmd.current_dir(elsewhere.path());
        cmd
    });
    std::fs::remove_file(&stub).unwrap();
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

const RUN_KEY: &str = r"Software\Microsoft\Windows\CurrentVersion\Run";

/// The toasts' AppUserModelID on the Start Menu shortcut, as the installer's
/// table holds it (Wine's shell keeps no shortcut properties to read back).
fn assert_shortcut_carries_the_toast_id(name: &str) {
    let msi = wine().exe.with_file_name(name);
    let out = Command::new("msiinfo").arg("export").arg(&msi).arg("MsiShortcutProperty").output();
    let out = out.unwrap_or_else(|e| panic!("msiinfo: {e}: {SETUP}"));
    let rows = text(&out.stdout);
    assert!(
        rows.lines().any(|l| l.split('\t').skip(1).eq([
            "TrayShortcut",
            "System.AppUserModel.ID",
            "app.lockwatch.tray"
        ])),
        "{name}: no AppUserModelID on the Start Menu shortcut: {rows}{}",
        text(&out.stderr)
    );
}

#[test]
fn the_installer_installs_for_the_user_with_a_start_menu_entry_and_start_at_login_and_uninstalls_clean() {
    let (msi, _one) = installer("lockwatch.msi");
    assert_shortcut_carries_the_toast_id("lockwatch.msi");
    let home = wine_user_home();
    let dir = home.join("AppData/Local/Programs/lockwatch");
    let shortcut = home.join("AppData/Roaming/Microsoft/Windows/Start Menu/Programs/lockwatch.lnk");
    let run_key = || registry(&format!(r"HKCU\{RUN_KEY}"), "lockwatch");

    // Per user, no administrator: into the user's own programs folder.
    let out = run(wine().program("msiexec", &["/i", &msi, "/qn"]));
    assert!(out.status.success(), "msiexec /i: {}", text(&out.stderr));
    for file in ["lockwatch.exe", "lockwatch-tray.exe", "WebView2Loader.dll"] {
        assert!(dir.join(file).is_file(), "{file} is not in {}", dir.display());
    }
    assert!(shortcut.is_file(), "no Start Menu entry at {}", shortcut.display());
    let autostart = run_key().expect("start at login: no Run value named lockwatch");
    assert!(autostart.contains(r#"AppData\Local\Programs\lockwatch\lockwatch-tray.exe" --autostart"#), "{autostart}");
    assert!(!registry_key(r"HKLM\Software\lockwatch"), "a per-user install wrote to the computer's registry");
    let version = installed_version(&dir, &dir.join("lockwatch.exe").to_string_lossy());
    assert!(version.starts_with("lockwatch "), "{version}");

    let out = run(wine().program("msiexec", &["/x", &msi, "/qn"]));
    assert!(out.status.success(), "msiexec /x: {}", text(&out.stderr));
    assert!(!dir.exists() && !shortcut.exists(), "left behind in {}", dir.display());
    assert_eq!(run_key(), None, "the Run value stayed");
    assert!(!registry_key(r"HKCU\Software\lockwatch"), "HKCU\\Software\\lockwatch stayed");

    // Start at login is an option: left out, no Run value.
    let out = run(wine().program("msiexec", &["/i", &msi, "/qn", "ADDLOCAL=Main"]));
    assert!(out.status.success() && dir.join("lockwatch-tray.exe").is_file(), "{}", text(&out.stderr));
    assert_eq!(run_key(), None, "installed without StartAtLogin, yet a Run value");
    let out = run(wine().program("msiexec", &["/x", &msi, "/qn"]));
    assert!(out.status.success() && !dir.exists(), "{}", text(&out.stderr));
}

/// The per-computer installer, silent as GPO, Intune and SCCM run it:
/// Program Files, start at login for every user, `lockwatch.exe` on the
/// system PATH; and after a silent uninstall none of it.
#[test]
fn the_machine_installer_installs_for_every_user_with_lockwatch_on_the_path_and_uninstalls_clean() {
    let (msi, _one) = installer("lockwatch-machine.msi");
    assert_shortcut_carries_the_toast_id("lockwatch-machine.msi");
    let dir = wine().prefix.join("drive_c/Program Files/lockwatch");
    let environment = r"HKLM\System\CurrentControlSet\Control\Session Manager\Environment";
    let path = || registry(environment, "Path").unwrap_or_default();
    let run_key = || registry(&format!(r"HKLM\{RUN_KEY}"), "lockwatch");
    // Windows puts a per-computer shortcut in the common Start Menu; Wine's
    // installer puts it in the installing user's.
    let shortcuts = [
        wine().prefix.join("drive_c/ProgramData/Microsoft/Windows/Start Menu/Programs/lockwatch.lnk"),
        wine_user_home().join("AppData/Roaming/Microsoft/Windows/Start Menu/Programs/lockwatch.lnk"),
    ];
    let path_before = path();
    assert!(!path_before.contains("lockwatch"), "{path_before}");

    let out = run(wine().program("msiexec", &["/i", &msi, "/qn"]));
    assert!(out.status.success(), "msiexec /i: {}", text(&out.stderr));
    for file in ["lockwatch.exe", "lockwatch-tray.exe", "WebView2Loader.dll"] {
        assert!(dir.join(file).is_file(), "{file} is not in {}", dir.display());
    }
    assert!(shortcuts.iter().any(|s| s.is_file()), "no Start Menu entry at {shortcuts:?}");
    let autostart = run_key().expect("start at login for every user: no HKLM Run value named lockwatch");
    assert!(autostart.ends_with(r#""C:\Program Files\lockwatch\lockwatch-tray.exe" --autostart"#), "{autostart}");
    assert_eq!(
        registry(&format!(r"HKCU\{RUN_KEY}"), "lockwatch"),
        None,
        "a per-computer install wrote the user's Run key"
    );
    assert!(path().contains(r"C:\Program Files\lockwatch"), "not on the system PATH: {}", path());
    assert!(registry_key(r"HKLM\Software\lockwatch"));
    // Found on the PATH, from another folder.
    let version = installed_version(&dir, "lockwatch.exe");
    assert!(version.starts_with("lockwatch "), "{version}");

    let out = run(wine().program("msiexec", &["/x", &msi, "/qn"]));
    assert!(out.status.success(), "msiexec /x: {}", text(&out.stderr));
    assert!(!dir.exists(), "left behind: {}", dir.display());
    assert!(shortcuts.iter().all(|s| !s.exists()), "a shortcut stayed: {shortcuts:?}");
    assert_eq!(run_key(), None, "the Run value stayed");
    assert!(!path().contains("lockwatch"), "the PATH entry stayed: {}", path());
    assert!(!registry_key(r"HKLM\Software\lockwatch"), "HKLM\\Software\\lockwatch stayed");
}
