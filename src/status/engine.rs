//! The engine as an object: it owns the job, its lock key and the config,
//! takes each read or failed read through a `handle_*` method and answers
//! with a [`Step`]: the status to show, the events, and when to look again.
//! No clock and no I/O: the Redis `TIME` of each read and the elapsed time
//! the shell reports are all the time it knows.
//!
//! One read goes through, in order: data loss ([`memory`](super::memory)),
//! the verdict on the read with what earlier reads tell
//! ([`recall`](super::recall), [`evaluate`](super::evaluate)), debounce
//! ([`debounce`](super::debounce)), reachability, then dating and edges
//! ([`edges`](super::edges)).

use crate::snapshot::Snapshot;

use super::debounce::Debounce;
use super::edges::Edges;
use super::evaluate::{Raw, evaluate, raw_verdict};
use super::memory::{LossWatch, Lost};
use super::recall::Recall;
use super::view::{self, Job};
use super::{Config, Event, EventKind, State, Status};

/// The status engine of one job.
#[derive(Debug, Clone)]
pub struct Engine {
    job: Job,
    cfg: Config,
    /// The status last shown; `None` before the first observation.
    shown: Option<Status>,
    edges: Edges,
    debounce: Debounce,
    recall: Recall,
    loss: LossWatch,
    /// Consecutive failed looks (failed reads, and reads not yet answered).
    failures: u32,
    /// Whether an `unreachable` went out that no `reachable` has answered.
    unreachable: bool,
    /// Last Redis time known, advanced by elapsed time while unreadable.
    clock_ms: u64,
    /// Whether the job ran without a standby at the last read that could
    /// tell; `None` before one.
    standby_lost: Option<bool>,
    /// The servers the job moved away from in a failover, and when, until
    /// they beat again: their silence was told with the move.
    moved_from: Vec<(String, u64)>,
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
    /// A confirmed `running` or `stopped`: its deadlines are the holder's
    /// heartbeat and lease, which the holder's beats vouch for (a worker
    /// records on the stream whatever ends them otherwise), or none.
    pub steady: bool,
}

impl Engine {
    /// An engine for `job`, whose lock is `lock_key`, that has seen nothing yet.
    pub fn new(job: &str, lock_key: &str, cfg: Config) -> Engine {
        Engine {
            job: Job { name: job.to_owned(), lock_key: lock_key.to_owned() },
            cfg,
            shown: None,
            edges: Edges::default(),
            debounce: Debounce::default(),
            recall: Recall::default(),
            loss: LossWatch::default(),
            failures: 0,
            unreachable: false,
            clock_ms: 0,
            standby_lost: None,
            moved_from: Vec::new(),
        }
    }

    /// The status last shown, if any.
    pub fn status(&self) -> Option<&Status> {
        self.shown.as_ref()
    }

    /// Consecutive looks that read nothing: failed reads, and reads that
    /// have not answered for a while. The shell backs off by it.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// The engine's tunables.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Takes in a successful read.
    pub fn handle_read(&mut self, snap: &Snapshot) -> Step {
        let now = snap.time_ms;
        self.failures = 0;
        self.clock_ms = now;
        if let Some(lost) = self.loss.judge(snap) {
            return self.lost(snap, lost);
        }
        let ctx = self.recall.before(snap);
        let raw = evaluate(snap, ctx, &self.cfg);
        self.recall.after(snap, &raw);
        let shown = self.shown.as_ref().map(|s| s.state);
        if !self.debounce.confirms(shown, raw.state, &self.cfg) {
            return self.unconfirmed(snap, &raw);
        }
        let mut events = Vec::new();
        if raw.state != State::Unknown {
            events.extend(self.reachable(now, "the job's data can be read again"));
        }
        let since = self.edges.since(self.shown.as_ref(), &raw, now);
        if raw.state == State::Unknown && shown.is_some() {
            events.extend(self.unreachable(now, &raw.reason));
        }
        events.extend(self.edges.advance(&self.job, &raw, since, shown.is_none(), now));
        let status = self.job.status(snap, &raw, since, &self.cfg);
        for e in events.iter_mut().filter(|e| e.event == EventKind::Failover) {
            self.moved(snap, &raw, e);
        }
        let quiet = !events.is_empty();
        events.extend(self.standby_edge(snap, &raw, &status, quiet));
        self.shown = Some(status.clone());
        let steady = matches!(raw.state, State::Running | State::Stopped);
        Step { status, events, next_check_ms: raw.deadline_ms, steady }
    }

    /// A failover says whether any server is left to take the job over
    /// from its new holder, the one it moved from not counted; that one's
    /// silence is then not told again on its own.
    fn moved(&mut self, snap: &Snapshot, raw: &Raw, e: &mut Event) {
        let from = e.from.as_ref().and_then(|h| h.node.clone());
        let others = super::view::standbys(snap, raw, &self.cfg).unwrap_or_default();
        e.no_standby = !others.iter().any(|(b, alive)| *alive && Some(&b.node) != from.as_ref());
        if e.no_standby {
            e.reason.push_str("; no other server is left to take it over");
        }
        if let Some(from) = from {
            self.moved_from.retain(|(n, _)| *n != from);
            self.moved_from.push((from, e.at_ms));
        }
    }

