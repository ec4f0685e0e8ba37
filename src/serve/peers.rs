//! Which serve processes watch the job: each that posts to robots beats
//! in `{job}:serves` every few seconds. `unreachable` cannot be agreed
//! through the Redis that cannot be reached: the first name among those
//! beating at the last look posts it.

use std::time::Duration;

use crate::connect::Conn;
use crate::keys::Keys;
use crate::schema;

/// A serve process that beat less than this ago watches the job.
pub const SERVE_ALIVE: Duration = Duration::from_secs(15);

/// Records that `node` watches the job and returns every serve process
/// that does (its own name among them), first name first. Forgets those
/// silent for a day.
///
/// # Errors
/// Redis's, when it cannot be asked.
pub async fn beat(conn: &mut Conn, keys: &Keys, node: &str) -> redis::RedisResult<Vec<String>> {
    let script = schema::script(
        r#"
local now = now_ms()
redis.call('HSET', KEYS[1], ARGV[1], now)
local live = {}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local at = tonumber(all[i + 1]) or 0
  if at > now - tonumber(ARGV[2]) then table.insert(live, all[i])
  elseif at < now - 86400000 then redis.call('HDEL', KEYS[1], all[i]) end
end
return live
"#,
    );
    let mut live: Vec<String> =
        script.key(keys.serves()).arg(node).arg(SERVE_ALIVE.as_millis() as u64).invoke_async(conn).await?;
    live.sort();
    Ok(live)
}
