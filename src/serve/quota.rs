//! A robot's rate limit kept among every serve process of the job: each
//! process posts the incidents it claimed, so a count of its own (`limit`)
//! lets three processes post three times what the robot takes. Before each
//! post to a robot with a limit, the serve loop reserves the post in
//! Redis: `{job}:robot:<tag>:sent` (the job's hash tag, so one slot on a
//! Cluster; `<tag>` is [`Robot::tag`], which holds no secret) is a sorted
//! set of the posts within the longest window, Redis time (ms) as the
//! score. The script answers how long to wait when a window is full, or
//! counts the post and answers 0. Like the claim scripts it reads `TIME`,
//! which Redis 7 replicates by the script's effects.
//!
//! [`Robot::tag`]: super::robots::Robot::tag

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::Script;

use crate::connect::Conn;
use crate::keys::Keys;
use crate::schema;

/// Added to each window in Redis: the robot counts a post when it arrives,
/// and two posts a window apart here may arrive closer than that there.
pub const SLACK: Duration = Duration::from_millis(300);

/// Makes each reservation's member unique within this process.
static SEQ: AtomicU64 = AtomicU64::new(0);

fn reserve_script() -> Script {
    schema::script(
        r#"
-- KEYS: sent; ARGV: member, then ms and n of each window.
-- The wait (ms) the fullest window asks, or 0 with this post counted.
local now = now_ms()
local longest = 0
for i = 2, #ARGV, 2 do longest = math.max(longest, tonumber(ARGV[i])) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - longest)
local wait = 0
for i = 2, #ARGV, 2 do
  local ms, n = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  local within = redis.call('ZCOUNT', KEYS[1], '(' .. (now - ms), '+inf')
  if within >= n then
    local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - ms), '+inf', 'WITHSCORES', 'LIMIT', within - n, 1)
    wait = math.max(wait, tonumber(oldest[2]) + ms - now, 1)
  end
end
if wait > 0 then return wait end
redis.call('ZADD', KEYS[1], now, now .. ':' .. ARGV[1])
redis.call('PEXPIRE', KEYS[1], longest)
return 0
"#,
    )
}

/// The script's arguments after the member: each window as ms (with
/// [`SLACK`]) and n. An empty window (the robots file refuses them) is
/// left out: the script could not say when it opens.
fn window_args(windows: &[(u64, usize)]) -> Vec<u64> {
    let slack = SLACK.as_millis() as u64;
    windows.iter().filter(|w| w.0 > 0 && w.1 > 0).flat_map(|&(ms, n)| [ms + slack, n as u64]).collect()
}

/// Reserves `node`'s next post to the robot `tag` within `windows` (at
/// most n posts within ms each, from every serve process): zero when it
/// is counted and may go, else how long to wait before asking again.
///
/// # Errors
/// Redis's, when it cannot be asked.
pub async fn reserve(
    conn: &mut Conn,
    keys: &Keys,
    node: &str,
    tag: &str,
    windows: &[(u64, usize)],
) -> redis::RedisResult<Duration> {
    let args = window_args(windows);
    if args.is_empty() {
        return Ok(Duration::ZERO);
    }
    let member = format!("{node}:{}:{}", std::process::id(), SEQ.fetch_add(1, Ordering::Relaxed));
    let script = reserve_script();
    let mut call = script.key(keys.robot_sent(tag));
    call.arg(member);
    for a in args {
        call.arg(a);
    }
    let wait: i64 = call.invoke_async(conn).await?;
    Ok(Duration::from_millis(wait.max(0) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::limit::Limit;
    use crate::serve::robots::Kind;

    #[test]
    fn each_window_of_the_robot_and_the_file_goes_to_redis_with_slack() {
        let feishu = Limit::for_robot(Kind::Feishu, Some((10_000, 3)));
        assert_eq!(window_args(feishu.windows()), vec![1_300, 5, 60_300, 100, 10_300, 3]);
        let ding = Limit::for_robot(Kind::DingTalk, None);
        assert_eq!(window_args(ding.windows()), vec![60_300, 20]);
        assert!(window_args(Limit::of(Kind::Webhook).windows()).is_empty(), "a webhook reserves nothing");
        assert!(window_args(&[(0, 5), (1_000, 0)]).is_empty(), "no window that could never open");
    }
}
