//! Loading and saving the settings with tauri-plugin-store. A file that is
//! not valid is moved aside (`settings.json.bad-<time>`) and the app starts
//! with defaults, saying so once: nothing is lost, nothing crashes.

use tauri::{AppHandle, Manager};
use tauri_plugin_store::StoreExt;

use crate::settings::{STORE_FILE, STORE_KEY, Settings};

/// The settings, and a sentence when the file had to be set aside.
pub fn load(app: &AppHandle) -> (Settings, Option<String>) {
    let problem = app.path().app_data_dir().ok().map(|dir| dir.join(STORE_FILE)).and_then(|path| {
        let bytes = std::fs::read(&path).ok()?;
        let bad = match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(v) => match v.get(STORE_KEY) {
                Some(s) => serde_json::from_value::<Settings>(s.clone()).err().map(|e| e.to_string()),
                None => None,
            },
            Err(e) => Some(e.to_string()),
        }?;
        let aside = path.with_extension(format!("json.bad-{}", crate::clock::desktop_now_ms() / 1000));
        let kept = std::fs::rename(&path, &aside).is_ok();
        let msg = if kept {
            format!(
                "{} could not be read ({bad}); it was kept as {} and the defaults are used",
                path.display(),
                aside.display()
            )
        } else {
            format!("{} could not be read ({bad}); the defaults are used", path.display())
        };
        tracing::warn!("{msg}");
        Some(msg)
    });
    let settings = match app.store(STORE_FILE) {
        Ok(store) => store.get(STORE_KEY).and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default(),
        Err(err) => {
            tracing::warn!(error = %err, "the settings store cannot be opened; using defaults");
            Settings::default()
        }
    };
    (settings, problem)
}

/// Saves the settings; failures are logged (the running app keeps them).
pub fn save(app: &AppHandle, settings: &Settings) {
    let result = app.store(STORE_FILE).and_then(|store| {
        store.set(STORE_KEY, serde_json::to_value(settings).unwrap_or_default());
        store.save()
    });
    match result {
        Ok(()) => crate::window::settings_saved(),
        Err(err) => tracing::warn!(error = %err, "cannot save the settings"),
    }
}
