//! Whether this desk can show the dashboard. On Windows its web view is the
//! Microsoft Edge WebView2 Runtime, which Windows 11 ships and Windows 10
//! LTSC, offline images and some Server or RDS hosts lack: asked through
//! the loader beside the app before the dashboard's process starts, and
//! when it is missing a message box says so in the supervisor's language
//! (one at a time) while the tray, its menu, flag and notifications go on;
//! the one question the dashboard's process asks from the menu (switching
//! a job off as the last one on) is then a native yes/no box.
//! On Linux the web view (WebKitGTK) is a dependency of the package.

use crate::core::i18n::Tr;

/// Why the dashboard cannot start here, or `None` when it can.
#[cfg(windows)]
pub fn missing() -> Option<String> {
    match tauri::webview_version() {
        Ok(version) if !version.is_empty() && version != "0.0.0.0" => None,
        Ok(version) => Some(format!("the loader reports version {version:?}")),
        Err(err) => Some(err.to_string()),
    }
}

/// Why the dashboard cannot start here, or `None` when it can.
#[cfg(not(windows))]
pub fn missing() -> Option<String> {
    None
}

/// Says, in `tr`'s language, that the dashboard needs the runtime and where
/// the admin gets it: a message box of its own thread, never two at once.
pub fn tell_missing(tr: &Tr) {
    let text = tr.t("webview-missing");
    tracing::warn!("{text}");
    #[cfg(windows)]
    message_box(tr.t("webview-missing-title"), text);
}

/// Asks `text` yes or no in a native box, blocking this thread until
/// answered; only where the web view is missing (Windows).
#[cfg(windows)]
pub fn ask(title: &str, text: &str) -> bool {
    use windows_sys::Win32::UI::WindowsAndMessaging::{IDYES, MB_ICONQUESTION, MB_YESNO};
    native_box(title, text, MB_YESNO | MB_ICONQUESTION) == IDYES
}

/// Where the web view is never missing, nothing asks natively.
#[cfg(not(windows))]
pub fn ask(_title: &str, _text: &str) -> bool {
    false
}

/// A message box with `style`, on top of other windows and owned by none;
/// blocks this thread until answered and returns the button pressed.
#[cfg(windows)]
fn native_box(title: &str, text: &str, style: u32) -> i32 {
    use windows_sys::Win32::UI::WindowsAndMessaging::{MB_SETFOREGROUND, MB_TOPMOST, MessageBoxW};
    let wide = |s: &str| s.encode_utf16().chain(std::iter::once(0)).collect::<Vec<u16>>();
    let (title, text) = (wide(title), wide(text));
    // SAFETY: both strings are NUL-terminated UTF-16 that outlive the call; no owner window.
    unsafe { MessageBoxW(std::ptr::null_mut(), text.as_ptr(), title.as_ptr(), style | MB_SETFOREGROUND | MB_TOPMOST) }
}

#[cfg(windows)]
fn message_box(title: String, text: String) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use windows_sys::Win32::UI::WindowsAndMessaging::{MB_ICONWARNING, MB_OK};

    static SHOWN: AtomicBool = AtomicBool::new(false);
    if SHOWN.swap(true, Ordering::AcqRel) {
        return;
    }
    let spawned = std::thread::Builder::new().name("webview-missing".into()).spawn(move || {
        native_box(&title, &text, MB_OK | MB_ICONWARNING);
        SHOWN.store(false, Ordering::Release);
    });
    if let Err(err) = spawned {
        SHOWN.store(false, Ordering::Release);
        tracing::warn!(error = %err, "cannot show the message box");
    }
}
