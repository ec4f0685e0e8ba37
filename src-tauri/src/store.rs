//! The settings file, through tauri-plugin-store: `settings.json` in the
//! app's data directory (`~/.local/share/app.lockwatch.tray/` on Linux,
//! `%APPDATA%\app.lockwatch.tray\` on Windows), a JSON object whose
//! `settings` member holds them: the file and format the app has always
//! used. Both processes read and write it this way ([`File`], the core's
//! [`SettingsFile`]): the one piece of the toolkit they share.
//!
//! The plugin writes the file in place, so a crash mid-write would leave
//! half of it. Each save therefore first keeps the file as it was
//! (`settings.json.bak`); a file found unreadable is replaced by that copy,
//! or, without a good one, moved aside (`settings.json.bad-<time>`) and the
//! defaults used. Either is said once: nothing is lost, nothing crashes.
//!
//! The file holds only what the user changed: beneath it lie the machine's
//! defaults an admin pushed ([`site`]) and the built-in ones.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tauri::{AppHandle, Wry};
use tauri_plugin_store::{Store, StoreExt as _, resolve_store_path};

use crate::core::desk::SettingsFile;
use crate::core::error::SystemError;
use crate::core::settings::{STORE_FILE, STORE_KEY, Settings, site};

/// The machine's defaults as the settings were last loaded with, to save
/// against (this process's settings in memory were layered on these).
static LOADED: Mutex<Option<Map<String, Value>>> = Mutex::new(None);

/// A sentence to tell once, under the catalog's summary `summary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub summary: &'static str,
    pub body: String,
}

/// The settings file of this process's Tauri app.
pub struct File(pub AppHandle);

impl SettingsFile for File {
    fn load(&self) -> Settings {
        load(&self.0).0
    }

    fn save(&self, settings: &Settings) -> bool {
        save(&self.0, settings)
    }
}

/// The settings, read anew from the files, and what to tell when the
/// user's file had to be repaired or set aside, or the machine's defaults
/// could not be used as they are.
pub fn load(app: &AppHandle) -> (Settings, Vec<Said>) {
    let (machine, site_problem) = site::read();
    *LOADED.lock().unwrap_or_else(|p| p.into_inner()) = Some(machine.clone());
    let mut problems: Vec<Said> =
        site_problem.into_iter().map(|body| Said { summary: "note-site-settings", body }).collect();
    let beneath = || site::layered(&machine, None).unwrap_or_default();
    match resolve_store_path(app, STORE_FILE) {
        Ok(path) => problems.extend(repair(&path).map(|body| Said { summary: "note-settings-reset", body })),
        Err(err) => {
            tracing::warn!("{err}: the settings are the defaults and cannot be saved");
            return (beneath(), problems);
        }
    }
    let store = match open(app) {
        Ok(store) => store,
        Err(err) => {
            tracing::warn!("{err}: the settings are the defaults");
            return (beneath(), problems);
        }
    };
    // The other process may have saved since this one last read.
    if let Err(err) = store.reload() {
        tracing::debug!(error = %err, "no settings file yet");
    }
    match site::layered(&machine, store.get(STORE_KEY).as_ref()) {
        Ok(settings) => (settings, problems),
        Err(bad) => {
            // Changed under us after the repair: defaults, and the file kept as it is.
            tracing::warn!("the settings could not be read ({bad}); the defaults are used");
            (beneath(), problems)
        }
    }
}

/// Saves the settings; says whether they were. Failures are logged (the
/// running app keeps the settings).
fn save(app: &AppHandle, settings: &Settings) -> bool {
    let written = write(app, settings);
    if let Err(err) = &written {
        tracing::warn!(error = %err, "cannot save the settings");
    }
    written.is_ok()
}

