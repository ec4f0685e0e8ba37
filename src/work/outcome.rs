//! What one attempt on the lock answered: an acquisition ([`Acquire`], with
//! the [`Wait`] before the job may start and the holding [`Before`]), a
//! renewal ([`Renew`]).

use std::time::Duration;

use crate::cause::WaitCause;

/// Outcome of one acquisition attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    /// The lock is ours, with this fencing token; `wait` says how long the
    /// job must not start yet, `before` what is known of the holding before,
    /// `at_ms` when it was taken (Redis time), `counter` the fence counter
    /// it found (`None`: missing; the one this holding took over when the
    /// lock was ours already).
    Acquired { fence: i64, wait: Option<Wait>, before: Before, at_ms: u64, counter: Option<i64> },
    /// Taken on the primary, but no replica confirmed it in time (or none
    /// is online on a primary where this worker saw one): not a holding.
    /// It expires unless a later attempt gets the confirmation, which then
    /// finds it ours already: `before` and `at_ms` are this attempt's.
    Unconfirmed { fence: i64, before: Before, at_ms: u64, counter: Option<i64> },
    /// Somebody else holds it; it expires in this long unless renewed
    /// (`None`: no expiry set); `seen` what the attempt saw of it.
    Held { ttl: Option<Duration>, seen: HeldSeen },
}

/// What a refused acquisition saw, at one Redis time: the facts that tell
/// a foreign holder (a Redisson service) from a lockwatch holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeldSeen {
    /// Redis time (ms) of the attempt.
    pub at_ms: u64,
    /// The fence counter (`None`: missing). Every lockwatch holding takes
    /// a new fence, so an unchanged counter says none began since.
    pub counter: Option<i64>,
    /// Whether the handover record names the holder: a lockwatch holding.
    pub recorded: bool,
}

/// Why and how long a new holder waits before it starts the job: an earlier
/// holder may still run the job in data Redis no longer has, until its next
/// look finds the lock gone or, at the latest, its lease runs out. Every
/// worker of a job must use the same lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// How long, from the acquisition.
    pub left: Duration,
    /// Why, as the event stream records it.
    pub why: WaitCause,
}

impl Wait {
    /// Why the job waits, for logs.
    pub fn reason(&self) -> &'static str {
        match self.why {
            WaitCause::CounterMissing => "the fence counter is missing: Redis is new or lost its data",
            WaitCause::CounterRestarted => "the fence counter restarted less than a lease ago",
            WaitCause::RedisRestarted => "Redis restarted less than a lease ago, maybe from an older snapshot",
            WaitCause::EarlierWait => "an earlier holder's wait for the one before it is not over",
        }
    }
}

/// The holding before a fresh acquisition, as the handover record
/// (`Keys::handover`) named it when the lock was taken.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Before {
    /// None, or it stopped its job (released, or said so after losing the lock);
    /// also when the lock was already ours.
    #[default]
    Stopped,
    /// Nothing says (the record is gone: evicted, or never written by an
    /// older lockwatch): it may still run its job.
    Unknown,
    /// This holding, not known to have stopped its job: its node, fence,
    /// worker process (empty when an older lockwatch recorded it) and
    /// lease (when recorded).
    Running { node: String, fence: i64, instance: String, lease_ms: Option<u64> },
}

/// Outcome of one renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renew {
    /// The lease is extended (and confirmed by a replica, if there is one).
    Renewed,
    /// The lock is not ours any more.
    NotOurs,
    /// Extended on the primary, but no replica confirmed it in time, or
    /// none is online on a primary where this holding saw one.
    Unconfirmed,
}

/// Whether a lock field is a lockwatch holding's (`work::lock`'s fresh fields carry the mark).
pub fn is_lockwatch_field(field: &str) -> bool {
    let id = field.split(':').next().unwrap_or_default();
    id.len() == 36 && id.as_bytes().get(14) == Some(&b'8') && uuid::Uuid::parse_str(id).is_ok()
}
