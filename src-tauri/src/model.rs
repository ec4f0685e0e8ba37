//! The tray as pure data: from the jobs' statuses to the icon, the menu's
//! lines and checkboxes, and which events become notifications (debounce and
//! mute included). No GTK, no clock: `now_ms` is an argument, so all of it is
//! unit-tested.

use std::collections::HashMap;

use lockwatch::snapshot::Ack;
use lockwatch::status::Stall;
use lockwatch::{Event, EventKind, State, Status};

use crate::i18n::Tr;

/// One watched job as the tray knows it.
#[derive(Debug, Clone, Default)]
pub struct JobView {
    pub job: String,
    /// Latest status; `None` before the first read.
    pub status: Option<Status>,
    /// Why the last flip of the user's own flag failed, until the next success.
    pub flip_error: Option<Refusal>,
    /// The user's own last flip that Redis took, confirmed in the menu.
    pub own_flip: Option<OwnFlip>,
}

/// A flip of the user's own flag that Redis took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnFlip {
    pub on: bool,
    /// Redis time of the flip, ms.
    pub at_ms: u64,
}

/// A write of the user's own key that Redis refused (or took with a
/// warning), said two ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// In the supervisor's words: the notification, the dashboard's line.
    pub said: String,
    /// The library's sentence (what failed, where, Redis's words), for the dashboard's details.
    pub detail: String,
}

impl Refusal {
    /// A refusal of `user`'s write, worded by its kind rather than by the
    /// driver's message. `login` is the Redis user the server saw (`None`:
    /// `default`): a refusal names that one, and when it is not `user`,
    /// says that a Redis user writes only its own keys.
    pub fn of(err: &lockwatch::Error, user: &str, login: Option<&str>, tr: &Tr) -> Refusal {
        use lockwatch::error::RedisFailure;
        let login = login.unwrap_or("default");
        let id = match err.redis_failure() {
            Some(RedisFailure::Permission) if login != user => "refusal-other-user",
            Some(RedisFailure::Permission) => "refusal-not-allowed",
            Some(RedisFailure::Auth) => "refusal-login",
            Some(RedisFailure::Unreachable) => "refusal-unreachable",
            _ => "refusal-other",
        };
        Refusal { said: tr.ta(id, &[("user", user.into()), ("login", login.into())]), detail: err.to_string() }
    }

    /// A write that was made but does not count yet (the user is not registered).
    pub fn unregistered(warning: String, user: &str, tr: &Tr) -> Refusal {
        Refusal { said: tr.ta("refusal-unregistered", &[("user", user.into())]), detail: warning }
    }
}

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
    /// The submenu's "Unmute", with the time left while muted (updated in place).
    pub unmute_label: String,
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
    /// Who is on it: `alice is on it since 10:02: looking at wh-a`, one per ack in force.
    pub on_it_lines: Vec<String>,
    /// Whose each line is, in the same order.
    pub on_it_users: Vec<String>,
    /// Whether the user's own "I'm on it" is in force (`None` while not known).
    pub own_ack: Option<bool>,
    /// The ack item's label: "I'm on it" or "I'm no longer on it".
    pub ack_label: String,
    /// `⚠ No standby: srv-b is silent`, while the job runs with none left.
    pub standby_line: Option<String>,
    /// Whether the menu offers the ack item: while the job is in trouble
    /// (stale, down, conflict, unknown), or to take back the user's own.
    pub ack_offered: bool,
}

/// What the tray's words depend on besides the statuses: the language and
/// how a Redis ms time reads as the desktop's time of day.
pub struct Words<'a> {
    pub tr: Tr,
    /// `HH:MM` in the desktop's time zone.
    pub time_of_day: &'a dyn Fn(u64) -> String,
}

/// Builds the tray's view of all jobs for `user`. Ages come from each
/// status's Redis time; `desktop_now_ms` only times the mute.
pub fn tray_view(
    jobs: &[JobView],
    user: &str,
    mute_until_ms: Option<u64>,
    desktop_now_ms: u64,
    words: &Words,
) -> TrayView {
    let icon = jobs
        .iter()
        .map(|j| j.status.as_ref().map_or(State::Unknown, |s| s.state))
        .max_by_key(|s| s.severity())
        .unwrap_or(State::Unknown);
    TrayView {
        icon,
        jobs: jobs.iter().map(|j| job_menu(j, user, words)).collect(),
        mute_label: mute_label(mute_until_ms, desktop_now_ms, words),
        unmute_label: unmute_label(mute_until_ms, desktop_now_ms, &words.tr),
        labels: Labels::new(&words.tr),
    }
}

fn job_menu(j: &JobView, user: &str, words: &Words) -> JobMenu {
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
        };
    };
    let own_ack = s.checked_at_ms.is_some().then(|| s.acks.iter().any(|a| a.user == user));
    let enabled_for_me = own_flag(s, user);
    let others: Vec<&str> = s.enabled_users.iter().map(String::as_str).filter(|u| *u != user).collect();
    let others_line = match (s.checked_at_ms.is_some(), others.is_empty()) {
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
        on_it_lines: s.acks.iter().map(|a| on_it_line(a, words)).collect(),
        on_it_users: s.acks.iter().map(|a| a.user.clone()).collect(),
        own_ack,
        ack_label: tr.t(if own_ack == Some(true) { "menu-unack" } else { "menu-ack" }),
        standby_line: s.no_standby.as_ref().map(|_| {
            let holder = s.holder.as_ref().and_then(|h| h.node.as_deref());
            let silent: Vec<&str> = s
                .nodes
                .iter()
                .filter(|n| !n.fresh && Some(n.node.as_str()) != holder)
                .map(|n| n.node.as_str())
                .collect();
            tr.ta("menu-no-standby", &[("server", tr.list(&silent).into())])
        }),
        ack_offered: own_ack == Some(true) || in_trouble(s.state),
    }
}

/// Whether a state is trouble somebody may say they are on: not while the
/// job runs, starts, or was stopped on purpose.
pub fn in_trouble(state: State) -> bool {
    matches!(state, State::Stale | State::Down | State::Conflict | State::Unknown)
}

/// `alice is on it since 10:02: looking at wh-a`, in the desktop's time of day.
pub fn on_it_line(a: &Ack, words: &Words) -> String {
    let since = (words.time_of_day)(a.at_ms);
    let args = [("user", a.user.as_str().into()), ("since", since.into()), ("note", a.note.as_str().into())];
    words.tr.ta(if a.note.is_empty() { "menu-on-it-plain" } else { "menu-on-it" }, &args)
}

/// The user's own flag as Redis has it, `None` while it cannot be known.
/// The flags are known whenever they were read, even while the state is
/// unknown for another reason (Redis lost the job's data: the flag is then
/// really off, and setting it again is how the job comes back).
pub fn own_flag(s: &Status, user: &str) -> Option<bool> {
    if s.checked_at_ms.is_none() {
        None
    } else if s.enabled_users.iter().any(|u| u == user) {
        Some(true)
    } else if s.flags.iter().any(|f| f.user == user && f.on.is_none()) {
        None
    } else {
        Some(false)
    }
}