    /// The news of a standby lost or back, while a server holds the job.
    /// Said on a change while the job keeps its holder; not on a first
    /// look, nor beside another event (a failover says the move itself),
    /// nor for the silence of servers the job moved away from.
    fn standby_edge(&mut self, snap: &Snapshot, raw: &Raw, status: &Status, quiet: bool) -> Option<Event> {
        let others = super::view::standbys(snap, raw, &self.cfg)?;
        // A server the job moved from that beat since is a standby like any.
        self.moved_from
            .retain(|(n, at)| !others.iter().any(|(b, _)| &b.node == n && b.beat_ms.is_some_and(|t| t > *at)));
        let lost = status.no_standby.is_some();
        let before = self.standby_lost.replace(lost);
        if quiet || before.is_none_or(|b| b == lost) {
            return None;
        }
        if lost
            && others.iter().filter(|(_, alive)| !alive).all(|(b, _)| self.moved_from.iter().any(|(n, _)| *n == b.node))
        {
            return None;
        }
        let holder = raw.holder.as_ref().map(super::Holder::as_ref);
        let (kind, standby, reason) = match lost {
            true => (EventKind::StandbyLost, others.first().map(|(b, _)| b.node.clone()), status.no_standby.clone()?),
            false => {
                // None back (the silent one's heartbeat expired after a day): nothing to tell.
                let back = others.iter().find(|(_, alive)| *alive).map(|(b, _)| b.node.clone())?;
                let reason = format!("{back} is back: it can take the job over");
                (EventKind::StandbyBack, Some(back), reason)
            }
        };
        let mut event = self.job.event(kind, snap.time_ms, &reason);
        event.from = holder;
        event.to = standby.map(|node| super::HolderRef { field: String::new(), node: Some(node) });
        Some(event)
    }

    /// Takes in a failed read, or a read that has not answered for a while:
    /// why, and the monotonic ms since the previous observation (to
    /// estimate the Redis clock while it cannot be read).
    pub fn handle_failure(&mut self, reason: impl Into<String>, elapsed_ms: u64) -> Step {
        let reason = reason.into();
        self.failures = self.failures.saturating_add(1);
        self.clock_ms = self.clock_ms.saturating_add(elapsed_ms);
        let mut events = Vec::new();
        let confirmed = self.failures >= self.cfg.confirmations;
        let status = match self.shown.take() {
            // One failed or slow read is not yet a confirmation.
            Some(shown) if !confirmed => shown,
            Some(shown) if shown.state == State::Unknown && shown.checked_at_ms.is_none() => Status { reason, ..shown },
            previous => {
                let since_ms = match &previous {
                    Some(p) if p.state == State::Unknown => p.since_ms,
                    Some(_) => Some(self.clock_ms),
                    None => None,
                };
                if previous.is_some() {
                    events.extend(self.unreachable(self.clock_ms, &reason));
                }
                self.debounce.reset();
                self.job.blank(State::Unknown, reason, since_ms)
            }
        };
        self.shown = Some(status.clone());
        let next_check_ms = (!confirmed).then_some(self.cfg.confirm_delay_ms);
        Step { status, events, next_check_ms, steady: false }
    }

    /// The step while Redis has lost the job's data: `unknown`, one
    /// `data_lost` when first seen, until a write after the loss clears it.
    fn lost(&mut self, snap: &Snapshot, lost: Lost) -> Step {
        let now = snap.time_ms;
        let mut events: Vec<Event> = self.reachable(now, "Redis answers again").into_iter().collect();
        if lost.new {
            events.push(self.job.event(EventKind::DataLost, now, &lost.reason));
            // Whatever the engine knew of gaps and renewals went with the data.
            self.recall.forget();
            self.debounce.reset();
        }
        let since = Some(lost.since_ms);
        let raw = Raw { since_ms: since, ..raw_verdict(State::Unknown, lost.reason) };
        let status = self.job.status(snap, &raw, since, &self.cfg);
        self.shown = Some(status.clone());
        Step { status, events, next_check_ms: None, steady: false }
    }

    /// A verdict not yet confirmed: the facts as read now, the verdict shown
    /// so far, and a look again soon.
    fn unconfirmed(&self, snap: &Snapshot, raw: &Raw) -> Step {
        let delay = self.cfg.confirm_delay_ms;
        let next_check_ms = Some(raw.deadline_ms.map_or(delay, |d| d.min(delay)));
        let mut status = self.job.status(snap, raw, None, &self.cfg);
        if let Some(shown) = &self.shown {
            status.state = shown.state;
            status.reason = shown.reason.clone();
            status.holder = shown.holder.clone();
            status.since_ms = shown.since_ms;
            status.pending_until_ms = shown.pending_until_ms;
            if shown.state == State::Down {
                status.reason = view::down_for(&shown.reason, shown.since_ms, snap.time_ms);
            }
        }
        Step { status, events: Vec::new(), next_check_ms, steady: false }
    }

    /// `unreachable`, unless one already went out.
    fn unreachable(&mut self, at_ms: u64, reason: &str) -> Option<Event> {
        (!self.unreachable).then(|| {
            self.unreachable = true;
            self.job.event(EventKind::Unreachable, at_ms, reason)
        })
    }

    /// `reachable`, when an `unreachable` went out.
    fn reachable(&mut self, at_ms: u64, reason: &str) -> Option<Event> {
        self.unreachable.then(|| {
            self.unreachable = false;
            self.job.event(EventKind::Reachable, at_ms, reason)
        })
    }
}
