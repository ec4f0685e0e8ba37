//! Is there a tray on this desktop to show the icon? Either kind counts:
//! a StatusNotifierItem host (KDE, GNOME with the AppIndicator extension,
//! waybar …: `org.kde.StatusNotifierWatcher` on the session bus), or an
//! XEmbed system tray (trayer, stalonetray, xfce4-panel …: the owner of the
//! `_NET_SYSTEM_TRAY_S<screen>` X selection), where the tray library falls
//! back to an embedded icon.
//!
//! That embedded icon comes with one known GTK complaint, kept off stderr
//! here: see [`quiet_xembed_icon_assertion`].

use std::fmt;

/// The tray that shows the icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayHost {
    StatusNotifier,
    /// The Windows taskbar's notification area, always there.
    NotificationArea,
    /// An XEmbed system tray on this X screen.
    XEmbed {
        screen: usize,
    },
}

impl fmt::Display for TrayHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrayHost::StatusNotifier => f.write_str("org.kde.StatusNotifierWatcher on the session bus"),
            TrayHost::NotificationArea => f.write_str("the taskbar's notification area"),
            TrayHost::XEmbed { screen } => write!(f, "an XEmbed system tray (_NET_SYSTEM_TRAY_S{screen})"),
        }
    }
}

/// The tray host on this desktop, if there is one.
#[cfg(target_os = "linux")]
pub fn find() -> Option<TrayHost> {
    if status_notifier_watcher() {
        return Some(TrayHost::StatusNotifier);
    }
    xembed_tray().map(|screen| TrayHost::XEmbed { screen })
}

/// Windows always has a tray: the taskbar's notification area.
#[cfg(not(target_os = "linux"))]
pub fn find() -> Option<TrayHost> {
    Some(TrayHost::NotificationArea)
}

#[cfg(target_os = "linux")]
fn status_notifier_watcher() -> bool {
    use std::time::Duration;
    let Ok(conn) = dbus::blocking::Connection::new_session() else { return false };
    let proxy = conn.with_proxy("org.freedesktop.DBus", "/org/freedesktop/DBus", Duration::from_secs(2));
    let owned: Result<(bool,), _> =
        proxy.method_call("org.freedesktop.DBus", "NameHasOwner", ("org.kde.StatusNotifierWatcher",));
    owned.map(|(o,)| o).unwrap_or(false)
}

/// The X screen whose system tray selection has an owner (the freedesktop
/// System Tray Protocol), on the display in `DISPLAY`.
#[cfg(target_os = "linux")]
fn xembed_tray() -> Option<usize> {
    use x11rb::protocol::xproto::ConnectionExt as _;
    let (conn, screen) = x11rb::connect(None).ok()?;
    // `only_if_exists`: no atom means no tray ever claimed the selection.
    let atom = conn.intern_atom(true, format!("_NET_SYSTEM_TRAY_S{screen}").as_bytes()).ok()?.reply().ok()?.atom;
    if atom == x11rb::NONE {
        return None;
    }
    let owner = conn.get_selection_owner(atom).ok()?.reply().ok()?.owner;
    (owner != x11rb::NONE).then_some(screen)
}

/// Keeps one harmless GTK assertion of the XEmbed icon off stderr, where it
/// read like an error on every start beside an XEmbed tray.
///
/// The cause is outside this app: with no StatusNotifierWatcher,
/// libayatana-appindicator falls back to a `GtkStatusIcon` and names it
/// (`gtk_status_icon_set_name`) right after `gtk_status_icon_new` has shown
/// it. When a system tray is there to dock it, GTK must unrealize and
/// re-show the docked icon to change its WM_CLASS, and the re-created window
/// is thawed once more than it was frozen:
/// `gdk_window_thaw_toplevel_updates: assertion
/// 'window->update_and_descendants_freeze_count > 0' failed`. The icon works
/// (the freeze count stays at zero). The library gives no way to name the
/// icon before it is shown, so this drops exactly that message, to the debug
/// log; every other GLib message is printed as before.
#[cfg(target_os = "linux")]
pub fn quiet_xembed_icon_assertion() {
    const KNOWN: &str = "gdk_window_thaw_toplevel_updates: assertion 'window->update_and_descendants_freeze_count > 0'";
    glib::log_set_handler(Some("Gdk"), glib::LogLevels::LEVEL_CRITICAL, false, false, |domain, level, message| {
        if message.starts_with(KNOWN) {
            tracing::debug!(message, "GTK assertion of the XEmbed tray icon (harmless, see tray_host.rs)");
        } else {
            glib::log_default_handler(domain, level, Some(message));
        }
    });
}

#[cfg(not(target_os = "linux"))]
pub fn quiet_xembed_icon_assertion() {}