/// Whether `user` is the only one with the job enabled, as Redis has it:
/// switching off then stops the job on every server, so they are asked why.
pub fn last_one_on(s: &Status, user: &str) -> bool {
    s.checked_at_ms.is_some() && s.enabled_users.len() == 1 && s.enabled_users[0] == user
}

/// A state as a word inside a sentence.
pub fn state_word(tr: &Tr, state: State) -> String {
    tr.t(match state {
        State::Running => "state-running",
        State::Stale => "state-stale",
        State::Down => "state-down",
        State::Pending => "state-pending",
        State::Stopped => "state-stopped",
        State::Conflict => "state-conflict",
        State::Unknown => "state-unknown",
    })
}

/// One line saying the state, the server, since what time of day, and
/// while the holder's heartbeat is late, its age in seconds: it changes
/// when one of those facts does, not with every look (a running job's
/// fresh heartbeat and the growing duration are the dashboard's). Built
/// from the status's fields, not its English reason, except where only the
/// reason knows (an unknown state Redis did answer).
pub fn status_line(s: &Status, words: &Words) -> String {
    let tr = &words.tr;
    let job = s.job.as_str().into();
    let state = state_word(tr, s.state).into();
    let server = s.holder.as_ref().and_then(|h| h.node.clone());
    let mut parts = vec![match (s.state, &server) {
        (State::Running | State::Stale | State::Conflict, Some(node)) => {
            tr.ta("menu-head-server", &[("job", job), ("state", state), ("server", node.as_str().into())])
        }
        (State::Unknown, _) if s.failure == Some(lockwatch::error::RedisFailure::Auth) => {
            tr.ta("menu-head-sign-in", &[("job", job), ("state", state)])
        }
        (State::Unknown, _) if s.checked_at_ms.is_none() => {
            tr.ta("menu-head-unreadable", &[("job", job), ("state", state)])
        }
        (State::Unknown, _) => {
            tr.ta("menu-head-reason", &[("job", job), ("state", state), ("reason", headline(&s.reason).into())])
        }
        _ => tr.ta("menu-head", &[("job", job), ("state", state)]),
    }];
    if let (State::Pending, Some(until), Some(now)) = (s.state, s.pending_until_ms, s.checked_at_ms) {
        parts.push(tr.ta("menu-pending", &[("left", tr.duration(until.saturating_sub(now)).into())]));
    }
    if let (Some(since), Some(_)) = (s.since_ms, s.checked_at_ms) {
        parts.push(tr.ta("menu-since", &[("since", (words.time_of_day)(since).into())]));
    }
    if let (State::Stale, Some(age)) = (s.state, s.holder.as_ref().and_then(|h| h.heartbeat_age_ms)) {
        parts.push(tr.ta("menu-heartbeat", &[("age", tr.duration(age / 1000 * 1000).into())]));
    }
    parts.join(" · ")
}

/// The first clause of a reason, short enough for a menu line.
fn headline(reason: &str) -> String {
    const MAX: usize = 60;
    let end = [" (", ": ", "; "].iter().filter_map(|sep| reason.find(sep)).min().unwrap_or(reason.len());
    let head = &reason[..end];
    match head.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &head[..cut]),
        None => head.to_owned(),
    }
}

fn mute_label(mute_until_ms: Option<u64>, now_ms: u64, words: &Words) -> String {
    match mute_until_ms {
        Some(until) if until > now_ms => words.tr.ta("menu-muted", &[("until", (words.time_of_day)(until).into())]),
        _ => words.tr.t("menu-mute"),
    }
}

fn unmute_label(mute_until_ms: Option<u64>, now_ms: u64, tr: &Tr) -> String {
    match mute_until_ms {
        Some(until) if until > now_ms => tr.ta("menu-unmute-left", &[("left", tr.duration(until - now_ms).into())]),
        _ => tr.t("menu-unmute"),
    }
}

/// A notification to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub summary: String,
    /// Plain text: escaped for a daemon that reads markup when it is shown.
    pub body: String,
    pub critical: bool,
    /// The buttons, besides the default action (a click on the body opens the dashboard).
    pub actions: Vec<NoteAction>,
}

impl Note {
    /// A note whose only action is its default one.
    pub fn plain(summary: String, body: String) -> Note {
        Note { summary, body, critical: false, actions: Vec::new() }
    }
}

/// What a notification's button does. The id the daemon sends back is
/// built and read by this one enum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteAction {
    /// Open the dashboard; also a click on the notification itself.
    Open,
    /// Mute notifications for an hour.
    Snooze,
    /// "I'm on it" for this job.
    OnIt(String),
}

impl NoteAction {
    /// The notification spec's name of the action of a click on the body.
    pub const DEFAULT_ID: &'static str = "default";

    pub fn id(&self) -> String {
        match self {
            NoteAction::Open => "open".to_owned(),
            NoteAction::Snooze => "snooze".to_owned(),
            NoteAction::OnIt(job) => format!("on-it:{job}"),
        }
    }

    /// The action an id stands for; the default action opens the dashboard.
    pub fn parse(id: &str) -> Option<NoteAction> {
        match id {
            "open" | NoteAction::DEFAULT_ID => Some(NoteAction::Open),
            "snooze" => Some(NoteAction::Snooze),
            _ => id.strip_prefix("on-it:").filter(|job| !job.is_empty()).map(|job| NoteAction::OnIt(job.to_owned())),
        }
    }

    /// The button's label.
    pub fn label(&self, tr: &Tr) -> String {
        tr.t(match self {
            NoteAction::Open => "note-action-open",
            NoteAction::Snooze => "note-action-snooze",
            NoteAction::OnIt(_) => "note-action-on-it",
        })
    }
}

/// Which events notify (the settings' choice).
pub fn default_notify_kinds() -> Vec<EventKind> {
    use EventKind::*;
    vec![
        Died,
        DataLost,
        Failover,
        Restarted,
        Conflict,
        Stalled,
        Recovered,
        Started,
        Stopped,
        Unreachable,
        Reachable,
        StandbyLost,
        StandbyBack,
    ]
}

/// Decides which events become notifications: respects the choices and the
/// mute, and lets through the same incident once within `quiet_ms`, so a
/// flapping job or a desktop's own network drop gives one, not a storm,
/// while a new one (a move back, a death on another server) is told.
/// The start or stop the user's own flip asked for is confirmed in the
/// menu instead.
/// While someone else is on an incident ("I'm on it"), its repeats stay
/// quiet; a new incident is not quiet.
#[derive(Debug, Clone)]
pub struct Notifier {
    quiet_ms: u64,
    /// Last notified time per incident (job, kind and the servers named):
    /// the same again within `quiet_ms` is quiet, another one is news.
    last: HashMap<Incident, u64>,
    /// Per job, the Redis time its open incident began: set by the first
    /// trouble event, ended by the job running or stopping again.
    incidents: HashMap<String, u64>,
    /// Per job, the acknowledgements of the other supervisors, as last read.
    others_acks: HashMap<String, Vec<Ack>>,
    /// Per job, the user's own last flip: its start or stop is no news to them.
    own_flips: HashMap<String, OwnFlip>,
    /// Per job, who had it enabled as last read: a death names them.
    enabled: HashMap<String, Vec<String>>,
}

