//! How the app finds its tray, on a real X display with no
//! StatusNotifierWatcher, driven by `tests/e2e/tray_host.py`: an XEmbed tray
//! (trayer) shows the icon and no dashboard opens, watching the Redis the
//! machine's defaults name; with no tray at all the
//! dashboard opens with a banner that can be dismissed.

mod common;

#[test]
fn an_xembed_tray_is_a_tray_and_the_no_tray_banner_can_be_dismissed() {
    assert!(
        std::path::Path::new("/usr/bin/trayer").exists(),
        "trayer (an XEmbed system tray) is missing: run bash scripts/setup-test-deps.sh"
    );
    let driver = common::tauri_driver();
    let stdout = common::run_e2e("tray_host.py", &[("TAURI_DRIVER", driver.as_os_str())]);
    assert!(stdout.contains("4 passed, 0 failed"), "{stdout}");
}
