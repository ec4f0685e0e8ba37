//! A Redisson-compatible lock client: the RLock layout (hash field
//! `<client-uuid>:<thread-id>` → hold count, expiry = lease), acquire with a
//! fencing token, renew, and release that publishes Redisson's unlock
//! message so Redisson waiters and other workers wake at once.
//!
//! When the primary has replicas, an acquisition or renewal counts only once
//! one replica confirmed it (`WAIT 1`, on the same connection right after the
//! script, as Redisson does with its sync slaves): a failover to a replica
//! then cannot hand the lock to a second holder. Fences never repeat or go
//! back, even when Redis loses its data.
//!
//! A worker that has seen a replica online on a primary needs a replica's
//! confirmation there from then on, also once the primary has no replica
//! left, for its holding and any later one. A primary that lost all its
//! replicas may have been deposed: after `SENTINEL FAILOVER` the old primary stays a writable primary, its
//! clients' connections and subscriptions open, until a sentinel converts
//! it about 10 s later; renewals there reach nobody, while the promoted
//! replica lets the lease run out and hands the lock to another server.
//! A primary is told by its replication id, which a promotion changes: a
//! holding that follows the lock to the promoted replica starts fresh there
//! (a primary without replicas needs none). A replica that restarts is not
//! missed as long as it is back before 3/4 of the lease from the last
//! confirmation.
//!
//! An acquisition that finds the fence counter missing cannot know whether
//! an earlier holder, whose lock vanished with Redis's data, still runs its
//! job: it says how long to wait before starting the job ([`Wait`]). Every
//! fresh acquisition also names the holding before it ([`Before`]), which
//! the new holder must know stopped before it starts the job.
//!
//! Each holding has a field of its own (a new client id): a lock that comes
//! back with an older snapshot, naming a holding this process has ended,
//! is somebody else's, never taken up again as ours.

use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError};
use std::time::Duration;

use redis::Value;
use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::history::WaitCause;
use crate::keys::Keys;
use crate::schema;
use crate::work::lease::Lease;

static SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| schema::script(include_str!("lock.lua")));

/// Outcome of one acquisition attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acquire {
    /// The lock is ours, with this fencing token; `wait` says how long the
    /// job must not start yet, `before` what is known of the holding before,
    /// `at_ms` when it was taken (Redis time).
    Acquired { fence: i64, wait: Option<Wait>, before: Before, at_ms: u64 },
    /// Taken on the primary, but no replica confirmed it in time (or none
    /// is online on a primary where this worker saw one): not a holding.
    /// It expires unless a later attempt gets the confirmation, which then
    /// finds it ours already: `before` and `at_ms` are this attempt's.
    Unconfirmed { fence: i64, before: Before, at_ms: u64 },
    /// Somebody else holds it; it expires in this long unless renewed
    /// (`None`: no expiry set).
    Held { ttl: Option<Duration> },
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
    /// This holding, not known to have stopped its job.
    Running { node: String, fence: i64 },
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

/// One holder identity on one lock.
#[derive(Debug, Clone)]
pub struct Lock {
    keys: Keys,
    node: String,
    /// `<client-uuid>:<thread-id>`, as Redisson names its holders; a new
    /// one for each holding ([`Lock::next_holding`]).
    field: String,
    lease: Lease,
    host: Endpoint,
    /// The highest fence seen by any attempt: the floor of the next fence,
    /// should Redis have lost its counter.
    seen: Arc<AtomicI64>,
    /// Replicas online on the primary at the last look (`INFO replication`,
    /// read with every acquisition and renewal).
    replicas: Arc<AtomicUsize>,
    /// The replication id of the primary on which the current holding saw a
    /// replica online: writes there count only with a replica's confirmation.
    replicated_on: Arc<Mutex<Option<String>>>,
    /// On a Redis Cluster the unlock message goes out with `SPUBLISH` as
    /// well as `PUBLISH`: Redisson 3.22+ waiters listen sharded, older ones plain.
    sharded: bool,
}

/// What one script call answered.
struct Reply {
    ok: bool,
    value: i64,
    fence: Option<i64>,
    /// Of an acquisition: the wait before the job may start.
    wait: Option<Wait>,
    /// Of an acquisition: the holding before, and when it was taken (Redis ms).
    before: Before,
    at_ms: u64,
    confirmed: bool,
}

