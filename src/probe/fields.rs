//! Decoding each part of the probe's reply: the lock, the fence, a
//! registry, and the hashes (a flag, an "on it", a heartbeat), whose
//! fields the schema names. Pure.

use redis::Value;

use crate::keys::{PRESENCE_PLAIN, PRESENCE_SHARDED};
use crate::schema::{BeatState, ack, beat, flag};
use crate::snapshot::{Ack, Beat, Flag, Lock, LockKind, escape_bytes};

/// A Redisson hold count is small; a value this large is a timestamp in ms,
/// which marks a task-alternation hash.
const TIMESTAMP_MS_FLOOR: i64 = 100_000_000_000;

pub(super) fn decode_lock(key: &str, v: &Value, problems: &mut Vec<String>) -> Lock {
    let parts = array(v).unwrap_or_default();
    let redis_type = parts.first().and_then(text).unwrap_or_default();
    let ttl_ms = parts.get(1).and_then(int).and_then(|t| u64::try_from(t).ok());
    let mut lock = Lock { ttl_ms, redis_type: redis_type.clone(), ..Default::default() };
    match redis_type.as_str() {
        "none" | "" => {}
        "string" => {
            lock.kind = LockKind::String;
            let token = parts.get(3).and_then(bytes).unwrap_or_default();
            let len = parts.get(2).and_then(int).unwrap_or(0);
            let mut shown = escape_bytes(token);
            if len > token.len() as i64 {
                shown.push_str(&format!("… ({len} bytes)"));
            }
            lock.holders.push(shown);
        }
        "hash" => {
            let fields = pairs(parts.get(3));
            let total = parts.get(2).and_then(int).unwrap_or(fields.len() as i64);
            let values: Vec<Option<i64>> = fields.iter().map(|(_, v)| v.as_deref().and_then(parse_int)).collect();
            lock.kind = if fields.len() == 1 && values[0].is_some_and(|v| v >= TIMESTAMP_MS_FLOOR) {
                lock.next_run_ms = values[0];
                LockKind::Alternation
            } else if fields.iter().all(|(f, _)| looks_like_redisson_field(f)) && values.iter().all(Option::is_some) {
                LockKind::Redisson
            } else {
                LockKind::Hash
            };
            lock.holders = fields.into_iter().map(|(f, _)| f).collect();
            if total > lock.holders.len() as i64 {
                problems.push(format!("the lock hash {key} has {total} fields; only {} are shown", lock.holders.len()));
            }
        }
        other => {
            lock.kind = LockKind::Unreadable;
            problems.push(format!("the lock key {key} is a {other}, not a hash or string lock"));
        }
    }
    lock
}

/// Redisson writes `<client uuid>:<thread id>`; its ports without threads
/// (node-redisson) `<client uuid>:<lock uuid>`.
fn looks_like_redisson_field(field: &str) -> bool {
    field.rsplit_once(':').is_some_and(|(id, thread)| {
        !id.is_empty()
            && !thread.is_empty()
            && (thread.bytes().all(|b| b.is_ascii_digit()) || uuid::Uuid::parse_str(thread).is_ok())
    })
}

