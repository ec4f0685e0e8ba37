//! Why a holding ended ([`Cause`]) and why a new holder waited
//! ([`WaitCause`]), as tokens for the event stream and sentences for
//! people. A leaf: the engines decide with these, the history writes and
//! reads them, and nothing here reaches further.

use serde::Serialize;

/// Why a holding ended: the worker's own words, as a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Every supervisor switched the job off: released on purpose.
    Disabled,
    /// The worker was asked to stop (SIGTERM, SIGINT): released, hand-over.
    Shutdown,
    /// The lock was no longer ours (expired, deleted or taken over).
    Lost,
    /// No renewal succeeded in time (Redis unreachable, or the worker paused).
    Expired,
    /// Redis answered, but no replica confirmed the lease in time.
    ReplicaUnconfirmed,
}

impl Cause {
    pub const ALL: [Cause; 5] =
        [Cause::Disabled, Cause::Shutdown, Cause::Lost, Cause::Expired, Cause::ReplicaUnconfirmed];

    /// The token written to the stream's `cause` field.
    pub fn token(self) -> &'static str {
        match self {
            Cause::Disabled => "disabled",
            Cause::Shutdown => "shutdown",
            Cause::Lost => "lost",
            Cause::Expired => "expired",
            Cause::ReplicaUnconfirmed => "replica-unconfirmed",
        }
    }

    /// The cause in a sentence, for logs, the stream's `reason` and people.
    pub fn sentence(self) -> &'static str {
        match self {
            Cause::Disabled => "nobody has the job enabled",
            Cause::Shutdown => "worker stopping",
            Cause::Lost => "the lock is no longer ours (expired, deleted or taken over)",
            Cause::Expired => "the lease could not be renewed in time (Redis unreachable, or the worker paused)",
            Cause::ReplicaUnconfirmed => {
                "no replica confirmed the lease in time (a failover could hand the lock to another server)"
            }
        }
    }

    /// The cause of a token, or of an entry written with a sentence only
    /// (by workers before causes had tokens).
    pub(crate) fn decode(token: Option<&str>, sentence: Option<&str>) -> Option<Cause> {
        const OLD_RELEASE_LOSS: &str = "the lock was no longer ours when releasing it (expired, deleted or taken over)";
        const OLD_EXPIRED: &str = "the lease could not be renewed in time (Redis unreachable)";
        if let Some(token) = token {
            return Cause::ALL.into_iter().find(|c| c.token() == token);
        }
        let sentence = sentence?;
        if sentence == OLD_RELEASE_LOSS {
            return Some(Cause::Lost);
        }
        if sentence == OLD_EXPIRED {
            return Some(Cause::Expired);
        }
        Cause::ALL.into_iter().find(|c| c.sentence() == sentence)
    }
}

/// Why a new holder waited before starting the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitCause {
    /// The fence counter was missing: Redis is new or lost its data.
    CounterMissing,
    /// The fence counter restarted less than a lease ago (recorded by older workers).
    CounterRestarted,
    /// The Redis process started less than a lease ago.
    RedisRestarted,
    /// An earlier new holder's wait was not over.
    EarlierWait,
}

impl WaitCause {
    pub(crate) fn token(self) -> &'static str {
        match self {
            WaitCause::CounterMissing => "counter-missing",
            WaitCause::CounterRestarted => "counter-restarted",
            WaitCause::RedisRestarted => "redis-restarted",
            WaitCause::EarlierWait => "earlier-wait",
        }
    }

    pub(crate) fn decode(token: &str) -> Option<WaitCause> {
        [WaitCause::CounterMissing, WaitCause::CounterRestarted, WaitCause::RedisRestarted, WaitCause::EarlierWait]
            .into_iter()
            .find(|w| w.token() == token)
    }
}
