//! Whether the app starts at login, as the system has it. Her own entry is
//! tauri-plugin-autostart's (`~/.config/autostart/` on Linux, the value
//! `lockwatch` under `HKCU\…\Run` on Windows, which the per-user installer
//! writes too). The computer's is the admin's: `lockwatch.desktop` in an XDG
//! autostart folder (`/etc/xdg/autostart/`), or the value `lockwatch` under
//! `HKLM\…\Run` that the per-computer installer writes. While the computer's
//! is there, her menu shows it ticked and greyed: she cannot turn it off,
//! and an entry of her own beside it would start the app twice at login.

use std::sync::OnceLock;

use tauri::AppHandle;
use tauri_plugin_autostart::ManagerExt as _;

/// The name of the entries, desktop file and Run value alike.
const NAME: &str = "lockwatch";

/// Whether the computer starts the app at login for every user; read once
/// (an admin's change takes effect at the next login anyway).
pub fn for_this_computer() -> bool {
    static MACHINE: OnceLock<bool> = OnceLock::new();
    *MACHINE.get_or_init(|| {
        let set = machine_entry();
        if set {
            tracing::info!("this computer starts lockwatch at login for every user");
        }
        set
    })
}

/// Whether her own entry is there, or `fallback` when it cannot be read.
pub fn for_this_user(app: &AppHandle, fallback: bool) -> bool {
    match app.autolaunch().is_enabled() {
        Ok(on) => on,
        Err(err) => {
            tracing::warn!(error = %err, "cannot read whether lockwatch starts at login");
            fallback
        }
    }
}

#[cfg(windows)]
fn machine_entry() -> bool {
    windows_registry::LOCAL_MACHINE
        .open(r"Software\Microsoft\Windows\CurrentVersion\Run")
        .and_then(|key| key.get_string(NAME))
        .is_ok()
}

#[cfg(not(windows))]
fn machine_entry() -> bool {
    let dirs = std::env::var("XDG_CONFIG_DIRS").ok().filter(|d| !d.is_empty());
    let dirs = dirs.as_deref().unwrap_or("/etc/xdg");
    dirs.split(':').any(|dir| std::path::Path::new(dir).join("autostart").join(format!("{NAME}.desktop")).is_file())
}
