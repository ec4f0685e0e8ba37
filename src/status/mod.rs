//! The status engine: an [`Engine`] per job takes each [`Snapshot`](crate::snapshot::Snapshot) (or a
//! failed read) and answers with the job's state, the events that state
//! change means, and when to look again.
//!
//! Pure and deterministic: no I/O, no clock. Every age is measured against the
//! snapshot's Redis `TIME`, so a desktop with a wrong clock sees the same
//! truth as the server. The watcher is the shell that reads, feeds and waits.
//!
//! # Layout
//!
//! - `engine`: the [`Engine`] object, its `handle_*` inputs and its [`Step`].
//! - `evaluate`: one snapshot judged on its own: the raw verdict and its deadline.
//! - `recall`: what a verdict needs from earlier reads (gaps, renewals).
//! - `debounce`: unhealthy verdicts wait for their confirmations.
//! - `edges`: events from the last settled state, and since when a state holds.
//! - `memory`: noticing Redis forgetting the job's data.
//! - `view`: the [`Status`] and [`Event`]s shown.
//! - `rules`: what a status and an event mean to a supervisor (her own flag
//!   and "on it", the last one on, silent standbys, trouble, criticality),
//!   for the tray and the dashboard alike.

mod debounce;
mod edges;
mod engine;
mod evaluate;
mod memory;
#[cfg(test)]
mod props;
mod recall;
mod rules;
#[cfg(test)]
mod scenarios;
mod view;
#[cfg(test)]
mod world;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::snapshot::{Ack, Flag, LockKind};

pub use engine::{Engine, Step};
pub use evaluate::clock_utc;

/// What a supervisor needs to know about the job, in one word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Lock held, and the holder's heartbeat is fresh and names that lock field.
    Running,
    /// Lock held, but the holder's heartbeat is missing or old: hung or dying.
    Stale,
    /// No lock although somebody has the job enabled, past the start grace
    /// or the failover window.
    Down,
    /// No lock yet, but a server is expected to take it within the start
    /// grace (just enabled) or the failover window (the holder just went).
    Pending,
    /// No lock and nobody has the job enabled: stopped on purpose.
    Stopped,
    /// Two servers claim the job, or the holder names another fence token.
    Conflict,
    /// Redis unreachable, access refused, the data unreadable, or lost.
    Unknown,
}

impl State {
    /// Every state, mildest first.
    pub const ALL: [State; 7] =
        [State::Running, State::Stopped, State::Pending, State::Stale, State::Unknown, State::Down, State::Conflict];

    /// The state's name as the CLI and JSON print it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Running => "running",
            State::Stale => "stale",
            State::Down => "down",
            State::Pending => "pending",
            State::Stopped => "stopped",
            State::Conflict => "conflict",
            State::Unknown => "unknown",
        }
    }

    /// How bad it is, for showing the worst of several jobs.
    pub fn severity(self) -> u8 {
        match self {
            State::Running => 0,
            State::Stopped => 1,
            State::Pending => 2,
            State::Stale => 3,
            State::Unknown => 4,
            State::Down => 5,
            State::Conflict => 6,
        }
    }

    /// Exit code of `lockwatch status`, Nagios style.
    pub fn exit_code(self) -> u8 {
        match self {
            State::Running | State::Stopped => 0,
            State::Stale | State::Pending => 1,
            State::Down | State::Conflict => 2,
            State::Unknown => 3,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tunables of the engine; times in milliseconds of Redis time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Whether workers write heartbeats. Off: a held lock counts as running
    /// (for Redisson services that write none), and `stale` cannot occur.
    pub heartbeats: bool,
    /// A heartbeat older than this is stale.
    pub heartbeat_grace_ms: u64,
    /// A holder change through a gap shorter than this is one failover.
    pub failover_window_ms: u64,
    /// After a user enables the job, how long a server may take to start it.
    pub start_grace_ms: u64,
    /// Consecutive observations an unhealthy state needs before it is shown.
    pub confirmations: u32,
    /// How soon to look again while a new state awaits confirmation.
    pub confirm_delay_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            heartbeats: true,
            heartbeat_grace_ms: 10_000,
            failover_window_ms: 5_000,
            start_grace_ms: 10_000,
            confirmations: 2,
            confirm_delay_ms: 200,
        }
    }
}

