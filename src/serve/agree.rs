//! Exactly one message per incident, however many `lockwatch serve`
//! processes watch the job: they agree through Redis.
//!
//! Every serve process sees the same events, from the same Redis data, and
//! names each incident the same way ([`Incidents::name`]): the event (a
//! failover and a restart alike, as the new holding), the
//! fence counter when it came (each acquisition takes a new fence, so a
//! holding's death, a failover to it, its stall are told apart from the
//! next holding's), the server it concerns, and how many times this
//! process has seen that same triple. The first to create the claim
//! `{job}:posted:<incident>` (a hash kept a day) posts; the others see it
//! and stay silent while it lasts. The claim is a lease (`lease`):
//! it names the process that posts and until when, and is renewed until
//! each robot has the message, so one that runs out unfinished (its
//! process killed while it posted) is taken over by another. The claim is
//! one script, which also keeps the repeats:
//! the first incident of a kind opens a window (`--repeat-window`
//! in `run`), the first recovery in it is posted too, and whatever else of
//! that kind comes within it is counted in `{job}:repeats:<family>`;
//! whoever first finds the window ended ([`close`]) posts one summary.
//!
//! `unreachable` cannot be agreed through the Redis that cannot be
//! reached: it is posted by the serve process with the first name among
//! those beating in `{job}:serves` at its last look (`peers`), and the
//! `reachable` that ends it by the one that posted it.

use std::collections::HashMap;
use std::time::Duration;

use redis::Script;

use crate::connect::Conn;
use crate::keys::Keys;
use crate::schema::{self, window};
use crate::status::{Event, EventKind};

/// Incidents of one kind share a window of repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    Down,
    Stall,
    Conflict,
    DataLost,
    Failover,
    Restart,
    Standby,
    /// An incident told again to the escalation robots: each once, never
    /// counted as a repeat (its window is zero).
    Escalation,
}

impl Family {
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Down => "down",
            Family::Stall => "stall",
            Family::Conflict => "conflict",
            Family::DataLost => "data_lost",
            Family::Failover => "failover",
            Family::Restart => "restart",
            Family::Standby => "standby",
            Family::Escalation => "escalation",
        }
    }
}

/// Whether an event opens an incident or ends one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Problem,
    Recovery,
}

/// An incident, named the same by every serve process that saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    /// `died:12:wh-a:1`: event, fence, server, occurrence.
    pub id: String,
    pub family: Family,
    pub role: Role,
    pub kind: EventKind,
    pub at_ms: u64,
}

/// What this serve process has seen: to name incidents alike.
#[derive(Debug, Default)]
pub struct Incidents {
    seen: HashMap<String, u32>,
    /// The family of the last problem a recovery may end.
    open: Option<Family>,
}

impl Incidents {
    /// The incident `event` is, `fence` being the job's fence counter when
    /// it came; `None` for events no robot is told of (`started`, `stopped`)
    /// and for `unreachable`/`reachable`, which are not agreed in Redis.
    pub fn name(&mut self, event: &Event, fence: Option<i64>) -> Option<Incident> {
        use EventKind::*;
        let (family, role) = match event.event {
            Died => (Family::Down, Role::Problem),
            Stalled => (Family::Stall, Role::Problem),
            Conflict => (Family::Conflict, Role::Problem),
            DataLost => (Family::DataLost, Role::Problem),
            Failover => (Family::Failover, Role::Problem),
            Restarted => (Family::Restart, Role::Problem),
            StandbyLost => (Family::Standby, Role::Problem),
            StandbyBack => (Family::Standby, Role::Recovery),
            Recovered => (self.open.unwrap_or(Family::Down), Role::Recovery),
            Started | Stopped | Unreachable | Reachable => return None,
        };
        if role == Role::Problem && matches!(family, Family::Down | Family::Stall | Family::Conflict) {
            self.open = Some(family);
        }
        let server = event.to.as_ref().or(event.from.as_ref()).map(|h| h.to_string()).unwrap_or_default();
        let fence = fence.map_or("-".to_owned(), |f| f.to_string());
        // A new holding is one incident whatever a process saw before it: one
        // that missed the holding between (frozen, just started) calls a
        // failover back a restart.
        let kind = match event.event {
            Failover | Restarted => "holder",
            other => other.as_str(),
        };
        let what = format!("{kind}:{fence}:{server}");
        let n = self.seen.entry(what.clone()).or_default();
        *n += 1;
        Some(Incident { id: format!("{what}:{n}"), family, role, kind: event.event, at_ms: event.at_ms })
    }
}

/// What the claim decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub post: Post,
    /// Until the window of repeats ends, when one is open.
    pub window_left: Option<Duration>,
    /// A window that this claim found ended, with its repeats.
    pub closed: Option<Repeats>,
}

/// Whether this serve process posts the incident.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Post {
    /// Another serve process claimed it first; it holds the claim this long
    /// yet (`None`: it has posted to every robot).
    Taken(Option<Duration>),
    /// This one posts it.
    Post,
    /// A repeat within the window: counted for the summary.
    Counted,
}

