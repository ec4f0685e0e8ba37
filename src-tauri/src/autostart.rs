//! Start at login: the desktop's autostart entry for this executable
//! (freedesktop "Desktop Application Autostart"), `lockwatch.desktop` in
//! [`paths::autostart_dir`](crate::paths::autostart_dir).

use std::io;
use std::path::PathBuf;

const ENTRY: &str = "lockwatch.desktop";

fn entry() -> io::Result<PathBuf> {
    crate::paths::autostart_dir().map(|dir| dir.join(ENTRY))
}

/// Whether the entry is there.
pub fn is_on() -> bool {
    entry().is_ok_and(|path| path.exists())
}

/// Writes the entry (`on`) or removes it.
///
/// # Errors
/// The file system's, naming nothing the caller does not know: the caller
/// logs it and shows the truth ([`is_on`]).
pub fn set(on: bool) -> io::Result<()> {
    let path = entry()?;
    if !on {
        return match std::fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
            _ => Ok(()),
        };
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let exe = std::env::current_exe()?;
    std::fs::write(&path, desktop_entry(&exe.to_string_lossy()))
}

/// The entry's text; `exe` quoted as the spec's `Exec` key wants it.
fn desktop_entry(exe: &str) -> String {
    let quoted: String = exe
        .chars()
        .flat_map(|c| match c {
            '"' | '`' | '$' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect();
    format!(
        "[Desktop Entry]\nType=Application\nName=lockwatch\nComment=The job's state in the tray\nExec=\"{quoted}\"\nTerminal=false\nStartupNotify=false\nX-GNOME-Autostart-enabled=true\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_runs_this_executable_even_with_odd_characters_in_its_path() {
        assert!(desktop_entry("/usr/bin/lockwatch-tray").contains("\nExec=\"/usr/bin/lockwatch-tray\"\n"));
        assert!(desktop_entry("/opt/my apps/$x\"y").contains("Exec=\"/opt/my apps/\\$x\\\"y\"\n"));
    }
}
