//! The dashboard's life beside the tray (open, close, open again, the tray
//! ending) on a real X display and session bus, driven by
//! `tests/e2e/dashboard_life.py`. See that script for the checks.

mod common;

#[test]
fn closing_the_dashboard_ends_the_web_view_and_the_tray_lives_on() {
    let stdout = common::run_e2e("dashboard_life.py", &[]);
    assert!(stdout.contains("5 passed, 0 failed"), "{stdout}");
}
