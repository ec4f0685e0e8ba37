//! An incident's claim is a lease, so that a serve process killed between
//! its claim and its post loses no message: the claim (`{job}:posted:<id>`,
//! a hash kept a day) names the process that posts (`by`), until when it
//! holds (`until`, Redis time), whether it posts to every robot or only the
//! webhooks (`verdict`), each robot done with it (`done:<tag>`, by
//! [`Robot::tag`]) and, once each is, `finished`. The claimant renews it
//! every [`RENEW_EVERY`] while a robot is owed the message; when it runs
//! out unfinished, another process that saw the incident takes it over and
//! posts to the robots not done. The scripts share `agree`'s preamble.
//!
//! [`Robot::tag`]: super::robots::Robot::tag

use std::time::Duration;

use redis::Script;

pub use super::agree::LEASE;
use super::agree::{Post, preamble, text};
use crate::connect::Conn;
use crate::keys::Keys;
use crate::schema;

/// How often the claimant renews the claims it still owes robots.
pub const RENEW_EVERY: Duration = Duration::from_millis(1500);

/// What a look at another's claim found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Takeover {
    /// Each robot has the message (or the claim is gone): nothing to do.
    Finished,
    /// Its process still holds it, this long yet.
    Held(Duration),
    /// It ran out unfinished and is this process's now: post as `verdict`
    /// says, to the robots not in `done`.
    Took { verdict: Post, done: Vec<String> },
}

fn renew_script() -> Script {
    schema::script(&format!(
        r#"{}
-- KEYS: claims; ARGV: node, lease. 1 for each claim still the node's, renewed.
local now = now_ms()
local out = {{}}
for i, key in ipairs(KEYS) do
  out[i] = 0
  if redis.call('TYPE', key).ok == 'hash' and redis.call('HGET', key, CLAIM.BY) == ARGV[1] then
    redis.call('HSET', key, CLAIM.UNTIL, now + tonumber(ARGV[2]))
    out[i] = 1
  end
end
return out
"#,
        preamble()
    ))
}

fn take_over_script() -> Script {
    schema::script(&format!(
        r#"{}
-- KEYS: claim; ARGV: node, lease
local now = now_ms()
local left = claim_left(KEYS[1], now)
if left < 0 then return {{'finished'}} end
if left > 0 then return {{'held', left}} end
redis.call('HSET', KEYS[1], CLAIM.BY, ARGV[1], CLAIM.UNTIL, now + tonumber(ARGV[2]))
local reply = {{'took', redis.call('HGET', KEYS[1], CLAIM.VERDICT) or 'post'}}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, #CLAIM.DONE) == CLAIM.DONE then table.insert(reply, string.sub(all[i], #CLAIM.DONE + 1)) end
end
return reply
"#,
        preamble()
    ))
}

fn record_script() -> Script {
    schema::script(
        r#"
-- KEYS: claim; ARGV: finished (1 or 0), the robots done
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
for i = 2, #ARGV do redis.call('HSET', KEYS[1], CLAIM.DONE .. ARGV[i], 1) end
if ARGV[1] == '1' then redis.call('HSET', KEYS[1], CLAIM.FINISHED, 1) end
return 1
"#,
    )
}

/// Renews the claims `ids` that are still `node`'s: whether each was.
///
/// # Errors
/// Redis's, when it cannot be asked.
pub async fn renew(conn: &mut Conn, keys: &Keys, node: &str, ids: &[String]) -> redis::RedisResult<Vec<bool>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let script = renew_script();
    let mut call = script.prepare_invoke();
    for id in ids {
        call.key(keys.posted(id));
    }
    let mine: Vec<i64> = call.arg(node).arg(LEASE.as_millis() as u64).invoke_async(conn).await?;
    Ok(mine.into_iter().map(|m| m == 1).collect())
}

/// Looks at the claim `id` of another process, and takes it over for
/// `node` if it ran out unfinished.
///
/// # Errors
/// Redis's, when it cannot be asked.
pub async fn take_over(conn: &mut Conn, keys: &Keys, node: &str, id: &str) -> redis::RedisResult<Takeover> {
    let reply: Vec<redis::Value> =
        take_over_script().key(keys.posted(id)).arg(node).arg(LEASE.as_millis() as u64).invoke_async(conn).await?;
    let words: Vec<String> = reply.iter().map(text).collect();
    Ok(match words.first().map(String::as_str) {
        Some("held") => {
            let ms = words.get(1).and_then(|w| w.parse::<u64>().ok()).unwrap_or(0);
            Takeover::Held(Duration::from_millis(ms.max(1)))
        }
        Some("took") => Takeover::Took {
            verdict: if words.get(1).map(String::as_str) == Some("counted") { Post::Counted } else { Post::Post },
            done: words.get(2..).unwrap_or_default().to_vec(),
        },
        _ => Takeover::Finished,
    })
}

/// Records in the claim `id` the robots done with it, and whether each is.
///
/// # Errors
/// Redis's, when it cannot be asked.
pub async fn record(conn: &mut Conn, keys: &Keys, id: &str, tags: &[String], finished: bool) -> redis::RedisResult<()> {
    let script = record_script();
    let mut call = script.key(keys.posted(id));
    call.arg(if finished { "1" } else { "0" });
    for tag in tags {
        call.arg(tag);
    }
    let _: i64 = call.invoke_async(conn).await?;
    Ok(())
}
