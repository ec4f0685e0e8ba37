//! The watchers: one library [`Watcher`] per job, started from the settings
//! that take effect, and their statuses and events carried into the app
//! state, the surface (the tray's menu, the dashboard's page) and
//! notifications.

use lockwatch::error::RedisFailure;
use lockwatch::watcher::Watcher;
use lockwatch::{Event, Status};
use tokio::sync::broadcast::error::RecvError;

use crate::clock::{desktop_now_ms, local_time};
use crate::desk::Desk;
use crate::model::{JobView, Note};
use crate::passwords::KEYRING;
use crate::runtime;

/// (Re)starts the watchers from the current settings; called at start and
/// after every settings change (so changes apply without a restart), always
/// on the async runtime.
pub fn restart(desk: &Desk) {
    // The keyring may take a while to answer: not with the state locked.
    let (settings, overrides, generation) = {
        let mut inner = desk.state().lock();
        inner.generation += 1;
        inner.told_sign_in = false;
        inner.watchers.clear();
        inner.jobs.clear();
        (inner.settings.clone(), inner.overrides.clone(), inner.generation)
    };
    let effective = settings.effective(&overrides, &*KEYRING);
    let mut inner = desk.state().lock();
    if inner.generation != generation {
        return; // a newer restart began meanwhile, and installs its own
    }
    match effective {
        Ok(effective) => {
            if let Some(warning) = &effective.warning {
                tracing::warn!("{warning}");
            }
            tracing::info!(redis = %effective.shown_url, user = %effective.user, jobs = effective.jobs.len(), "watching");
            for (i, (keys, options)) in effective.jobs.iter().enumerate() {
                let watcher = Watcher::spawn(effective.target.clone(), keys.clone(), options.clone());
                inner.jobs.push(JobView { job: keys.job.clone(), ..JobView::default() });
                runtime::spawn(follow(desk.clone(), generation, i, watcher.status(), watcher.events()));
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
    desk.redraw();
}

/// Asks the watcher of job `index` to read again now (after a flip).
pub fn refresh(desk: &Desk, index: usize) {
    if let Some(w) = desk.state().lock().watchers.get(index) {
        w.refresh();
    }
}

/// Forwards one watcher's statuses and events into the app.
async fn follow(
    desk: Desk,
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
                if !set_status(&desk, generation, index, latest) { return; }
            }
            event = events.recv() => match event {
                Ok(event) => on_event(&desk, &event),
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
        }
    }
}

fn set_status(desk: &Desk, generation: u64, index: usize, status: Option<Status>) -> bool {
    let mut sign_in = None;
    let shown = {
        let mut inner = desk.state().lock();
        if inner.generation != generation {
            return false;
        }
        let user = inner.effective.as_ref().map(|e| e.user.clone()).unwrap_or_default();
        if let Some(s) = &status {
            inner.notifier.set_acks(&s.job, &s.acks, &user);
            if s.checked_at_ms.is_some() {
                inner.notifier.set_enabled(&s.job, &s.enabled_users);
            }
            // Once until the settings change: what she must do, not an outage.
            if s.failure == Some(RedisFailure::Auth) && !inner.told_sign_in && desk.notifies() {
                inner.told_sign_in = true;
                let tr = inner.tr();
                sign_in = Some(Note::plain(tr.t("note-sign-in"), tr.t("note-sign-in-body")));
            }
        }
        match (inner.jobs.get_mut(index), status) {
            (Some(job), Some(s)) => {
                job.status = Some(s.clone());
                Some(s)
            }
            _ => None,
        }
    };
    if let Some(s) = &shown {
        desk.emit("status", s);
    }
    desk.redraw();
    if let Some(note) = sign_in {
        desk.tell(&note);
    }
    true
}

fn on_event(desk: &Desk, event: &Event) {
    desk.emit("event", event);
    if !desk.notifies() {
        return; // the tray app's process notifies, once
    }
    let note = {
        let mut inner = desk.state().lock();
        let kinds = inner.effective.as_ref().map(|e| e.notify.clone()).unwrap_or_default();
        let mute = inner.settings.mute_until_ms;
        let tr = inner.tr();
        inner.notifier.decide(event, &kinds, mute, desktop_now_ms(), &tr, local_time)
    };
    if let Some(note) = note {
        desk.tell(&note);
    }
}
