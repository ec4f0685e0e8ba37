//! The tray as pure data: from the jobs' statuses to the icon, the menu's
//! lines and checkboxes, and which events become notifications (debounce and
//! mute included). No GTK, no clock: `now_ms` is an argument, so all of it is
//! unit-tested.

use std::collections::HashMap;

use lockwatch::status::human_duration;
use lockwatch::{Event, EventKind, State, Status};

/// One watched job as the tray knows it.
#[derive(Debug, Clone, Default)]
pub struct JobView {
    pub job: String,
    /// Latest status; `None` before the first read.
    pub status: Option<Status>,
    /// Why the last flip of the user's own flag failed, until the next success.
    pub flip_error: Option<String>,
}

/// What the tray shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayView {
    /// The worst state of all jobs.
    pub icon: State,
    pub jobs: Vec<JobMenu>,
    /// "Mute notifications" submenu title, with the time left when muted.
    pub mute_label: String,
}

/// The menu lines of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobMenu {
    pub job: String,
    /// `outbound: running on wh-east-1 · heartbeat 1 s ago · for 12 min`
    pub status_line: String,
    /// The user's own flag as Redis has it; `None` while it cannot be known.
    pub enabled_for_me: Option<bool>,
    /// The checkbox's label: says so when the own flag is not known.
    pub flip_label: String,
    /// Whether the checkbox can be clicked (only while the own flag is known).
    pub can_flip: bool,
    /// `Also enabled by: bob, carol` or `Nobody else has it enabled`.
    pub others_line: String,
    /// A refused flip, said in one line.
    pub error_line: Option<String>,
}

/// Builds the tray's view of all jobs for `user`. Ages come from each
/// status's Redis time; `desktop_now_ms` only times the mute.
pub fn tray_view(jobs: &[JobView], user: &str, mute_until_ms: Option<u64>, desktop_now_ms: u64) -> TrayView {
    let icon = jobs
        .iter()
        .map(|j| j.status.as_ref().map_or(State::Unknown, |s| s.state))
        .max_by_key(|s| s.severity())
        .unwrap_or(State::Unknown);
    TrayView {
        icon,
        jobs: jobs.iter().map(|j| job_menu(j, user)).collect(),
        mute_label: mute_label(mute_until_ms, desktop_now_ms),
    }
}

/// The checkbox's label while the own flag is known.
pub const FLIP_LABEL: &str = "Enabled for me";

