//! Debounce and edges: turns each raw verdict into the state shown, the
//! events its change means, and the next moment worth another look.

use crate::snapshot::Snapshot;

use super::evaluate::{Context, Raw, evaluate};
use super::{Config, Event, EventKind, Holder, LockView, NodeView, State, Status};

/// What the shell observed.
#[derive(Debug, Clone)]
pub enum Observation {
    /// A successful read.
    Read(Snapshot),
    /// A failed read: why, and the monotonic ms since the previous
    /// observation (to estimate the Redis clock while it cannot be read).
    Failed { reason: String, elapsed_ms: u64 },
}

/// Everything the engine remembers between observations.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// The status last shown; `None` before the first observation.
    shown: Option<Status>,
    /// The known state before an `unknown` spell, to find the edge after it.
    before_unknown: Option<State>,
    /// The holder as last shown, to tell failovers from recoveries.
    holder: Option<Holder>,
    /// A state seen but not yet confirmed, and how many times in a row.
    candidate: Option<(State, u32)>,
    /// Consecutive failed reads.
    failures: u32,
    /// Last Redis time known, advanced by elapsed time while unreadable.
    clock_ms: u64,
    ctx: Context,
    /// Lock field, TTL and Redis time of the last read, to see renewals.
    last_lock: Option<(String, u64, u64)>,
}

impl Tracker {
    /// The status last shown, if any.
    pub fn status(&self) -> Option<&Status> {
        self.shown.as_ref()
    }
}

/// The engine's answer to one observation.
#[derive(Debug, Clone)]
#[must_use]
pub struct Step {
    pub status: Status,
    /// Events, in order; empty unless the shown state changed.
    pub events: Vec<Event>,
    /// Ms from this observation after which the state may change by time
    /// alone (a lease running out, a heartbeat ageing, a grace ending).
    pub next_check_ms: Option<u64>,
}

/// Feeds one observation to the engine.
pub fn step(tracker: &mut Tracker, job: &str, lock_key: &str, obs: Observation, cfg: &Config) -> Step {
    match obs {
        Observation::Read(snap) => read(tracker, job, lock_key, &snap, cfg),
        Observation::Failed { reason, elapsed_ms } => failed(tracker, job, lock_key, reason, elapsed_ms, cfg),
    }
}

fn failed(t: &mut Tracker, job: &str, lock_key: &str, reason: String, elapsed_ms: u64, cfg: &Config) -> Step {
    t.failures = t.failures.saturating_add(1);
    t.clock_ms = t.clock_ms.saturating_add(elapsed_ms);
    let mut events = Vec::new();
    let confirmed = t.failures >= cfg.confirmations;
    let status = match &t.shown {
        Some(shown) if !confirmed || shown.state == State::Unknown => {
            let mut s = shown.clone();
            if s.state == State::Unknown {
                s.reason = reason;
            }
            s
        }
        previous => {
            if let Some(prev) = previous {
                t.before_unknown = Some(prev.state);
                events.push(event(EventKind::Unreachable, job, t.clock_ms, &reason));
            }
            t.candidate = None;
            let lock = LockView {
                key: lock_key.to_owned(),
                kind: None,
                holders: Vec::new(),
                ttl_ms: None,
                fence: None,
                next_run_ms: None,
            };
            Status {
                job: job.to_owned(),
                state: State::Unknown,
                reason,
                holder: None,
                lock,
                enabled_users: Vec::new(),
                flags: Vec::new(),
                nodes: Vec::new(),
                checked_at_ms: None,
                since_ms: previous.as_ref().map(|_| t.clock_ms),
                problems: Vec::new(),
            }
        }
    };
    t.shown = Some(status.clone());
    let next_check_ms = (!confirmed).then_some(cfg.confirm_delay_ms);
    Step { status, events, next_check_ms }
}

