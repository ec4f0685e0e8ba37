//! Loading and saving the settings file (`settings.json` in
//! [`paths::data_dir`](crate::paths::data_dir): a JSON object whose
//! `settings` member holds them). Both processes read and write it this
//! way. A file that is not valid is moved aside
//! (`settings.json.bad-<time>`) and the app starts with defaults, saying so
//! once: nothing is lost, nothing crashes. A save writes a new file and
//! renames it over the old one, so a reader never sees half of it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::settings::{STORE_FILE, STORE_KEY, Settings};

fn file() -> std::io::Result<PathBuf> {
    crate::paths::data_dir().map(|dir| dir.join(STORE_FILE))
}

/// The settings, and a sentence when the file had to be set aside.
pub fn load() -> (Settings, Option<String>) {
    let path = match file() {
        Ok(path) => path,
        Err(err) => {
            tracing::warn!("{err}: the settings are the defaults and cannot be saved");
            return (Settings::default(), None);
        }
    };
    let Ok(bytes) = std::fs::read(&path) else { return (Settings::default(), None) };
    match parse(&bytes) {
        Ok(settings) => (settings, None),
        Err(bad) => (Settings::default(), Some(set_aside(&path, &bad))),
    }
}

fn parse(bytes: &[u8]) -> Result<Settings, String> {
    let file: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    match file.get(STORE_KEY) {
        Some(s) => serde_json::from_value(s.clone()).map_err(|e| e.to_string()),
        None => Ok(Settings::default()),
    }
}

fn set_aside(path: &Path, bad: &str) -> String {
    let aside = path.with_extension(format!("json.bad-{}", crate::clock::desktop_now_ms() / 1000));
    let msg = if std::fs::rename(path, &aside).is_ok() {
        format!(
            "{} could not be read ({bad}); it was kept as {} and the defaults are used",
            path.display(),
            aside.display()
        )
    } else {
        format!("{} could not be read ({bad}); the defaults are used", path.display())
    };
    tracing::warn!("{msg}");
    msg
}

/// Saves the settings; failures are logged (the running app keeps them).
pub fn save(settings: &Settings) {
    match write(settings) {
        Ok(()) => crate::window::settings_saved(),
        Err(err) => tracing::warn!(error = %err, "cannot save the settings"),
    }
}

fn write(settings: &Settings) -> std::io::Result<()> {
    let path = file()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut object = Map::new();
    object.insert(STORE_KEY.to_owned(), serde_json::to_value(settings).map_err(std::io::Error::other)?);
    let text = serde_json::to_vec_pretty(&Value::Object(object)).map_err(std::io::Error::other)?;
    let new = path.with_extension("json.new");
    std::fs::write(&new, text)?;
    std::fs::rename(&new, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_settings_or_with_unknown_fields_still_loads() {
        assert_eq!(parse(b"{}"), Ok(Settings::default()));
        let saved = serde_json::json!({ STORE_KEY: { "redis_url": "redis://elsewhere:6380", "someday": 1 } });
        let settings = parse(saved.to_string().as_bytes()).unwrap();
        assert_eq!(settings.redis_url, "redis://elsewhere:6380");
        assert!(parse(b"{\"settings\": 3}").is_err());
        assert!(parse(b"not json").is_err());
    }
}
