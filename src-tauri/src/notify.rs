//! Desktop notifications through notify-rust. A desktop without a
//! notification daemon gets one log line, and the app keeps working.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::model::Note;

static WARNED: AtomicBool = AtomicBool::new(false);

/// Shows `note`; failures are logged once.
pub fn show(note: &Note) {
    let mut n = notify_rust::Notification::new();
    n.appname("lockwatch").summary(&note.summary).body(&note.body);
    #[cfg(all(unix, not(target_os = "macos")))]
    n.urgency(if note.critical { notify_rust::Urgency::Critical } else { notify_rust::Urgency::Normal });
    match n.show() {
        Ok(_) => tracing::info!(summary = %note.summary, "notified"),
        Err(err) => {
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(error = %err, "notifications cannot be shown (no notification daemon?); the tray menu still tells all");
            }
        }
    }
}