/// What makes two events the same news: the job (none for Redis's
/// reachability: one Redis down is one notification for all jobs), the
/// kind, and the servers named (a move back is a new move, a death on
/// another server a new death).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Incident {
    job: String,
    kind: EventKind,
    from: Option<String>,
    to: Option<String>,
}

impl Incident {
    fn of(event: &Event) -> Incident {
        let node = |r: &Option<lockwatch::status::HolderRef>| {
            r.as_ref().map(|h| h.node.clone().unwrap_or_else(|| h.field.clone()))
        };
        match event.event {
            EventKind::Unreachable | EventKind::Reachable => {
                Incident { job: String::new(), kind: event.event, from: None, to: None }
            }
            kind => Incident { job: event.job.clone(), kind, from: node(&event.from), to: node(&event.to) },
        }
    }

    fn unreachable() -> Incident {
        Incident { job: String::new(), kind: EventKind::Unreachable, from: None, to: None }
    }
}

/// How long after one's own flip the job's start or stop is taken as its
/// outcome (Redis time): a worker takes or leaves the job within seconds.
pub const OWN_FLIP_MS: u64 = 60_000;

/// Events that open an incident, or belong to the one open.
fn is_trouble(kind: EventKind) -> bool {
    matches!(kind, EventKind::Died | EventKind::DataLost | EventKind::Conflict | EventKind::Stalled)
}

/// Events after which the job runs (or stands still on purpose) again: the incident is over.
fn ends_incident(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::Recovered | EventKind::Started | EventKind::Stopped | EventKind::Failover | EventKind::Restarted
    )
}

impl Notifier {
    pub fn new(quiet_ms: u64) -> Notifier {
        Notifier {
            quiet_ms,
            last: HashMap::new(),
            incidents: HashMap::new(),
            others_acks: HashMap::new(),
            own_flips: HashMap::new(),
            enabled: HashMap::new(),
        }
    }

    /// Takes the acknowledgements of `job` as read, keeping those of
    /// supervisors other than `user` (one's own "on it" silences nothing).
    pub fn set_acks(&mut self, job: &str, acks: &[Ack], user: &str) {
        let others = acks.iter().filter(|a| a.user != user).cloned().collect();
        self.others_acks.insert(job.to_owned(), others);
    }

    /// Takes who has `job` enabled as read, for the notes that name them.
    pub fn set_enabled(&mut self, job: &str, users: &[String]) {
        self.enabled.insert(job.to_owned(), users.to_vec());
    }

    /// Takes note of the user's own flip of `job` that Redis took at `at_ms`.
    pub fn own_flip(&mut self, job: &str, on: bool, at_ms: u64) {
        self.own_flips.insert(job.to_owned(), OwnFlip { on, at_ms });
    }

    /// Whether `event` is the start or stop the user's own flip asked for.
    fn own_outcome(&self, event: &Event) -> bool {
        let asked = match event.event {
            EventKind::Started => true,
            EventKind::Stopped => false,
            _ => return false,
        };
        self.own_flips
            .get(&event.job)
            .is_some_and(|f| f.on == asked && event.at_ms >= f.at_ms && event.at_ms - f.at_ms < OWN_FLIP_MS)
    }

    /// Whether `event` repeats an incident someone else acknowledged after
    /// it began, with that acknowledgement still in force. Keeps the
    /// incidents up to date, whether or not the event is shown.
    fn acknowledged_repeat(&mut self, event: &Event) -> bool {
        if ends_incident(event.event) {
            self.incidents.remove(&event.job);
            return false;
        }
        if !is_trouble(event.event) {
            return false;
        }
        let Some(&began) = self.incidents.get(&event.job) else {
            self.incidents.insert(event.job.clone(), event.at_ms);
            return false;
        };
        self.others_acks
            .get(&event.job)
            .is_some_and(|acks| acks.iter().any(|a| a.at_ms >= began && a.until_ms > event.at_ms))
    }

    /// The notification for `event`, if one is due. `local_time` formats a
    /// Redis ms time for people (the desktop's time zone).
    pub fn decide(
        &mut self,
        event: &Event,
        kinds: &[EventKind],
        mute_until_ms: Option<u64>,
        now_ms: u64,
        tr: &Tr,
        local_time: impl Fn(u64) -> String,
    ) -> Option<Note> {
        let acknowledged = self.acknowledged_repeat(event);
        if acknowledged
            || self.own_outcome(event)
            || !kinds.contains(&event.event)
            || mute_until_ms.is_some_and(|until| until > now_ms)
        {
            return None;
        }
        let key = Incident::of(event);
        if self.last.get(&key).is_some_and(|at| now_ms.saturating_sub(*at) < self.quiet_ms) {
            return None;
        }
        // "reachable" only answers an "unreachable" that was shown.
        if event.event == EventKind::Reachable && !self.last.contains_key(&Incident::unreachable()) {
            return None;
        }
        self.last.insert(key, now_ms);
        if event.event == EventKind::Reachable {
            self.last.remove(&Incident::unreachable());
        }
        let enabled_by = self.enabled.get(&event.job).map(Vec::as_slice).unwrap_or_default();
        Some(note(event, &local_time(event.at_ms), tr, enabled_by))
    }
}

