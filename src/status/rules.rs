//! The product's rules about a status and an event, for every face of the
//! product alike (the tray's menu and notifications, the dashboard's page):
//! a supervisor's own flag and "I'm on it" as Redis has them, whether she is
//! the last one with the job on, which standbys are silent, which states
//! are trouble somebody may be on, which events open or end an incident,
//! and which are critical. Pure: a status or a kind in, a fact out.

use super::{EventKind, State, Status};

impl Status {
    /// `user`'s own flag as Redis has it, `None` while it cannot be known.
    /// The flags are known whenever they were read, even while the state is
    /// unknown for another reason (Redis lost the job's data: the flag is
    /// then really off, and setting it again is how the job comes back).
    pub fn own_flag(&self, user: &str) -> Option<bool> {
        if self.checked_at_ms.is_none() {
            None
        } else if self.enabled_users.iter().any(|u| u == user) {
            Some(true)
        } else if self.flags.iter().any(|f| f.user == user && f.on.is_none()) {
            None
        } else {
            Some(false)
        }
    }

    /// Whether `user` is the only one with the job enabled, as Redis has it:
    /// switching off then stops the job on every server, so they are asked why.
    pub fn last_one_on(&self, user: &str) -> bool {
        self.checked_at_ms.is_some() && self.enabled_users.len() == 1 && self.enabled_users[0] == user
    }

    /// Whether `user`'s own "I'm on it" is in force, `None` while Redis
    /// could not be read.
    pub fn own_ack(&self, user: &str) -> Option<bool> {
        self.checked_at_ms.is_some().then(|| self.acks.iter().any(|a| a.user == user))
    }

    /// The servers other than the holder's whose heartbeat is silent: the
    /// standbys that could not take the job over (what
    /// [`Status::no_standby`] is about).
    pub fn silent_standbys(&self) -> Vec<&str> {
        let holder = self.holder.as_ref().and_then(|h| h.node.as_deref());
        self.nodes.iter().filter(|n| !n.fresh && Some(n.node.as_str()) != holder).map(|n| n.node.as_str()).collect()
    }
}

impl State {
    /// Whether a state is trouble somebody may say they are on: not while
    /// the job runs, starts, or was stopped on purpose.
    pub fn in_trouble(self) -> bool {
        matches!(self, State::Stale | State::Down | State::Conflict | State::Unknown)
    }

    /// How far up a list of jobs it goes (the tray's menu, the dashboard's
    /// list): its severity when in trouble, else 0, so the worst trouble
    /// comes first and the rest keep their order.
    pub fn trouble_rank(self) -> u8 {
        if self.in_trouble() { self.severity() } else { 0 }
    }
}

impl EventKind {
    /// Whether the event opens an incident, or belongs to the one open.
    pub fn is_trouble(self) -> bool {
        matches!(self, EventKind::Died | EventKind::DataLost | EventKind::Conflict | EventKind::Stalled)
    }

    /// Whether the job runs (or stands still on purpose) again after the
    /// event: the incident is over.
    pub fn ends_incident(self) -> bool {
        matches!(
            self,
            EventKind::Recovered | EventKind::Started | EventKind::Stopped | EventKind::Failover | EventKind::Restarted
        )
    }

    /// Whether the event is critical: nobody runs the job, or two do, or
    /// Redis forgot it. Its notification asks for attention (urgency, sound).
    pub fn is_critical(self) -> bool {
        matches!(self, EventKind::Died | EventKind::DataLost | EventKind::Conflict)
    }
}

#[cfg(test)]
mod tests {
    use super::super::view::Job;
    use super::super::{Holder, NodeView};
    use super::*;
    use crate::snapshot::{Ack, Flag};

    fn status(state: State, enabled: &[&str]) -> Status {
        let job = Job { name: "outbound".into(), lock_key: "{outbound}:lock".into() };
        let mut s = job.blank(state, "r".into(), None);
        s.checked_at_ms = Some(1_000_000);
        s.enabled_users = enabled.iter().map(|u| (*u).to_owned()).collect();
        s
    }

    fn flag(user: &str, on: Option<bool>) -> Flag {
        Flag { user: user.into(), on, at_ms: None, host: None }
    }

