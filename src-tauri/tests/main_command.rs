//! The README's main command, `bash scripts/run.sh`, on a desktop: Xvfb, a
//! private session bus with a tray host, driven by `tests/e2e/main_command.py`.
//! The tray app comes up on the demo and names the server running the job;
//! SIGINT stops everything run.sh started. (The headless half is the root
//! package's `tests/main_command.rs`.)

mod common;

use std::path::PathBuf;

#[test]
fn run_sh_on_a_desktop_opens_the_tray_on_the_demo_and_sigint_stops_everything() {
    // The desktop session gets a home of its own; cargo and rustup stay where they are.
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
    let cargo_home = std::env::var_os("CARGO_HOME").map_or_else(|| home.join(".cargo"), PathBuf::from);
    let rustup_home = std::env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), PathBuf::from);
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let stdout = common::run_e2e(
        "main_command.py",
        &[("REPO", repo.as_os_str()), ("CARGO_HOME", cargo_home.as_os_str()), ("RUSTUP_HOME", rustup_home.as_os_str())],
    );
    assert!(stdout.contains("3 passed, 0 failed"), "{stdout}");
}
