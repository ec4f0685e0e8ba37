//! The watchers: one [`WatchedJob`] per job the settings name, all on one
//! set of connections to Redis, started from the settings that take
//! effect, and their statuses and events carried into the app state and to
//! the process's surface. Also what of that news
//! the notification policy makes a notification ([`note_for`],
//! [`sign_in_note`]), for the process that notifies.

use lockwatch::error::RedisFailure;
use lockwatch::{Event, Status};
use tokio::sync::broadcast::error::RecvError;

use super::clock::{desktop_now_ms, local_time};
use super::desk::Desk;
use super::notes::Note;
use super::passwords::KEYRING;
use super::runtime;
use super::state::{JobId, WatchedJob};

/// (Re)starts the watchers from the current settings; called at start and
/// after every settings change (so changes apply without a restart), always
/// on the async runtime.
pub fn restart(desk: &Desk) {
    // The keyring may take a while to answer: not with the state locked.
    let (settings, overrides, restart) = {
        let mut inner = desk.state().lock();
        inner.restarts += 1;
        inner.told_sign_in = false;
        inner.jobs.clear();
        (inner.settings.clone(), inner.overrides.clone(), inner.restarts)
    };
    let effective = settings.effective(&overrides, &*KEYRING);
    let mut inner = desk.state().lock();
    if inner.restarts != restart {
        return; // a newer restart began meanwhile, and installs its own
    }
    match effective {
        Ok(mut effective) => {
            if let Some(warning) = &effective.warning {
                tracing::warn!("{warning}");
            }
            tracing::info!(redis = %effective.shown_url, user = %effective.user, jobs = effective.jobs.len(), "watching");
            for job in WatchedJob::spawn_all(effective.target.clone(), std::mem::take(&mut effective.jobs)) {
                runtime::spawn(follow(desk.clone(), job.id, job.watcher.status(), job.watcher.events()));
                inner.jobs.push(job);
            }
            inner.settings_error = None;
            inner.effective = Some(effective);
        }
        Err(err) => {
            tracing::error!("the settings cannot take effect: {err}");
            inner.settings_error = Some(err.to_string());
            inner.effective = None;
        }
    }
    drop(inner);
    desk.redraw();
}

/// Asks the watcher of `job` to read again now (after a flip).
pub fn refresh(desk: &Desk, job: &str) {
    if let Some(j) = desk.state().lock().job(job) {
        j.watcher.refresh();
    }
}

/// Forwards the statuses and events of the watched job `id` into the app,
/// until it is no longer watched.
async fn follow(
    desk: Desk,
    id: JobId,
    mut status: tokio::sync::watch::Receiver<Option<Status>>,
    mut events: tokio::sync::broadcast::Receiver<Event>,
) {
    loop {
        tokio::select! {
            changed = status.changed() => {
                if changed.is_err() { return; }
                let latest = status.borrow_and_update().clone();
                if !set_status(&desk, id, latest) { return; }
            }
            event = events.recv() => match event {
                Ok(event) => desk.event(&event),
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            },
        }
    }
}

/// Takes job `id`'s new status in and shows it; false when the job is no
/// longer watched.
fn set_status(desk: &Desk, id: JobId, status: Option<Status>) -> bool {
    let shown = {
        let mut inner = desk.state().lock();
        let user = inner.user();
        let Some(at) = inner.jobs.iter().position(|j| j.id == id) else { return false };
        if let Some(s) = &status {
            inner.notifier.set_acks(&s.job, &s.acks, &user);
            if s.checked_at_ms.is_some() {
                inner.notifier.set_enabled(&s.job, &s.enabled_users);
            }
        }
        match (inner.jobs.get_mut(at), status) {
            (Some(job), Some(s)) => {
                job.known.status = Some(s);
                Some((job.known.clone(), user))
            }
            _ => None,
        }
    };
    match shown {
        Some((known, user)) => desk.status(&known, &user),
        None => desk.redraw(),
    }
    true
}

/// The notification `event` is due by the policy (the settings' choices,
/// the mute, the quiet time, an incident someone is on), if any.
pub fn note_for(desk: &Desk, event: &Event) -> Option<Note> {
    let mut inner = desk.state().lock();
    let kinds = inner.effective.as_ref().map(|e| e.notify.clone()).unwrap_or_default();
    let mute = inner.settings.mute_until_ms;
    let tr = inner.tr();
    inner.notifier.decide(event, &kinds, mute, desktop_now_ms(), &tr, local_time)
}

/// The note that Redis refused her login, when `status` says so: once
/// until the settings change, as it is hers to mend, not an outage.
pub fn sign_in_note(desk: &Desk, status: &Status) -> Option<Note> {
    let mut inner = desk.state().lock();
    if status.failure != Some(RedisFailure::Auth) || inner.told_sign_in {
        return None;
    }
    inner.told_sign_in = true;
    let tr = inner.tr();
    Some(Note::plain(tr.t("note-sign-in"), tr.t("note-sign-in-body")))
}
