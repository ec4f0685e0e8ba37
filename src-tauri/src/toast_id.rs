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

/// The Application User Model ID of the app's toasts: the app's identifier.
pub const APP_ID: &str = "app.lockwatch.tray";

/// Where the registration lives, under `HKEY_CURRENT_USER`.
pub fn key_path() -> String {
    format!(r"Software\Classes\AppUserModelId\{APP_ID}")
}

/// Registers the ID for this user, with the icon written into `dir` (the
/// app's local data folder); what failed is logged, never fatal.
#[cfg(windows)]
pub fn register(dir: Option<std::path::PathBuf>) {
    match write(dir) {
        Ok(icon) => tracing::info!(id = APP_ID, key = %key_path(), icon = %icon.display(), "toasts registered"),
        Err(err) => tracing::warn!(
            id = APP_ID,
            key = %key_path(),
            "cannot register the app's toasts, which Windows may then drop: {err}"
        ),
    }
}

#[cfg(windows)]
fn write(dir: Option<std::path::PathBuf>) -> Result<std::path::PathBuf, String> {
    let dir = dir.ok_or("no local data folder")?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    // A file of the app's own: the toast's icon outlives any install folder.
    let icon = dir.join("toast-icon.png");
    std::fs::write(&icon, include_bytes!("../../icons/128x128.png")).map_err(|e| format!("{}: {e}", icon.display()))?;
    let key = windows_registry::CURRENT_USER.create(key_path()).map_err(|e| e.to_string())?;
    key.set_string("DisplayName", "lockwatch").map_err(|e| e.to_string())?;
    key.set_string("IconUri", icon.to_string_lossy()).map_err(|e| e.to_string())?;
    Ok(icon)
}

/// Nothing to register outside Windows.
#[cfg(not(windows))]
pub fn register(_dir: Option<std::path::PathBuf>) {}
