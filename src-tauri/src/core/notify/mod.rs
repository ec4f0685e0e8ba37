//! Desktop notifications with buttons that act: on Linux through
//! notify-rust (the freedesktop notification daemon), on Windows as toasts
//! through tauri-winrt-notification (the crate notify-rust uses there,
//! called directly because notify-rust does not hand a toast's click back).
//! Each one shown is logged (`notified`), each one that cannot be shown
//! too, with the error the system gave: a desktop without a notification
//! daemon, or a Windows that refuses the toast, is told in the app's log,
//! and the app keeps working.
//!
//! Each notification is shown by a thread of its own, which keeps its handle
//! and waits for the user's click (or the notification's end) and hands the
//! action to the app; the main thread never waits on the daemon.

pub mod toast_id;

use crate::core::error::SystemError;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::core::i18n::Tr;
use crate::core::notes::{Note, NoteAction};

static WARNED: AtomicBool = AtomicBool::new(false);

/// The sound theme's name for a critical event (freedesktop sound naming spec).
pub const CRITICAL_SOUND: &str = "dialog-warning";

/// How a note is shown, besides its words.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Whether a critical note asks for a sound (the settings' choice).
    pub sound: bool,
}

/// Shows `note`; a click on one of its buttons (or on the note) goes to
/// `on_click`. A failure is logged with its error.
pub fn show(note: &Note, tr: &Tr, style: Style, on_click: impl Fn(NoteAction) + Send + Sync + 'static) {
    let buttons: Vec<(String, String)> =
        std::iter::once((NoteAction::DEFAULT_ID.to_owned(), NoteAction::Open.label(tr)))
            .chain(note.actions.iter().map(|a| (a.id(), a.label(tr))))
            .collect();
    let note = note.clone();
    let spawned = std::thread::Builder::new().name("notification".into()).spawn(move || {
        if let Err(err) = deliver(&note, &buttons, style, on_click) {
            cannot_show(&note, &err);
        }
    });
    if let Err(err) = spawned {
        tracing::warn!(error = %err, "cannot show a notification");
    }
}

/// Shows the note through the notification daemon and waits for a click on
/// it or one of its `buttons` (id, label), or for its end. The D-Bus handle
/// cannot move between threads: this thread keeps it.
#[cfg(not(windows))]
fn deliver(
    note: &Note,
    buttons: &[(String, String)],
    style: Style,
    on_click: impl Fn(NoteAction) + Send + Sync + 'static,
) -> Result<(), SystemError> {
    let caps = notify_rust::get_capabilities().map_err(SystemError::desktop("asking the notification daemon"))?;
    // A daemon that reads markup would take `<name>` in a sentence for a tag and drop it.
    let markup = caps.iter().any(|c| c == "body-markup");
    let mut n = notify_rust::Notification::new();
    n.appname("lockwatch").summary(&note.summary);
    n.body(&if markup { escape_markup(&note.body) } else { note.body.clone() });
    for (id, label) in buttons {
        n.action(id, label);
    }
    n.urgency(if note.critical { notify_rust::Urgency::Critical } else { notify_rust::Urgency::Normal });
    if note.critical && style.sound {
        n.sound_name(CRITICAL_SOUND);
    }
    let handle = n.show().map_err(SystemError::desktop("showing the notification"))?;
    tracing::info!(summary = %note.summary, "notified");
    handle.wait_for_action(|id| {
        if let Some(action) = NoteAction::parse(id) {
            on_click(action);
        }
    });
    Ok(())
}

/// Shows the note as a Windows toast; a click on it opens the dashboard, a
/// click on a button does what it says. The first of `buttons` is the
/// toast's own click.
#[cfg(windows)]
fn deliver(
    note: &Note,
    buttons: &[(String, String)],
    style: Style,
    on_click: impl Fn(NoteAction) + Send + Sync + 'static,
) -> Result<(), SystemError> {
    use tauri_winrt_notification::{Duration, Sound, Toast};
    // A toast the user or a policy switched off is taken without an error:
    // ask first, so the log says why none appears.
    toasts_allowed()?;
    let mut toast = Toast::new(toast_id::APP_ID).title(&note.summary).text1(&note.body);
    for (id, label) in buttons.iter().skip(1) {
        toast = toast.add_button(label, id);
    }
    if note.critical {
        toast = toast.duration(Duration::Long).sound(style.sound.then_some(Sound::Default));
    }
    toast = toast.on_activated(move |id| {
        on_click(id.as_deref().and_then(NoteAction::parse).unwrap_or(NoteAction::Open));
        Ok(())
    });
    toast.show().map_err(SystemError::desktop("showing the toast"))?;
    tracing::info!(summary = %note.summary, "notified");
    Ok(())
}

/// Whether Windows shows this app's toasts now, as its notification
/// settings say (Focus Assist aside, which it does not tell).
#[cfg(windows)]
fn toasts_allowed() -> Result<(), SystemError> {
    use windows::UI::Notifications::{NotificationSetting, ToastNotificationManager};
    let id = windows::core::HSTRING::from(toast_id::APP_ID);
    let setting = ToastNotificationManager::CreateToastNotifierWithId(&id)
        .and_then(|notifier| notifier.Setting())
        .map_err(SystemError::desktop("asking whether toasts are on"))?;
    let off = match setting {
        NotificationSetting::Enabled => return Ok(()),
        NotificationSetting::DisabledForApplication => {
            "Windows has notifications off for lockwatch (Settings → System → Notifications)"
        }
        NotificationSetting::DisabledForUser => "Windows has notifications off for this user",
        NotificationSetting::DisabledByGroupPolicy => "a group policy turns notifications off",
        _ => "Windows does not let lockwatch notify",
    };
    Err(SystemError::NotificationsOff(off))
}

/// Logs a note the system did not show, with why; the first time with what
/// to look at.
fn cannot_show(note: &Note, err: &SystemError) {
    if WARNED.swap(true, Ordering::Relaxed) {
        tracing::warn!(summary = %note.summary, error = %err, "cannot show a notification");
    } else {
        tracing::warn!(
            summary = %note.summary,
            error = %err,
            "cannot show a notification (no notification daemon? notifications off for lockwatch?); the tray menu still tells all"
        );
    }
}

/// `text` with the characters the notification spec's body markup reads
/// (a subset of XML) escaped.
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_in_a_body_survives_a_markup_daemon() {
        let body = "ask the admin for `lockwatch acl --user <name>` & retry";
        assert_eq!(escape_markup(body), "ask the admin for `lockwatch acl --user &lt;name&gt;` &amp; retry");
        assert_eq!(escape_markup("我来处理"), "我来处理");
    }
}