/// The repeats of a window that ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Repeats {
    pub counts: Vec<(EventKind, u32)>,
    pub first_ms: u64,
    pub last_ms: u64,
}

/// Closes the window in KEYS[1] when it ended: its fields, or nothing.
const CLOSE: &str = r#"
-- How long the claim in `key` holds yet, in ms; -1 once its robots have the
-- message (or for the plain string an older lockwatch claims with).
local function claim_left(key, now)
  if redis.call('TYPE', key).ok ~= 'hash' or redis.call('HEXISTS', key, CLAIM.FINISHED) == 1 then return -1 end
  return math.max(tonumber(redis.call('HGET', key, CLAIM.UNTIL) or '0') - now, 0)
end
local function close(key, now)
  local ends = tonumber(redis.call('HGET', key, WINDOW.ENDS) or '0')
  if ends == 0 or ends > now then return nil, ends end
  local all = redis.call('HGETALL', key)
  redis.call('DEL', key)
  return all, 0
end
"#;

fn claim_script() -> Script {
    schema::script(&format!(
        r#"{CLOSE}
-- KEYS: posted, repeats; ARGV: node, posted ttl, window, role, kind, at, lease
local now = now_ms()
if redis.call('EXISTS', KEYS[1]) == 1 then return {{'taken', claim_left(KEYS[1], now)}} end
local closed, ends = close(KEYS[2], now)
local reply
if ends == 0 then
  if ARGV[4] == 'recovery' then
    reply = {{'post', 0}}
  else
    local window = tonumber(ARGV[3])
    redis.call('HSET', KEYS[2], WINDOW.ENDS, now + window)
    redis.call('PEXPIRE', KEYS[2], window + 300000)
    reply = {{'post', window}}
  end
elseif ARGV[4] == 'recovery' and redis.call('HEXISTS', KEYS[2], WINDOW.RECOVERED) == 0 then
  redis.call('HSET', KEYS[2], WINDOW.RECOVERED, 1)
  reply = {{'post', ends - now}}
else
  redis.call('HINCRBY', KEYS[2], WINDOW.COUNT .. ARGV[5], 1)
  if redis.call('HEXISTS', KEYS[2], WINDOW.FIRST) == 0 then redis.call('HSET', KEYS[2], WINDOW.FIRST, ARGV[6]) end
  redis.call('HSET', KEYS[2], WINDOW.LAST, ARGV[6])
  reply = {{'counted', ends - now}}
end
redis.call('HSET', KEYS[1], CLAIM.BY, ARGV[1], CLAIM.UNTIL, now + tonumber(ARGV[7]), CLAIM.VERDICT, reply[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
if closed then for _, v in ipairs(closed) do table.insert(reply, v) end end
return reply
"#
    ))
}

/// The Lua every claim script begins with (after `schema`'s): `close`, `claim_left`.
pub(super) fn preamble() -> &'static str {
    CLOSE
}

fn close_script() -> Script {
    schema::script(&format!(
        r#"{CLOSE}
local closed, ends = close(KEYS[1], now_ms())
if closed then
  local reply = {{'closed', 0}}
  for _, v in ipairs(closed) do table.insert(reply, v) end
  return reply
end
if ends == 0 then return {{'gone', 0}} end
return {{'later', ends - now_ms()}}
"#
    ))
}

/// How long a claim holds unless renewed (`lease` renews it): how long
/// after a serve process died while it posted another takes its claim over.
pub const LEASE: Duration = Duration::from_secs(5);

/// Claims `incident` for `node` for the lease ([`LEASE`]); the
/// claim is kept for a day.
///
/// # Errors
/// Redis's, when it cannot be asked: then nobody can agree, and the
/// caller posts nothing (another serve process that reaches Redis will).
pub async fn claim(
    conn: &mut Conn,
    keys: &Keys,
    node: &str,
    incident: &Incident,
    window: Duration,
) -> redis::RedisResult<Verdict> {
    let reply: Vec<redis::Value> = claim_script()
        .key(keys.posted(&incident.id))
        .key(keys.repeats(incident.family.as_str()))
        .arg(node)
        .arg(86_400_000u64)
        .arg(window.as_millis() as u64)
        .arg(if incident.role == Role::Recovery { "recovery" } else { "problem" })
        .arg(incident.kind.as_str())
        .arg(incident.at_ms)
        .arg(LEASE.as_millis() as u64)
        .invoke_async(conn)
        .await?;
    let (word, ms, rest) = split(&reply);
    let post = match word.as_str() {
        // -1 (finished) reads as 0 in `split`: ask the reply itself.
        "taken" => match reply.get(1).map(text).and_then(|t| t.parse::<i64>().ok()) {
            Some(left) if left >= 0 => Post::Taken(Some(Duration::from_millis(left as u64))),
            _ => Post::Taken(None),
        },
        "counted" => Post::Counted,
        _ => Post::Post,
    };
    let window_left = (!matches!(post, Post::Taken(_)) && ms > 0).then(|| Duration::from_millis(ms));
    Ok(Verdict { post, window_left, closed: repeats(rest) })
}

/// What a window's end found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closing {
    /// Nobody holds it (closed by another, or never opened).
    Gone,
    /// Not ended yet: look again after this.
    Later(Duration),
    /// Ended now, by this call: its repeats (none counted: nothing to say).
    Closed(Option<Repeats>),
}

