//! What the user can do, from the menu, a notification or the page: flip
//! their own flag, say they are on it, mute notifications, change the
//! settings. Every settings change goes through [`update_settings`], which
//! saves once and then redraws or restarts the watchers once.

use lockwatch::supervise::{ack, flags};

use super::clock::{desktop_now_ms, next_midnight_ms};
use super::desk::Desk;
use super::error::AppError;
use super::notes::{Note, NoteAction};
use super::refusal::Refusal;
use super::settings::Settings;
use super::state::OwnFlip;
use super::{runtime, watchers};
use crate::link::{Message, View};

/// What a settings change needs to take effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Only the tray shows it (the mute, start at login).
    Redraw,
    /// The watchers read it (Redis, jobs, timings, the password).
    Restart,
}

/// Changes the settings with `change`, saves them, and lets the change take
/// the effect `change` says. Returns the settings as saved.
pub fn update_settings(desk: &Desk, change: impl FnOnce(&mut Settings) -> Effect) -> Settings {
    let (settings, effect) = {
        let mut inner = desk.state().lock();
        let effect = change(&mut inner.settings);
        (inner.settings.clone(), effect)
    };
    if desk.settings_file().save(&settings) {
        desk.tell_tray(&Message::SettingsSaved);
    }
    match effect {
        Effect::Redraw => desk.redraw(),
        Effect::Restart => watchers::restart(desk),
    }
    settings
}

/// Sends a test notification (muted or not), so whoever looks after a desk
/// sees in one click that notifications reach it; the log says whether the
/// system took it (`notified`) or why not.
pub fn send_test_note(desk: &Desk) {
    let tr = desk.state().lock().tr();
    tracing::info!("sending a test notification");
    desk.tell(&Note::plain(tr.t("note-test"), tr.t("note-test-body")));
}

/// How long "Mute notifications" lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mute {
    OneHour,
    FourHours,
    UntilTomorrow,
    /// Unmute.
    Off,
}

impl Mute {
    pub const ALL: [Mute; 4] = [Mute::OneHour, Mute::FourHours, Mute::UntilTomorrow, Mute::Off];
}

/// Mutes notifications for a while, or unmutes them.
pub fn mute(desk: &Desk, how: Mute) {
    const HOUR_MS: u64 = 3_600_000;
    let now = desktop_now_ms();
    let until = match how {
        Mute::OneHour => Some(now + HOUR_MS),
        Mute::FourHours => Some(now + 4 * HOUR_MS),
        Mute::UntilTomorrow => next_midnight_ms(),
        Mute::Off => None,
    };
    update_settings(desk, |s| {
        s.mute_until_ms = until;
        Effect::Redraw
    });
}

/// Says (or withdraws) that the user is on `job`'s trouble, for
/// [`input::DEFAULT_ACK_FOR`](lockwatch::input::DEFAULT_ACK_FOR). A refusal is
/// kept for the menu like a refused flip, notified, and returned.
///
/// # Errors
/// [`AppError::Refused`], or the job is not watched.
pub async fn set_on_it(desk: &Desk, job: &str, on: bool) -> Result<(), AppError> {
    let w = OwnWrite::of(desk, job)?;
    let result = async {
        let mut conn = w.target.manager().await?;
        if on {
            let asked = ack::Ack { user: &w.user, lasts: lockwatch::input::DEFAULT_ACK_FOR, note: "" };
            ack::set_ack(&mut conn, &w.keys, &asked).await.map(|acked| acked.warning)
        } else {
            ack::clear_ack(&mut conn, &w.keys, &w.user).await.map(|_| None)
        }
    }
    .await;
    w.report(desk, result, "\"on it\"", "note-ack-refused")
}

