//! Edges: the events a change of the shown state means, and since when a
//! state holds.
//!
//! Events are measured from the last *settled* state (not `pending`, not
//! `unknown`): waiting out a grace and losing sight of Redis are no news by
//! themselves, so a holder change through a short gap is one `failover`,
//! and a state seen again after an outage is no news at all. The holder is
//! remembered through such gaps, so the takeover names whom it followed.

use super::evaluate::{Awaited, Raw};
use super::view::Job;
use super::{Event, EventKind, Holder, State, Status};

/// The last settled state and the holder last shown.
#[derive(Debug, Clone, Default)]
pub(super) struct Edges {
    /// The last settled state shown and since when: events are edges from it.
    settled: Option<(State, Option<u64>)>,
    /// The holder as last shown, to tell failovers from restarts and recoveries.
    holder: Option<Holder>,
}

impl Edges {
    /// Since when the confirmed verdict `raw` holds: as long as the state
    /// shown or last settled, when it is the same with the same holder;
    /// else from what Redis remembers (on a first look, or for a state
    /// that began at a time Redis records), or from now.
    pub fn since(&self, shown: Option<&Status>, raw: &Raw, now: u64) -> Option<u64> {
        let state = raw.state;
        let moved = matches!((&self.holder, &raw.holder), (Some(a), Some(b)) if a.differs_from(b));
        match (shown, &self.settled) {
            (Some(shown), _) if shown.state == state && !moved => shown.since_ms,
            (_, Some((settled, since))) if *settled == state && !moved => *since,
            _ if shown.is_none() || matches!(state, State::Pending | State::Down | State::Stopped) => {
                raw.since_ms.or(Some(now))
            }
            _ => Some(now),
        }
    }

    /// Takes in the confirmed verdict `raw`, dated `since`; returns the event
    /// its edge from the last settled state means, if any. `first_look`: no
    /// state was shown before.
    pub fn advance(&mut self, job: &Job, raw: &Raw, since: Option<u64>, first_look: bool, now: u64) -> Option<Event> {
        let mut news = None;
        match raw.state {
            // Losing sight of Redis is the engine's news, not an edge.
            State::Unknown => {}
            // Waiting is no news: the edge comes when the wait ends.
            State::Pending => {
                if first_look {
                    // A first look knows what it waits for: a first start, or a takeover.
                    let before = match raw.gap.map(|g| g.awaited) {
                        Some(Awaited::Takeover) => State::Running,
                        _ => State::Stopped,
                    };
                    self.settled = Some((before, None));
                }
            }
            settled => {
                if let Some((from, _)) = self.settled
                    && let Some(kind) = edge(from, settled, self.holder.as_ref(), raw.holder.as_ref())
                {
                    news = Some(edge_event(job, kind, now, raw, self.holder.as_ref()));
                }
                self.settled = Some((settled, since));
            }
        }
        match raw.state {
            State::Running | State::Stale | State::Conflict if raw.holder.is_some() => self.holder = raw.holder.clone(),
            State::Down | State::Stopped => self.holder = None,
            // Pending and unknown keep it: a takeover after the gap names whom it followed.
            _ => {}
        }
        news
    }
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

/// The event of an edge; a failover or restart names the holders, a death
/// the server that ran the job last.
fn edge_event(job: &Job, kind: EventKind, now: u64, raw: &Raw, old: Option<&Holder>) -> Event {
    let mut e = job.event(kind, now, &raw.reason);
    if kind == EventKind::Died {
        // Who ran it last is what a supervisor checks first.
        e.from = old.map(Holder::as_ref);
    }
    if kind == EventKind::Stalled {
        e.from = raw.holder.as_ref().map(Holder::as_ref);
        (e.stall, e.ms) = raw.stall.map_or((None, None), |(stall, ms)| (Some(stall), ms));
    }
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
