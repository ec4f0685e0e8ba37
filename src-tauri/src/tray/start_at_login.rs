//! Whether the app starts at login, as the system has it, and her switch
//! for it. Her own entry: on Linux tauri-plugin-autostart's
//! `~/.config/autostart/lockwatch.desktop`; on Windows the value `lockwatch`
//! under `HKCU\…\Run` (the per-user installer writes the same), written here
//! because the plugin's Windows side also writes and deletes the computer's
//! `HKLM` value when it may. The computer's entry is the admin's:
//! `lockwatch.desktop` in an XDG autostart folder (`/etc/xdg/autostart/`), or
//! the `HKLM\…\Run` value the per-computer installer writes. While it is
//! there her menu shows it ticked and greyed (she cannot turn it off); on
//! Windows, where both values would run, her own is removed at start.
//!
//! Every entry starts the app with [`ARG`], so a second start at login (two
//! entries, a logon script) ends quietly instead of opening the dashboard.

use crate::core::error::SystemError;
use std::sync::OnceLock;

use tauri::AppHandle;

/// The argument every start-at-login entry passes.
pub const ARG: &str = "--autostart";

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

/// Her own start at login as the system has it, at the app's start (an
/// installer may have written it); `stored` when it cannot be read. On
/// Windows, where the computer's entry and hers would both run, hers is
/// removed.
pub fn at_start(app: &AppHandle, stored: bool) -> bool {
    let own = match own_entry(app) {
        Ok(on) => on,
        Err(err) => {
            tracing::warn!("cannot read whether lockwatch starts at login: {err}");
            return stored;
        }
    };
    if !(cfg!(windows) && own && for_this_computer()) {
        return own;
    }
    match set(app, false) {
        Ok(()) => {
            tracing::info!("this computer starts lockwatch at login: the user's own entry is removed");
            false
        }
        Err(err) => {
            tracing::warn!("cannot remove the user's own start at login: {err}");
            true
        }
    }
}

/// Writes or removes her own entry.
///
/// # Errors
/// The system's answer when the entry cannot be written or removed.
#[cfg(windows)]
pub fn set(_app: &AppHandle, on: bool) -> Result<(), SystemError> {
    let run = windows_registry::CURRENT_USER.create(RUN).map_err(SystemError::desktop("opening the Run key"))?;
    if on {
        let exe = std::env::current_exe().map_err(SystemError::desktop("finding lockwatch's program"))?;
        run.set_string(NAME, format!("\"{}\" {ARG}", exe.display()))
            .map_err(SystemError::desktop("writing the start-at-login entry"))
    } else if run.get_string(NAME).is_ok() {
        run.remove_value(NAME).map_err(SystemError::desktop("removing the start-at-login entry"))
    } else {
        Ok(())
    }
}

/// Writes or removes her own entry.
///
/// # Errors
/// The system's answer when the entry cannot be written or removed.
#[cfg(not(windows))]
pub fn set(app: &AppHandle, on: bool) -> Result<(), SystemError> {
    use tauri_plugin_autostart::ManagerExt as _;
    let launcher = app.autolaunch();
    if on { launcher.enable() } else { launcher.disable() }
        .map_err(SystemError::desktop("changing the autostart entry"))
}

#[cfg(windows)]
const RUN: &str = r"Software\Microsoft\Windows\CurrentVersion\Run";

#[cfg(windows)]
fn own_entry(_app: &AppHandle) -> Result<bool, SystemError> {
    Ok(windows_registry::CURRENT_USER.open(RUN).and_then(|key| key.get_string(NAME)).is_ok())
}

#[cfg(not(windows))]
fn own_entry(app: &AppHandle) -> Result<bool, SystemError> {
    use tauri_plugin_autostart::ManagerExt as _;
    app.autolaunch().is_enabled().map_err(SystemError::desktop("reading the autostart entry"))
}

#[cfg(windows)]
fn machine_entry() -> bool {
    windows_registry::LOCAL_MACHINE.open(RUN).and_then(|key| key.get_string(NAME)).is_ok()
}

#[cfg(not(windows))]
fn machine_entry() -> bool {
    let dirs = std::env::var("XDG_CONFIG_DIRS").ok().filter(|d| !d.is_empty());
    let dirs = dirs.as_deref().unwrap_or("/etc/xdg");
    dirs.split(':').any(|dir| std::path::Path::new(dir).join("autostart").join(format!("{NAME}.desktop")).is_file())
}

#[cfg(test)]
mod tests {
    use super::ARG;

    fn repo_file(path: &str) -> String {
        let at = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
        std::fs::read_to_string(&at).unwrap_or_else(|e| panic!("{}: {e}", at.display()))
    }

    /// docs/rollout.md has the admin copy the menu entry into
    /// /etc/xdg/autostart with `sed`: its substitution, applied to the
    /// packaged entry, must give a command with the argument, which the
    /// menu entry itself does not pass (there a second start opens the
    /// dashboard), and the package's postrm must still know the copy.
    #[test]
    fn the_rollouts_copy_of_the_menu_entry_starts_the_app_with_the_autostart_argument() {
        let rollout = repo_file("docs/rollout.md");
        let sed =
            rollout.lines().find(|l| l.contains("sed 's|^Exec=")).expect("docs/rollout.md copies the entry with sed");
        let script = &sed[sed.find("s|^").unwrap() + 3..];
        let (line, rest) = script.split_once("$|&").expect("s|^LINE$|&SUFFIX|");
        let suffix = &rest[..rest.find('|').unwrap()];
        let menu_entry = repo_file("packaging/desktop/lockwatch.desktop");
        assert!(menu_entry.lines().any(|l| l == line), "the menu entry has no line {line:?} for the sed to change");
        assert!(
            !menu_entry.contains(ARG),
            "the menu entry passes {ARG}: a second start from the menu would do nothing"
        );
        let copied = format!("{line}{suffix}");
        assert_eq!(copied, format!("Exec=/usr/bin/lockwatch-tray {ARG}"));
        let postrm = repo_file("packaging/desktop/postrm");
        assert!(
            postrm.contains("grep -q '^Exec=/usr/bin/lockwatch-tray'"),
            "postrm no longer knows the copy: {postrm}"
        );
    }
}