/// Who holds the lock, as far as the engine can tell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    /// The lock's hash field (Redisson `<uuid>:<thread>`) or string token.
    pub field: String,
    /// The server whose heartbeat names that field, when one does.
    pub node: Option<String>,
    /// Age of that server's heartbeat, by Redis time.
    pub heartbeat_age_ms: Option<u64>,
    /// Fence token of this holding, from the heartbeat or the counter.
    #[serde(skip)]
    pub fence: Option<i64>,
}

impl Holder {
    /// The part of a holder an event names.
    pub fn as_ref(&self) -> HolderRef {
        HolderRef { field: self.field.clone(), node: self.node.clone() }
    }

    /// True when `other` is a different holding of the lock: another field,
    /// or the same field with a new fence token.
    pub fn differs_from(&self, other: &Holder) -> bool {
        self.field != other.field || matches!((self.fence, other.fence), (Some(a), Some(b)) if a != b)
    }

    /// True when `other` holds the lock on the same server: the same node
    /// name, or, where no heartbeat names either, the same Redisson client
    /// and thread (the lock field).
    pub fn same_server(&self, other: &Holder) -> bool {
        match (&self.node, &other.node) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.field == other.field,
            _ => false,
        }
    }
}

/// The lock as shown to users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LockView {
    pub key: String,
    /// `None` when the lock could not be read.
    pub kind: Option<LockKind>,
    pub holders: Vec<String>,
    pub ttl_ms: Option<u64>,
    pub fence: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run_ms: Option<i64>,
}

/// One worker as shown to users.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodeView {
    pub node: String,
    pub state: Option<String>,
    pub host: Option<String>,
    pub heartbeat_age_ms: Option<u64>,
    pub fence: Option<i64>,
    /// Whether the heartbeat is within the grace: a silent node's `state`
    /// is only what it last said.
    pub fresh: bool,
}

/// The job's status: the `status --json` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    pub job: String,
    pub state: State,
    /// One sentence saying why.
    pub reason: String,
    pub holder: Option<Holder>,
    pub lock: LockView,
    /// Users whose flag is on.
    pub enabled_users: Vec<String>,
    /// Every registered user's flag, on or off.
    pub flags: Vec<Flag>,
    /// Who is on it ("I'm on it"), by Redis time still in force.
    pub acks: Vec<Ack>,
    pub nodes: Vec<NodeView>,
    /// Redis time of the read this status comes from; `None` when Redis
    /// could not be read, and then `lock`, `flags` and `nodes` are blank and
    /// say nothing.
    pub checked_at_ms: Option<u64>,
    /// Redis time since when the job has been in this state, as far as seen
    /// or, on a first look, as far as Redis remembers.
    pub since_ms: Option<u64>,
    /// For `pending`: the Redis time until which a server is expected to
    /// take the job.
    pub pending_until_ms: Option<u64>,
    /// Data found that could not be read.
    pub problems: Vec<String>,
    /// While a server runs the job: why no other server could take it over,
    /// when one that was seen in the last day has gone silent (`None` with
    /// a standby, or for a job only one server ever ran).
    pub no_standby: Option<String>,
    /// The users whose flag Redis lost while it was on (evicted, deleted;
    /// never switched off), as a worker's fresh heartbeat says and the read
    /// confirms: each counts as on until written again, so a job may run
    /// with nobody shown keeping it on.
    pub flags_lost: Vec<String>,
    /// Whether Redis may evict the job's keys, in one sentence; asked by
    /// `lockwatch status` alone (`None` from the engine).
    pub eviction: Option<String>,
    /// While Redis cannot be read: the kind of failure, when it is known
    /// (a refused login is the user's to mend, not Redis's). Set by the
    /// watcher; in the JSON, `reason` says it in words.
    #[serde(skip)]
    pub failure: Option<crate::error::RedisFailure>,
}

