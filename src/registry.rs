//! The jobs a Redis knows: each worker adds its job to one sorted set,
//! [`JOBS`], when it starts (scored by Redis time), and drops the names no
//! worker started for [`FORGET_AFTER`]. `--job '*'` reads it, so a site's
//! status, watch, history and serve need not list its dozens of jobs. A
//! supervisor's rules read it too: every job's name, nothing of the jobs.
//! The key has no job's hash tag; on a Cluster it lives in a slot of its own.

use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::clock::millis;
use crate::error::{Action, Error, describe};
pub use crate::keys::JOBS;

/// What `--job` says to mean every job the registry names.
pub const EVERY_JOB: &str = "*";

/// How long a job no worker started since stays in the registry.
pub const FORGET_AFTER: Duration = Duration::from_secs(30 * 86_400);

/// Adds `job` to the registry, at `now_ms` (Redis time), and drops the jobs
/// no worker started for [`FORGET_AFTER`].
///
/// # Errors
/// [`Error::Redis`] when Redis refuses or cannot be reached.
pub async fn register<C: ConnectionLike + Send>(
    conn: &mut C,
    job: &str,
    now_ms: u64,
    server: &Endpoint,
) -> Result<(), Error> {
    let forget_before = now_ms.saturating_sub(millis(FORGET_AFTER));
    redis::pipe()
        .cmd("ZADD")
        .arg(JOBS)
        .arg(now_ms)
        .arg(job)
        .ignore()
        .cmd("ZREMRANGEBYSCORE")
        .arg(JOBS)
        .arg("-inf")
        .arg(format!("({forget_before}"))
        .ignore()
        .query_async::<()>(conn)
        .await
        .map_err(|e| describe(e, Action::RegisteringJob, server))
}

/// Every job the registry names, by name. Any worker's user may write
/// there, so a name that is no job's name by [`plain`]'s rule is left out
/// (said once, in the log) rather than used in a command line, a key or an
/// ACL rule.
///
/// # Errors
/// [`Error::Redis`] when Redis refuses or cannot be reached.
pub async fn jobs<C: ConnectionLike + Send>(conn: &mut C, server: &Endpoint) -> Result<Vec<String>, Error> {
    let names: Vec<String> = redis::cmd("ZRANGE")
        .arg(JOBS)
        .arg(0)
        .arg(-1)
        .query_async(conn)
        .await
        .map_err(|e| describe(e, Action::ReadingJobs, server))?;
    let (mut names, odd): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| plain(n));
    if !odd.is_empty() {
        tracing::warn!(
            "the job registry {JOBS} on {server} holds {} name(s) that are no job's name, left out: {:?}",
            odd.len(),
            odd.iter().take(3).collect::<Vec<_>>()
        );
    }
    names.sort();
    Ok(names)
}

/// Whether a registered name can be used as it is: a job name (at most
/// 100 characters, no space, no brace) of letters, digits and `-_.:@/`
/// only: nothing a shell, `redis-cli` or an ACL rule reads as more than a word.
pub fn plain(name: &str) -> bool {
    crate::input::job_name(name).is_ok() && name.chars().all(|c| c.is_alphanumeric() || "-_.:@/".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_are_taken_from_the_registry() {
        for ok in ["outbound", "出库", "wh-2.export:daily", "a@b/c_d"] {
            assert!(plain(ok), "{ok}");
        }
        for bad in ["x +@all ~*", "x\nACL SETUSER evil on", "a\"b", "a,b", "{a}", "", "a;b", "a'b"] {
            assert!(!plain(bad), "{bad:?}");
        }
    }
}
