//! The tray's "switch off" window on a real X display and session bus,
//! driven by `tests/e2e/switch_off.py`: the last one with a job on who
//! unticks it is asked why in the dashboard's process, and the flag changes
//! only when they answer there. See that script for the checks.

mod common;

#[test]
fn the_last_one_switching_off_is_asked_why_and_the_flag_waits_for_the_answer() {
    let stdout = common::run_e2e("switch_off.py", &[]);
    assert!(stdout.contains("3 passed, 0 failed"), "{stdout}");
}
