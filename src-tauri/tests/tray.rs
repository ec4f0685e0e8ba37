//! The real tray app under Xvfb and a private D-Bus session, driven by
//! `tests/e2e/tray.py` (a fake tray host and notification daemon, a real
//! Redis and real workers), once per desktop language. See that script for
//! the checks.

mod common;

use std::ffi::OsStr;
use std::sync::Mutex;

/// One run at a time: each starts its own Redis, workers and app, and the
/// machine has two cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run_in(locale: &str) -> String {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    common::run_e2e("tray.py", &[("LOCALE", OsStr::new(locale))])
}

#[test]
fn the_tray_tells_the_truth_on_a_real_session_bus_in_english() {
    let stdout = run_in("en_US.UTF-8");
    assert!(stdout.contains("14 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains("failover notified: outbound moved from"), "{stdout}");
}

#[test]
fn the_tray_speaks_chinese_on_a_chinese_desktop() {
    let stdout = run_in("zh_CN.UTF-8");
    assert!(stdout.contains("14 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains("failover notified: outbound 已从"), "{stdout}");
}
