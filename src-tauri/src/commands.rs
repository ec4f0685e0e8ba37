//! The dashboard's Tauri commands: thin, each calls the library or the app
//! state and returns a sentence as its error.

use lockwatch::probe::probe;
use lockwatch::spec::{self, ConnectionSpec};
use serde::Serialize;
use serde_json::{Value, json};
use tauri::State;

use crate::actions::{self, Effect};
use crate::desk::Desk;
use crate::link::Message;
use crate::passwords::{KEYRING, PasswordStore, account};
use crate::settings::{FieldError, Overrides, SettingsForm};
use crate::{i18n, store};

/// Everything the page shows at first; updates arrive as `status` and `event` events.
#[tauri::command]
pub async fn get_state(desk: State<'_, Desk>) -> Result<Value, String> {
    let inner = desk.state().lock();
    let statuses: Vec<Value> = inner
        .jobs
        .iter()
        .map(|j| {
            let (said, detail) = j.flip_error.as_ref().map(|r| (&r.said, &r.detail)).unzip();
            json!({ "job": j.job, "status": j.status, "flip_error": said, "flip_detail": detail })
        })
        .collect();
    Ok(json!({
        "settings": inner.settings,
        "form": SettingsForm::of(&inner.settings),
        "user": inner.effective.as_ref().map(|e| e.user.clone()),
        "redis": inner.effective.as_ref().map(|e| e.shown_url.clone()),
        "settings_error": inner.settings_error,
        "overridden": {
            "redis_url": inner.overrides.redis_url.is_some(),
            "sentinels": inner.overrides.sentinels.is_some(),
            "sentinel_master": inner.overrides.sentinel_master.is_some(),
            "cluster": inner.overrides.cluster,
            "user": inner.overrides.user.is_some(),
            "job": inner.overrides.job.is_some(),
        },
        "jobs": statuses,
    }))
}

/// Flips the user's own flag of `job`, with their reason (checked by the
/// library's rule: one line, bounded) when they gave one.
#[tauri::command]
pub async fn set_enabled(desk: State<'_, Desk>, job: String, on: bool, reason: Option<String>) -> Result<(), String> {
    let reason = reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if let Some(r) = &reason {
        lockwatch::spec::check_reason(r).map_err(|e| e.to_string())?;
    }
    actions::flip(&desk, &job, on, reason.as_deref()).await
}

/// Asks the tray, the process that notifies, for a test notification.
#[tauri::command]
pub async fn test_notification(desk: State<'_, Desk>) -> Result<(), String> {
    if desk.tell_tray(&Message::TestNotification) {
        Ok(())
    } else {
        Err(desk.state().lock().tr().t("page-notify-test-no-tray"))
    }
}

/// Closes the window that asks (the "switch off" window, once answered).
#[tauri::command]
pub async fn close_dialog(window: tauri::WebviewWindow) -> Result<(), String> {
    window.destroy().map_err(|e| e.to_string())
}

/// Sizes the window that asks to its content (`width` × `height` CSS
/// pixels, as the page measured it), within what a screen surely holds:
/// the same window fits its words in every language and font.
#[tauri::command]
pub async fn fit_dialog(window: tauri::WebviewWindow, width: f64, height: f64) -> Result<(), String> {
    let size = tauri::LogicalSize::new(width.clamp(360.0, 800.0), height.clamp(160.0, 600.0));
    window.set_size(size).map_err(|e| e.to_string())
}

/// Field-by-field problems of a settings form.
#[derive(Debug, Serialize)]
pub struct Invalid {
    pub fields: Vec<FieldError>,
}

/// The app's verdict on a settings form, field by field; empty when it can be saved.
#[tauri::command]
pub async fn validate_settings(desk: State<'_, Desk>, form: SettingsForm) -> Result<Vec<FieldError>, String> {
    let base = desk.state().lock().settings.clone();
    Ok(form.accept(&base).err().unwrap_or_default())
}

/// Validates, stores (the password to the keyring) and applies the settings form.
#[tauri::command]
pub async fn save_settings(desk: State<'_, Desk>, form: SettingsForm) -> Result<Option<String>, Invalid> {
    // The tray's process may have changed what the form does not show (the
    // mute, start at login) since this window opened: the form applies onto
    // the settings as saved, not onto this process's copy.
    let base = store::load(desk.app()).0;
    let accepted = form.accept(&base).map_err(|fields| Invalid { fields })?;
    let overrides = desk.state().lock().overrides.clone();
    let mut note = None;
    if let Some(password) = &accepted.password
        && let Ok(target) = ConnectionSpec::single(accepted.settings.login_url(&overrides), None).target()
    {
        let account = account(target.user(), target.host());
        if let Err(err) = KEYRING.set(&account, password) {
            tracing::warn!("{err}");
            note = Some(desk.state().lock().tr().t("page-password-in-memory"));
            // No keyring: the tray, which connects, keeps it in its memory
            // too; told before the settings, which it then reads and applies.
            desk.tell_tray(&Message::Password { account, password: password.clone() });
        }
    }
    actions::update_settings(&desk, |s| {
        *s = accepted.settings;
        Effect::Restart
    });
    Ok(note)
}

/// The page's messages in the language in effect (templates with `{name}`
/// for each argument), and that language's tag.
#[tauri::command]
pub async fn page_texts(desk: State<'_, Desk>) -> Result<Value, String> {
    let lang = desk.state().lock().lang();
    Ok(json!({ "lang": lang.tag(), "messages": i18n::page_messages(lang) }))
}

