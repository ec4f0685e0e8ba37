//! Where the app keeps its files, after the XDG base directories (the
//! places the app has always used, so settings and logs stay where they
//! were): the settings in `$XDG_DATA_HOME/app.lockwatch.tray/`
//! (`~/.local/share/…`), the log in its `logs/`, and start at login in
//! `$XDG_CONFIG_HOME/autostart/` (`~/.config/…`).

use std::path::PathBuf;

/// The app's name for its own directories (and its bus name's stem).
pub const IDENTIFIER: &str = "app.lockwatch.tray";

/// The app's data directory (settings).
pub fn data_dir() -> Option<PathBuf> {
    base("XDG_DATA_HOME", ".local/share").map(|dir| dir.join(IDENTIFIER))
}

/// Where the log goes.
pub fn log_dir() -> Option<PathBuf> {
    data_dir().map(|dir| dir.join("logs"))
}

/// The desktop's autostart directory.
pub fn autostart_dir() -> Option<PathBuf> {
    base("XDG_CONFIG_HOME", ".config").map(|dir| dir.join("autostart"))
}

/// `$var` when it holds an absolute path (the spec ignores a relative
/// one), else `$HOME/fallback`.
fn base(var: &str, fallback: &str) -> Option<PathBuf> {
    let set = std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    set.or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(fallback)))
}
