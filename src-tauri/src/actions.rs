//! What the user can do from the menu or the dashboard: flip their own flag,
//! mute notifications, start at login, change the settings. Every settings
//! change goes through [`update_settings`], which saves once and then
//! redraws or restarts the watchers once.

use lockwatch::supervise::{ack, flags};

use crate::clock::{desktop_now_ms, next_midnight_ms};
use crate::desk::Desk;
use crate::menu_id::Mute;
use crate::model::{Note, NoteAction, OwnFlip, Refusal};
use crate::settings::Settings;

use crate::link::{self, Message};
use crate::{runtime, store, watchers};

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
    if store::save(desk.app(), &settings) {
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

/// Turns start at login on or off, the opposite of what it was
/// ([`crate::start_at_login`]). When it cannot be written or removed, the
/// setting stays as it was (the menu's checkbox shows the truth) and the
/// reason is logged. While the computer starts the app for everyone, the
/// item is greyed and this does nothing.
pub fn toggle_autostart(desk: &Desk) {
    if crate::start_at_login::for_this_computer() {
        return;
    }
    let want = !desk.state().lock().settings.autostart;
    let done = match crate::start_at_login::set(desk.app(), want) {
        Ok(()) => want,
        Err(err) => {
            tracing::warn!("cannot change start at login: {err}");
            !want
        }
    };
    update_settings(desk, |s| {
        s.autostart = done;
        Effect::Redraw
    });
}

/// A click on a job's "Enabled for me": asks for the opposite of the
/// server's truth as last read. (The checkbox itself is no witness: a redraw
/// may have reset it between the click and this.) While that truth is
/// unknown, the click is undone by a redraw.
///
/// The last one with the job on is asked why first, in a small window of
/// its own (the dashboard's process, [`link::switch_off_view`]); the flip
/// happens when they answer there. Where that window cannot open (Windows
/// without WebView2), a native yes/no box asks, and no reason is kept.
pub fn toggle_flag(desk: &Desk, job: &str) {
    match wish(desk, job) {
        Some((false, true)) => {
            desk.redraw();
            if crate::webview_runtime::missing().is_some() {
                ask_natively(desk, job);
            } else {
                desk.open(&link::switch_off_view(job));
            }
        }
        Some((on, _)) => {
            let desk = desk.clone();
            let job = job.to_owned();
            runtime::spawn(async move {
                let _ = flip(&desk, &job, on, None).await;
            });
        }
        None => desk.redraw(),
    }
}

/// Asks the last one on, in a native box, whether to switch `job` off; a
/// yes flips it.
fn ask_natively(desk: &Desk, job: &str) {
    let tr = desk.state().lock().tr();
    let title = tr.ta("dialog-off-title", &[("job", job.into())]);
    let text = tr.ta("dialog-off-native", &[("job", job.into())]);
    let (desk, job) = (desk.clone(), job.to_owned());
    let asked = std::thread::Builder::new().name("switch-off".into()).spawn(move || {
        if crate::webview_runtime::ask(&title, &text) {
            runtime::spawn(async move {
                let _ = flip(&desk, &job, false, None).await;
            });
        }
    });
    if let Err(err) = asked {
        tracing::warn!(error = %err, "cannot ask whether to switch the job off");
    }
}

/// The flag a click asks for, whether the user is the last one with the
/// job on.
fn wish(desk: &Desk, job: &str) -> Option<(bool, bool)> {
    let inner = desk.state().lock();
    let user = &inner.effective.as_ref()?.user;
    let status = inner.jobs.iter().find(|j| j.job == job)?.status.as_ref()?;
    let on = crate::model::own_flag(status, user).map(|on| !on)?;
    Some((on, crate::model::last_one_on(status, user)))
}

/// A click on a job's "I'm on it" / "I'm no longer on it": asks for the
/// opposite of the user's acknowledgement as last read (for an hour, no
/// note, from the menu). While it is not known, the click only redraws.
pub fn toggle_ack(desk: &Desk, job: &str) {
    let own = {
        let inner = desk.state().lock();
        let user = inner.effective.as_ref().map(|e| e.user.clone()).unwrap_or_default();
        let menu = inner.jobs.iter().find(|j| j.job == job).and_then(|j| j.status.as_ref());
        menu.filter(|s| s.checked_at_ms.is_some()).map(|s| s.acks.iter().any(|a| a.user == user))
    };
    match own {
        Some(acked) => {
            let desk = desk.clone();
            let job = job.to_owned();
            runtime::spawn(async move {
                let _ = set_on_it(&desk, &job, !acked).await;
            });
        }
        None => desk.redraw(),
    }
}

/// Says (or withdraws) that the user is on `job`'s trouble, for
/// [`spec::DEFAULT_ACK_FOR`](lockwatch::spec::DEFAULT_ACK_FOR). A refusal is
/// kept for the menu like a refused flip, notified, and returned.
///
/// # Errors
/// The refusal, as one sentence.
pub async fn set_on_it(desk: &Desk, job: &str, on: bool) -> Result<(), String> {
    let w = OwnWrite::of(desk, job)?;
    let result = async {
        let mut conn = w.target.manager().await?;
        if on {
            let asked = ack::Ack { user: &w.user, lasts: lockwatch::spec::DEFAULT_ACK_FOR, note: "" };
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
/// The refusal, as one sentence.
pub async fn flip(desk: &Desk, job: &str, on: bool, reason: Option<&str>) -> Result<(), String> {
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
        desk.tell_tray(&Message::Flipped { job: job.to_owned(), flip });
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
    let index = inner.effective.as_ref().and_then(|e| e.jobs.iter().position(|(k, _)| k.job == job));
    if let Some(view) = index.and_then(|i| inner.jobs.get_mut(i)) {
        view.own_flip = confirmed;
    }
}

/// A write of the user's own key of one watched job (their flag, their
/// "on it"): where it goes, and how its outcome is shown.
struct OwnWrite {
    target: lockwatch::connect::Target,
    keys: lockwatch::Keys,
    user: String,
    /// The job's place in the menu.
    index: usize,
    tr: crate::i18n::Tr,
}

impl OwnWrite {
    fn of(desk: &Desk, job: &str) -> Result<OwnWrite, String> {
        let inner = desk.state().lock();
        let e = inner.effective.as_ref().ok_or("the settings cannot take effect; open Settings")?;
        let i = e.jobs.iter().position(|(k, _)| k.job == job).ok_or_else(|| format!("job {job} is not watched"))?;
        Ok(OwnWrite {
            target: e.target.clone(),
            keys: e.jobs[i].0.clone(),
            user: e.user.clone(),
            index: i,
            tr: inner.tr(),
        })
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
    ) -> Result<(), String> {
        let refusal = match result {
            Ok(warning) => warning.map(|w| Refusal::unregistered(w, &self.user, &self.tr)),
            Err(err) => Some(Refusal::of(&err, &self.user, self.target.user(), &self.tr)),
        };
        if let Some(view) = desk.state().lock().jobs.get_mut(self.index) {
            view.flip_error = refusal.clone();
        }
        watchers::refresh(desk, self.index);
        desk.redraw();
        match refusal {
            Some(refusal) => {
                tracing::warn!(job = %self.keys.job, "{what} refused: {}", refusal.detail);
                let summary = self.tr.ta(note, &[("job", self.keys.job.as_str().into())]);
                desk.tell(&Note::plain(summary, refusal.said.clone()));
                Err(refusal.said)
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
        NoteAction::Open => desk.open("live"),
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