/// What "Test connection" answers: one line, and the library's sentence
/// behind a failure for the curious.
#[derive(Debug, Serialize)]
pub struct Tested {
    pub line: String,
    pub detail: Option<String>,
}

/// Tries what would take effect: the form's URL, password and Sentinels,
/// unless the environment overrides them (as the watchers will use it), on
/// its first job, and answers in one line.
#[tauri::command]
pub async fn test_connection(desk: State<'_, Desk>, form: SettingsForm) -> Result<Tested, String> {
    let (tr, overrides, login_as_name) = {
        let inner = desk.state().lock();
        (inner.tr(), inner.overrides.clone(), inner.settings.login_as_name)
    };
    Ok(test_form(form, &overrides, login_as_name, &tr).await)
}

async fn test_form(form: SettingsForm, overrides: &Overrides, login_as_name: bool, tr: &i18n::Tr) -> Tested {
    let bad = |sentence: String| Tested { line: sentence, detail: None };
    let url = match &overrides.redis_url {
        Some(url) => url.clone(),
        None => {
            let (url, typed) = lockwatch::address::split_password(form.redis_url.trim());
            let name = overrides.user.as_deref().or(Some(form.user.trim()).filter(|u| !u.is_empty()));
            let name = name.filter(|_| login_as_name);
            let url = lockwatch::address::with_user(&url, name);
            match Some(form.password).filter(|p| !p.is_empty()).or(typed) {
                Some(p) => lockwatch::address::with_password(&url, &p),
                None => url,
            }
        }
    };
    let tls_ca = Some(form.tls_ca.trim()).filter(|c| !c.is_empty()).map(Into::into);
    // The environment's Sentinel inputs replace the form's as a pair, and its cluster switch adds to the box,
    // as in `Settings::effective`.
    let topology = match (&overrides.sentinels, &overrides.sentinel_master) {
        (None, None) => spec::Topology::from_inputs(Some(&form.sentinels), Some(&form.sentinel_master)),
        (s, m) => spec::Topology::from_inputs(s.as_deref(), m.as_deref()),
    }
    .or_cluster(form.cluster || overrides.cluster);
    let connection = ConnectionSpec { url, tls_ca, topology };
    if let Some(invalid) = connection.check().into_iter().next() {
        return bad(invalid.to_string());
    }
    let jobs = overrides.job.clone().unwrap_or(form.jobs);
    let job = match spec::job_names(&jobs) {
        Ok(names) => names.into_iter().next().unwrap_or_else(|| lockwatch::keys::DEFAULT_JOB.to_owned()),
        Err(invalid) => return bad(invalid.to_string()),
    };
    let target = match connection.target() {
        Ok(t) => t,
        Err(e) => return bad(e.to_string()),
    };
    let user = target.user().unwrap_or_default().to_owned();
    let failed = |err: lockwatch::Error| {
        use lockwatch::error::RedisFailure;
        let why = match err.redis_failure() {
            Some(RedisFailure::Unreachable) => "unreachable",
            Some(RedisFailure::Auth) => "login",
            Some(RedisFailure::Permission) => "not-allowed",
            _ => "other",
        };
        let args = [("host", target.host().into()), ("why", why.into()), ("user", user.as_str().into())];
        Tested { line: tr.ta("test-failed", &args), detail: Some(err.to_string()) }
    };
    let mut conn = match target.manager().await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let keys = lockwatch::Keys::new(&job);
    match probe(&mut conn, &keys, target.endpoint()).await {
        Ok(snap) => {
            // Alive: beating within the grace, its process's presence not gone.
            let grace = lockwatch::status::Config::default().heartbeat_grace_ms;
            let alive = snap
                .beats
                .iter()
                .filter(|b| b.present != Some(false))
                .filter(|b| b.beat_ms.is_some_and(|t| snap.time_ms.saturating_sub(t) <= grace))
                .count();
            Tested {
                line: tr.ta(
                    "test-connected",
                    &[
                        ("host", target.host().into()),
                        ("job", keys.job.as_str().into()),
                        ("users", snap.flags.len().into()),
                        ("workers", alive.into()),
                        ("silent", (snap.beats.len() - alive).into()),
                    ],
                ),
                detail: None,
            }
        }
        Err(e) => failed(e),
    }
}

/// The job's shared history of the last `window_ms` (default 24 hours),
/// as the library builds it: runs, failovers, restarts, deaths, flag flips.
#[tauri::command]
pub async fn history(
    desk: State<'_, Desk>,
    job: String,
    window_ms: Option<u64>,
) -> Result<lockwatch::history::History, String> {
    let (target, keys, engine) = {
        let inner = desk.state().lock();
        let e = inner.effective.as_ref().ok_or("the settings cannot take effect")?;
        let (keys, options) =
            e.jobs.iter().find(|(k, _)| k.job == job).ok_or_else(|| format!("job {job} is not watched"))?;
        (e.target.clone(), keys.clone(), options.engine.clone())
    };
    let window = std::time::Duration::from_millis(window_ms.unwrap_or(24 * 3_600_000));
    let mut conn = target.manager().await.map_err(|e| e.to_string())?;
    lockwatch::history::load(&mut conn, &keys, target.endpoint(), Some(window), &engine)
        .await
        .map_err(|e| e.to_string())
}
