//! The watchers: one library [`Watcher`] per job, started from the settings
//! that take effect, and their statuses and events carried into the app
//! state, the tray, the dashboard (as Tauri events) and notifications.

use lockwatch::watch::Watcher;
use lockwatch::{Event, Status};
use tauri::{AppHandle, Emitter, Manager};
use tokio::sync::broadcast::error::RecvError;

use crate::clock::{desktop_now_ms, local_time};
use crate::model::JobView;
use crate::notify;
use crate::passwords::KEYRING;
use crate::state::AppState;
use crate::tray;

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
                inner.jobs.push(JobView { job: keys.job.clone(), ..JobView::default() });
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
    tray::redraw(app);
}

/// Asks the watcher of job `index` to read again now (after a flip).
pub fn refresh(app: &AppHandle, index: usize) {
    let state = app.state::<AppState>();
    if let Some(w) = state.lock().watchers.get(index) {
        w.refresh();
    }
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
        let user = inner.effective.as_ref().map(|e| e.user.clone()).unwrap_or_default();
        if let Some(s) = &status {
            inner.notifier.set_acks(&s.job, &s.acks, &user);
        }
        if let (Some(job), Some(s)) = (inner.jobs.get_mut(index), &status) {
            let _ = app.emit("status", s);
            job.status = status;
        }
    }
    tray::redraw(app);
    true
}

fn on_event(app: &AppHandle, event: &Event) {
    let _ = app.emit("event", event);
    if crate::window::in_dashboard() {
        return; // the tray app's process notifies, once
    }
    let note = {
        let state = app.state::<AppState>();
        let mut inner = state.lock();
        let kinds = inner.effective.as_ref().map(|e| e.notify.clone()).unwrap_or_default();
        let mute = inner.settings.mute_until_ms;
        let tr = inner.tr();
        inner.notifier.decide(event, &kinds, mute, desktop_now_ms(), &tr, local_time)
    };
    if let Some(note) = note {
        notify::tell(app, &note);
    }
}