pub(super) fn decode_fence(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<i64> {
    let parts = array(v).unwrap_or_default();
    match parts.first().and_then(text).as_deref() {
        Some("string") => {
            let value = parts.get(1).and_then(bytes).unwrap_or_default();
            let fence = parse_int(&escape_bytes(value));
            if fence.is_none() {
                problems.push(format!("the fence counter {key} holds {:?}, not a number", escape_bytes(value)));
            }
            fence
        }
        Some("none") => None,
        other => {
            problems.push(format!("the fence counter {key} is a {}, not a string", other.unwrap_or("?")));
            None
        }
    }
}

/// Every name of a registry, or `None` when it cannot be read whole (not a
/// set, or more names than the probe reads), with the problem noted.
pub(super) fn decode_set(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<Vec<String>> {
    let parts = array(v).unwrap_or_default();
    let redis_type = parts.first().and_then(text).unwrap_or_default();
    if redis_type != "set" && redis_type != "none" {
        problems.push(format!("the registry {key} is a {redis_type}, not a set"));
        return None;
    }
    let total = parts.get(1).and_then(int).unwrap_or(0);
    // Names are used to build keys again, so they must stay exactly as stored;
    // escaping only changes names that are not valid UTF-8.
    let names: Vec<String> =
        parts.get(2).and_then(array).unwrap_or_default().iter().filter_map(bytes).map(escape_bytes).collect();
    if total > names.len() as i64 {
        problems.push(format!(
            "the registry {key} has {total} members, too many to read in one look; remove the names no longer in use"
        ));
        return None;
    }
    Some(names)
}

/// Fields of a hash reply as `(name, value)`, or `None` with a problem noted
/// when the key is not a hash.
fn decode_hash(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<Vec<(String, Option<String>)>> {
    let parts = array(v).unwrap_or_default();
    match parts.first().and_then(text).as_deref() {
        Some("hash") => match too_big(v) {
            Some(odd) => {
                problems.push(format!("{key} {odd}, more than lockwatch ever writes there"));
                None
            }
            None => Some(pairs(parts.get(2))),
        },
        Some("none") => Some(Vec::new()),
        other => {
            problems.push(format!("{key} is a {}, not a hash", other.unwrap_or("?")));
            None
        }
    }
}

/// How a hash the probe found too big to be what lockwatch writes is too
/// big (its reply's fourth part; its fields were not fetched), if it is.
fn too_big(v: &Value) -> Option<String> {
    let parts = array(v)?;
    (parts.first().and_then(text).as_deref() == Some("hash")).then(|| parts.get(3).and_then(text)).flatten()
}

/// Notes `key` when the probe found its hash too big to read.
pub(super) fn note_oversized(key: &str, v: &Value, oversized: &mut Vec<String>) {
    if too_big(v).is_some() {
        oversized.push(key.to_owned());
    }
}

/// A user's flag. Its time, which she writes herself, counts only up to
/// `now_ms` (Redis time): a flip dated ahead of it has no known time.
pub(super) fn decode_flag(key: &str, user: &str, v: &Value, now_ms: u64, problems: &mut Vec<String>) -> Flag {
    let mut flag = Flag { user: user.to_owned(), on: None, at_ms: None, host: None };
    if let Some(fields) = decode_hash(key, v, problems) {
        flag.on = match field(&fields, flag::ON) {
            // No hash at all: never written, or lost (`work::lost` tells).
            None if fields.is_empty() => Some(false),
            // The hash without `on` (deleted alone, or cut back): whether it
            // was on cannot be told, and it is no switch-off.
            None => {
                problems.push(format!(
                    "{key} has no {}; switch it on or off again (lockwatch enable or disable)",
                    flag::ON
                ));
                None
            }
            Some("0") => Some(false),
            Some("1") => Some(true),
            Some(on) if on.eq_ignore_ascii_case("true") => Some(true),
            Some(on) if on.eq_ignore_ascii_case("false") => Some(false),
            // Written by hand: on or off cannot be told, so it neither starts nor stops the job.
            Some(on) => {
                let shown: String = on.chars().take(20).collect();
                problems.push(format!(
                    "{key} holds {}={shown:?}, neither 1 nor 0; switch it on or off again (lockwatch enable or disable)",
                    flag::ON
                ));
                None
            }
        };
        flag.at_ms =
            field(&fields, flag::TIME).and_then(parse_int).and_then(|t| u64::try_from(t).ok()).filter(|&t| t <= now_ms);
        flag.host = field(&fields, flag::HOST).map(str::to_owned);
    }
    flag
}

/// A user's acknowledgement in force at `now_ms`; `None` when there is none,
/// it has ended (Redis may not have dropped it yet), or it cannot be read
/// (then with a problem noted).
pub(super) fn decode_ack(key: &str, user: &str, v: &Value, now_ms: u64, problems: &mut Vec<String>) -> Option<Ack> {
    let fields = decode_hash(key, v, problems)?;
    if fields.is_empty() {
        return None;
    }
    let time = |name: &str| field(&fields, name).and_then(parse_int).and_then(|t| u64::try_from(t).ok());
    let (Some(at_ms), Some(until_ms)) = (time(ack::AT_MS), time(ack::UNTIL_MS)) else {
        problems.push(format!("{key} has no readable {} and {}; lockwatch ack writes both", ack::AT_MS, ack::UNTIL_MS));
        return None;
    };
    let note = field(&fields, ack::NOTE).unwrap_or_default().to_owned();
    // She writes the times herself: said no later than now.
    (until_ms > now_ms).then(|| Ack { user: user.to_owned(), at_ms: at_ms.min(now_ms), until_ms, note })
}

pub(super) fn decode_beat(key: &str, node: &str, v: &Value, problems: &mut Vec<String>) -> Beat {
    let fields = decode_hash(key, v, problems).unwrap_or_default();
    let text = |name: &str| field(&fields, name).map(str::to_owned);
    let num = |name: &str| field(&fields, name).and_then(parse_int);
    let unsigned = |name: &str| num(name).and_then(|n| u64::try_from(n).ok());
    Beat {
        node: node.to_owned(),
        host: text(beat::HOST),
        pid: unsigned(beat::PID),
        lock_field: text(beat::LOCK_FIELD),
        fence: num(beat::FENCE),
        seq: unsigned(beat::SEQ),
        beat_ms: unsigned(beat::BEAT_MS),
        state: text(beat::STATE).map(|s| BeatState::parse(&s)),
        version: text(beat::VERSION),
        started_ms: unsigned(beat::STARTED_MS),
        child_pid: unsigned(beat::CHILD_PID),
        last_exit: text(beat::LAST_EXIT),
        wait_until_ms: unsigned(beat::WAIT_UNTIL_MS),
        held_until_ms: unsigned(beat::HELD_UNTIL_MS),
        waits_for: text(beat::WAITS_FOR).filter(|n| !n.is_empty()),
        renewed_ms: unsigned(beat::RENEWED_MS),
        instance: text(beat::INSTANCE).filter(|i| !i.is_empty()),
        invocation: text(beat::INVOCATION).filter(|i| !i.is_empty()),
        // Known once the subscriber count is read; `Some(_)` here only marks
        // that the worker says it holds the subscription.
        present: matches!(text(beat::PRESENCE).as_deref(), Some(PRESENCE_PLAIN | PRESENCE_SHARDED)).then_some(true),
        presence_on: text(beat::PRESENCE_ON).filter(|id| !id.is_empty()),
        // Known with the count, as `present` is.
        presence_elsewhere: false,
        lease_ms: unsigned(beat::LEASE_MS).filter(|ms| *ms > 0),
        flags_lost: text(beat::FLAGS_LOST)
            .map(|users| users.split(',').filter(|u| !u.is_empty()).map(str::to_owned).collect())
            .unwrap_or_default(),
    }
}

fn field<'a>(fields: &'a [(String, Option<String>)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(f, _)| f == name).and_then(|(_, v)| v.as_deref())
}

/// A flat `[field, value, field, value, …]` reply as pairs of escaped text.
fn pairs(v: Option<&Value>) -> Vec<(String, Option<String>)> {
    let items = v.and_then(array).unwrap_or_default();
    items
        .chunks(2)
        .map(|c| {
            (
                c.first().and_then(bytes).map(escape_bytes).unwrap_or_default(),
                c.get(1).and_then(bytes).map(escape_bytes),
            )
        })
        .collect()
}

fn parse_int(s: &str) -> Option<i64> {
    s.trim().parse().ok()
}

pub(super) fn array(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) | Value::Set(items) => Some(items),
        _ => None,
    }
}

pub(super) fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

pub(super) fn text(v: &Value) -> Option<String> {
    bytes(v).map(escape_bytes)
}

pub(super) fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => bytes(other).and_then(|b| std::str::from_utf8(b).ok()).and_then(parse_int),
    }
}
