//! The page's Tauri commands: thin, each asks the core or the library and
//! answers with a typed value or the app's [`AppError`].

use lockwatch::input::ConnectionSpec;
use serde::Serialize;
use tauri::{State, WebviewWindow};

use super::page::{PageHistory, PageState};
use super::test_connection::{Tested, test_form};
use super::window::Views;
use crate::core::actions::{self, Effect};
use crate::core::desk::Desk;
use crate::core::error::AppError;
use crate::core::error::FieldError;
use crate::core::i18n::page_messages;
use crate::core::passwords::{KEYRING, PasswordStore, account};
use crate::core::settings::SettingsForm;
use crate::link::{Message, View};

/// The window system's errors, in its sentence.
impl From<tauri::Error> for AppError {
    fn from(err: tauri::Error) -> AppError {
        AppError::Window(err.to_string())
    }
}

/// Everything the page shows at first; updates arrive as `status` and `event` events.
#[tauri::command]
pub async fn get_state(desk: State<'_, Desk>) -> Result<PageState, AppError> {
    Ok(PageState::of(&desk.state().lock()))
}

/// The view this window shows; later ones arrive as its `view` events.
#[tauri::command]
pub async fn view(window: WebviewWindow, views: State<'_, Views>) -> Result<View, AppError> {
    Ok(views.of(window.label()))
}

/// Flips the user's own flag of `job`, with their reason (checked by the
/// library's rule: one line, bounded) when they gave one.
#[tauri::command]
pub async fn set_enabled(desk: State<'_, Desk>, job: String, on: bool, reason: Option<String>) -> Result<(), AppError> {
    let reason = reason.map(|r| r.trim().to_owned()).filter(|r| !r.is_empty());
    if let Some(r) = &reason {
        lockwatch::input::check_reason(r)?;
    }
    actions::flip(&desk, &job, on, reason.as_deref()).await
}

/// Asks the tray, the process that notifies, for a test notification.
#[tauri::command]
pub async fn test_notification(desk: State<'_, Desk>) -> Result<(), AppError> {
    if desk.tell_tray(&Message::TestNotification) {
        Ok(())
    } else {
        Err(AppError::NoTray(desk.state().lock().tr().t("page-notify-test-no-tray")))
    }
}

/// Closes the window that asks (the "switch off" window, once answered).
#[tauri::command]
pub async fn close_dialog(window: WebviewWindow) -> Result<(), AppError> {
    Ok(window.destroy()?)
}

/// Sizes the window that asks to its content (`width` × `height` CSS
/// pixels, as the page measured it), within what a screen surely holds:
/// the same window fits its words in every language and font.
#[tauri::command]
pub async fn fit_dialog(window: WebviewWindow, width: f64, height: f64) -> Result<(), AppError> {
    let size = tauri::LogicalSize::new(width.clamp(360.0, 800.0), height.clamp(160.0, 600.0));
    Ok(window.set_size(size)?)
}

/// The app's verdict on a settings form, field by field; empty when it can be saved.
#[tauri::command]
pub async fn validate_settings(desk: State<'_, Desk>, form: SettingsForm) -> Result<Vec<FieldError>, AppError> {
    let base = desk.state().lock().settings.clone();
    Ok(form.accept(&base).err().unwrap_or_default())
}

/// What became of a saved form, for the page to say in the language the
/// saved settings speak: it asks for their words after saving, so no
/// sentence is made here in the language they replace.
#[derive(Debug, Serialize)]
pub struct Saved {
    /// The password went to memory: this desktop has no keyring.
    pub password_in_memory: bool,
}

/// Validates, stores (the password to the keyring) and applies the settings form.
#[tauri::command]
pub async fn save_settings(desk: State<'_, Desk>, form: SettingsForm) -> Result<Saved, AppError> {
    // The tray's process may have changed what the form does not show (the
    // mute, start at login) since this window opened: the form applies onto
    // the settings as saved, not onto this process's copy.
    let base = desk.settings_file().load();
    let accepted = form.accept(&base).map_err(AppError::Form)?;
    let overrides = desk.state().lock().overrides.clone();
    let mut password_in_memory = false;
    if let Some(password) = &accepted.password
        && let Ok(target) = ConnectionSpec::single(accepted.settings.login_url(&overrides), None).target()
    {
        let account = account(target.user(), target.host());
        if let Err(err) = KEYRING.set(&account, password) {
            tracing::warn!("{err}");
            password_in_memory = true;
            // No keyring: the tray, which connects, keeps it in its memory
            // too; told before the settings, which it then reads and applies.
            desk.tell_tray(&Message::Password { account, password: password.clone() });
        }
    }
    actions::update_settings(&desk, |s| {
        *s = accepted.settings;
        Effect::Restart
    });
    Ok(Saved { password_in_memory })
}

/// The page's messages in the language in effect, and that language's tag.
#[derive(Debug, Serialize)]
pub struct PageTexts {
    pub lang: &'static str,
    /// Templates with `{name}` for each argument.
    pub messages: std::collections::BTreeMap<String, String>,
}

/// The page's messages in the language in effect.
#[tauri::command]
pub async fn page_texts(desk: State<'_, Desk>) -> Result<PageTexts, AppError> {
    let lang = desk.state().lock().lang();
    Ok(PageTexts { lang: lang.tag(), messages: page_messages(lang) })
}

/// Tries what would take effect: the form's URL, password and Sentinels,
/// unless the environment overrides them (as the watchers will use it), on
/// its first job, and answers in one line.
#[tauri::command]
pub async fn test_connection(desk: State<'_, Desk>, form: SettingsForm) -> Result<Tested, AppError> {
    let (tr, overrides, login_as_name) = {
        let inner = desk.state().lock();
        (inner.tr(), inner.overrides.clone(), inner.settings.login_as_name)
    };
    Ok(test_form(form, &overrides, login_as_name, &tr).await)
}

/// The job's shared history of the last `window_ms` (default 24 hours),
/// as the library builds it (runs, failovers, restarts, deaths, flag
/// flips), each incident with its outage.
#[tauri::command]
pub async fn history(desk: State<'_, Desk>, job: String, window_ms: Option<u64>) -> Result<PageHistory, AppError> {
    let (target, keys, engine) = {
        let inner = desk.state().lock();
        let e = inner.effective.as_ref().ok_or(AppError::Unconfigured)?;
        let watched = inner.job(&job).ok_or_else(|| AppError::NotWatched(job.clone()))?;
        (e.target.clone(), watched.keys.clone(), watched.options.engine.clone())
    };
    let window = std::time::Duration::from_millis(window_ms.unwrap_or(24 * 3_600_000));
    let mut conn = target.manager().await?;
    let history = lockwatch::history::load(&mut conn, &keys, target.endpoint(), Some(window), &engine).await?;
    Ok(history.into())
}
