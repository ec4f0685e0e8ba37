//! The app's state and the supervisor that keeps it live: one library
//! watcher per job, whose statuses and events are pushed into the tray (and
//! to the dashboard as Tauri events) the moment they change.

use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use lockwatch::watch::Watcher;
use lockwatch::{Event, Status, flags};
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::broadcast::error::RecvError;

use crate::model::{JobView, Note, Notifier, tray_view};
use crate::notify;
use crate::settings::{Effective, KEYRING, Overrides, Settings};
use crate::tray::{self, TrayMenu};

/// Quiet time per (job, event kind) between two notifications.
const QUIET_MS: u64 = 60_000;

/// Everything the app knows. Two locks, never held together, and neither
/// ever taken on the main thread: tray calls wait for the main thread, so a
/// main-thread wait on a lock held around them would deadlock.
pub struct AppState {
    inner: Mutex<Inner>,
    /// The tray menu as built; held for the whole of a redraw.
    tray: Mutex<Option<TrayMenu>>,
}

pub struct Inner {
    pub settings: Settings,
    pub overrides: Overrides,
    pub effective: Option<Effective>,
    /// Why the settings cannot take effect, if they cannot.
    pub settings_error: Option<String>,
    pub jobs: Vec<JobView>,
    watchers: Vec<Watcher>,
    notifier: Notifier,
    /// Bumped on every restart, so tasks of an old generation stop updating.
    generation: u64,
}

