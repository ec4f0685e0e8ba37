//! A world the engine's tests script by hand: who holds the lock, who beats,
//! who enabled it, what the event stream remembers; and the helpers that
//! show it to an engine.

use super::*;
use crate::schema::{BeatState, kind};
use crate::snapshot::{Beat, Flag, Lock, LockKind, Snapshot, StreamEntry, StreamId};

pub(super) const JOB: &str = "outbound";
pub(super) const LOCK: &str = "{outbound}:lock";
/// The standby's name, in worlds that have one.
pub(super) const STANDBY: &str = "srv-s";

#[derive(Debug, Clone)]
pub(super) struct World {
    pub time_ms: u64,
    pub holder: Option<(&'static str, &'static str)>,
    /// The fence counter; `None` when the key does not exist.
    pub fence: Option<i64>,
    pub ttl_ms: u64,
    pub beating: bool,
    /// The holder's presence subscription: `Some(false)` once its process
    /// died (its beat stays behind, fresh for a while), `None` for a holder
    /// that holds none.
    pub present: Option<bool>,
    /// The holder's server beats on but names no lock field: its worker
    /// gave the holding up (it could not renew in time) while the lock lives on.
    pub disowned: bool,
    pub enabled: bool,
    /// Redis time the flag was last flipped.
    pub flag_at_ms: u64,
    /// Whether alice's flag and the users registry exist at all.
    pub flags_present: bool,
    /// The event stream, newest first.
    pub stream: Vec<StreamEntry>,
    /// A standby `srv-s`, idle: the Redis time of its last beat (`None`:
    /// no such server was ever seen).
    pub standby_beat_ms: Option<u64>,
    /// The server that let go last, which beats idle while `beating`, as a
    /// live worker does once it let go.
    pub let_go: Option<&'static str>,
}

impl World {
    pub fn running(node: &'static str, field: &'static str) -> World {
        let mut w = World {
            time_ms: 1_000_000,
            holder: Some((node, field)),
            fence: Some(1),
            ttl_ms: 30_000,
            beating: true,
            present: Some(true),
            disowned: false,
            enabled: true,
            flag_at_ms: 0,
            flags_present: true,
            stream: Vec::new(),
            standby_beat_ms: None,
            let_go: None,
        };
        w.record(kind::ACQUIRED);
        w
    }

    /// Nobody holds the lock; alice enabled it at `flag_at_ms`.
    pub fn free(flag_at_ms: u64) -> World {
        World { holder: None, flag_at_ms, ..World::running("srv-a", "uuid-a:1") }
    }

    /// Appends an entry to the stream, as a worker does.
    pub fn record(&mut self, kind: &str) {
        let seq = match self.stream.first() {
            Some(last) if last.id.ms >= self.time_ms => last.id.seq + 1,
            _ => 0,
        };
        let ms = self.stream.first().map_or(self.time_ms, |last| last.id.ms.max(self.time_ms));
        self.stream.insert(0, StreamEntry { id: StreamId { ms, seq }, kind: kind.to_owned() });
    }

    /// A new holding by `who` (a new fence and an `acquired` entry), or the
    /// holder letting go (a `released` entry).
    pub fn hand_to(&mut self, who: Option<(&'static str, &'static str)>) {
        self.let_go = if who.is_none() { self.holder.map(|(node, _)| node) } else { None };
        self.holder = who;
        self.ttl_ms = 30_000;
        if who.is_some() {
            self.fence = Some(self.fence.unwrap_or(0) + 1);
            self.record(kind::ACQUIRED);
        } else {
            self.record(kind::RELEASED);
        }
    }

    /// Redis forgets everything: restart without persistence, `FLUSHALL`.
    pub fn flush(&mut self) {
        self.holder = None;
        self.fence = None;
        self.stream.clear();
        self.flags_present = false;
        self.enabled = false;
    }

    pub fn wait(&mut self, ms: u64) {
        self.time_ms += ms;
        self.ttl_ms = self.ttl_ms.saturating_sub(ms).max(1);
    }

    pub fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot {
            time_ms: self.time_ms,
            fence: self.fence,
            recent_events: Some(self.stream.iter().take(8).cloned().collect()),
            ..Default::default()
        };
        if let Some((node, field)) = self.holder {
            snap.lock = Lock {
                kind: LockKind::Redisson,
                holders: vec![field.to_owned()],
                ttl_ms: Some(self.ttl_ms),
                ..Default::default()
            };
            if self.beating {
                let (lock_field, fence, state) = match self.disowned {
                    true => (String::new(), None, BeatState::Idle),
                    false => (field.to_owned(), self.fence, BeatState::Running),
                };
                snap.beats.push(Beat {
                    node: node.to_owned(),
                    lock_field: Some(lock_field),
                    fence,
                    beat_ms: Some(self.time_ms.saturating_sub(500)),
                    started_ms: Some(self.time_ms.saturating_sub(60_000)),
                    state: Some(state),
                    present: self.present,
                    ..Default::default()
                });
            }
        }
        if let Some(node) = self.let_go.filter(|_| self.holder.is_none() && self.beating) {
            snap.beats.push(Beat {
                node: node.to_owned(),
                beat_ms: Some(self.time_ms.saturating_sub(500)),
                state: Some(BeatState::Idle),
                present: self.present,
                ..Default::default()
            });
        }
        if let Some(at) = self.standby_beat_ms {
            snap.beats.push(Beat {
                node: STANDBY.to_owned(),
                beat_ms: Some(at),
                state: Some(BeatState::Idle),
                present: Some(true),
                ..Default::default()
            });
        }
        if self.flags_present {
            snap.flags.push(Flag {
                user: "alice".to_owned(),
                on: Some(self.enabled),
                at_ms: Some(self.flag_at_ms),
                host: None,
            });
        }
        snap
    }
}

/// What the shell observed, as scripts replay it.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // a few per scenario; boxing would only add noise
pub(super) enum Observation {
    Read(Snapshot),
    Failed { reason: String, elapsed_ms: u64 },
}

/// An engine for the test job with the default config.
pub(super) fn engine() -> Engine {
    Engine::new(JOB, LOCK, Config::default())
}

pub(super) fn feed(e: &mut Engine, obs: Observation) -> Step {
    match obs {
        Observation::Read(snap) => e.handle_read(&snap),
        Observation::Failed { reason, elapsed_ms } => e.handle_failure(reason, elapsed_ms),
    }
}

pub(super) fn read(e: &mut Engine, w: &World) -> Step {
    e.handle_read(&w.snapshot())
}

pub(super) fn fail(e: &mut Engine, elapsed_ms: u64) -> Step {
    e.handle_failure("refused", elapsed_ms)
}

pub(super) fn kinds(s: &Step) -> Vec<EventKind> {
    s.events.iter().map(|e| e.event).collect()
}