impl Lock {
    /// A lock client for `node`, with a fresh client id, as Redisson makes one per client.
    pub fn new(keys: Keys, node: &str, lease: Lease, host: &Endpoint) -> Lock {
        Lock {
            keys,
            node: node.to_owned(),
            field: fresh_field(),
            lease,
            host: host.clone(),
            seen: Arc::default(),
            replicas: Arc::default(),
            replicated_on: Arc::default(),
            sharded: false,
        }
    }

    /// The same lock, publishing its unlock message sharded (`SPUBLISH`) too
    /// when `sharded`: on a Redis Cluster.
    pub fn sharded(mut self, sharded: bool) -> Lock {
        self.sharded = sharded;
        self
    }

    /// The hash field this client holds the lock under.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// Ends the holding's identity: the next acquisition holds under a new
    /// field, so a lock that comes back naming this one (an older snapshot
    /// restored) is never taken for ours.
    pub fn next_holding(&mut self) {
        self.field = fresh_field();
    }

    /// The lease each acquisition and renewal sets.
    pub fn lease(&self) -> Lease {
        self.lease
    }

    /// Tries once to take the lock; on success sets the next fence and stamps
    /// the node's heartbeat with the new holding, atomically.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn acquire<C: ConnectionLike>(&self, conn: &mut C) -> Result<Acquire, Error> {
        let reply = self.call(conn, "acquire", true).await?;
        if let Some(fence) = reply.fence.filter(|f| *f > 0) {
            self.seen.fetch_max(fence, Ordering::SeqCst);
        }
        Ok(match (reply.ok, reply.confirmed) {
            (true, true) => {
                Acquire::Acquired { fence: reply.value, wait: reply.wait, before: reply.before, at_ms: reply.at_ms }
            }
            (true, false) => Acquire::Unconfirmed { fence: reply.value, before: reply.before, at_ms: reply.at_ms },
            (false, _) => Acquire::Held { ttl: u64::try_from(reply.value).ok().map(Duration::from_millis) },
        })
    }

    /// Extends the lease if the lock is still ours.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn renew<C: ConnectionLike>(&self, conn: &mut C) -> Result<Renew, Error> {
        let reply = self.call(conn, "renew", true).await?;
        Ok(match (reply.ok, reply.confirmed) {
            (true, true) => Renew::Renewed,
            (true, false) => Renew::Unconfirmed,
            (false, _) => Renew::NotOurs,
        })
    }

    /// Releases the lock if it is ours, publishing the unlock message;
    /// `false` when it was not ours any more.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn release<C: ConnectionLike>(&self, conn: &mut C) -> Result<bool, Error> {
        Ok(self.call(conn, "release", false).await?.ok)
    }

    /// The lock client of a holding made elsewhere, under `field`: what a
    /// job's reaper uses to let go of its worker's lock ([`Lock::orphaned`]).
    pub fn of_holding(keys: Keys, node: &str, lease: Lease, host: &Endpoint, field: &str) -> Lock {
        Lock { field: field.to_owned(), ..Lock::new(keys, node, lease, host) }
    }

    /// Lets go of the lock held under this field, whose worker died and
    /// whose job's whole process tree is known to be gone: notes that the
    /// holding stopped, says idle in its heartbeat while that names it, and
    /// releases the lock if it is still this holding's, publishing the
    /// unlock message; `false` when the lock was not its own any more.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn orphaned<C: ConnectionLike>(&self, conn: &mut C) -> Result<bool, Error> {
        Ok(self.call(conn, "orphaned", false).await?.ok)
    }

    /// Notes, while the lock is still this holding's, that it starts its
    /// job: from now on a new holder waits for this holding, not for the one
    /// it waited for itself. `false` when the lock is not its own any more.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn started<C: ConnectionLike>(&self, conn: &mut C) -> Result<bool, Error> {
        Ok(self.call(conn, "started", false).await?.ok)
    }

    /// Notes that the holding under this field, if it was the last one,
    /// stopped its job: a new holder need not wait for it.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn stopped<C: ConnectionLike>(&self, conn: &mut C) -> Result<(), Error> {
        self.call(conn, "stopped", false).await.map(|_| ())
    }

    /// Runs `op`; with `confirm`, in one pipeline with `INFO replication`
    /// and, when replicas were online at the last look, `WAIT 1`: sent
    /// together on one connection, so the WAIT covers the script's writes.
    async fn call<C: ConnectionLike>(&self, conn: &mut C, op: &str, confirm: bool) -> Result<Reply, Error> {
        let what = || Action::Lock { op: op.to_owned(), key: self.keys.lock.clone() };
        let mut invocation = SCRIPT.prepare_invoke();
        invocation
            .key(&self.keys.lock)
            .key(self.keys.fence())
            .key(self.keys.node(&self.node))
            .key(self.keys.nodes())
            .key(self.keys.start_after())
            .key(self.keys.fence_run())
            .key(self.keys.handover())
            .arg(op)
            .arg(&self.field)
            .arg(u64::try_from(self.lease.whole().as_millis()).unwrap_or(u64::MAX))
            .arg(self.keys.unlock_channel())
            .arg(&self.node)
            .arg(self.seen.load(Ordering::SeqCst))
            .arg(if self.sharded { "1" } else { "0" });
        if !confirm {
            let (ok, value): (i64, i64) =
                invocation.invoke_async(conn).await.map_err(|e| describe(e, what(), &self.host))?;
            let (before, at_ms) = (Before::Stopped, 0);
            return Ok(Reply { ok: ok == 1, value, fence: None, wait: None, before, at_ms, confirmed: true });
        }
        // A replica first seen by this call's INFO was not waited for: once
        // more, waiting for it.
        let mut first = true;
        loop {
            let waited = self.replicas.load(Ordering::SeqCst) > 0;
            let mut pipe = redis::pipe();
            pipe.cmd("INFO").arg("replication").load_script(&SCRIPT).ignore().invoke_script(&invocation);
            if waited {
                pipe.cmd("WAIT").arg(1).arg(u64::try_from(self.lease.confirm_within().as_millis()).unwrap_or(u64::MAX));
            }
            let values: Vec<Value> = pipe.query_async(conn).await.map_err(|e| describe(e, what(), &self.host))?;
            let mut values = values.into_iter();
            let info: String = self.decode(values.next(), "INFO replication")?;
            let answer: Vec<Value> = self.decode(values.next(), "the lock script's answer")?;
            // Numbers, but for the node name of the holding before.
            let script: Vec<i64> = answer.iter().map(|v| redis::from_redis_value_ref(v).unwrap_or(0)).collect();
            let acked: i64 = if waited { self.decode(values.next(), "WAIT")? } else { 0 };
            let replicas = online_replicas(&info);
            self.replicas.store(replicas, Ordering::SeqCst);
            let needs_replica = self.needs_replica_on(replicas, replication_id(&info));
            if replicas > 0 && !waited && first {
                first = false;
                continue;
            }
            let (Some(&ok), Some(&value)) = (script.first(), script.get(1)) else {
                return Err(Error::Unreadable {
                    key: self.keys.lock.clone(),
                    what: format!("{op} answered {script:?}"),
                });
            };
            let fence = if ok == 1 { Some(value) } else { script.get(2).copied() };
            let why = match script.get(3) {
                Some(1) => WaitCause::CounterMissing,
                Some(2) => WaitCause::RedisRestarted,
                _ => WaitCause::EarlierWait,
            };
            let wait = match (ok, script.get(2)) {
                (1, Some(&ms)) if ms > 0 => {
                    Some(Wait { left: Duration::from_millis(u64::try_from(ms).unwrap_or(0)), why })
                }
                _ => None,
            };
            let confirmed = if replicas == 0 { !needs_replica } else { waited && acked >= 1 };
            let before = match (ok, script.get(5)) {
                (1, Some(1)) => Before::Unknown,
                (1, Some(2)) => Before::Running {
                    node: answer.get(6).and_then(|v| redis::from_redis_value_ref(v).ok()).unwrap_or_default(),
                    fence: script.get(7).copied().unwrap_or(0),
                },
                _ => Before::Stopped,
            };
            let at_ms = script.get(8).and_then(|&ms| u64::try_from(ms).ok()).unwrap_or(0);
            return Ok(Reply { ok: ok == 1, value, fence, wait, before, at_ms, confirmed });
        }
    }

    /// Whether a write needs a replica's confirmation on this primary
    /// because this worker saw one online there before (holding the lock or
    /// not); remembers the primary when it sees one now. Each holding has a
    /// field of its own, so a fresh acquisition does not forget: a primary
    /// that lost its replicas may have been deposed, and a new holding there
    /// would run beside the promoted replica's holder.
    fn needs_replica_on(&self, replicas: usize, primary: &str) -> bool {
        let mut replicated_on = self.replicated_on.lock().unwrap_or_else(PoisonError::into_inner);
        let needed = replicated_on.as_deref() == Some(primary);
        if replicas > 0 {
            *replicated_on = Some(primary.to_owned());
        }
        needed
    }

    fn decode<T: redis::FromRedisValue>(&self, value: Option<Value>, what: &str) -> Result<T, Error> {
        let unreadable = |detail: String| Error::Unreadable { key: self.keys.lock.clone(), what: detail };
        let value = value.ok_or_else(|| unreadable(format!("no answer to {what}")))?;
        redis::from_redis_value(value).map_err(|e| unreadable(format!("{what}: {e}")))
    }
}