/// What a lost flag means, in one sentence naming whose.
pub fn flags_lost_sentence(users: &[String]) -> String {
    format!(
        "Redis lost the flag of {} while it was on (evicted or deleted; nobody switched it off): it counts as on until it is switched on or off again",
        users.join(", ")
    )
}

impl Status {
    /// Exit code of `lockwatch status`, Nagios style: the state's, and a
    /// warning (1) for a job that runs with no standby left, on a flag
    /// Redis lost, or with data that cannot be read (a flag neither on nor off).
    pub fn exit_code(&self) -> u8 {
        match self.state {
            State::Running
                if self.no_standby.is_some()
                    || !self.flags_lost.is_empty()
                    || self.flags.iter().any(|f| f.on.is_none()) =>
            {
                1
            }
            state => state.exit_code(),
        }
    }
}

/// An event's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Started,
    Stopped,
    /// The same server took the job again (a new holding on the server that
    /// had it).
    Restarted,
    /// Redis lost the job's keys (restart without persistence, flush,
    /// failover to an empty replica).
    DataLost,
    Died,
    Stalled,
    Recovered,
    Failover,
    Conflict,
    Unreachable,
    Reachable,
    /// The job runs, but no other server could take it over now: the
    /// others known have gone silent (`to` names one).
    StandbyLost,
    /// A server that could take the job over is back (`to` names it).
    StandbyBack,
}

impl EventKind {
    /// Every event, in the order the settings list them.
    pub const ALL: [EventKind; 13] = [
        EventKind::Died,
        EventKind::DataLost,
        EventKind::Failover,
        EventKind::Restarted,
        EventKind::Conflict,
        EventKind::Stalled,
        EventKind::Recovered,
        EventKind::Started,
        EventKind::Stopped,
        EventKind::Unreachable,
        EventKind::Reachable,
        EventKind::StandbyLost,
        EventKind::StandbyBack,
    ];

    /// The event's name as the CLI prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Started => "started",
            EventKind::Stopped => "stopped",
            EventKind::Restarted => "restarted",
            EventKind::DataLost => "data_lost",
            EventKind::Died => "died",
            EventKind::Stalled => "stalled",
            EventKind::Recovered => "recovered",
            EventKind::Failover => "failover",
            EventKind::Conflict => "conflict",
            EventKind::Unreachable => "unreachable",
            EventKind::Reachable => "reachable",
            EventKind::StandbyLost => "standby_lost",
            EventKind::StandbyBack => "standby_back",
        }
    }
}

/// A holder as events name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HolderRef {
    pub field: String,
    pub node: Option<String>,
}

impl fmt::Display for HolderRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some(node) => f.write_str(node),
            None => write!(f, "lock field {}", self.field),
        }
    }
}

/// Something that happened to the job: the `watch --json` lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    pub event: EventKind,
    pub job: String,
    /// Redis time it was noticed (estimated from the last Redis time when
    /// Redis could not be read).
    pub at_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<HolderRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<HolderRef>,
    /// One sentence saying what happened.
    pub reason: String,
    /// For `stalled`: why, as a token every language can word (`from`
    /// names the server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall: Option<Stall>,
    /// For a `hung` stall, the heartbeat's age; for a `dying` one, the ms
    /// until the lock expires (none: it never does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// For a `failover`: no server is left to take the job over from the
    /// new holder (the one it moved from is not counted). Said here, once,
    /// and not again as a `standby_lost` when that server falls silent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub no_standby: bool,
}

/// Why a held job is stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stall {
    /// Its server is silent, yet the lock is still being renewed: the job may hang.
    Hung,
    /// The lock is no longer renewed, or the server's connection to Redis
    /// closed (its process died or lost its link): it goes when the lock expires.
    Dying,
}