fn job_menu(j: &JobView, user: &str) -> JobMenu {
    let unknown_flag = format!("{FLIP_LABEL}: not known (Redis unreadable)");
    let Some(s) = &j.status else {
        return JobMenu {
            job: j.job.clone(),
            status_line: format!("{}: connecting…", j.job),
            enabled_for_me: None,
            flip_label: unknown_flag,
            can_flip: false,
            others_line: "Who has it enabled: not known yet".to_owned(),
            error_line: j.flip_error.clone(),
        };
    };
    let enabled_for_me = own_flag(s, user);
    let others: Vec<&str> = s.enabled_users.iter().map(String::as_str).filter(|u| *u != user).collect();
    let others_line = match (s.checked_at_ms.is_some(), others.is_empty()) {
        (false, _) => "Who has it enabled: not known (Redis unreadable)".to_owned(),
        (true, true) => "Nobody else has it enabled".to_owned(),
        (true, false) => format!("Also enabled by: {}", others.join(", ")),
    };
    JobMenu {
        job: j.job.clone(),
        status_line: status_line(s),
        enabled_for_me,
        flip_label: if enabled_for_me.is_some() { FLIP_LABEL.to_owned() } else { unknown_flag },
        can_flip: enabled_for_me.is_some(),
        others_line,
        error_line: j.flip_error.clone(),
    }
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

/// One line saying the state, the server, the heartbeat's age and since when
/// (measured to the status's own Redis time).
pub fn status_line(s: &Status) -> String {
    let mut line = format!("{}: {}", s.job, s.state);
    let server = s.holder.as_ref().and_then(|h| h.node.clone());
    match (s.state, &server) {
        (State::Running | State::Stale | State::Conflict, Some(node)) => line.push_str(&format!(" on {node}")),
        (State::Unknown, _) if s.checked_at_ms.is_none() => line.push_str(" (Redis unreadable)"),
        (State::Unknown, _) => line.push_str(&format!(" ({})", headline(&s.reason))),
        (State::Pending, _) => {
            if let (Some(until), Some(now)) = (s.pending_until_ms, s.checked_at_ms) {
                let left = human_duration(until.saturating_sub(now));
                line.push_str(&format!(" · a server should take it within {left}"));
            }
        }
        _ => {}
    }
    if let Some(age) = s.holder.as_ref().and_then(|h| h.heartbeat_age_ms) {
        line.push_str(&format!(" · heartbeat {} ago", human_duration(age)));
    }
    if let (Some(since), Some(now)) = (s.since_ms, s.checked_at_ms) {
        line.push_str(&format!(" · for {}", human_duration(now.saturating_sub(since))));
    }
    line
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

fn mute_label(mute_until_ms: Option<u64>, now_ms: u64) -> String {
    match mute_until_ms {
        Some(until) if until > now_ms => format!("Notifications muted ({} left)", human_duration(until - now_ms)),
        _ => "Mute notifications".to_owned(),
    }
}

/// A notification to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub summary: String,
    pub body: String,
    pub critical: bool,
}

/// Which events notify (the settings' choice).
pub fn default_notify_kinds() -> Vec<EventKind> {
    use EventKind::*;
    vec![Died, DataLost, Failover, Restarted, Conflict, Stalled, Recovered, Started, Stopped, Unreachable, Reachable]
}

/// Decides which events become notifications: respects the choices and the
/// mute, and lets through at most one of a kind per job within `quiet_ms`,
/// so a flapping job or a desktop's own network drop gives one, not a storm.
#[derive(Debug, Clone)]
pub struct Notifier {
    quiet_ms: u64,
    /// Last notified time per (job, kind); Redis unreachability is keyed
    /// without the job: one Redis down is one notification for all jobs.
    last: HashMap<(String, EventKind), u64>,
}

impl Notifier {
    pub fn new(quiet_ms: u64) -> Notifier {
        Notifier { quiet_ms, last: HashMap::new() }
    }

    /// The notification for `event`, if one is due. `local_time` formats a
    /// Redis ms time for people (the desktop's time zone).
    pub fn decide(
        &mut self,
        event: &Event,
        kinds: &[EventKind],
        mute_until_ms: Option<u64>,
        now_ms: u64,
        local_time: impl Fn(u64) -> String,
    ) -> Option<Note> {
        if !kinds.contains(&event.event) || mute_until_ms.is_some_and(|until| until > now_ms) {
            return None;
        }
        let job_key = match event.event {
            EventKind::Unreachable | EventKind::Reachable => String::new(),
            _ => event.job.clone(),
        };
        let key = (job_key, event.event);
        if self.last.get(&key).is_some_and(|at| now_ms.saturating_sub(*at) < self.quiet_ms) {
            return None;
        }
        // "reachable" only answers an "unreachable" that was shown.
        if event.event == EventKind::Reachable && !self.last.contains_key(&(String::new(), EventKind::Unreachable)) {
            return None;
        }
        self.last.insert(key, now_ms);
        if event.event == EventKind::Reachable {
            self.last.remove(&(String::new(), EventKind::Unreachable));
        }
        Some(note(event, &local_time(event.at_ms)))
    }
}

/// Title and body of an event's notification.
pub fn note(event: &Event, at: &str) -> Note {
    let job = &event.job;
    let (summary, critical) = match event.event {
        EventKind::Died => (format!("{job} died"), true),
        EventKind::DataLost => (format!("Redis lost the data of {job}"), true),
        EventKind::Conflict => (format!("{job}: two servers run it"), true),
        EventKind::Failover => match (&event.from, &event.to) {
            (Some(from), Some(to)) => (format!("{job} moved from {from} to {to}"), false),
            _ => (format!("{job} moved to another server"), false),
        },
        EventKind::Restarted => match &event.to {
            Some(on) => (format!("{job} restarted on {on}"), false),
            None => (format!("{job} restarted"), false),
        },
        EventKind::Stalled => (format!("{job} is stuck"), false),
        EventKind::Recovered => (format!("{job} runs again"), false),
        EventKind::Started => (format!("{job} started"), false),
        EventKind::Stopped => (format!("{job} stopped"), false),
        EventKind::Unreachable => ("Redis unreachable: job states unknown".to_owned(), false),
        EventKind::Reachable => ("Redis reachable again".to_owned(), false),
    };
    Note { summary, body: format!("{at}: {}", event.reason), critical }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockwatch::status::{Holder, HolderRef, LockView};

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
            nodes: vec![],
            checked_at_ms: Some(1_000_000),
            since_ms: Some(1_000_000 - 720_000),
            pending_until_ms: None,
            problems: vec![],
        }
    }

    fn view(state: State, node: Option<&str>, enabled: &[&str]) -> JobView {
        JobView { job: "outbound".into(), status: Some(status(state, node, enabled)), flip_error: None }
    }

    fn event(kind: EventKind, job: &str) -> Event {
        Event { event: kind, job: job.into(), at_ms: 0, from: None, to: None, reason: "why".into() }
    }

    #[test]
    fn the_icon_is_the_worst_state_and_unknown_before_any_read() {
        let jobs = [view(State::Running, Some("a"), &[]), view(State::Stale, Some("b"), &[])];
        assert_eq!(tray_view(&jobs, "alice", None, 0).icon, State::Stale);
        let jobs = [view(State::Running, Some("a"), &[]), view(State::Conflict, Some("b"), &[])];
        assert_eq!(tray_view(&jobs, "alice", None, 0).icon, State::Conflict);
        let jobs = [view(State::Running, Some("a"), &[]), JobView { job: "x".into(), ..Default::default() }];
        assert_eq!(tray_view(&jobs, "alice", None, 0).icon, State::Unknown);
    }

    #[test]
    fn the_menu_says_state_server_age_and_since() {
        let v = tray_view(&[view(State::Running, Some("wh-east-1"), &["alice", "bob"])], "alice", None, 1_000_000);
        let m = &v.jobs[0];
        assert_eq!(m.status_line, "outbound: running on wh-east-1 · heartbeat 1 s ago · for 12 min 0 s");
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
        let v = tray_view(&[unreadable], "alice", None, 0);
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
        let v = tray_view(&[lost], "alice", None, 0);
        let m = &v.jobs[0];
        assert!(m.can_flip, "a supervisor must be able to enable it again");
        assert_eq!(m.enabled_for_me, Some(false));
        assert_eq!(m.status_line, "outbound: unknown (Redis lost the job's data) · for 12 min 0 s");
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
        let v = tray_view(&[pending, view(State::Running, Some("a"), &[])], "alice", None, 0);
        assert_eq!(v.icon, State::Pending, "amber beats green");
        assert_eq!(v.jobs[0].status_line, "outbound: pending · a server should take it within 3 s · for 2 s");
    }

    #[test]
    fn a_restart_names_the_server_and_data_lost_is_critical() {
        let mut e = event(EventKind::Restarted, "outbound");
        e.to = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        assert_eq!(note(&e, "10:02").summary, "outbound restarted on wh-east-1");
        let lost = note(&event(EventKind::DataLost, "outbound"), "10:02");
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
        assert!(n.decide(&event(EventKind::DataLost, "outbound"), &kinds, None, 0, t).is_some());
        assert!(n.decide(&event(EventKind::DataLost, "outbound"), &kinds, None, 5_000, t).is_none());
    }

    #[test]
    fn mute_label_shows_the_time_left() {
        assert_eq!(mute_label(Some(3_600_000), 0), "Notifications muted (1 h 0 min left)");
        assert_eq!(mute_label(Some(10), 20), "Mute notifications");
    }

    #[test]
    fn died_and_conflict_are_critical_failover_names_both_servers() {
        assert!(note(&event(EventKind::Died, "outbound"), "10:02").critical);
        assert!(note(&event(EventKind::Conflict, "outbound"), "10:02").critical);
        let mut e = event(EventKind::Failover, "outbound");
        e.from = Some(HolderRef { field: "a:1".into(), node: Some("wh-east-1".into()) });
        e.to = Some(HolderRef { field: "b:1".into(), node: Some("wh-west-1".into()) });
        let n = note(&e, "10:02:03");
        assert_eq!(n.summary, "outbound moved from wh-east-1 to wh-west-1");
        assert_eq!(n.body, "10:02:03: why");
        assert!(!n.critical);
    }

    #[test]
    fn a_flapping_job_notifies_once_per_quiet_period() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 0, t).is_some());
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 30_000, t).is_none());
        assert!(n.decide(&event(EventKind::Died, "inbound"), &kinds, None, 30_000, t).is_some());
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 61_000, t).is_some());
    }

    #[test]
    fn one_redis_down_is_one_notification_for_all_jobs() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Reachable, "outbound"), &kinds, None, 0, t).is_none(), "nothing to answer");
        assert!(n.decide(&event(EventKind::Unreachable, "outbound"), &kinds, None, 0, t).is_some());
        assert!(n.decide(&event(EventKind::Unreachable, "inbound"), &kinds, None, 10, t).is_none());
        assert!(n.decide(&event(EventKind::Reachable, "outbound"), &kinds, None, 20, t).is_some());
        assert!(n.decide(&event(EventKind::Reachable, "inbound"), &kinds, None, 30, t).is_none());
    }

    #[test]
    fn mute_and_choices_silence_notifications() {
        let mut n = Notifier::new(0);
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Died, "o"), &default_notify_kinds(), Some(100), 50, t).is_none());
        assert!(n.decide(&event(EventKind::Died, "o"), &default_notify_kinds(), Some(100), 150, t).is_some());
        assert!(n.decide(&event(EventKind::Started, "o"), &[EventKind::Died], None, 0, t).is_none());
    }
}
