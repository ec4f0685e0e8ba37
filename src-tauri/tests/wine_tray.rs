//! The Windows build of the tray app under Wine, on a real X display with an
//! XEmbed tray standing in for the taskbar, driven by `tests/e2e/wine_tray.py`:
//! its icon docks and shows the job's state as it changes, its toasts' ID is
//! registered, a test notification's fate is logged, and without WebView2 a
//! message box says why the dashboard cannot open while the tray stays.
//! `scripts/build-windows.sh` builds `lockwatch-tray.exe` (the test command runs it first).

mod common;

use std::path::{Path, PathBuf};

const SETUP: &str =
    "run `bash scripts/build-windows.sh`, which installs Wine and mingw-w64 and builds the Windows programs";

#[test]
fn the_windows_tray_app_docks_under_wine_and_its_icon_follows_the_job() {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"), PathBuf::from);
    let exe = target.join("x86_64-pc-windows-gnu/debug/lockwatch-tray.exe");
    assert!(exe.is_file(), "{} is missing: {SETUP}", exe.display());
    let wine = ["/usr/bin/wine64", "/usr/lib/wine/wine64"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("wine64 is not installed: {SETUP}"));
    assert!(Path::new("/usr/bin/trayer").exists(), "trayer is missing: run bash scripts/setup-test-deps.sh");
    // A prefix of its own, kept between runs (a new one takes seconds).
    let prefix = target.join("wine-prefix-tray");
    let shots = std::env::var_os("LOCKWATCH_SCREENSHOTS").unwrap_or_default();
    let stdout = common::run_e2e(
        "wine_tray.py",
        &[
            ("WINE", wine.as_os_str()),
            ("TRAY_EXE", exe.as_os_str()),
            ("WINEPREFIX", prefix.as_os_str()),
            ("SCREENSHOT_DIR", shots.as_os_str()),
        ],
    );
    assert!(stdout.contains("6 passed, 0 failed"), "{stdout}");
}