/// Flips the user's own flag of `job` to `on`, with the user's reason if
/// they gave one. A refusal (ACL, Redis down) is kept for the menu,
/// notified, and returned; the checkbox goes back to the server's truth
/// with the next status. A flip Redis took is confirmed in the menu, and
/// the start or stop it causes is not notified to the one who asked.
///
/// # Errors
/// [`AppError::Refused`], or the job is not watched.
pub async fn flip(desk: &Desk, job: &str, on: bool, reason: Option<&str>) -> Result<(), AppError> {
    let w = OwnWrite::of(desk, job)?;
    let result = async {
        let mut conn = w.target.manager().await?;
        let host = flags::this_host();
        let flip = flags::Flip { user: &w.user, on, host: &host, reason };
        flags::set_flag(&mut conn, &w.keys, &flip).await
    }
    .await;
    let confirmed = result.as_ref().ok().map(|flipped| OwnFlip { on, at_ms: flipped.at_ms });
    own_flip(desk, job, confirmed);
    if let Some(flip) = confirmed {
        desk.tell_tray(&Message::Flipped { job: job.to_owned(), on: flip.on, at_ms: flip.at_ms });
    }
    w.report(desk, result.map(|flipped| flipped.warning), "flag flip", "note-flip-refused")
}

/// Takes in the outcome of the user's own flip of `job`, made here or in
/// the dashboard's process: one Redis took is confirmed in the menu and its
/// start or stop not notified; a refusal (`None`) replaces the confirmation
/// of an earlier flip.
pub fn own_flip(desk: &Desk, job: &str, confirmed: Option<OwnFlip>) {
    let mut inner = desk.state().lock();
    if let Some(flip) = confirmed {
        inner.notifier.own_flip(job, flip.on, flip.at_ms);
    }
    if let Some(watched) = inner.job_mut(job) {
        watched.known.own_flip = confirmed;
    }
}

/// A write of the user's own key of one watched job (their flag, their
/// "on it"): where it goes, and how its outcome is shown.
struct OwnWrite {
    target: lockwatch::connect::Target,
    keys: lockwatch::Keys,
    user: String,
    tr: super::i18n::Tr,
}

impl OwnWrite {
    fn of(desk: &Desk, job: &str) -> Result<OwnWrite, AppError> {
        let inner = desk.state().lock();
        let e = inner.effective.as_ref().ok_or(AppError::Unconfigured)?;
        let watched = inner.job(job).ok_or_else(|| AppError::NotWatched(job.to_owned()))?;
        Ok(OwnWrite { target: e.target.clone(), keys: watched.keys.clone(), user: e.user.clone(), tr: inner.tr() })
    }

    /// Keeps the write's refusal or warning for the menu, shows the server's
    /// truth again, and notifies a refusal (`note` names its title) in the
    /// supervisor's words; the dashboard keeps the library's.
    fn report(
        self,
        desk: &Desk,
        result: Result<Option<String>, lockwatch::Error>,
        what: &str,
        note: &str,
    ) -> Result<(), AppError> {
        let refusal = match result {
            Ok(warning) => warning.map(|w| Refusal::unregistered(w, &self.user, &self.tr)),
            Err(err) => Some(Refusal::of(&err, &self.user, self.target.user(), &self.tr)),
        };
        if let Some(watched) = desk.state().lock().job_mut(&self.keys.job) {
            watched.known.flip_error = refusal.clone();
        }
        watchers::refresh(desk, &self.keys.job);
        desk.redraw();
        match refusal {
            Some(refusal) => {
                tracing::warn!(job = %self.keys.job, "{what} refused: {}", refusal.detail);
                let summary = self.tr.ta(note, &[("job", self.keys.job.as_str().into())]);
                desk.tell(&Note::plain(summary, refusal.said.clone()));
                Err(AppError::Refused(refusal.said))
            }
            None => Ok(()),
        }
    }
}

/// Does what a click on a notification or one of its buttons says (the
/// tray's [`Desk::on_note`]).
pub fn on_note(desk: &Desk, action: NoteAction) {
    tracing::info!(?action, "notification action");
    match action {
        NoteAction::Open => desk.open(View::default()),
        NoteAction::Snooze => {
            let desk = desk.clone();
            runtime::spawn(async move { mute(&desk, Mute::OneHour) });
        }
        NoteAction::OnIt(job) => {
            let desk = desk.clone();
            runtime::spawn(async move {
                let _ = set_on_it(&desk, &job, true).await;
            });
        }
    }
}
