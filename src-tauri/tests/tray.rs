//! The real tray app under Xvfb and a private D-Bus session, driven by
//! `tests/e2e/tray.py` (a fake tray host and notification daemon, a real
//! Redis and real workers). See that script for the checks.

mod common;

#[test]
fn the_tray_tells_the_truth_on_a_real_session_bus() {
    let stdout = common::run_e2e("tray.py", &[]);
    assert!(stdout.contains("6 passed, 0 failed"), "{stdout}");
}
