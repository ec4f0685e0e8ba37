//! The dashboard in the real WebKitGTK webview, driven through tauri-driver
//! and WebKitWebDriver by `tests/e2e/dashboard.py`. See that script for the checks.

mod common;

use std::path::PathBuf;

/// tauri-driver on PATH or in cargo's bin dir (installed by scripts/setup-test-deps.sh).
fn tauri_driver() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let candidates = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain(home.map(|h| h.join("bin")));
    candidates
        .map(|dir| dir.join("tauri-driver"))
        .find(|p| p.exists())
        .expect("tauri-driver is missing: run bash scripts/setup-test-deps.sh")
}

#[test]
fn the_dashboard_shows_the_truth_in_the_real_webview() {
    assert!(
        std::path::Path::new("/usr/bin/WebKitWebDriver").exists(),
        "WebKitWebDriver is missing: run bash scripts/setup-test-deps.sh"
    );
    let driver = tauri_driver();
    let shots = std::env::var_os("LOCKWATCH_SCREENSHOTS").unwrap_or_default();
    let stdout =
        common::run_e2e("dashboard.py", &[("TAURI_DRIVER", driver.as_os_str()), ("SCREENSHOT_DIR", shots.as_os_str())]);
    assert!(stdout.contains("12 passed, 0 failed"), "{stdout}");
}