    #[test]
    fn the_own_flag_is_not_known_while_redis_cannot_be_read_and_known_after_a_data_loss() {
        let mut blank = status(State::Unknown, &[]);
        blank.checked_at_ms = None;
        assert_eq!(blank.own_flag("alice"), None);
        let lost = status(State::Unknown, &[]);
        assert_eq!(lost.own_flag("alice"), Some(false), "Redis lost the data: the flag is off");
        let mut on = status(State::Running, &["alice"]);
        on.flags = vec![flag("alice", Some(true))];
        assert_eq!(on.own_flag("alice"), Some(true));
    }

    #[test]
    fn an_unreadable_own_flag_is_not_known() {
        let mut s = status(State::Unknown, &[]);
        s.flags.push(flag("alice", None));
        assert_eq!(s.own_flag("alice"), None);
        assert_eq!(s.own_flag("bob"), Some(false));
    }

    #[test]
    fn only_the_last_one_on_is_asked_why() {
        let s = status(State::Running, &["alice"]);
        assert!(s.last_one_on("alice"));
        assert!(!s.last_one_on("bob"));
        assert!(!status(State::Running, &["alice", "bob"]).last_one_on("alice"));
        assert!(!status(State::Running, &[]).last_one_on("alice"));
        let mut unread = s.clone();
        unread.checked_at_ms = None;
        assert!(!unread.last_one_on("alice"), "not known, not asked");
    }

    #[test]
    fn the_own_ack_is_known_only_from_a_read() {
        let mut s = status(State::Down, &["alice"]);
        s.acks = vec![Ack { user: "alice".into(), at_ms: 1, until_ms: 2, note: String::new() }];
        assert_eq!(s.own_ack("alice"), Some(true));
        assert_eq!(s.own_ack("bob"), Some(false));
        s.checked_at_ms = None;
        assert_eq!(s.own_ack("alice"), None);
    }

    #[test]
    fn a_silent_standby_is_a_silent_server_other_than_the_holder() {
        let node = |name: &str, fresh| NodeView {
            node: name.into(),
            state: Some("idle".into()),
            host: None,
            heartbeat_age_ms: Some(11_000),
            fence: None,
            fresh,
        };
        let mut s = status(State::Running, &["alice"]);
        s.holder =
            Some(Holder { field: "a:1".into(), node: Some("srv-a".into()), heartbeat_age_ms: None, fence: None });
        s.nodes = vec![node("srv-a", false), node("srv-b", false), node("srv-c", true)];
        assert_eq!(s.silent_standbys(), ["srv-b"]);
        s.holder = None;
        assert_eq!(s.silent_standbys(), ["srv-a", "srv-b"], "with no holder, every silent server");
    }

    #[test]
    fn a_list_of_jobs_puts_the_worst_trouble_first_and_ranks_the_rest_alike() {
        use State::*;
        let ranks: Vec<u8> = [Conflict, Down, Unknown, Stale].map(State::trouble_rank).to_vec();
        assert!(ranks.windows(2).all(|w| w[0] > w[1]), "{ranks:?}");
        for state in [Running, Pending, Stopped] {
            assert_eq!(state.trouble_rank(), 0, "{state:?}");
        }
    }

    #[test]
    fn trouble_is_stale_down_conflict_or_unknown() {
        for state in [State::Stale, State::Down, State::Conflict, State::Unknown] {
            assert!(state.in_trouble(), "{state:?}");
        }
        for state in [State::Running, State::Pending, State::Stopped] {
            assert!(!state.in_trouble(), "{state:?}");
        }
    }

    #[test]
    fn deaths_conflicts_and_data_losses_are_critical_trouble_and_a_running_job_ends_it() {
        use EventKind::*;
        for kind in [Died, DataLost, Conflict] {
            assert!(kind.is_critical() && kind.is_trouble() && !kind.ends_incident(), "{kind:?}");
        }
        assert!(Stalled.is_trouble() && !Stalled.is_critical(), "a stall is trouble, not yet critical");
        for kind in [Started, Stopped, Restarted, Recovered, Failover] {
            assert!(kind.ends_incident() && !kind.is_trouble() && !kind.is_critical(), "{kind:?}");
        }
        // A lost standby is no incident of its own: an "on it" for it must not quiet a death.
        for kind in [Unreachable, Reachable, StandbyLost, StandbyBack] {
            assert!(!kind.is_trouble() && !kind.ends_incident() && !kind.is_critical(), "{kind:?}");
        }
    }
}