/// Closes `family`'s window of repeats if it has ended.
///
/// # Errors
/// Redis's, when it cannot be asked.
pub async fn close(conn: &mut Conn, keys: &Keys, family: Family) -> redis::RedisResult<Closing> {
    let reply: Vec<redis::Value> = close_script().key(keys.repeats(family.as_str())).invoke_async(conn).await?;
    let (word, ms, rest) = split(&reply);
    Ok(match word.as_str() {
        "closed" => Closing::Closed(repeats(rest)),
        "later" => Closing::Later(Duration::from_millis(ms.max(1))),
        _ => Closing::Gone,
    })
}

pub(super) fn text(v: &redis::Value) -> String {
    match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        redis::Value::SimpleString(s) => s.clone(),
        redis::Value::Int(n) => n.to_string(),
        _ => String::new(),
    }
}

fn split(reply: &[redis::Value]) -> (String, u64, &[redis::Value]) {
    let word = reply.first().map(text).unwrap_or_default();
    let ms = reply.get(1).map(text).and_then(|t| t.parse::<i64>().ok()).unwrap_or(0).max(0) as u64;
    (word, ms, reply.get(2..).unwrap_or_default())
}

/// The repeats in a closed window's fields (`n:<event>` counts, `first`,
/// `last`); `None` when nothing was counted.
fn repeats(fields: &[redis::Value]) -> Option<Repeats> {
    let mut out = Repeats::default();
    for pair in fields.chunks(2) {
        let (k, v) = (text(&pair[0]), pair.get(1).map(text).unwrap_or_default());
        match k.as_str() {
            window::FIRST => out.first_ms = v.parse().unwrap_or(0),
            window::LAST => out.last_ms = v.parse().unwrap_or(0),
            _ => {
                if let (Some(name), Ok(n)) = (k.strip_prefix(window::COUNT), v.parse::<u32>())
                    && let Ok(kind) = serde_json::from_value::<EventKind>(serde_json::Value::String(name.to_owned()))
                {
                    out.counts.push((kind, n));
                }
            }
        }
    }
    out.counts.sort_by_key(|(kind, _)| kind.as_str());
    (!out.counts.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::HolderRef;

    fn event(kind: EventKind, to: Option<&str>) -> Event {
        Event {
            event: kind,
            job: "outbound".into(),
            at_ms: 1,
            from: Some(HolderRef { field: "a:1".into(), node: Some("wh-a".into()) }),
            to: to.map(|n| HolderRef { field: format!("{n}:1"), node: Some(n.into()) }),
            reason: String::new(),
            stall: None,
            ms: None,
            no_standby: false,
        }
    }

    #[test]
    fn two_processes_that_saw_the_same_events_name_them_alike() {
        let events = [
            (event(EventKind::Failover, Some("wh-b")), Some(7)),
            (event(EventKind::Died, None), Some(7)),
            (event(EventKind::Recovered, Some("wh-a")), Some(8)),
            (event(EventKind::Died, None), Some(8)),
            (event(EventKind::Started, Some("wh-a")), Some(9)),
        ];
        let (mut one, mut two) = (Incidents::default(), Incidents::default());
        let a: Vec<_> = events.iter().map(|(e, f)| one.name(e, *f)).collect();
        let b: Vec<_> = events.iter().map(|(e, f)| two.name(e, *f)).collect();
        assert_eq!(a, b);
        assert_eq!(a[0].as_ref().unwrap().id, "holder:7:wh-b:1");
        assert_eq!(a[1].as_ref().unwrap().id, "died:7:wh-a:1");
        assert_eq!(a[2].as_ref().unwrap().family, Family::Down, "a recovery ends the death before it");
        assert_eq!(a[4], None, "a start is no incident");
    }

    /// A process frozen through a failover and the failover back sees the
    /// second as a restart on the same server: still the same new holding.
    #[test]
    fn a_failover_back_seen_as_a_restart_is_the_same_incident() {
        let mut awake = Incidents::default();
        let mut frozen = Incidents::default();
        let back = awake.name(&event(EventKind::Failover, Some("wh-a")), Some(9)).unwrap();
        let mut restarted = event(EventKind::Restarted, Some("wh-a"));
        restarted.from = Some(HolderRef { field: "a:0".into(), node: Some("wh-a".into()) });
        assert_eq!(frozen.name(&restarted, Some(9)).unwrap().id, back.id);
    }

    #[test]
    fn the_same_incident_seen_again_is_a_new_one() {
        let mut seen = Incidents::default();
        let first = seen.name(&event(EventKind::Stalled, None), Some(3)).unwrap();
        let again = seen.name(&event(EventKind::Stalled, None), Some(3)).unwrap();
        assert_ne!(first.id, again.id);
        assert_eq!(first.family, again.family);
    }
}
