//! The tray's "switch off" window on a real X display and session bus,
//! driven by `tests/e2e/switch_off.py`: the last one with a job on who
//! unticks it is asked why in the dashboard's process, and the flag changes
//! only when they answer there. See that script for the checks.

mod common;

use std::ffi::OsStr;
use std::sync::Mutex;

/// One run at a time: each starts its own Redis, worker and app.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Runs the script in `locale`; `LOCKWATCH_SCREENSHOTS=DIR` keeps the window's picture there.
fn run_in(locale: &str) -> String {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let shots = std::env::var_os("LOCKWATCH_SCREENSHOTS").unwrap_or_default();
    common::run_e2e("switch_off.py", &[("LOCALE", OsStr::new(locale)), ("SCREENSHOT_DIR", &shots)])
}

#[test]
fn the_last_one_switching_off_is_asked_why_and_the_flag_waits_for_the_answer() {
    let stdout = run_in("en_US.UTF-8");
    assert!(stdout.contains("3 passed, 0 failed"), "{stdout}");
}

#[test]
fn the_switch_off_window_speaks_chinese_on_a_chinese_desktop() {
    let stdout = run_in("zh_CN.UTF-8");
    assert!(stdout.contains("3 passed, 0 failed"), "{stdout}");
}
