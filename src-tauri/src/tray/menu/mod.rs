//! The tray as pure data: from what is known of the jobs to the icon, the
//! menu's lines and checkboxes, its labels and tooltip. No GTK, no clock:
//! `desktop_now_ms` and the time of day are arguments, so all of it is
//! unit-tested. What a status means for the user (her own flag, trouble,
//! silent standbys) is the library's rule; this says it.

mod lines;
#[cfg(test)]
mod tests;

use lockwatch::State;

use crate::core::i18n::Tr;
use crate::core::state::JobState;

use lines::{mute_label, unmute_label};
pub use lines::{on_it_line, state_word, status_line};

/// What the tray shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayView {
    /// The worst state of all jobs.
    pub icon: State,
    pub jobs: Vec<JobMenu>,
    /// The mute submenu's title: "Mute notifications", or until when they
    /// are muted. It changes only when the mute does (the menu is rebuilt
    /// then: a submenu's title does not follow a change in place).
    pub mute_label: String,
    /// The submenu's "Unmute", with the time left (updated in place); only
    /// while muted, as there is nothing to unmute otherwise.
    pub unmute_label: Option<String>,
    /// The fixed items' labels, in the language shown.
    pub labels: Labels,
}

impl TrayView {
    /// What the icon says on hover: each job's status line, so a glance at
    /// the tray names the holder without opening the menu. Windows shows at
    /// most 127 characters of it.
    pub fn tooltip(&self) -> String {
        let lines: Vec<&str> = self.jobs.iter().map(|j| j.status_line.as_str()).collect();
        let text = if lines.is_empty() { "lockwatch".to_owned() } else { lines.join("\n") };
        if text.chars().count() <= TOOLTIP_CHARS {
            return text;
        }
        let kept: String = text.chars().take(TOOLTIP_CHARS - 1).collect();
        format!("{kept}…")
    }
}

/// The longest tooltip every tray shows whole (Windows' `szTip` holds 127).
const TOOLTIP_CHARS: usize = 127;

/// The labels of the menu's fixed items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labels {
    pub open: String,
    /// For 1 hour, for 4 hours, until tomorrow.
    pub mute: [String; 3],
    pub settings: String,
    pub autostart: String,
    /// The same, while the computer starts the app for every user.
    pub autostart_machine: String,
    pub quit: String,
}

impl Labels {
    pub fn new(tr: &Tr) -> Labels {
        Labels {
            open: tr.t("menu-open"),
            mute: ["menu-mute-1h", "menu-mute-4h", "menu-mute-tomorrow"].map(|id| tr.t(id)),
            settings: tr.t("menu-settings"),
            autostart: tr.t("menu-autostart"),
            autostart_machine: tr.t("menu-autostart-machine"),
            quit: tr.t("menu-quit"),
        }
    }
}

/// The menu lines of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobMenu {
    pub job: String,
    /// `outbound: running on wh-east-1 · since 10:02`, or while its heartbeat
    /// is late `outbound: stale on wh-east-1 · since 10:02 · heartbeat 12 s ago`
    pub status_line: String,
    /// The user's own flag as Redis has it; `None` while it cannot be known.
    pub enabled_for_me: Option<bool>,
    /// The checkbox's label: says so when the own flag is not known.
    pub flip_label: String,
    /// Whether the checkbox can be clicked (only while the own flag is known).
    pub can_flip: bool,
    /// `Also enabled by: bob, carol` or `Nobody else has it enabled`.
    pub others_line: String,
    /// A refused flip, said short enough for a menu; the dashboard has the details.
    pub error_line: Option<String>,
    /// The user's own flip, confirmed: `✓ You switched it off at 10:02`.
    pub confirm_line: Option<String>,
    /// Who is on it: `alice has been on it since 10:02: looking at wh-a`, one per
    /// ack in force; the user's own says `You have been on it since 10:02`.
    pub on_it_lines: Vec<String>,
    /// Whose each line is, in the same order.
    pub on_it_users: Vec<String>,
    /// Whether the user's own "I'm on it" is in force (`None` while not known).
    pub own_ack: Option<bool>,
    /// The ack item's label: "I'm on it" or "I'm no longer on it".
    pub ack_label: String,
    /// `⚠ No backup server: srv-b is silent`, while the job runs with none left.
    pub standby_line: Option<String>,
    /// Whether the menu offers the ack item: while the job is in trouble
    /// (stale, down, conflict, unknown), or to take back the user's own.
    pub ack_offered: bool,
    /// With more than [`FOLD_AFTER`] jobs, one not in trouble has its lines
    /// one click away, in a submenu titled `inbound: running`.
    pub folded: Option<String>,
}

/// How many jobs the menu shows whole; past that, those not in trouble are
/// folded into a submenu each, below those in trouble.
pub const FOLD_AFTER: usize = 3;

