//! The dashboard's Tauri commands: thin, each calls the library or the app
//! state and returns a sentence as its error.

use lockwatch::connect::Target;
use lockwatch::probe::probe;
use serde::Serialize;
use serde_json::{Value, json};
use tauri::{AppHandle, State};

use crate::settings::{KEYRING, PasswordStore, Settings, account, split_password};
use crate::state::{self, AppState};
use crate::store;

/// Everything the page shows at first; updates arrive as `status` and `event` events.
#[tauri::command]
pub async fn get_state(state: State<'_, AppState>) -> Result<Value, String> {
    let inner = state.lock();
    let statuses: Vec<Value> =
        inner.jobs.iter().map(|j| json!({ "job": j.job, "status": j.status, "flip_error": j.flip_error })).collect();
    Ok(json!({
        "settings": inner.settings,
        "user": inner.effective.as_ref().map(|e| e.user.clone()),
        "redis": inner.effective.as_ref().map(|e| e.shown_url.clone()),
        "settings_error": inner.settings_error,
        "overridden": {
            "redis_url": inner.overrides.redis_url.is_some(),
            "user": inner.overrides.user.is_some(),
            "job": inner.overrides.job.is_some(),
        },
        "jobs": statuses,
    }))
}

/// Flips the user's own flag of `job`.
#[tauri::command]
pub async fn set_enabled(app: AppHandle, job: String, on: bool) -> Result<(), String> {
    state::flip_now(&app, &job, on).await
}

/// Field-by-field problems, or nothing.
#[derive(Debug, Serialize)]
pub struct Invalid {
    pub fields: Vec<(String, String)>,
}

/// Validates, stores (the password to the keyring) and applies the settings.
#[tauri::command]
pub async fn save_settings(
    app: AppHandle,
    state: State<'_, AppState>,
    mut settings: Settings,
    password: Option<String>,
) -> Result<Option<String>, Invalid> {
    let bad = settings.validate();
    if !bad.is_empty() {
        return Err(Invalid { fields: bad });
    }
    let (url, typed) = split_password(&settings.redis_url);
    settings.redis_url = url;
    let mut note = None;
    if let Some(password) = password.filter(|p| !p.is_empty()).or(typed)
        && let Ok(target) = Target::new(&settings.redis_url, None)
        && let Err(err) = KEYRING.set(&account(target.user(), target.host()), &password)
    {
        note = Some(err);
    }
    state.lock().settings = settings.clone();
    store::save(&app, &settings);
    state::restart(&app);
    Ok(note)
}

/// Tries a URL (and password) and says in one sentence what worked or failed.
#[tauri::command]
pub async fn test_connection(
    url: String,
    password: Option<String>,
    tls_ca: Option<String>,
    job: Option<String>,
) -> String {
    let (url, typed) = split_password(&url);
    let url = match password.filter(|p| !p.is_empty()).or(typed) {
        Some(p) => crate::settings::with_password(&url, &p),
        None => url,
    };
    let target = match Target::new(&url, tls_ca.as_deref().filter(|c| !c.is_empty()).map(std::path::Path::new)) {
        Ok(t) => t,
        Err(e) => return e.to_string(),
    };
    let mut conn = match target.manager().await {
        Ok(c) => c,
        Err(e) => return e.to_string(),
    };
    let keys = lockwatch::Keys::new(job.as_deref().unwrap_or(lockwatch::keys::DEFAULT_JOB));
    match probe(&mut conn, &keys, target.endpoint()).await {
        Ok(snap) => format!(
            "Connected to {} and read job {}: {} registered users, {} workers.",
            target.host(),
            keys.job,
            snap.flags.len(),
            snap.beats.len()
        ),
        Err(e) => e.to_string(),
    }
}

/// The job's last events from its Redis stream (newest first), for the history view.
#[tauri::command]
pub async fn history(state: State<'_, AppState>, job: String, count: Option<usize>) -> Result<Value, String> {
    let (target, keys) = {
        let inner = state.lock();
        let e = inner.effective.as_ref().ok_or("the settings cannot take effect")?;
        let (keys, _) = e.jobs.iter().find(|(k, _)| k.job == job).ok_or_else(|| format!("job {job} is not watched"))?;
        (e.target.clone(), keys.clone())
    };
    let mut conn = target.manager().await.map_err(|e| e.to_string())?;
    let entries: redis::streams::StreamRangeReply = redis::cmd("XREVRANGE")
        .arg(keys.events())
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(count.unwrap_or(2_000))
        .query_async(&mut conn)
        .await
        .map_err(|e| format!("reading {} failed: {e}", keys.events()))?;
    let list: Vec<Value> = entries
        .ids
        .into_iter()
        .map(|entry| {
            let fields: serde_json::Map<String, Value> = entry
                .map
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(redis::from_redis_value_ref::<String>(v).unwrap_or_default())))
                .collect();
            json!({ "id": entry.id, "fields": fields })
        })
        .collect();
    Ok(Value::Array(list))
}
