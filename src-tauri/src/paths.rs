//! Where the app keeps its files, after the XDG base directories (the
//! places the app has always used, so settings and logs stay where they
//! were): the settings in `$XDG_DATA_HOME/app.lockwatch.tray/`
//! (`~/.local/share/…`), the log in its `logs/`, and start at login in
//! `$XDG_CONFIG_HOME/autostart/` (`~/.config/…`).

use std::io;
use std::path::PathBuf;

/// The app's name for its own directories (and its bus name's stem).
pub const IDENTIFIER: &str = "app.lockwatch.tray";

/// The app's data directory (settings).
///
/// # Errors
/// When neither `XDG_DATA_HOME` nor `HOME` says where (and so for each below).
pub fn data_dir() -> io::Result<PathBuf> {
    base("XDG_DATA_HOME", ".local/share").map(|dir| dir.join(IDENTIFIER))
}

/// Where the log goes.
pub fn log_dir() -> io::Result<PathBuf> {
    data_dir().map(|dir| dir.join("logs"))
}

/// The desktop's autostart directory.
pub fn autostart_dir() -> io::Result<PathBuf> {
    base("XDG_CONFIG_HOME", ".config").map(|dir| dir.join("autostart"))
}

/// `$var` when it holds an absolute path (the spec ignores a relative
/// one), else `$HOME/fallback`.
fn base(var: &str, fallback: &str) -> io::Result<PathBuf> {
    let set = std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    set.or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(fallback)))
        .ok_or_else(|| io::Error::other(format!("neither {var} nor HOME is set")))
}
