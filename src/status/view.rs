//! What the engine shows: a [`Status`] built from a read and its verdict,
//! a blank one when nothing could be read, and the events it emits.

use crate::snapshot::{Beat, Snapshot};

use super::evaluate::{Raw, beat_fresh, flags_lost};
use super::{Config, Event, EventKind, LockView, NodeView, State, Status};
use crate::duration::human_duration;

/// The job the engine watches, as every status and event names it.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub name: String,
    pub lock_key: String,
}

impl Job {
    /// An event about this job, with no holders named.
    pub fn event(&self, kind: EventKind, at_ms: u64, reason: &str) -> Event {
        Event {
            event: kind,
            job: self.name.clone(),
            at_ms,
            from: None,
            to: None,
            reason: reason.to_owned(),
            stall: None,
            ms: None,
            no_standby: false,
        }
    }

    /// A status with nothing read: every fact blank.
    pub fn blank(&self, state: State, reason: String, since_ms: Option<u64>) -> Status {
        let lock = LockView {
            key: self.lock_key.clone(),
            kind: None,
            holders: Vec::new(),
            ttl_ms: None,
            fence: None,
            next_run_ms: None,
        };
        Status {
            job: self.name.clone(),
            state,
            reason,
            holder: None,
            lock,
            enabled_users: Vec::new(),
            flags: Vec::new(),
            acks: Vec::new(),
            nodes: Vec::new(),
            checked_at_ms: None,
            since_ms,
            pending_until_ms: None,
            problems: Vec::new(),
            no_standby: None,
            flags_lost: Vec::new(),
            eviction: None,
            failure: None,
        }
    }

    /// The status of a read, with the verdict `raw` dated `since_ms`.
    pub fn status(&self, snap: &Snapshot, raw: &Raw, since_ms: Option<u64>, cfg: &Config) -> Status {
        let now = snap.time_ms;
        let lock = LockView {
            key: self.lock_key.clone(),
            kind: Some(snap.lock.kind),
            holders: snap.lock.holders.clone(),
            ttl_ms: snap.lock.ttl_ms,
            fence: snap.fence,
            next_run_ms: snap.lock.next_run_ms,
        };
        let nodes = snap
            .beats
            .iter()
            .map(|b| NodeView {
                node: b.node.clone(),
                state: b.state.as_ref().map(|s| s.as_str().to_owned()),
                host: b.host.clone(),
                heartbeat_age_ms: b.beat_ms.map(|t| now.saturating_sub(t)),
                fence: b.fence,
                fresh: beat_fresh(b, now, cfg),
            })
            .collect();
        let pending_until_ms =
            (raw.state == State::Pending).then(|| raw.starts_at_ms.or(raw.gap.map(|g| g.until_ms(cfg)))).flatten();
        Status {
            job: self.name.clone(),
            state: raw.state,
            reason: match (raw.state, raw.gap) {
                (State::Down, Some(_)) => down_for(&raw.reason, since_ms, now),
                _ => raw.reason.clone(),
            },
            holder: raw.holder.clone(),
            lock,
            enabled_users: snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.clone()).collect(),
            flags: snap.flags.clone(),
            acks: snap.acks.clone(),
            nodes,
            checked_at_ms: Some(now),
            since_ms,
            pending_until_ms,
            problems: snap.problems.clone(),
            no_standby: no_standby(snap, raw, cfg),
            flags_lost: flags_lost(snap),
            eviction: None,
            failure: None,
        }
    }
}

/// A job down for lack of a holder says for how long: the same span as
/// `since` at `now` (not when first seen just now: no "0 ms"). A reason
/// that said it at an earlier look says it anew.
pub(super) fn down_for(reason: &str, since_ms: Option<u64>, now: u64) -> String {
    let base = match reason.rfind(" (for ") {
        Some(at) if reason.ends_with(')') => &reason[..at],
        _ => reason,
    };
    match since_ms.map(|since| now.saturating_sub(since)) {
        Some(down) if down >= 1_000 => format!("{base} (for {})", human_duration(down)),
        _ => base.to_owned(),
    }
}

/// The servers other than the holder that were seen in the last day
/// (heartbeats live a day): each alive or silent. `None` unless a server
/// holds the job.
pub(super) fn standbys<'a>(snap: &'a Snapshot, raw: &Raw, cfg: &Config) -> Option<Vec<(&'a Beat, bool)>> {
    if !matches!(raw.state, State::Running | State::Stale) {
        return None;
    }
    let holder = raw.holder.as_ref()?.node.as_deref()?;
    // By its heartbeat alone: a presence missing on a primary that Sentinel
    // just promoted is no sign of a dead standby (it subscribes again), and
    // a standby's death may wait for the grace, unlike the holder's.
    Some(snap.beats.iter().filter(|b| b.node != holder).map(|b| (b, beat_fresh(b, snap.time_ms, cfg))).collect())
}

/// Why nobody could take the job over, when servers were seen that could.
fn no_standby(snap: &Snapshot, raw: &Raw, cfg: &Config) -> Option<String> {
    let others = standbys(snap, raw, cfg)?;
    if others.is_empty() || others.iter().any(|(_, alive)| *alive) {
        return None;
    }
    let holder = raw.holder.as_ref()?.node.as_deref()?;
    let silent: Vec<String> = others
        .iter()
        .map(|(b, _)| match b.beat_ms {
            Some(t) => format!("{} (heartbeat {} old)", b.node, human_duration(snap.time_ms.saturating_sub(t))),
            None => b.node.clone(),
        })
        .collect();
    Some(format!("no standby: {} silent; if {holder} stops, no server takes the job over", silent.join(", ")))
}