/// What the tray's words depend on besides the statuses: the language and
/// how a Redis ms time reads as the desktop's time of day.
pub struct Words<'a> {
    pub tr: Tr,
    /// `HH:MM` in the desktop's time zone.
    pub time_of_day: &'a dyn Fn(u64) -> String,
}

/// Builds the tray's view of all jobs for `user`. Ages come from each
/// status's Redis time; `desktop_now_ms` only times the mute.
pub fn tray_view<'a>(
    jobs: impl IntoIterator<Item = &'a JobState>,
    user: &str,
    mute_until_ms: Option<u64>,
    desktop_now_ms: u64,
    words: &Words,
) -> TrayView {
    let jobs: Vec<&JobState> = jobs.into_iter().collect();
    let icon = jobs
        .iter()
        .map(|j| j.status.as_ref().map_or(State::Unknown, |s| s.state))
        .max_by_key(|s| s.severity())
        .unwrap_or(State::Unknown);
    // Those in trouble first, the worst first; the rest as configured.
    let state = |j: &JobState| j.status.as_ref().map_or(State::Unknown, |s| s.state);
    let mut menus: Vec<(State, JobMenu)> = jobs.iter().map(|j| (state(j), job_menu(j, user, words))).collect();
    menus.sort_by_key(|(state, _)| std::cmp::Reverse(state.trouble_rank()));
    let fold = menus.len() > FOLD_AFTER;
    for (state, menu) in &mut menus {
        if fold && !state.in_trouble() {
            menu.folded = Some(format!("{}: {}", menu.job, state_word(&words.tr, *state)));
        }
    }
    TrayView {
        icon,
        jobs: menus.into_iter().map(|(_, menu)| menu).collect(),
        mute_label: mute_label(mute_until_ms, desktop_now_ms, words),
        unmute_label: unmute_label(mute_until_ms, desktop_now_ms, &words.tr),
        labels: Labels::new(&words.tr),
    }
}

fn job_menu(j: &JobState, user: &str, words: &Words) -> JobMenu {
    let tr = &words.tr;
    let error_line = j.flip_error.as_ref().map(|_| tr.t("menu-flip-refused"));
    let confirm_line = j.own_flip.map(|f| {
        let id = if f.on { "menu-own-on" } else { "menu-own-off" };
        tr.ta(id, &[("time", (words.time_of_day)(f.at_ms).into())])
    });
    let Some(s) = &j.status else {
        return JobMenu {
            job: j.job.clone(),
            status_line: tr.ta("menu-connecting", &[("job", j.job.as_str().into())]),
            enabled_for_me: None,
            flip_label: tr.t("menu-flip-unknown"),
            can_flip: false,
            others_line: tr.t("menu-others-not-yet"),
            error_line,
            confirm_line,
            on_it_lines: Vec::new(),
            on_it_users: Vec::new(),
            own_ack: None,
            ack_label: tr.t("menu-ack"),
            standby_line: None,
            ack_offered: false,
            folded: None,
        };
    };
    let own_ack = s.own_ack(user);
    let enabled_for_me = s.own_flag(user);
    let others: Vec<&str> = s.enabled_users.iter().map(String::as_str).filter(|u| *u != user).collect();
    // A lost switch says why the job runs with nobody shown keeping it on.
    let lost: Vec<&str> = s.flags_lost.iter().map(String::as_str).collect();
    let others_line = match (s.checked_at_ms.is_some(), others.is_empty()) {
        _ if !lost.is_empty() => tr.ta("menu-flags-lost", &[("users", tr.list(&lost).into())]),
        (false, _) => tr.t("menu-others-unreadable"),
        (true, true) => tr.t("menu-others-none"),
        (true, false) => tr.ta("menu-others", &[("users", tr.list(&others).into())]),
    };
    JobMenu {
        job: j.job.clone(),
        status_line: status_line(s, words),
        enabled_for_me,
        flip_label: tr.t(if enabled_for_me.is_some() { "menu-flip" } else { "menu-flip-unknown" }),
        can_flip: enabled_for_me.is_some(),
        others_line,
        error_line,
        confirm_line,
        on_it_lines: s.acks.iter().map(|a| on_it_line(a, user, words)).collect(),
        on_it_users: s.acks.iter().map(|a| a.user.clone()).collect(),
        own_ack,
        ack_label: tr.t(if own_ack == Some(true) { "menu-unack" } else { "menu-ack" }),
        standby_line: s
            .no_standby
            .as_ref()
            .map(|_| tr.ta("menu-no-standby", &[("server", tr.list(&s.silent_standbys()).into())])),
        ack_offered: own_ack == Some(true) || s.state.in_trouble(),
        folded: None,
    }
}
