//! A Redisson-compatible lock client: the RLock layout (hash field
//! `<client-uuid>:<thread-id>` → hold count, expiry = lease), acquire with a
//! fencing token, renew, and release that publishes Redisson's unlock
//! message so Redisson waiters and other workers wake at once.

use std::sync::LazyLock;
use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::error::{Error, describe};
use crate::keys::Keys;

static SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(include_str!("lock.lua")));

/// Outcome of one acquisition attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquire {
    /// The lock is ours, with this fencing token.
    Acquired { fence: i64 },
    /// Somebody else holds it; it expires in this long unless renewed
    /// (`None`: no expiry set).
    Held { ttl: Option<Duration> },
}

/// One holder identity on one lock.
#[derive(Debug, Clone)]
pub struct Lock {
    keys: Keys,
    node: String,
    /// `<client-uuid>:<thread-id>`, as Redisson names its holders.
    field: String,
    lease: Duration,
    host: String,
}

impl Lock {
    /// A lock client for `node`, with a fresh client id, as Redisson makes one per client.
    pub fn new(keys: Keys, node: &str, lease: Duration, host: &str) -> Lock {
        let field = format!("{}:1", uuid::Uuid::new_v4());
        Lock { keys, node: node.to_owned(), field, lease, host: host.to_owned() }
    }

    /// The hash field this client holds the lock under.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The lease each acquisition and renewal sets.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Tries once to take the lock; on success INCRs the fence and stamps the
    /// node's heartbeat with the new holding, atomically.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn acquire<C: ConnectionLike>(&self, conn: &mut C) -> Result<Acquire, Error> {
        let (ok, value) = self.call(conn, "acquire").await?;
        Ok(if ok == 1 {
            Acquire::Acquired { fence: value }
        } else {
            Acquire::Held { ttl: u64::try_from(value).ok().map(Duration::from_millis) }
        })
    }

    /// Extends the lease if the lock is still ours; `false` when it is not.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn renew<C: ConnectionLike>(&self, conn: &mut C) -> Result<bool, Error> {
        Ok(self.call(conn, "renew").await?.0 == 1)
    }

    /// Releases the lock if it is ours, publishing the unlock message;
    /// `false` when it was not ours any more.
    ///
    /// # Errors
    /// [`Error::Redis`] when Redis cannot be reached or refuses.
    pub async fn release<C: ConnectionLike>(&self, conn: &mut C) -> Result<bool, Error> {
        Ok(self.call(conn, "release").await?.0 == 1)
    }

    async fn call<C: ConnectionLike>(&self, conn: &mut C, op: &str) -> Result<(i64, i64), Error> {
        SCRIPT
            .key(&self.keys.lock)
            .key(self.keys.fence())
            .key(self.keys.node(&self.node))
            .key(self.keys.nodes())
            .arg(op)
            .arg(&self.field)
            .arg(u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX))
            .arg(self.keys.unlock_channel())
            .arg(&self.node)
            .invoke_async(conn)
            .await
            .map_err(|e| describe(e, &format!("{op} of lock {}", self.keys.lock), &self.host))
    }
}