/// Starts the fence counter of a Redis the caller knows never had a holder
/// (one it has just started itself, as the demo does), so that the first
/// acquisition does not wait a lease for an earlier holder to stop. An
/// existing counter is left as it is.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses.
pub async fn seed_fence<C: ConnectionLike>(conn: &mut C, keys: &Keys, host: &Endpoint) -> Result<(), Error> {
    let fence = keys.fence();
    let _: Option<String> = redis::cmd("SET")
        .arg(&fence)
        .arg(0)
        .arg("NX")
        .query_async(conn)
        .await
        .map_err(|e| describe(e, Action::SeedingFence { key: fence.clone() }, host))?;
    Ok(())
}

/// A new holding's field: `<client-uuid>:<thread-id>`, as Redisson names its holders.
fn fresh_field() -> String {
    format!("{}:1", uuid::Uuid::new_v4())
}

/// Replicas in state `online` in an `INFO replication` answer.
fn online_replicas(info: &str) -> usize {
    info.lines()
        .filter(|line| {
            line.strip_prefix("slave")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains("state=online"))
        })
        .count()
}

/// The primary's replication id (`master_replid`), which a promotion or a
/// restart changes; empty when the answer has none.
fn replication_id(info: &str) -> &str {
    info.lines().find_map(|line| line.strip_prefix("master_replid:")).map_or("", str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_online_replicas_count() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n\
            slave0:ip=10.0.0.2,port=6379,state=online,offset=1,lag=0\r\n\
            slave1:ip=10.0.0.3,port=6379,state=wait_bgsave,offset=0,lag=0\r\n\
            slave2:ip=10.0.0.4,port=6379,state=online,offset=1,lag=1\r\n\
            slave_read_repl_offset:1\r\nmaster_repl_offset:1\r\n";
        assert_eq!(online_replicas(info), 2);
        assert_eq!(online_replicas("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"), 0);
    }

    #[test]
    fn the_replication_id_names_the_primary() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\
            master_replid:8c3f2a\r\nmaster_replid2:0000\r\n";
        assert_eq!(replication_id(info), "8c3f2a");
        assert_eq!(replication_id("# Replication\r\nrole:master\r\n"), "");
    }

    #[test]
    fn a_primary_that_had_a_replica_needs_one_for_every_holding_there() {
        let lock = Lock::new(Keys::new("j"), "n", Lease::new(Duration::from_secs(3)), &Endpoint::new("h", false));
        // Without replicas: none needed.
        assert!(!lock.needs_replica_on(0, "a"));
        // A replica seen online (holding or standing by): from then on one
        // is needed on this primary, for every holding (it may have been deposed).
        assert!(!lock.needs_replica_on(1, "a"));
        assert!(lock.needs_replica_on(0, "a"));
        assert!(lock.needs_replica_on(0, "a"));
        // Another primary (the promoted replica) does not need one.
        assert!(!lock.needs_replica_on(0, "b"));
    }

    #[test]
    fn confirmations_wait_a_tenth_of_the_lease_at_most_two_seconds() {
        let lock =
            |ms| Lock::new(Keys::new("j"), "n", Lease::new(Duration::from_millis(ms)), &Endpoint::new("h", false));
        assert_eq!(lock(2_000).lease().confirm_within(), Duration::from_millis(200));
        assert_eq!(lock(30_000).lease().confirm_within(), Duration::from_secs(2));
    }
}