fn write(app: &AppHandle, settings: &Settings) -> Result<(), SystemError> {
    let path = resolve_store_path(app, STORE_FILE).map_err(SystemError::desktop("finding the settings file"))?;
    // Only a good file becomes the copy: a broken one would replace the last good copy.
    if std::fs::read(&path).is_ok_and(|bytes| parse(&bytes).is_ok()) {
        std::fs::copy(&path, backup(&path)).map_err(SystemError::file(&backup(&path)))?;
    }
    let store = open(app)?;
    // Against the machine's defaults the settings were loaded with: those the
    // admin changed since must not be pinned as the user's own.
    let loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let beneath = loaded.unwrap_or_else(|| site::read().0);
    store.set(STORE_KEY, site::own(settings, &beneath)?);
    store.save().map_err(SystemError::desktop("saving the settings"))
}

/// The plugin's store of the settings file; saved only when asked.
fn open(app: &AppHandle) -> Result<Arc<Store<Wry>>, SystemError> {
    app.store_builder(STORE_FILE).disable_auto_save().build().map_err(SystemError::desktop("opening the settings"))
}

fn backup(path: &Path) -> PathBuf {
    path.with_extension("json.bak")
}

/// The settings a file holds over the built-in defaults: none is the
/// defaults; anything but a JSON object whose `settings` are settings is an
/// error.
fn parse(bytes: &[u8]) -> Result<Settings, SystemError> {
    let file: Value = serde_json::from_slice(bytes)?;
    if !file.is_object() {
        return Err(SystemError::not_an_object("the file", &file));
    }
    site::layered(&Map::new(), file.get(STORE_KEY))
}

/// Makes the file at `path` readable again when it is not: the copy kept
/// before the last save put back, or the file set aside. Says what it did.
fn repair(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let bad = parse(&bytes).err()?;
    let good_copy = std::fs::read(backup(path)).is_ok_and(|b| parse(&b).is_ok());
    let msg = if good_copy && std::fs::copy(backup(path), path).is_ok() {
        format!("{} could not be read ({bad}); the copy kept before the last save was put back", path.display())
    } else {
        let aside = path.with_extension(format!("json.bad-{}", crate::core::clock::desktop_now_ms() / 1000));
        if std::fs::rename(path, &aside).is_ok() {
            format!(
                "{} could not be read ({bad}); it was kept as {} and the defaults are used",
                path.display(),
                aside.display()
            )
        } else {
            format!("{} could not be read ({bad}); the defaults are used", path.display())
        }
    };
    tracing::warn!("{msg}");
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_settings_or_with_unknown_fields_still_loads() {
        assert_eq!(parse(b"{}").unwrap(), Settings::default());
        let saved = serde_json::json!({ STORE_KEY: { "redis_url": "redis://elsewhere:6380", "someday": 1 } });
        let settings = parse(saved.to_string().as_bytes()).unwrap();
        assert_eq!(settings.redis_url, "redis://elsewhere:6380");
        let refused = parse(b"{\"settings\": 3}").unwrap_err().to_string();
        assert_eq!(refused, "\"settings\" is a number, not an object");
        assert!(parse(b"not json").is_err());
        assert_eq!(parse(b"[]").unwrap_err().to_string(), "the file is a list, not an object");
    }

    #[test]
    fn a_file_cut_short_by_a_crash_gets_the_copy_kept_before_the_save_back() {
        let dir = std::env::temp_dir().join(format!("lockwatch-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(STORE_FILE);
        let good = serde_json::json!({ STORE_KEY: { "redis_url": "redis://kept:6380" } }).to_string();
        std::fs::write(backup(&path), &good).unwrap();
        std::fs::write(&path, &good[..good.len() / 2]).unwrap();
        let said = repair(&path).unwrap();
        assert!(said.contains("the copy kept before the last save was put back"), "{said}");
        assert_eq!(parse(&std::fs::read(&path).unwrap()).unwrap().redis_url, "redis://kept:6380");
        assert_eq!(repair(&path), None, "a good file is left alone");

        // No good copy: set aside, nothing deleted.
        std::fs::write(backup(&path), "{").unwrap();
        std::fs::write(&path, "{\"settings\":").unwrap();
        let said = repair(&path).unwrap();
        assert!(said.contains("it was kept as") && !path.exists(), "{said}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
