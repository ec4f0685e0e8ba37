//! One call of the lock's script (`lock.lua`): with a confirmation, in one
//! pipeline with `INFO replication` and, when the primary has or had a
//! replica, `WAIT 1`; its answer decoded.

use std::sync::atomic::Ordering;
use std::sync::{LazyLock, PoisonError};
use std::time::Duration;

use redis::Value;
use redis::aio::ConnectionLike;

use super::replication::{online_replicas, replication_id};
use super::{Before, HeldSeen, Lock, Wait};
use crate::cause::WaitCause;
use crate::error::{Action, Error, describe};
use crate::schema;

static SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| schema::script(include_str!("lock.lua")));

/// How many primaries seen with a replica a lock client remembers: a job's
/// Sentinel set has a handful of nodes.
const REMEMBERED_PRIMARIES: usize = 16;

/// What one script call answered.
pub(super) struct Reply {
    pub(super) ok: bool,
    pub(super) value: i64,
    pub(super) fence: Option<i64>,
    /// Of an acquisition: the wait before the job may start.
    pub(super) wait: Option<Wait>,
    /// Of an acquisition: the holding before, when it was taken (Redis ms)
    /// and the fence counter it found; of a refusal, what it saw.
    pub(super) before: Before,
    pub(super) at_ms: u64,
    pub(super) counter: Option<i64>,
    pub(super) seen: HeldSeen,
    pub(super) confirmed: bool,
}

impl Lock {
    /// Runs `op`; with `confirm`, in one pipeline with `INFO replication`
    /// and, when replicas were online at the last look, `WAIT 1`: sent
    /// together on one connection, so the WAIT covers the script's writes.
    pub(super) async fn call<C: ConnectionLike>(&self, conn: &mut C, op: &str, confirm: bool) -> Result<Reply, Error> {
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
            .arg(if self.sharded { "1" } else { "0" })
            .arg(&self.instance);
        if !confirm {
            let (ok, value): (i64, i64) =
                invocation.invoke_async(conn).await.map_err(|e| describe(e, what(), &self.host))?;
            let (before, at_ms, counter, seen) = (Before::Stopped, 0, None, HeldSeen::default());
            return Ok(Reply {
                ok: ok == 1,
                value,
                fence: None,
                wait: None,
                before,
                at_ms,
                counter,
                seen,
                confirmed: true,
            });
        }
        // A replica first seen by this call's INFO was not waited for: once
        // more, waiting for it. The script is loaded with the first call and
        // again only when Redis lost it (restarted, failed over, flushed).
        let mut first = true;
        loop {
            let waited = self.replicas.load(Ordering::SeqCst) > 0;
            let load = !self.loaded.load(Ordering::SeqCst);
            let mut pipe = redis::pipe();
            pipe.cmd("INFO").arg("replication");
            if load {
                pipe.load_script(&SCRIPT).ignore();
            }
            pipe.invoke_script(&invocation);
            if waited {
                pipe.cmd("WAIT").arg(1).arg(u64::try_from(self.lease.confirm_within().as_millis()).unwrap_or(u64::MAX));
            }
            let values: Vec<Value> = match pipe.query_async(conn).await {
                Ok(values) => values,
                // Not run: load it and try again.
                Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) && !load => {
                    self.loaded.store(false, Ordering::SeqCst);
                    continue;
                }
                Err(e) => return Err(describe(e, what(), &self.host)),
            };
            self.loaded.store(true, Ordering::SeqCst);
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
            let fence = if ok == 1 { Some(value) } else { script.get(2).copied().filter(|f| *f >= 0) };
            let text = |i: usize| answer.get(i).and_then(|v| redis::from_redis_value_ref(v).ok()).unwrap_or_default();
            let counter_at = |i: usize| script.get(i).copied().filter(|c| *c >= 0);
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
                (1, Some(2)) => {
                    let lease_ms = script.get(11).and_then(|&ms| u64::try_from(ms).ok()).filter(|&ms| ms > 0);
                    Before::Running {
                        node: text(6),
                        fence: script.get(7).copied().unwrap_or(0),
                        instance: text(10),
                        lease_ms,
                    }
                }
                _ => Before::Stopped,
            };
            let ms_at = |i: usize| script.get(i).and_then(|&ms| u64::try_from(ms).ok()).unwrap_or(0);
            let (at_ms, counter, seen) = if ok == 1 {
                (ms_at(8), counter_at(9), HeldSeen::default())
            } else {
                (0, None, HeldSeen { at_ms: ms_at(4), counter: counter_at(2), recorded: script.get(3) == Some(&1) })
            };
            return Ok(Reply { ok: ok == 1, value, fence, wait, before, at_ms, counter, seen, confirmed });
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
        let needed = replicated_on.iter().any(|p| p == primary);
        if replicas > 0 && !needed {
            // Every primary seen with a replica, not only the latest: a
            // connection that comes back to a deposed one (still writable
            // until a sentinel converts it) after the promoted one was seen.
            if replicated_on.len() >= REMEMBERED_PRIMARIES {
                replicated_on.remove(0);
            }
            replicated_on.push(primary.to_owned());
        }
        needed
    }

    fn decode<T: redis::FromRedisValue>(&self, value: Option<Value>, what: &str) -> Result<T, Error> {
        let unreadable = |detail: String| Error::Unreadable { key: self.keys.lock.clone(), what: detail };
        let value = value.ok_or_else(|| unreadable(format!("no answer to {what}")))?;
        redis::from_redis_value(value).map_err(|e| unreadable(format!("{what}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Endpoint;
    use crate::keys::Keys;
    use crate::work::lease::Lease;

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
        // Once it had a replica too, the deposed one still needs one when a
        // connection comes back to it.
        assert!(!lock.needs_replica_on(1, "b"));
        assert!(lock.needs_replica_on(0, "a"));
        assert!(lock.needs_replica_on(0, "b"));
    }
}