impl AppState {
    pub fn new(settings: Settings, overrides: Overrides) -> AppState {
        let inner = Mutex::new(Inner {
            settings,
            overrides,
            effective: None,
            settings_error: None,
            jobs: Vec::new(),
            watchers: Vec::new(),
            notifier: Notifier::new(QUIET_MS),
            generation: 0,
        });
        AppState { inner, tray: Mutex::new(None) }
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tray(&self) -> MutexGuard<'_, Option<TrayMenu>> {
        self.tray.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Desktop time in ms, for the mute only: job ages come from Redis time.
pub fn desktop_now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A Redis ms time in the desktop's time zone.
pub fn local_time(ms: u64) -> String {
    use chrono::TimeZone;
    match chrono::Local.timestamp_millis_opt(i64::try_from(ms).unwrap_or(i64::MAX)) {
        chrono::LocalResult::Single(t) => t.format("%H:%M:%S").to_string(),
        _ => String::new(),
    }
}

/// (Re)starts the watchers from the current settings; called at start and
/// after every settings change (so changes apply without a restart), always
/// on the async runtime.
pub fn restart(app: &AppHandle) {
    let state = app.state::<AppState>();
    let mut inner = state.lock();
    inner.generation += 1;
    inner.watchers.clear();
    inner.jobs.clear();
    let effective = inner.settings.effective(&inner.overrides, &*KEYRING);
    let generation = inner.generation;
    match effective {
        Ok(effective) => {
            if let Some(warning) = &effective.warning {
                tracing::warn!("{warning}");
            }
            tracing::info!(redis = %effective.shown_url, user = %effective.user, jobs = effective.jobs.len(), "watching");
            for (i, (keys, options)) in effective.jobs.iter().enumerate() {
                let watcher = Watcher::spawn(effective.target.clone(), keys.clone(), options.clone());
                inner.jobs.push(JobView { job: keys.job.clone(), status: None, flip_error: None });
                tauri::async_runtime::spawn(follow(app.clone(), generation, i, watcher.status(), watcher.events()));
                inner.watchers.push(watcher);
            }
            inner.settings_error = None;
            inner.effective = Some(effective);
        }
        Err(err) => {
            tracing::error!("the settings cannot take effect: {err}");
            inner.settings_error = Some(err);
            inner.effective = None;
        }
    }
    drop(inner);
    redraw(app);
}

/// Forwards one watcher's statuses and events into the app.
async fn follow(
    app: AppHandle,
    generation: u64,
    index: usize,
    mut status: tokio::sync::watch::Receiver<Option<Status>>,
    mut events: tokio::sync::broadcast::Receiver<Event>,
) {
    loop {
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() { return; }
                let latest = status.borrow_and_update().clone();
                if !set_status(&app, generation, index, latest) { return; }
            }
            event = events.recv() => match event {
                Ok(event) => on_event(&app, &event),
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
        }
    }
}

fn set_status(app: &AppHandle, generation: u64, index: usize, status: Option<Status>) -> bool {
    {
        let state = app.state::<AppState>();
        let mut inner = state.lock();
        if inner.generation != generation {
            return false;
        }
        if let (Some(job), Some(s)) = (inner.jobs.get_mut(index), &status) {
            let _ = app.emit("status", s);
            job.status = status;
        }
    }
    redraw(app);
    true
}

fn on_event(app: &AppHandle, event: &Event) {
    let _ = app.emit("event", event);
    let note = {
        let state = app.state::<AppState>();
        let mut inner = state.lock();
        let kinds = inner.effective.as_ref().map(|e| e.notify.clone()).unwrap_or_default();
        let mute = inner.settings.mute_until_ms;
        inner.notifier.decide(event, &kinds, mute, desktop_now_ms(), local_time)
    };
    if let Some(note) = note {
        notify::show(&note);
    }
}

/// Redraws the tray from the state (never on the main thread; see [`AppState`]).
pub fn redraw(app: &AppHandle) {
    let Some(tray) = app.tray_by_id(tray::TRAY_ID) else { return };
    let state = app.state::<AppState>();
    let (view, autostart) = {
        let inner = state.lock();
        let user = inner.effective.as_ref().map(|e| e.user.clone()).unwrap_or_default();
        let mut view = tray_view(&inner.jobs, &user, inner.settings.mute_until_ms, desktop_now_ms());
        if let Some(err) = &inner.settings_error {
            view.jobs.clear();
            view.mute_label = format!("Settings problem: {err}");
        }
        (view, inner.settings.autostart)
    };
    let mut menu = state.tray();
    if let Err(err) = tray::render(app, &tray, &mut menu, &view, autostart) {
        tracing::warn!(error = %err, "cannot update the tray");
    }
}

/// What a click on "Enabled for me" asks for: the opposite of the server's
/// truth as last read. (The checkbox itself is no witness: a redraw may
/// have reset it between the click and this.) `None` while it is unknown.
pub fn wish(app: &AppHandle, job: &str) -> Option<bool> {
    let state = app.state::<AppState>();
    let inner = state.lock();
    let user = &inner.effective.as_ref()?.user;
    let status = inner.jobs.iter().find(|j| j.job == job)?.status.as_ref()?;
    crate::model::own_flag(status, user).map(|on| !on)
}

/// Flips the user's own flag of `job` to `on` in the background (the menu).
pub fn flip(app: &AppHandle, job: &str, on: bool) {
    let app = app.clone();
    let job = job.to_owned();
    tauri::async_runtime::spawn(async move {
        let _ = flip_now(&app, &job, on).await;
    });
}

/// Flips the user's own flag of `job` to `on`. A refusal (ACL, Redis down)
/// is kept for the menu, notified, and returned; the checkbox goes back to
/// the server's truth with the next status.
///
/// # Errors
/// The refusal, as one sentence.
pub async fn flip_now(app: &AppHandle, job: &str, on: bool) -> Result<(), String> {
    let (target, keys, user, index) = {
        let state = app.state::<AppState>();
        let inner = state.lock();
        let e = inner.effective.as_ref().ok_or("the settings cannot take effect; open Settings")?;
        let i = e.jobs.iter().position(|(k, _)| k.job == job).ok_or_else(|| format!("job {job} is not watched"))?;
        (e.target.clone(), e.jobs[i].0.clone(), e.user.clone(), i)
    };
    let result = async {
        let mut conn = target.manager().await?;
        let host = flags::this_host();
        flags::set_flag(&mut conn, &keys, &flags::Flip { user: &user, on, host: &host, reason: None }, target.host())
            .await
    }
    .await;
    let error = match result {
        Ok(flipped) => flipped.warning,
        Err(err) => Some(err.to_string()),
    };
    {
        let state = app.state::<AppState>();
        let mut inner = state.lock();
        if let Some(view) = inner.jobs.get_mut(index) {
            view.flip_error = error.clone();
        }
        if let Some(w) = inner.watchers.get(index) {
            w.refresh();
        }
    }
    redraw(app);
    match error {
        Some(err) => {
            tracing::warn!(job = %keys.job, "flag flip refused: {err}");
            notify::show(&Note {
                summary: format!("Your flag for {} was not changed", keys.job),
                body: err.clone(),
                critical: false,
            });
            Err(err)
        }
        None => Ok(()),
    }
}
