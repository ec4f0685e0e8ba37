//! Whether Redis may evict a job's keys: its `maxmemory` with an evicting
//! `maxmemory-policy`, read from `INFO memory`. Eviction can take the lock
//! and the heartbeats (`volatile-*`), or any key (`allkeys-*`): the job
//! still never runs twice, but takes longer to hand over and may stop until
//! a flag is written again, which the worker and `status` say in one sentence.

use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};

/// The sentence that says Redis may evict the job's keys, from an
/// `INFO memory` answer; `None` when it does not evict (no `maxmemory`, or
/// `noeviction`) or the answer does not say.
pub fn warning(info: &str) -> Option<String> {
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)).map(str::trim);
    let limit: u64 = field("maxmemory:")?.parse().ok()?;
    let policy = field("maxmemory_policy:")?;
    if limit == 0 || policy == "noeviction" {
        return None;
    }
    let what = if policy.starts_with("allkeys") {
        "any key of the job: the lock, the heartbeats, the flags, the history"
    } else {
        "the job's keys that expire: the lock and the heartbeats"
    };
    Some(format!(
        "Redis may evict {what} (maxmemory-policy {policy}, maxmemory {} MB): the job still runs on one server at most, but a server that takes an evicted lock waits up to the lease before starting, and an evicted flag stops nothing until written again; set maxmemory-policy noeviction for this Redis",
        limit >> 20
    ))
}

/// Asks the server behind `conn` whether it may evict the job's keys.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses `INFO`.
pub async fn check<C: ConnectionLike>(conn: &mut C, host: &Endpoint) -> Result<Option<String>, Error> {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(conn)
        .await
        .map_err(|e| describe(e, Action::ReadingMemoryPolicy, host))?;
    Ok(warning(&info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_memory_limit_with_an_evicting_policy_is_said() {
        let info =
            |limit: &str, policy: &str| format!("# Memory\r\nmaxmemory:{limit}\r\nmaxmemory_policy:{policy}\r\n");
        assert_eq!(warning(&info("0", "allkeys-lru")), None);
        assert_eq!(warning(&info("104857600", "noeviction")), None);
        assert_eq!(warning("# Memory\r\n"), None);
        let volatile = warning(&info("104857600", "volatile-ttl")).unwrap();
        assert!(volatile.contains("the lock and the heartbeats") && volatile.contains("100 MB"), "{volatile}");
        let all = warning(&info("104857600", "allkeys-lru")).unwrap();
        assert!(all.contains("any key of the job") && all.contains("noeviction"), "{all}");
    }
}
