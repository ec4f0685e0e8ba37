//! Debounce and edges: turns each raw verdict into the state shown, the
//! events its change means, and the next moment worth another look.
//!
//! Events are measured from the last *settled* state (not `pending`, not
//! `unknown`): waiting out a grace and losing sight of Redis are no news by
//! themselves, so a holder change through a short gap is one `failover`,
//! and a state seen again after an outage is no news at all.

use crate::snapshot::Snapshot;

use super::evaluate::{Awaited, Context, Raw, evaluate, raw_verdict};
use super::memory::{Loss, Memory};
use super::{Config, Event, EventKind, Holder, LockView, NodeView, State, Status};

/// What the shell observed.
#[derive(Debug, Clone)]
pub enum Observation {
    /// A successful read.
    Read(Snapshot),
    /// A failed read, or a read that has not answered for a while: why, and
    /// the monotonic ms since the previous observation (to estimate the
    /// Redis clock while it cannot be read).
    Failed { reason: String, elapsed_ms: u64 },
}

/// Everything the engine remembers between observations.
#[derive(Debug, Clone, Default)]
pub struct Tracker {
    /// The status last shown; `None` before the first observation.
    shown: Option<Status>,
    /// The last settled state shown and since when: events are edges from it.
    settled: Option<(State, Option<u64>)>,
    /// The holder as last shown, to tell failovers from restarts and recoveries.
    holder: Option<Holder>,
    /// A state seen but not yet confirmed, and how many times in a row.
    candidate: Option<(State, u32)>,
    /// Consecutive failed reads.
    failures: u32,
    /// Whether an `unreachable` went out that no `reachable` has answered.
    unreachable: bool,
    /// Last Redis time known, advanced by elapsed time while unreadable.
    clock_ms: u64,
    ctx: Context,
    /// Lock field, TTL and Redis time of the last read, to see renewals.
    last_lock: Option<(String, u64, u64)>,
    /// What Redis has been seen to remember, to notice it forgetting.
    memory: Memory,
    /// Redis lost the job's data, and nothing has been written since; and
    /// the Redis time the loss was noticed.
    loss: Option<(Loss, u64)>,
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
        // One failed or slow read is not yet a confirmation.
        Some(shown) if !confirmed => shown.clone(),
        Some(shown) if shown.state == State::Unknown && shown.checked_at_ms.is_none() => {
            Status { reason, ..shown.clone() }
        }
        previous => {
            if previous.is_some() && !t.unreachable {
                events.push(event(EventKind::Unreachable, job, t.clock_ms, &reason));
                t.unreachable = true;
            }
            t.candidate = None;
            let since_ms = match previous {
                Some(p) if p.state == State::Unknown => p.since_ms,
                Some(_) => Some(t.clock_ms),
                None => None,
            };
            blank(job, lock_key, State::Unknown, reason, since_ms)
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
    if let Some(step) = lost(t, job, lock_key, snap, cfg) {
        return step;
    }
    t.memory.learn(snap);
    note_renewal(t, snap);
    let raw = evaluate(snap, t.ctx, cfg);
    remember_gap(t, snap, &raw);
    let mut next_check_ms = raw.deadline_ms;
    let mut events = Vec::new();
    let state = raw.state;
    let prev = t.shown.as_ref().map(|s| s.state);

    let confirmed = match prev {
        None | Some(State::Pending) => true,
        Some(p) if p == state => true,
        Some(_) if matches!(state, State::Stale | State::Conflict | State::Unknown) => {
            let seen = match t.candidate {
                Some((c, n)) if c == state => n + 1,
                _ => 1,
            };
            t.candidate = Some((state, seen));
            seen >= cfg.confirmations
        }
        Some(_) => true,
    };
    if !confirmed {
        next_check_ms = Some(next_check_ms.map_or(cfg.confirm_delay_ms, |d| d.min(cfg.confirm_delay_ms)));
        // The facts are as read now; the verdict stays until confirmed.
        let mut status = build(job, lock_key, snap, &raw, None, cfg);
        if let Some(shown) = &t.shown {
            status.state = shown.state;
            status.reason = shown.reason.clone();
            status.holder = shown.holder.clone();
            status.since_ms = shown.since_ms;
            status.pending_until_ms = shown.pending_until_ms;
        }
        return Step { status, events, next_check_ms };
    }
    t.candidate = None;

    if t.unreachable && state != State::Unknown {
        events.push(event(EventKind::Reachable, job, now, "the job's data can be read again"));
        t.unreachable = false;
    }
    let moved = changed_holder(t.holder.as_ref(), raw.holder.as_ref());
    let since = match (&t.shown, &t.settled) {
        (Some(shown), _) if shown.state == state && !moved => shown.since_ms,
        (_, Some((settled, since))) if *settled == state && !moved => *since,
        _ if prev.is_none() || matches!(state, State::Pending | State::Down | State::Stopped) => {
            raw.since_ms.or(Some(now))
        }
        _ => Some(now),
    };

    match state {
        State::Unknown => {
            if prev.is_some() && !t.unreachable {
                events.push(event(EventKind::Unreachable, job, now, &raw.reason));
                t.unreachable = true;
            }
        }
        // Waiting is no news: the edge comes when the wait ends.
        State::Pending => {
            if prev.is_none() {
                // A first look knows what it waits for: a first start, or a takeover.
                let before = match raw.gap.map(|g| g.awaited) {
                    Some(Awaited::Takeover) => State::Running,
                    _ => State::Stopped,
                };
                t.settled = Some((before, None));
            }
        }
        settled => {
            if let Some((from, _)) = t.settled
                && let Some(kind) = edge(from, settled, t.holder.as_ref(), raw.holder.as_ref())
            {
                events.push(edge_event(kind, job, now, &raw, t.holder.as_ref()));
            }
            t.settled = Some((settled, since));
        }
    }
    match state {
        State::Running | State::Stale | State::Conflict if raw.holder.is_some() => t.holder = raw.holder.clone(),
        State::Down | State::Stopped => t.holder = None,
        // Pending and unknown keep it: a takeover after the gap names whom it followed.
        _ => {}
    }
    let status = build(job, lock_key, snap, &raw, since, cfg);
    t.shown = Some(status.clone());
    Step { status, events, next_check_ms }
}

/// The step while Redis has lost the job's data, if it has: `unknown`, one
/// `data_lost` when first seen, until a write after the loss clears it.
fn lost(t: &mut Tracker, job: &str, lock_key: &str, snap: &Snapshot, cfg: &Config) -> Option<Step> {
    let now = snap.time_ms;
    let mut events = Vec::new();
    match &t.loss {
        Some((loss, _)) if loss.cleared_by(snap) => {
            // Start afresh: what Redis holds now is the job's truth again.
            t.loss = None;
            t.memory = Memory::default();
            return None;
        }
        Some(_) => {}
        None => {
            let forgotten = t.memory.forgotten(snap);
            if forgotten.is_empty() {
                return None;
            }
            let loss = t.memory.loss(forgotten);
            events.push(event(EventKind::DataLost, job, now, &loss.reason()));
            t.loss = Some((loss, now));
            // Whatever the tracker knew of gaps and renewals went with the data.
            t.ctx = Context::default();
            t.last_lock = None;
            t.candidate = None;
        }
    }
    let (reason, since) = t.loss.as_ref().map(|(loss, at)| (loss.reason(), Some(*at))).unwrap_or_default();
    if t.unreachable {
        events.insert(0, event(EventKind::Reachable, job, now, "Redis answers again"));
        t.unreachable = false;
    }
    let raw = Raw { since_ms: since, ..raw_verdict(State::Unknown, reason) };
    let status = build(job, lock_key, snap, &raw, since, cfg);
    t.shown = Some(status.clone());
    Some(Step { status, events, next_check_ms: None })
}

/// The event a change of the settled state (or of the holder) means.
fn edge(from: State, to: State, old: Option<&Holder>, new: Option<&Holder>) -> Option<EventKind> {
    use State::*;
    match (from, to, old, new) {
        (Running | Stale, Running, Some(a), Some(b)) if a.differs_from(b) => {
            Some(if a.same_server(b) { EventKind::Restarted } else { EventKind::Failover })
        }
        (a, b, ..) if a == b => None,
        (Stopped, Running, ..) => Some(EventKind::Started),
        (_, Running, ..) => Some(EventKind::Recovered),
        (_, Stale, ..) => Some(EventKind::Stalled),
        (_, Down, ..) => Some(EventKind::Died),
        (_, Stopped, ..) => Some(EventKind::Stopped),
        (_, Conflict, ..) => Some(EventKind::Conflict),
        (_, Pending | Unknown, ..) => None,
    }
}

fn edge_event(kind: EventKind, job: &str, now: u64, raw: &Raw, old: Option<&Holder>) -> Event {
    let mut e = event(kind, job, now, &raw.reason);
    if matches!(kind, EventKind::Failover | EventKind::Restarted) {
        e.from = old.map(Holder::as_ref);
        e.to = raw.holder.as_ref().map(Holder::as_ref);
        e.reason = match (kind, &e.from, &e.to) {
            (EventKind::Restarted, _, Some(to)) => format!("restarted on {to}"),
            (_, Some(from), Some(to)) => format!("the job moved from {from} to {to}"),
            _ => raw.reason.clone(),
        };
    }
    e
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

/// Keeps track of the gap a free, enabled lock is in.
fn remember_gap(t: &mut Tracker, snap: &Snapshot, raw: &Raw) {
    if snap.lock.is_held() {
        t.ctx.gap = None;
        t.ctx.was_held = true;
        return;
    }
    match raw.state {
        State::Pending | State::Down => t.ctx.gap = raw.gap,
        State::Stopped => {
            // A later holder is a start, not a takeover.
            t.ctx.gap = None;
            t.ctx.was_held = false;
        }
        _ => {}
    }
}

fn event(kind: EventKind, job: &str, at_ms: u64, reason: &str) -> Event {
    Event { event: kind, job: job.to_owned(), at_ms, from: None, to: None, reason: reason.to_owned() }
}

/// A status with nothing read: every fact blank.
fn blank(job: &str, lock_key: &str, state: State, reason: String, since_ms: Option<u64>) -> Status {
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
        state,
        reason,
        holder: None,
        lock,
        enabled_users: Vec::new(),
        flags: Vec::new(),
        nodes: Vec::new(),
        checked_at_ms: None,
        since_ms,
        pending_until_ms: None,
        problems: Vec::new(),
    }
}

fn build(job: &str, lock_key: &str, snap: &Snapshot, raw: &Raw, since_ms: Option<u64>, cfg: &Config) -> Status {
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
            fresh: b.beat_ms.is_some_and(|t| now.saturating_sub(t) <= cfg.heartbeat_grace_ms),
        })
        .collect();
    let pending_until_ms =
        (raw.state == State::Pending).then(|| raw.starts_at_ms.or(raw.gap.map(|g| g.until_ms(cfg)))).flatten();
    Status {
        job: job.to_owned(),
        state: raw.state,
        reason: raw.reason.clone(),
        holder: raw.holder.clone(),
        lock,
        enabled_users: snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.clone()).collect(),
        flags: snap.flags.clone(),
        nodes,
        checked_at_ms: Some(now),
        since_ms,
        pending_until_ms,
        problems: snap.problems.clone(),
    }
}
