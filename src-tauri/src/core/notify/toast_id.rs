//! The name Windows files the app's toasts under. A desktop (unpackaged)
//! app's toast is shown only when its Application User Model ID is known
//! to the shell: carried by a Start Menu shortcut (the installers write it,
//! `packaging/windows/`) or registered under
//! `HKCU\Software\Classes\AppUserModelId\<id>` with the name and icon the
//! toast shows. The tray registers it at every start, so a copy run from
//! anywhere (or a shortcut someone made by hand) gets its toasts too; a
//! toast for an unknown ID is dropped without an error, so the one log
//! line this writes is how an admin tells.
//!
//! On other systems there is nothing to register.

#[cfg(windows)]
use crate::core::error::SystemError;

/// The Application User Model ID of the app's toasts: the app's identifier.
pub const APP_ID: &str = "app.lockwatch.tray";

/// Where the registration lives, under `HKEY_CURRENT_USER`.
pub fn key_path() -> String {
    format!(r"Software\Classes\AppUserModelId\{APP_ID}")
}

/// Registers the ID for this user, with the icon written into `dir` (the
/// app's local data folder); what failed is logged, never fatal. The name
/// is registered even when the icon cannot be written.
#[cfg(windows)]
pub fn register(dir: Option<std::path::PathBuf>) {
    let icon = dir.ok_or(SystemError::NoDataFolder).and_then(|d| place_icon(&d));
    let icon = match icon {
        Ok(icon) => Some(icon),
        Err(err) => {
            tracing::warn!("the toasts' icon cannot be written, so they show none: {err}");
            None
        }
    };
    match write(icon.as_deref()) {
        Ok(()) => tracing::info!(id = APP_ID, key = %key_path(), "toasts registered"),
        Err(err) => tracing::warn!(
            id = APP_ID,
            key = %key_path(),
            "cannot register the app's toasts, which Windows may then drop: {err}"
        ),
    }
}

#[cfg(windows)]
fn write(icon: Option<&std::path::Path>) -> Result<(), SystemError> {
    let key =
        windows_registry::CURRENT_USER.create(key_path()).map_err(SystemError::desktop("opening the app's key"))?;
    key.set_string("DisplayName", "lockwatch").map_err(SystemError::desktop("writing the app's name"))?;
    if let Some(icon) = icon {
        key.set_string("IconUri", icon.to_string_lossy()).map_err(SystemError::desktop("writing the app's icon"))?;
    }
    Ok(())
}

/// The toast's icon, a file of the app's own (it outlives any install
/// folder) in `dir`: written when it is missing or differs, through a new
/// file put in its place, so the shell never reads half of one.
#[cfg(windows)]
fn place_icon(dir: &std::path::Path) -> Result<std::path::PathBuf, SystemError> {
    const ICON: &[u8] = include_bytes!("../../../../icons/128x128.png");
    let icon = dir.join("toast-icon.png");
    if std::fs::read(&icon).is_ok_and(|have| have == ICON) {
        return Ok(icon);
    }
    std::fs::create_dir_all(dir).map_err(SystemError::file(dir))?;
    let new = dir.join("toast-icon.png.new");
    std::fs::write(&new, ICON).map_err(SystemError::file(&new))?;
    std::fs::rename(&new, &icon).map_err(SystemError::file(&icon))?;
    Ok(icon)
}

/// Nothing to register outside Windows.
#[cfg(not(windows))]
pub fn register(_dir: Option<std::path::PathBuf>) {}
