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
//!
//! # Layout
//!
//! - This file: [`Lock`], one holder identity on one lock, and what it
//!   does; [`seed_fence`].
//! - What an acquisition or a renewal answered ([`Acquire`], [`Wait`],
//!   [`Before`], [`Renew`]) is `work::outcome`'s, a leaf the engine reads.
//! - `call`: one call of the lock's script (`lock.lua`), confirmed by a
//!   replica when the primary has or had one, and its answer decoded.
//! - `replication`: what `INFO replication` says: replicas online, the
//!   primary's replication id.

mod call;
mod replication;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::keys::Keys;
use crate::work::lease::Lease;

pub use crate::work::outcome::{Acquire, Before, HeldSeen, Renew, Wait, is_lockwatch_field};

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
    /// Whether the lock's script was loaded on this Redis (`SCRIPT LOAD`
    /// goes with a confirmed call only until it was, or once it is lost).
    loaded: Arc<AtomicBool>,
    /// The replication ids of the primaries on which a replica was seen
    /// online: writes there count only with a replica's confirmation.
    replicated_on: Arc<Mutex<Vec<String>>>,
    /// On a Redis Cluster the unlock message goes out with `SPUBLISH` as
    /// well as `PUBLISH`: Redisson 3.22+ waiters listen sharded, older ones plain.
    sharded: bool,
    /// The worker process's id in its heartbeat, which an acquisition
    /// writes with the rest of it (empty: none given).
    instance: String,
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
            loaded: Arc::default(),
            replicated_on: Arc::default(),
            sharded: false,
            instance: String::new(),
        }
    }

    /// The same lock, naming the worker process `instance` in the heartbeat
    /// an acquisition writes: a heartbeat an older snapshot brought back
    /// then names this process, not the one that had the name before.
    pub fn for_instance(mut self, instance: &str) -> Lock {
        instance.clone_into(&mut self.instance);
        self
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
            (true, true) => Acquire::Acquired {
                fence: reply.value,
                wait: reply.wait,
                before: reply.before,
                at_ms: reply.at_ms,
                counter: reply.counter,
            },
            (true, false) => Acquire::Unconfirmed {
                fence: reply.value,
                before: reply.before,
                at_ms: reply.at_ms,
                counter: reply.counter,
            },
            (false, _) => {
                Acquire::Held { ttl: u64::try_from(reply.value).ok().map(Duration::from_millis), seen: reply.seen }
            }
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
        // Confirmed by a replica where one is needed, as an acquisition is:
        // a note a failover loses would let the next holder start beside
        // this job (it would read "never started", nothing before it).
        let reply = self.call(conn, "started", true).await?;
        Ok(reply.ok && reply.confirmed)
    }

    /// Notes that the holding under this field, if it was the last one,
    /// stopped its job: a new holder need not wait for it.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn stopped<C: ConnectionLike>(&self, conn: &mut C) -> Result<(), Error> {
        self.call(conn, "stopped", false).await.map(|_| ())
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

/// A new holding's field: `<client-uuid>:<thread-id>`, as Redisson names
/// its holders. The id is a random UUID of version 8 (Redisson's are version
/// 4), so a lock field tells that a lockwatch worker holds it even when its
/// heartbeat and the handover record are gone.
fn fresh_field() -> String {
    let mut bytes = *uuid::Uuid::new_v4().as_bytes();
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    format!("{}:1", uuid::Uuid::from_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holding_field_is_marked_as_lockwatch_s_and_redisson_s_are_not() {
        let field = fresh_field();
        assert!(is_lockwatch_field(&field), "{field}");
        assert_ne!(field, fresh_field());
        for other in ["b1a5c2a6-8a8e-4a6f-9f3e-0c2b7e1d2f11:57", "uuid-a:1", "", ":", "8"] {
            assert!(!is_lockwatch_field(other), "{other}");
        }
    }

    #[test]
    fn confirmations_wait_a_tenth_of_the_lease_at_most_two_seconds() {
        let lock =
            |ms| Lock::new(Keys::new("j"), "n", Lease::new(Duration::from_millis(ms)), &Endpoint::new("h", false));
        assert_eq!(lock(2_000).lease().confirm_within(), Duration::from_millis(200));
        assert_eq!(lock(30_000).lease().confirm_within(), Duration::from_secs(2));
    }
}