/// Title, body and buttons of an event's notification. The body says what
/// the title does not (a failover's title names both servers already); the
/// library's English sentence only where the catalog has none of its own.
pub fn note(event: &Event, at: &str, tr: &Tr, enabled_by: &[String]) -> Note {
    let node = |r: &Option<lockwatch::status::HolderRef>| r.as_ref().and_then(|h| h.node.clone());
    let (from, to) = (node(&event.from), node(&event.to));
    let (id, critical) = match event.event {
        EventKind::Died if from.is_some() => ("note-died-on", true),
        EventKind::Died => ("note-died", true),
        EventKind::DataLost => ("note-data-lost", true),
        EventKind::Conflict => ("note-conflict", true),
        EventKind::Failover if from.is_some() && to.is_some() => ("note-failover", false),
        EventKind::Failover => ("note-failover-unnamed", false),
        EventKind::Restarted if to.is_some() => ("note-restarted-on", false),
        EventKind::Restarted => ("note-restarted", false),
        EventKind::Stalled => match (event.stall, &from) {
            (Some(Stall::Dying), Some(_)) => ("note-stalled-dying", false),
            (Some(Stall::Hung), Some(_)) => ("note-stalled-hung", false),
            _ => ("note-stalled", false),
        },
        EventKind::Recovered => ("note-recovered", false),
        EventKind::Started => ("note-started", false),
        EventKind::Stopped => ("note-stopped", false),
        EventKind::Unreachable => ("note-unreachable", false),
        EventKind::Reachable => ("note-reachable", false),
        EventKind::StandbyLost => ("note-standby-lost", false),
        EventKind::StandbyBack => ("note-standby-back", false),
    };
    // A failover whose servers are not named is said the general way; a
    // stall by its cause, with its server and time.
    let kind = match (event.event, &to) {
        (EventKind::Failover, None) => "other".to_owned(),
        (EventKind::Stalled, _) if from.is_some() => match (event.stall, event.ms) {
            (Some(Stall::Dying), Some(_)) => "stalled_dying".to_owned(),
            (Some(Stall::Dying), None) => "stalled_dying_never".to_owned(),
            (Some(Stall::Hung), Some(_)) => "stalled_hung".to_owned(),
            _ => "stalled".to_owned(),
        },
        (kind, _) => serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default(),
    };
    let server = match event.event {
        EventKind::Died | EventKind::Stalled => from.clone(),
        _ => to.clone(),
    };
    let from = from.unwrap_or_default();
    let to = to.unwrap_or_default();
    let server = server.unwrap_or_default();
    let args = [
        ("job", event.job.as_str().into()),
        ("from", from.as_str().into()),
        ("to", to.as_str().into()),
        ("server", server.as_str().into()),
        ("at", at.into()),
        ("kind", kind.as_str().into()),
        ("reason", event.reason.as_str().into()),
        ("duration", event.ms.map(|ms| tr.duration(ms)).unwrap_or_default().into()),
        ("users", tr.list(&enabled_by.iter().map(String::as_str).collect::<Vec<_>>()).into()),
    ];
    let mut actions = vec![NoteAction::Open, NoteAction::Snooze];
    // Someone can be on trouble, or on a move nobody asked for; good news needs nobody.
    if is_trouble(event.event) || matches!(event.event, EventKind::Failover | EventKind::Restarted) {
        actions.push(NoteAction::OnIt(event.job.clone()));
    }
    Note { summary: tr.ta(id, &args), body: tr.ta("note-body", &args), critical, actions }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::{Lang, tr};
    use lockwatch::status::{Holder, HolderRef, LockView};

    /// The time of day in UTC, so the tests read the same everywhere.
    fn utc(ms: u64) -> String {
        lockwatch::status::clock_utc(ms)[..5].to_owned()
    }

    fn words(lang: Lang) -> Words<'static> {
        Words { tr: tr(lang), time_of_day: &utc }
    }

    fn en() -> Words<'static> {
        words(Lang::En)
    }

    fn zh() -> Words<'static> {
        words(Lang::ZhHans)
    }

    fn status(state: State, node: Option<&str>, enabled: &[&str]) -> Status {
        Status {
            job: "outbound".into(),
            state,
            reason: "r".into(),
            holder: node.map(|n| Holder {
                field: "f:1".into(),
                node: Some(n.into()),
                heartbeat_age_ms: Some(1_200),
                fence: None,
            }),
            lock: LockView {
                key: "{outbound}:lock".into(),
                kind: None,
                holders: vec![],
                ttl_ms: None,
                fence: None,
                next_run_ms: None,
            },
            enabled_users: enabled.iter().map(|s| s.to_string()).collect(),
            flags: vec![],
            acks: vec![],
            nodes: vec![],
            checked_at_ms: Some(1_000_000),
            since_ms: Some(1_000_000 - 720_000),
            pending_until_ms: None,
            problems: vec![],
            no_standby: None,
            eviction: None,
            failure: None,
        }
    }

    fn view(state: State, node: Option<&str>, enabled: &[&str]) -> JobView {
        JobView { job: "outbound".into(), status: Some(status(state, node, enabled)), ..Default::default() }
    }

    fn event(kind: EventKind, job: &str) -> Event {
        Event {
            event: kind,
            job: job.into(),
            at_ms: 0,
            from: None,
            to: None,
            reason: "why".into(),
            stall: None,
            ms: None,
        }
    }

    #[test]
    fn a_dying_holder_is_told_with_its_server_and_the_lock_s_time_left_in_both_languages() {
        let node = |n: &str| Some(lockwatch::status::HolderRef { field: "f:1".into(), node: Some(n.into()) });
        let dying = Event {
            from: node("wh-east-1"),
            stall: Some(Stall::Dying),
            ms: Some(8_000),
            ..event(EventKind::Stalled, "outbound")
        };
        let n = note(&dying, "10:02", &en().tr, &[]);
        assert_eq!(n.summary, "outbound is dying on wh-east-1");
        assert!(n.body.contains("wh-east-1") && n.body.contains("8 s"), "{}", n.body);
        let n = note(&dying, "10:02", &zh().tr, &[]);
        assert_eq!(n.summary, "outbound 在 wh-east-1 上失去联系，即将由其他服务器接管");
        assert!(n.body.contains("wh-east-1") && n.body.contains("8 秒"), "the same facts in Chinese: {}", n.body);
        let hung = Event { stall: Some(Stall::Hung), ms: Some(12_000), ..dying.clone() };
        assert_eq!(note(&hung, "10:02", &en().tr, &[]).summary, "outbound is stuck on wh-east-1");
        assert!(note(&hung, "10:02", &zh().tr, &[]).body.contains("12 秒"));
    }

    #[test]
    fn a_lost_standby_is_told_with_both_servers_in_both_languages_and_stays_in_the_menu() {
        let node = |n: &str| Some(lockwatch::status::HolderRef { field: String::new(), node: Some(n.into()) });
        let lost = Event { from: node("srv-a"), to: node("srv-b"), ..event(EventKind::StandbyLost, "outbound") };
        let n = note(&lost, "10:02", &en().tr, &[]);
        assert_eq!(n.summary, "outbound has no standby left");
        assert_eq!(n.body, "10:02: srv-b is silent; if srv-a stops, no server takes the job over.");
        let n = note(&lost, "10:02", &zh().tr, &[]);
        assert!(n.body.contains("srv-b") && n.body.contains("srv-a") && !n.body.contains("silent"), "{}", n.body);
        // Not an incident of its own: an "on it" for it must not quiet a death that follows.
        assert!(!n.actions.contains(&NoteAction::OnIt("outbound".into())));
        let back = Event { from: node("srv-a"), to: node("srv-b"), ..event(EventKind::StandbyBack, "outbound") };
        assert_eq!(note(&back, "10:05", &zh().tr, &[]).body, "10:05：srv-b 已恢复，可以接管此任务。");

        let mut v = view(State::Running, Some("srv-a"), &["alice"]);
        if let Some(s) = v.status.as_mut() {
            s.no_standby = Some("no standby: srv-b (heartbeat 11 s old) silent; …".into());
            s.nodes = vec![lockwatch::status::NodeView {
                node: "srv-b".into(),
                state: Some("idle".into()),
                host: None,
                heartbeat_age_ms: Some(11_000),
                fence: None,
                fresh: false,
            }];
        }
        let line = |w: &Words| tray_view(std::slice::from_ref(&v), "alice", None, 0, w).jobs[0].standby_line.clone();
        assert_eq!(line(&en()).as_deref(), Some("⚠ No standby: srv-b is silent"));
        assert_eq!(line(&zh()).as_deref(), Some("⚠ 没有备用服务器：srv-b 已无响应"));
        assert_eq!(
            tray_view(&[view(State::Running, Some("srv-a"), &[])], "alice", None, 0, &en()).jobs[0].standby_line,
            None
        );
    }

    #[test]
    fn the_icon_is_the_worst_state_and_unknown_before_any_read() {
        let jobs = [view(State::Running, Some("a"), &[]), view(State::Stale, Some("b"), &[])];
        assert_eq!(tray_view(&jobs, "alice", None, 0, &en()).icon, State::Stale);
        let jobs = [view(State::Running, Some("a"), &[]), view(State::Conflict, Some("b"), &[])];
        assert_eq!(tray_view(&jobs, "alice", None, 0, &en()).icon, State::Conflict);
        let jobs = [view(State::Running, Some("a"), &[]), JobView { job: "x".into(), ..Default::default() }];
        assert_eq!(tray_view(&jobs, "alice", None, 0, &en()).icon, State::Unknown);
    }

    #[test]
    fn the_tooltip_names_each_jobs_holder_and_fits_a_windows_tray() {
        let v = tray_view(&[view(State::Running, Some("wh-east-1"), &["alice"])], "alice", None, 1_000_000, &en());
        assert_eq!(v.tooltip(), v.jobs[0].status_line);
        assert!(v.tooltip().contains("wh-east-1"), "{}", v.tooltip());
        assert_eq!(tray_view(&[], "alice", None, 0, &en()).tooltip(), "lockwatch");
        let many: Vec<JobView> = (0..9).map(|_| view(State::Running, Some("服务器-东区-一号"), &["alice"])).collect();
        let long = tray_view(&many, "alice", None, 1_000_000, &zh()).tooltip();
        assert_eq!(long.chars().count(), 127, "{long}");
        assert!(long.ends_with('…'));
    }

    #[test]
    fn the_menu_says_state_server_age_and_since() {
        let v =
            tray_view(&[view(State::Running, Some("wh-east-1"), &["alice", "bob"])], "alice", None, 1_000_000, &en());
        let m = &v.jobs[0];
        assert_eq!(m.status_line, "outbound: running on wh-east-1 · since 00:04");
        // A late heartbeat is a fact: its age, in whole seconds.
        let mut stale = view(State::Stale, Some("wh-east-1"), &["alice"]);
        if let Some(h) = stale.status.as_mut().and_then(|s| s.holder.as_mut()) {
            h.heartbeat_age_ms = Some(12_345);
        }
        let v = tray_view(&[stale], "alice", None, 1_000_000, &en());
        assert_eq!(v.jobs[0].status_line, "outbound: stale on wh-east-1 · since 00:04 · heartbeat 12 s ago");
        assert_eq!(m.enabled_for_me, Some(true));
        assert!(m.can_flip);
        assert_eq!(m.flip_label, "Enabled for me");
        assert_eq!(m.others_line, "Also enabled by: bob");
    }

    #[test]
    fn unknown_never_offers_a_flip_or_claims_who_enabled_it() {
        let mut unreadable = view(State::Unknown, None, &[]);
        if let Some(s) = unreadable.status.as_mut() {
            s.checked_at_ms = None;
        }
        let v = tray_view(&[unreadable], "alice", None, 0, &en());
        let m = &v.jobs[0];
        assert!(!m.can_flip);
        assert_eq!(m.enabled_for_me, None, "not known, not unchecked");
        assert_eq!(m.flip_label, "Enabled for me: not known (Redis unreadable)");
        assert!(m.status_line.contains("unknown (Redis unreadable)"));
        assert!(m.others_line.contains("not known"));
    }

    #[test]
    fn after_redis_lost_the_data_the_own_flag_is_known_and_can_be_set_again() {
        let mut lost = view(State::Unknown, None, &[]);
        if let Some(s) = lost.status.as_mut() {
            s.reason = "Redis lost the job's data (the fence counter was at 57 and is gone); flags …".into();
        }
        let v = tray_view(&[lost], "alice", None, 0, &en());
        let m = &v.jobs[0];
        assert!(m.can_flip, "a supervisor must be able to enable it again");
        assert_eq!(m.enabled_for_me, Some(false));
        assert_eq!(m.status_line, "outbound: unknown (Redis lost the job's data) · since 00:04");
    }

    #[test]
    fn an_unreadable_own_flag_is_not_known() {
        let mut s = status(State::Unknown, None, &[]);
        s.flags.push(lockwatch::snapshot::Flag { user: "alice".into(), on: None, at_ms: None, host: None });
        assert_eq!(own_flag(&s, "alice"), None);
        assert_eq!(own_flag(&s, "bob"), Some(false));
    }

    #[test]
    fn pending_says_how_soon_a_server_should_take_it() {
        let mut pending = view(State::Pending, None, &["alice"]);
        if let Some(s) = pending.status.as_mut() {
            s.since_ms = Some(1_000_000 - 2_000);
            s.pending_until_ms = Some(1_000_000 + 3_000);
        }
        let v = tray_view(&[pending, view(State::Running, Some("a"), &[])], "alice", None, 0, &en());
        assert_eq!(v.icon, State::Pending, "amber beats green");
        assert_eq!(v.jobs[0].status_line, "outbound: pending · a server should take it within 3 s · since 00:16");
    }

    #[test]
    fn a_restart_names_the_server_and_data_lost_is_critical() {
        let mut e = event(EventKind::Restarted, "outbound");
        e.to = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        assert_eq!(note(&e, "10:02", &en().tr, &[]).summary, "outbound restarted on wh-east-1");
        let lost = note(&event(EventKind::DataLost, "outbound"), "10:02", &en().tr, &[]);
        assert_eq!(lost.summary, "Redis lost the data of outbound");
        assert!(lost.critical);
        assert!(default_notify_kinds().contains(&EventKind::Restarted));
        assert!(default_notify_kinds().contains(&EventKind::DataLost));
    }

    #[test]
    fn one_data_loss_is_one_notification() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::DataLost, "outbound"), &kinds, None, 0, &en().tr, t).is_some());
        assert!(n.decide(&event(EventKind::DataLost, "outbound"), &kinds, None, 5_000, &en().tr, t).is_none());
    }

    #[test]
    fn mute_label_shows_until_when_and_the_time_left() {
        assert_eq!(mute_label(Some(3_600_000), 0, &en()), "Notifications muted until 01:00");
        assert_eq!(unmute_label(Some(3_600_000), 0, &en().tr), "Unmute (1 h 0 min left)");
        assert_eq!(mute_label(Some(10), 20, &en()), "Mute notifications");
        assert_eq!(unmute_label(Some(10), 20, &en().tr), "Unmute");
    }

    #[test]
    fn died_and_conflict_are_critical_failover_names_both_servers() {
        assert!(note(&event(EventKind::Died, "outbound"), "10:02", &en().tr, &[]).critical);
        assert!(note(&event(EventKind::Conflict, "outbound"), "10:02", &en().tr, &[]).critical);
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02:03", &en().tr, &[]);
        assert_eq!(n.summary, "outbound moved from wh-east-1 to wh-west-1");
        assert!(!n.critical);
    }

    #[test]
    fn a_failover_is_said_once_and_a_death_names_the_server_that_died() {
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        // The library's reason repeats the title: "the job moved from wh-east-1 to wh-west-1".
        e.reason = "the job moved from wh-east-1 to wh-west-1".into();
        let n = note(&e, "10:02:03", &en().tr, &[]);
        assert_eq!(n.body, "10:02:03: wh-west-1 runs it now.");
        assert!(!n.body.contains("moved"), "{}", n.body);
        let mut died = event(EventKind::Died, "outbound");
        died.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        assert_eq!(note(&died, "10:02:03", &en().tr, &[]).summary, "outbound died on wh-east-1");
        assert_eq!(note(&died, "10:02:03", &zh().tr, &[]).summary, "outbound 在 wh-east-1 上意外停止");
    }

    #[test]
    fn notifications_offer_the_dashboard_a_snooze_and_on_it_for_trouble() {
        let mut e = event(EventKind::Failover, "outbound");
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02", &en().tr, &[]);
        assert_eq!(n.actions, [NoteAction::Open, NoteAction::Snooze, NoteAction::OnIt("outbound".into())]);
        let labels: Vec<String> = n.actions.iter().map(|a| a.label(&en().tr)).collect();
        assert_eq!(labels, ["Open dashboard", "Snooze 1 h", "I'm on it"]);
        let labels: Vec<String> = n.actions.iter().map(|a| a.label(&zh().tr)).collect();
        assert_eq!(labels, ["打开监控面板", "静音 1 小时", "我来处理"]);
        assert!(
            !note(&event(EventKind::Recovered, "o"), "", &en().tr, &[]).actions.contains(&NoteAction::OnIt("o".into()))
        );
        for a in [NoteAction::Open, NoteAction::Snooze, NoteAction::OnIt("in:bound".into())] {
            assert_eq!(NoteAction::parse(&a.id()), Some(a));
        }
        assert_eq!(NoteAction::parse("default"), Some(NoteAction::Open), "a click on the note opens the dashboard");
        assert_eq!(NoteAction::parse("__closed"), None);
        assert_eq!(NoteAction::parse("on-it:"), None);
    }

    #[test]
    fn a_refusal_is_said_in_a_supervisors_words_and_keeps_the_details() {
        let host = lockwatch::address::Endpoint::new("db:6379", false);
        // As the library reports an ACL refusal: Redis's words in the cause.
        let err = lockwatch::Error::Redis {
            action: lockwatch::error::Action::SettingFlag { user: "bob".into(), job: "outbound".into() },
            host,
            cause: "NOPERM: this user has no permissions to access one of the keys used as arguments".into(),
            hint: "connect as that user, or ask the admin for the rules printed by `lockwatch acl --user <name>`",
            kind: lockwatch::error::RedisFailure::Permission,
        };
        let r = Refusal::of(&err, "bob", Some("bob"), &en().tr);
        assert!(!r.said.contains("NOPERM") && !r.said.contains("keys used as arguments"), "{}", r.said);
        assert!(r.said.starts_with("Redis does not let bob change this."), "{}", r.said);
        assert!(r.detail.contains("NOPERM"), "the dashboard keeps Redis's words: {}", r.detail);
        assert!(Refusal::of(&err, "bob", Some("bob"), &zh().tr).said.starts_with("Redis 不允许 bob"));
        // Signed in to Redis as alice, writing bob's flag: the advice names alice, the user the server saw.
        let other = Refusal::of(&err, "bob", Some("alice"), &en().tr).said;
        assert!(other.starts_with("Redis user alice may change only alice's keys, not bob's"), "{other}");
        assert!(!other.contains("--user bob"), "{other}");
        let zh_other = Refusal::of(&err, "bob", Some("alice"), &zh().tr).said;
        assert!(zh_other.contains("alice") && zh_other.contains("bob"), "{zh_other}");
        assert!(Refusal::of(&err, "bob", None, &en().tr).said.starts_with("Redis user default"));
    }

    #[test]
    fn a_flapping_job_notifies_once_per_quiet_period() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 0, &en().tr, t).is_some());
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 30_000, &en().tr, t).is_none());
        assert!(n.decide(&event(EventKind::Died, "inbound"), &kinds, None, 30_000, &en().tr, t).is_some());
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 61_000, &en().tr, t).is_some());
    }

    #[test]
    fn one_redis_down_is_one_notification_for_all_jobs() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(
            n.decide(&event(EventKind::Reachable, "outbound"), &kinds, None, 0, &en().tr, t).is_none(),
            "nothing to answer"
        );
        assert!(n.decide(&event(EventKind::Unreachable, "outbound"), &kinds, None, 0, &en().tr, t).is_some());
        assert!(n.decide(&event(EventKind::Unreachable, "inbound"), &kinds, None, 10, &en().tr, t).is_none());
        assert!(n.decide(&event(EventKind::Reachable, "outbound"), &kinds, None, 20, &en().tr, t).is_some());
        assert!(n.decide(&event(EventKind::Reachable, "inbound"), &kinds, None, 30, &en().tr, t).is_none());
    }

    #[test]
    fn mute_and_choices_silence_notifications() {
        let mut n = Notifier::new(0);
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Died, "o"), &default_notify_kinds(), Some(100), 50, &en().tr, t).is_none());
        assert!(n.decide(&event(EventKind::Died, "o"), &default_notify_kinds(), Some(100), 150, &en().tr, t).is_some());
        assert!(n.decide(&event(EventKind::Started, "o"), &[EventKind::Died], None, 0, &en().tr, t).is_none());
    }

    #[test]
    fn the_menu_speaks_chinese_from_the_statuses_fields() {
        let v =
            tray_view(&[view(State::Running, Some("wh-east-1"), &["alice", "bob", "carol"])], "alice", None, 0, &zh());
        let m = &v.jobs[0];
        assert_eq!(m.status_line, "outbound：运行中 · wh-east-1 · 00:04 起");
        assert_eq!(m.flip_label, "由我启用");
        assert_eq!(m.others_line, "其他启用人：bob、carol");
        assert_eq!(v.labels.open, "打开监控面板");
        assert_eq!(v.labels.quit, "退出 lockwatch");
        let mut pending = view(State::Pending, None, &["alice"]);
        if let Some(s) = pending.status.as_mut() {
            s.since_ms = Some(1_000_000 - 2_000);
            s.pending_until_ms = Some(1_000_000 + 3_000);
        }
        let v = tray_view(&[pending], "alice", None, 0, &zh());
        assert_eq!(v.jobs[0].status_line, "outbound：等待启动 · 应在 3 秒内由服务器启动 · 00:16 起");
        let v = tray_view(&[view(State::Stopped, None, &[])], "alice", None, 0, &zh());
        assert_eq!(v.jobs[0].status_line, "outbound：已停止 · 00:04 起");
        assert_eq!(v.jobs[0].others_line, "没有其他人启用");
        let connecting = JobView { job: "outbound".into(), ..Default::default() };
        let v = tray_view(&[connecting], "alice", None, 0, &zh());
        assert_eq!(v.jobs[0].status_line, "outbound：正在连接…");
        assert_eq!(v.jobs[0].flip_label, "由我启用：未知（无法读取 Redis）");
    }

    #[test]
    fn every_state_has_its_own_word_in_both_languages() {
        use State::*;
        let all = [Running, Stale, Down, Pending, Stopped, Conflict, Unknown];
        for lang in Lang::ALL {
            let t = tr(lang);
            let mut said: Vec<String> = all.iter().map(|s| state_word(&t, *s)).collect();
            said.sort();
            said.dedup();
            assert_eq!(said.len(), all.len(), "{lang:?}: {said:?}");
        }
        let zh_words: Vec<String> = all.iter().map(|s| state_word(&tr(Lang::ZhHans), *s)).collect();
        assert_eq!(zh_words, ["运行中", "停滞", "未运行", "等待启动", "已停止", "冲突", "未知"]);
    }

    #[test]
    fn a_chinese_failover_notification_names_both_servers_and_says_who_runs_it_now() {
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02:03", &zh().tr, &[]);
        assert_eq!(n.summary, "outbound 已从 wh-east-1 切换到 wh-west-1");
        assert_eq!(n.body, "10:02:03：现在由 wh-west-1 运行。");
        let died =
            note(&event(EventKind::Died, "outbound"), "10:02:03", &zh().tr, &["alice".to_owned(), "bob".to_owned()]);
        assert_eq!(died.summary, "outbound 意外停止");
        assert_eq!(
            died.body, "10:02:03：alice、bob 已启用此任务，但没有服务器在运行。",
            "who has it on, as in English"
        );
        assert!(died.critical);
        assert_eq!(
            note(&event(EventKind::Unreachable, "o"), "10:02:03", &zh().tr, &[]).summary,
            "无法连接 Redis：任务状态未知"
        );
        let mut unnamed = event(EventKind::Failover, "outbound");
        unnamed.to = Some(HolderRef { field: "b:1".into(), node: None });
        let n = note(&unnamed, "10:02:03", &zh().tr, &[]);
        assert_eq!((n.summary.as_str(), n.body.as_str()), ("outbound 已切换到另一台服务器", "10:02:03：why"));
    }

    #[test]
    fn a_refused_flip_is_one_short_line_with_the_details_left_to_the_dashboard() {
        // The library's refusal names the ACL rule, the key and what to do: ~300 characters.
        let refusal = "Redis refused to write {outbound}:enabled:bob as user bob (NOPERM: this user has no permissions to access one of the keys used as arguments): the ACL user may write only its own flag; ask the Redis admin to run the rules `lockwatch acl --user bob` prints, or sign in as the user whose flag this is";
        assert!(refusal.chars().count() > 280);
        for lang in Lang::ALL {
            let mut refused = view(State::Running, Some("a"), &["bob"]);
            refused.flip_error = Some(Refusal { said: "x".into(), detail: refusal.into() });
            let line = tray_view(&[refused], "bob", None, 0, &words(lang)).jobs[0].error_line.clone().unwrap();
            assert!(line.chars().count() <= 60, "{lang:?}: {line}");
            assert!(line.starts_with('⚠'), "{line}");
        }
    }

    #[test]
    fn the_mute_title_shows_the_time_left_in_both_languages() {
        let jobs = [view(State::Running, Some("a"), &[])];
        let v = tray_view(&jobs, "alice", Some(3_000_000), 0, &zh());
        assert_eq!(
            (v.mute_label.as_str(), v.unmute_label.as_str()),
            ("通知已静音，至 00:50", "恢复通知（还剩 50 分 0 秒）")
        );
        let v = tray_view(&jobs, "alice", Some(3_000_000), 2_999_000, &en());
        assert_eq!(
            (v.mute_label.as_str(), v.unmute_label.as_str()),
            ("Notifications muted until 00:50", "Unmute (1 s left)")
        );
        let v = tray_view(&jobs, "alice", Some(3_000_000), 3_000_000, &zh());
        assert_eq!((v.mute_label.as_str(), v.unmute_label.as_str()), ("通知静音", "恢复通知"));
    }

    fn ack(user: &str, at_ms: u64, note: &str) -> Ack {
        Ack { user: user.into(), at_ms, until_ms: at_ms + 3_600_000, note: note.into() }
    }

    #[test]
    fn the_menu_says_who_is_on_it_and_offers_the_own_ack_in_both_languages() {
        let mut v = view(State::Down, None, &["alice"]);
        if let Some(s) = v.status.as_mut() {
            s.acks = vec![ack("alice", 36_120_000, "looking at wh-a"), ack("bob", 36_180_000, "")];
        }
        let m = &tray_view(std::slice::from_ref(&v), "carol", None, 0, &en()).jobs[0];
        assert_eq!(m.on_it_lines, ["alice is on it since 10:02: looking at wh-a", "bob is on it since 10:03"]);
        assert_eq!((m.own_ack, m.ack_label.as_str()), (Some(false), "I'm on it"));
        let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &en()).jobs[0];
        assert_eq!((m.own_ack, m.ack_label.as_str()), (Some(true), "I'm no longer on it"));
        let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &zh()).jobs[0];
        assert_eq!(m.on_it_lines[0], "alice 自 10:02 起正在处理：looking at wh-a");
        assert_eq!(m.ack_label, "我不再处理");
        let mut unreadable = v.clone();
        if let Some(s) = unreadable.status.as_mut() {
            s.checked_at_ms = None;
        }
        let m = &tray_view(&[unreadable], "alice", None, 0, &en()).jobs[0];
        assert_eq!(m.own_ack, None, "not offered while not known");
    }

    #[test]
    fn i_m_on_it_is_offered_for_trouble_and_to_take_one_s_own_back_not_while_the_job_is_fine() {
        let offered = |state: State, acks: Vec<Ack>| {
            let mut v = view(state, None, &["alice"]);
            if let Some(s) = v.status.as_mut() {
                s.acks = acks;
            }
            tray_view(std::slice::from_ref(&v), "alice", None, 0, &en()).jobs[0].ack_offered
        };
        for state in [State::Stale, State::Down, State::Conflict, State::Unknown] {
            assert!(offered(state, vec![]), "{state:?}");
        }
        for state in [State::Running, State::Pending, State::Stopped] {
            assert!(!offered(state, vec![]), "{state:?}");
        }
        assert!(offered(State::Running, vec![ack("alice", 36_120_000, "")]), "her own can be taken back");
        assert!(!offered(State::Running, vec![ack("bob", 36_120_000, "")]));
    }

    #[test]
    fn repeats_of_an_incident_someone_else_is_on_stay_quiet_a_new_incident_does_not() {
        let kinds = default_notify_kinds();
        let t = |_: u64| String::new();
        let at = |kind: EventKind, at_ms: u64| Event { at_ms, ..event(kind, "outbound") };
        let mut n = Notifier::new(0);
        assert!(n.decide(&at(EventKind::Died, 1_000), &kinds, None, 0, &en().tr, t).is_some());
        // bob is on it after it began: alice's repeats of it stay quiet.
        n.set_acks("outbound", &[ack("bob", 2_000, "")], "alice");
        assert!(n.decide(&at(EventKind::Stalled, 3_000), &kinds, None, 0, &en().tr, t).is_none());
        assert!(n.decide(&at(EventKind::Conflict, 3_500), &kinds, None, 0, &en().tr, t).is_none());
        // Another job's trouble is not covered.
        assert!(
            n.decide(&Event { at_ms: 3_600, ..event(EventKind::Died, "inbound") }, &kinds, None, 0, &en().tr, t)
                .is_some()
        );
        // The job runs again (said), then a new incident: not quiet, though bob's ack still lasts.
        assert!(n.decide(&at(EventKind::Started, 4_000), &kinds, None, 0, &en().tr, t).is_some());
        assert!(n.decide(&at(EventKind::Died, 5_000), &kinds, None, 0, &en().tr, t).is_some());
        assert!(
            n.decide(&at(EventKind::Stalled, 6_000), &kinds, None, 0, &en().tr, t).is_some(),
            "bob's ack predates it"
        );
        // One's own ack silences nothing; an ended one neither.
        n.set_acks("outbound", &[ack("alice", 7_000, "")], "alice");
        assert!(n.decide(&at(EventKind::Conflict, 8_000), &kinds, None, 0, &en().tr, t).is_some());
        n.set_acks("outbound", &[Ack { until_ms: 9_000, ..ack("bob", 7_000, "") }], "alice");
        assert!(n.decide(&at(EventKind::DataLost, 8_500), &kinds, None, 0, &en().tr, t).is_none());
        assert!(n.decide(&at(EventKind::Stalled, 9_500), &kinds, None, 0, &en().tr, t).is_some(), "the ack ended");
    }
    fn moved(from: &str, to: &str, at_ms: u64) -> Event {
        Event {
            from: Some(HolderRef { field: format!("{from}:1"), node: Some(from.into()) }),
            to: Some(HolderRef { field: format!("{to}:1"), node: Some(to.into()) }),
            at_ms,
            ..event(EventKind::Failover, "outbound")
        }
    }

    #[test]
    fn a_genuine_second_failover_within_the_quiet_minute_is_notified_a_repeat_is_not() {
        let kinds = default_notify_kinds();
        let t = |_: u64| String::new();
        let mut n = Notifier::new(60_000);
        assert!(n.decide(&moved("a", "b", 0), &kinds, None, 0, &en().tr, t).is_some());
        assert!(n.decide(&moved("b", "a", 20_000), &kinds, None, 20_000, &en().tr, t).is_some(), "it moved back");
        assert!(n.decide(&moved("a", "b", 30_000), &kinds, None, 30_000, &en().tr, t).is_none(), "the same move again");
        // A death on another server is another incident; the same one flapping is not.
        let died = |node: &str, at_ms| Event {
            from: Some(HolderRef { field: format!("{node}:1"), node: Some(node.into()) }),
            at_ms,
            ..event(EventKind::Died, "outbound")
        };
        assert!(n.decide(&died("a", 40_000), &kinds, None, 40_000, &en().tr, t).is_some());
        assert!(n.decide(&died("a", 45_000), &kinds, None, 45_000, &en().tr, t).is_none());
        assert!(n.decide(&died("b", 50_000), &kinds, None, 50_000, &en().tr, t).is_some());
    }

    #[test]
    fn the_own_flip_is_confirmed_in_the_menu_not_by_a_notification() {
        let kinds = default_notify_kinds();
        let t = |_: u64| String::new();
        let at = |kind: EventKind, at_ms: u64| Event { at_ms, ..event(kind, "outbound") };
        let mut n = Notifier::new(60_000);
        n.own_flip("outbound", false, 10_000);
        assert!(n.decide(&at(EventKind::Stopped, 11_000), &kinds, None, 0, &en().tr, t).is_none(), "alice stopped it");
        n.own_flip("outbound", true, 20_000);
        assert!(n.decide(&at(EventKind::Started, 23_000), &kinds, None, 0, &en().tr, t).is_none(), "alice started it");
        // Long after the flip, or another job, it is news again.
        assert!(n.decide(&at(EventKind::Stopped, 500_000), &kinds, None, 500_000, &en().tr, t).is_some());
        let other = Event { at_ms: 20_500, ..event(EventKind::Started, "inbound") };
        assert!(n.decide(&other, &kinds, None, 0, &en().tr, t).is_some());
        // Someone else's notifier has no such flip: they are told.
        let mut bob = Notifier::new(60_000);
        assert!(bob.decide(&at(EventKind::Stopped, 11_000), &kinds, None, 0, &en().tr, t).is_some());

        let mut v = view(State::Stopped, None, &[]);
        v.own_flip = Some(OwnFlip { on: false, at_ms: 36_120_000 });
        let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &en()).jobs[0];
        assert_eq!(m.confirm_line.as_deref(), Some("✓ You switched it off at 10:02"));
        let m = &tray_view(std::slice::from_ref(&v), "alice", None, 0, &zh()).jobs[0];
        assert_eq!(m.confirm_line.as_deref(), Some("✓ 您已于 10:02 停用"));
    }
    proptest::proptest! {
        /// Whatever the order and timing, an incident (job, kind, servers)
        /// is told at most once per quiet period, and one not told within
        /// the last quiet period is always told.
        #[test]
        fn the_same_incident_is_quiet_a_new_one_is_told(
            steps in proptest::collection::vec((0..4usize, 0..3usize, 0..3usize, 0..40_000u64), 1..60)
        ) {
            const QUIET: u64 = 60_000;
            let kinds = [EventKind::Died, EventKind::Failover, EventKind::Stalled, EventKind::Conflict];
            let servers = ["a", "b", "c"];
            let mut n = Notifier::new(QUIET);
            let mut told: Vec<(EventKind, &str, &str, u64)> = Vec::new();
            let mut now = 0;
            for (kind, from, to, step) in steps {
                now += step;
                let (kind, from, to) = (kinds[kind], servers[from], servers[to]);
                let mut e = moved(from, to, now);
                e.event = kind;
                let due = !told.iter().any(|&(k, f, t, at)| (k, f, t) == (kind, from, to) && now - at < QUIET);
                let shown = n.decide(&e, &kinds, None, now, &en().tr, |_| String::new()).is_some();
                proptest::prop_assert_eq!(shown, due, "{:?} {}→{} at {}", kind, from, to, now);
                if shown {
                    told.push((kind, from, to, now));
                }
            }
        }
    }

    #[test]
    fn only_the_last_one_on_is_asked_why() {
        let s = status(State::Running, Some("a"), &["alice"]);
        assert!(last_one_on(&s, "alice"));
        assert!(!last_one_on(&s, "bob"));
        assert!(!last_one_on(&status(State::Running, Some("a"), &["alice", "bob"]), "alice"));
        let mut unread = s.clone();
        unread.checked_at_ms = None;
        assert!(!last_one_on(&unread, "alice"), "not known, not asked");
    }
}