fn read(t: &mut Tracker, job: &str, lock_key: &str, snap: &Snapshot, cfg: &Config) -> Step {
    let now = snap.time_ms;
    t.failures = 0;
    t.clock_ms = now;
    note_renewal(t, snap);
    let raw = evaluate(snap, t.ctx, cfg);
    remember_gap(t, snap, &raw);
    let mut next_check_ms = raw.deadline_ms;
    let mut events = Vec::new();

    let prev_state = t.shown.as_ref().map(|s| s.state);
    let known_before = match prev_state {
        Some(State::Unknown) => t.before_unknown,
        other => other,
    };
    let (state, holder, reason) = match (raw.state, known_before) {
        // Waiting out a grace: keep the last known state, say what we wait for.
        (None, Some(prev)) => (prev, t.holder.clone(), raw.reason.clone()),
        (None, None) => (State::Stopped, None, raw.reason.clone()),
        (Some(state), _) => (state, raw.holder.clone(), raw.reason.clone()),
    };

    let confirmed = match (prev_state, state) {
        (None, _) => true,
        (Some(prev), s) if prev == s => true,
        (Some(_), State::Stale | State::Conflict | State::Unknown) => {
            let seen = match t.candidate {
                Some((c, n)) if c == state => n + 1,
                _ => 1,
            };
            t.candidate = Some((state, seen));
            seen >= cfg.confirmations
        }
        _ => true,
    };

    if !confirmed {
        next_check_ms = Some(next_check_ms.map_or(cfg.confirm_delay_ms, |d| d.min(cfg.confirm_delay_ms)));
        let mut status = t.shown.clone().unwrap_or_else(|| {
            build(
                job,
                lock_key,
                snap,
                Verdict { state, reason: reason.clone(), holder: holder.clone(), since_ms: None },
                cfg.heartbeat_grace_ms,
            )
        });
        status.checked_at_ms = Some(now);
        return Step { status, events, next_check_ms };
    }
    t.candidate = None;

    let since = match (&t.shown, prev_state) {
        (Some(shown), Some(prev)) if prev == state && !changed_holder(t.holder.as_ref(), holder.as_ref()) => {
            shown.since_ms
        }
        // A first look dates the state from what Redis remembers: when the
        // holder took the lock, or when the last flag was flipped.
        (None, _) if state == State::Running => holder_start(snap, holder.as_ref()).or(Some(now)),
        (None, _) if state == State::Stopped => snap.flags.iter().filter_map(|f| f.at_ms).max().or(Some(now)),
        _ => Some(now),
    };

    if let Some(prev) = prev_state {
        let (from_state, came_back) = match prev {
            State::Unknown => (t.before_unknown.unwrap_or(State::Unknown), true),
            other => (other, false),
        };
        if came_back && state != State::Unknown {
            events.push(event(EventKind::Reachable, job, now, "the job's data can be read again"));
        }
        if prev != State::Unknown && state == State::Unknown {
            t.before_unknown = Some(prev);
        }
        if let Some(kind) = edge(from_state, state, t.holder.as_ref(), holder.as_ref()) {
            let mut e = event(kind, job, now, &reason);
            if kind == EventKind::Failover {
                e.from = t.holder.as_ref().map(Holder::as_ref);
                e.to = holder.as_ref().map(Holder::as_ref);
                e.reason = match (&e.from, &e.to) {
                    (Some(from), Some(to)) => format!("the job moved from {from} to {to}"),
                    _ => reason.clone(),
                };
            }
            events.push(e);
        }
    }
    if state != State::Unknown && holder.is_some() {
        t.holder = holder.clone();
    } else if matches!(state, State::Down | State::Stopped) {
        t.holder = None;
    }
    let status = build(job, lock_key, snap, Verdict { state, reason, holder, since_ms: since }, cfg.heartbeat_grace_ms);
    t.shown = Some(status.clone());
    Step { status, events, next_check_ms }
}

