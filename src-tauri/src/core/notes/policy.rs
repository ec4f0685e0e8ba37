//! Which events become notifications, and when: the settings' choices, the
//! mute, one notification per incident within the quiet time, repeats of an
//! incident someone else is on kept quiet, and the start or stop the user's
//! own flip asked for left to the menu. What counts as trouble and as its
//! end is the library's rule ([`EventKind::is_trouble`],
//! [`EventKind::ends_incident`]).

use std::collections::HashMap;

use lockwatch::snapshot::Ack;
use lockwatch::{Event, EventKind};

use super::{Note, note};
use crate::core::i18n::Tr;
use crate::core::state::OwnFlip;

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
        if event.event.ends_incident() {
            self.incidents.remove(&event.job);
            return false;
        }
        if !event.event.is_trouble() {
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

#[cfg(test)]
mod tests {
    use lockwatch::status::HolderRef;

    use super::*;
    use crate::core::fixtures::{ack, en, event};
    use crate::core::notes::default_notify_kinds;

    #[test]
    fn one_data_loss_is_one_notification() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::DataLost, "outbound"), &kinds, None, 0, &en(), t).is_some());
        assert!(n.decide(&event(EventKind::DataLost, "outbound"), &kinds, None, 5_000, &en(), t).is_none());
    }

    #[test]
    fn a_flapping_job_notifies_once_per_quiet_period() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 0, &en(), t).is_some());
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 30_000, &en(), t).is_none());
        assert!(n.decide(&event(EventKind::Died, "inbound"), &kinds, None, 30_000, &en(), t).is_some());
        assert!(n.decide(&event(EventKind::Died, "outbound"), &kinds, None, 61_000, &en(), t).is_some());
    }

    #[test]
    fn one_redis_down_is_one_notification_for_all_jobs() {
        let mut n = Notifier::new(60_000);
        let kinds = default_notify_kinds();
        let t = |_| String::new();
        assert!(
            n.decide(&event(EventKind::Reachable, "outbound"), &kinds, None, 0, &en(), t).is_none(),
            "nothing to answer"
        );
        assert!(n.decide(&event(EventKind::Unreachable, "outbound"), &kinds, None, 0, &en(), t).is_some());
        assert!(n.decide(&event(EventKind::Unreachable, "inbound"), &kinds, None, 10, &en(), t).is_none());
        assert!(n.decide(&event(EventKind::Reachable, "outbound"), &kinds, None, 20, &en(), t).is_some());
        assert!(n.decide(&event(EventKind::Reachable, "inbound"), &kinds, None, 30, &en(), t).is_none());
    }

    #[test]
    fn mute_and_choices_silence_notifications() {
        let mut n = Notifier::new(0);
        let t = |_| String::new();
        assert!(n.decide(&event(EventKind::Died, "o"), &default_notify_kinds(), Some(100), 50, &en(), t).is_none());
        assert!(n.decide(&event(EventKind::Died, "o"), &default_notify_kinds(), Some(100), 150, &en(), t).is_some());
        assert!(n.decide(&event(EventKind::Started, "o"), &[EventKind::Died], None, 0, &en(), t).is_none());
    }

    #[test]
    fn repeats_of_an_incident_someone_else_is_on_stay_quiet_a_new_incident_does_not() {
        let kinds = default_notify_kinds();
        let t = |_: u64| String::new();
        let at = |kind: EventKind, at_ms: u64| Event { at_ms, ..event(kind, "outbound") };
        let mut n = Notifier::new(0);
        assert!(n.decide(&at(EventKind::Died, 1_000), &kinds, None, 0, &en(), t).is_some());
        // bob is on it after it began: alice's repeats of it stay quiet.
        n.set_acks("outbound", &[ack("bob", 2_000, "")], "alice");
        assert!(n.decide(&at(EventKind::Stalled, 3_000), &kinds, None, 0, &en(), t).is_none());
        assert!(n.decide(&at(EventKind::Conflict, 3_500), &kinds, None, 0, &en(), t).is_none());
        // Another job's trouble is not covered.
        assert!(
            n.decide(&Event { at_ms: 3_600, ..event(EventKind::Died, "inbound") }, &kinds, None, 0, &en(), t).is_some()
        );
        // The job runs again (said), then a new incident: not quiet, though bob's ack still lasts.
        assert!(n.decide(&at(EventKind::Started, 4_000), &kinds, None, 0, &en(), t).is_some());
        assert!(n.decide(&at(EventKind::Died, 5_000), &kinds, None, 0, &en(), t).is_some());
        assert!(n.decide(&at(EventKind::Stalled, 6_000), &kinds, None, 0, &en(), t).is_some(), "bob's ack predates it");
        // One's own ack silences nothing; an ended one neither.
        n.set_acks("outbound", &[ack("alice", 7_000, "")], "alice");
        assert!(n.decide(&at(EventKind::Conflict, 8_000), &kinds, None, 0, &en(), t).is_some());
        n.set_acks("outbound", &[Ack { until_ms: 9_000, ..ack("bob", 7_000, "") }], "alice");
        assert!(n.decide(&at(EventKind::DataLost, 8_500), &kinds, None, 0, &en(), t).is_none());
        assert!(n.decide(&at(EventKind::Stalled, 9_500), &kinds, None, 0, &en(), t).is_some(), "the ack ended");
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
        assert!(n.decide(&moved("a", "b", 0), &kinds, None, 0, &en(), t).is_some());
        assert!(n.decide(&moved("b", "a", 20_000), &kinds, None, 20_000, &en(), t).is_some(), "it moved back");
        assert!(n.decide(&moved("a", "b", 30_000), &kinds, None, 30_000, &en(), t).is_none(), "the same move again");
        // A death on another server is another incident; the same one flapping is not.
        let died = |node: &str, at_ms| Event {
            from: Some(HolderRef { field: format!("{node}:1"), node: Some(node.into()) }),
            at_ms,
            ..event(EventKind::Died, "outbound")
        };
        assert!(n.decide(&died("a", 40_000), &kinds, None, 40_000, &en(), t).is_some());
        assert!(n.decide(&died("a", 45_000), &kinds, None, 45_000, &en(), t).is_none());
        assert!(n.decide(&died("b", 50_000), &kinds, None, 50_000, &en(), t).is_some());
    }

    #[test]
    fn the_start_or_stop_the_own_flip_asked_for_is_not_notified_to_the_one_who_asked() {
        let kinds = default_notify_kinds();
        let t = |_: u64| String::new();
        let at = |kind: EventKind, at_ms: u64| Event { at_ms, ..event(kind, "outbound") };
        let mut n = Notifier::new(60_000);
        n.own_flip("outbound", false, 10_000);
        assert!(n.decide(&at(EventKind::Stopped, 11_000), &kinds, None, 0, &en(), t).is_none(), "alice stopped it");
        n.own_flip("outbound", true, 20_000);
        assert!(n.decide(&at(EventKind::Started, 23_000), &kinds, None, 0, &en(), t).is_none(), "alice started it");
        // Long after the flip, or another job, it is news again.
        assert!(n.decide(&at(EventKind::Stopped, 500_000), &kinds, None, 500_000, &en(), t).is_some());
        let other = Event { at_ms: 20_500, ..event(EventKind::Started, "inbound") };
        assert!(n.decide(&other, &kinds, None, 0, &en(), t).is_some());
        // Someone else's notifier has no such flip: they are told.
        let mut bob = Notifier::new(60_000);
        assert!(bob.decide(&at(EventKind::Stopped, 11_000), &kinds, None, 0, &en(), t).is_some());
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
                let shown = n.decide(&e, &kinds, None, now, &en(), |_| String::new()).is_some();
                proptest::prop_assert_eq!(shown, due, "{:?} {}→{} at {}", kind, from, to, now);
                if shown {
                    told.push((kind, from, to, now));
                }
            }
        }
    }
}