/// The event a change of the shown state (or of the holder) means.
fn edge(from: State, to: State, old: Option<&Holder>, new: Option<&Holder>) -> Option<EventKind> {
    use State::*;
    let moved = changed_holder(old, new);
    match (from, to) {
        (Running | Stale, Running) if moved => Some(EventKind::Failover),
        (a, b) if a == b => None,
        // Nothing known before: no edge to report.
        (Unknown, _) => None,
        (Stopped, Running) => Some(EventKind::Started),
        (_, Running) => Some(EventKind::Recovered),
        (_, Stale) => Some(EventKind::Stalled),
        (_, Down) => Some(EventKind::Died),
        (_, Stopped) => Some(EventKind::Stopped),
        (_, Conflict) => Some(EventKind::Conflict),
        (_, Unknown) => Some(EventKind::Unreachable),
    }
}

fn changed_holder(old: Option<&Holder>, new: Option<&Holder>) -> bool {
    matches!((old, new), (Some(a), Some(b)) if a.differs_from(b))
}

/// A renewal shows as a TTL longer than the last one minus the time passed.
fn note_renewal(t: &mut Tracker, snap: &Snapshot) {
    const TOLERANCE_MS: u64 = 300;
    let current = snap.lock.holders.first().cloned().zip(snap.lock.ttl_ms);
    match (&t.last_lock, &current) {
        (Some((field, ttl, at)), Some((now_field, now_ttl))) if field == now_field => {
            let expected = ttl.saturating_sub(snap.time_ms.saturating_sub(*at));
            if *now_ttl > expected + TOLERANCE_MS {
                t.ctx.renewed_at_ms = Some(snap.time_ms);
            }
        }
        _ => t.ctx.renewed_at_ms = None,
    }
    t.last_lock = current.map(|(field, ttl)| (field, ttl, snap.time_ms));
}

/// Keeps track of when the lock went free while enabled.
fn remember_gap(t: &mut Tracker, snap: &Snapshot, raw: &Raw) {
    if snap.lock.is_held() {
        t.ctx.free_since_ms = None;
        t.ctx.was_held = true;
    } else if raw.state.is_none() {
        t.ctx.free_since_ms.get_or_insert(snap.time_ms);
    } else {
        // Down or stopped: a later holder is a start or a recovery, not a failover.
        t.ctx.free_since_ms = None;
        t.ctx.was_held = false;
    }
}

/// When the holder's server says it took the lock, to date a first look.
fn holder_start(snap: &Snapshot, holder: Option<&Holder>) -> Option<u64> {
    let node = holder?.node.as_ref()?;
    snap.beats.iter().find(|b| &b.node == node)?.started_ms
}

fn event(kind: EventKind, job: &str, at_ms: u64, reason: &str) -> Event {
    Event { event: kind, job: job.to_owned(), at_ms, from: None, to: None, reason: reason.to_owned() }
}

/// What the engine decided to show, before it is dressed as a [`Status`].
struct Verdict {
    state: State,
    reason: String,
    holder: Option<Holder>,
    since_ms: Option<u64>,
}

fn build(job: &str, lock_key: &str, snap: &Snapshot, verdict: Verdict, grace_ms: u64) -> Status {
    let Verdict { state, reason, holder, since_ms } = verdict;
    let now = snap.time_ms;
    let lock = LockView {
        key: lock_key.to_owned(),
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
            state: b.state.clone(),
            host: b.host.clone(),
            heartbeat_age_ms: b.beat_ms.map(|t| now.saturating_sub(t)),
            fence: b.fence,
            fresh: b.beat_ms.is_some_and(|t| now.saturating_sub(t) <= grace_ms),
        })
        .collect();
    Status {
        job: job.to_owned(),
        state,
        reason,
        holder,
        lock,
        enabled_users: snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.clone()).collect(),
        flags: snap.flags.clone(),
        nodes,
        checked_at_ms: Some(now),
        since_ms,
        problems: snap.problems.clone(),
    }
}
