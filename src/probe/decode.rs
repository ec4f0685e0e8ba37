//! Decoding the probe's reply into a [`Snapshot`]: the whole reply, or a
//! glance laid over the last full read. Pure: unit-tested with hand-made
//! replies (`tests.rs`).

use redis::Value;

use crate::error::Error;
use crate::keys::Keys;
use crate::snapshot::{Beat, Flag, Snapshot, StreamEntry, StreamId, escape_bytes};

use super::fields::{
    array, bytes, decode_ack, decode_beat, decode_fence, decode_flag, decode_lock, decode_set, int, note_oversized,
    text,
};

/// Decodes the reply of a [`look`](super::look): a full read with its fingerprint, or a
/// glance laid over `base`, the full read it was measured against (then
/// without a fingerprint: `base` stays the one to compare with). Pure.
///
/// # Errors
/// [`Error::Unreadable`] when the reply has neither shape, or is a glance
/// with no `base`.
pub fn decode_look(keys: &Keys, reply: &Value, base: Option<&Snapshot>) -> Result<(Snapshot, Option<String>), Error> {
    let bad = |what: &str| Error::Unreadable { key: keys.job.clone(), what: what.to_owned() };
    let parts = array(reply).ok_or_else(|| bad("the probe reply is not an array"))?;
    if parts.first().and_then(text).as_deref() != Some("glance") {
        let snap = decode(keys, reply, None)?;
        let fingerprint =
            parts.iter().find(|part| tagged(part, "fingerprint")).and_then(array).and_then(|p| p.get(1)).and_then(text);
        return Ok((snap, fingerprint));
    }
    let [_, _, time, lock, names, beats, presence] = parts else {
        return Err(bad("the probe's glance has the wrong number of parts"));
    };
    let base = base.ok_or_else(|| bad("a glance came with no full read to lay it over"))?;
    let time_ms = decode_time(time).ok_or_else(|| bad("Redis TIME is unreadable"))?;
    let mut problems = Vec::new();
    let lock = decode_lock(&keys.lock, lock, &mut problems);
    let names: Vec<String> = array(names).unwrap_or_default().iter().filter_map(bytes).map(escape_bytes).collect();
    let beats = decode_beats(keys, &names, beats, std::slice::from_ref(presence), &mut problems);
    let acks = base.acks.iter().filter(|a| a.until_ms > time_ms).cloned().collect();
    Ok((Snapshot { time_ms, lock, beats, acks, problems, ..base.clone() }, None))
}

/// [`Error::Unreadable`] when the reply does not have the script's shape.
pub fn decode(keys: &Keys, reply: &Value, lock_reply: Option<&Value>) -> Result<Snapshot, Error> {
    let bad = |what: &str| Error::Unreadable { key: keys.job.clone(), what: what.to_owned() };
    let parts = array(reply).ok_or_else(|| bad("the probe reply is not an array"))?;
    let [time, lock, fence, users, flags, nodes, beats, later @ ..] = parts else {
        return Err(bad("the probe reply has the wrong number of parts"));
    };
    let mut snap =
        Snapshot { time_ms: decode_time(time).ok_or_else(|| bad("Redis TIME is unreadable"))?, ..Default::default() };
    let lock = match lock_reply {
        Some(other) => array(other).and_then(|p| p.get(1)).ok_or_else(|| bad("the lock reply is unreadable"))?,
        None => lock,
    };
    snap.lock = decode_lock(&keys.lock, lock, &mut snap.problems);
    let known_problems = snap.problems.len();
    snap.fence = decode_fence(&keys.fence(), fence, &mut snap.problems);
    snap.fence_unreadable = snap.problems.len() > known_problems;
    let user_names = decode_set(&keys.users(), users, &mut snap.problems);
    snap.flags = pair_up(user_names.as_deref().unwrap_or_default(), flags)
        .map(|(user, reply)| {
            note_oversized(&keys.enabled(user), reply, &mut snap.oversized);
            decode_flag(&keys.enabled(user), user, reply, snap.time_ms, &mut snap.problems)
        })
        .collect();
    snap.flags.sort_by(|a, b| a.user.cmp(&b.user));
    let node_names = decode_set(&keys.nodes(), nodes, &mut snap.problems).unwrap_or_default();
    // A fence counter above 0, a lock held or a server registered means a
    // server took the job, which needs a registered user's flag on: a
    // missing registry was lost (with the fence counter, maybe), not never made.
    let ran = snap.fence.is_some_and(|f| f > 0) || snap.lock.is_held() || !node_names.is_empty();
    let registry_lost = redis_type(users).as_deref() == Some("none") && ran;
    if registry_lost {
        snap.problems.push(format!(
            "Redis lost the registry {} (the job's fence counter, lock or servers show it ran), so whose flags count cannot be told; provision the supervisors again (lockwatch acl prints the SADD) or have each switch their flag again",
            keys.users()
        ));
    }
    if user_names.is_none() || registry_lost {
        // Stands for the flags that could not be read, so that nobody (the
        // status, a worker) takes them for "nobody has it enabled".
        snap.flags.push(Flag { user: keys.users(), on: None, at_ms: None, host: None });
    }
    snap.beats = decode_beats(keys, &node_names, beats, later, &mut snap.problems);
    snap.recent_events = later
        .iter()
        .find(|part| tagged(part, "events"))
        .and_then(|part| decode_tail(&keys.events(), part, &mut snap.problems));
    if let Some(part) = later.iter().find(|part| tagged(part, "acks")) {
        let replies = array(part).and_then(|p| p.get(2)).cloned().unwrap_or(Value::Nil);
        let names = user_names.as_deref().unwrap_or_default();
        snap.acks = pair_up(names, &replies)
            .filter_map(|(user, reply)| {
                note_oversized(&keys.ack(user), reply, &mut snap.oversized);
                decode_ack(&keys.ack(user), user, reply, snap.time_ms, &mut snap.problems)
            })
            .collect();
        snap.acks.sort_by(|a, b| a.user.cmp(&b.user));
    }
    let tail_type = later.iter().find(|part| tagged(part, "events")).and_then(|p| array(p)?.get(1)).and_then(text);
    let absent = [lock, fence, users, nodes].iter().all(|v| redis_type(v).as_deref() == Some("none"))
        && tail_type.as_deref() == Some("none");
    snap.job_absent = absent.then(|| {
        format!(
            "no job named {} on this Redis (no lock, supervisors, servers, fence or history under {}:*): check the job name (--job) and the Redis address",
            keys.job, keys.prefix
        )
    });
    Ok(snap)
}

/// The Redis type a part of the probe's reply starts with (`none` for a missing key).
fn redis_type(v: &Value) -> Option<String> {
    array(v)?.first().and_then(text)
}

/// The heartbeats of `names`, with each worker's presence from the part
/// of `later` tagged `alive`, sorted by node.
fn decode_beats(
    keys: &Keys,
    names: &[String],
    beats: &Value,
    later: &[Value],
    problems: &mut Vec<String>,
) -> Vec<Beat> {
    let subscribers = presence_counts(later);
    let mut out: Vec<Beat> = pair_up(names, beats)
        .enumerate()
        .map(|(i, (node, reply))| {
            let mut beat = decode_beat(&keys.node(node), node, reply, problems);
            let count = beat.present.and(subscribers.get(i).copied().flatten());
            beat.presence_elsewhere = count == Some(CLAIMED_ELSEWHERE);
            beat.present = count.filter(|n| *n >= 0).map(|n| n > 0);
            beat
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// The presence count of a claim made in another server process than the
/// one the probe read (`probe.lua`'s -2).
const CLAIMED_ELSEWHERE: i64 = -2;

/// Subscribers of each node's presence channel, in the order of the nodes
/// read (`None`: not asked; negative: not known, or [`CLAIMED_ELSEWHERE`]).
fn presence_counts(later: &[Value]) -> Vec<Option<i64>> {
    let Some(part) = later.iter().find(|part| tagged(part, "alive")).and_then(array) else { return Vec::new() };
    if part.get(1).and_then(text).as_deref() != Some("read") {
        return Vec::new();
    }
    let counts = part.get(2).and_then(array).unwrap_or_default();
    counts.iter().map(int).collect()
}

/// True when a later part of the reply is the one named `tag`.
fn tagged(part: &Value, tag: &str) -> bool {
    array(part).and_then(|p| p.first()).and_then(text).is_some_and(|t| t == tag)
}

/// The stream's newest entries (`{'events', type, {id, type, …}}`), newest
/// first; `None` when the stream was not read or is not a stream.
fn decode_tail(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<Vec<StreamEntry>> {
    let parts = array(v).unwrap_or_default();
    match parts.get(1).and_then(text).as_deref() {
        Some("stream") => {}
        Some("none") => return Some(Vec::new()),
        Some("unread") | None => return None,
        Some(other) => {
            problems.push(format!("the event stream {key} is a {other}, not a stream"));
            return None;
        }
    }
    let items = parts.get(2).and_then(array).unwrap_or_default();
    let entries = items
        .chunks(2)
        .filter_map(|c| {
            let id = StreamId::parse(&text(c.first()?)?)?;
            Some(StreamEntry { id, kind: c.get(1).and_then(text).unwrap_or_default() })
        })
        .collect();
    Some(entries)
}

fn pair_up<'a>(names: &'a [String], replies: &'a Value) -> impl Iterator<Item = (&'a String, &'a Value)> {
    names.iter().zip(array(replies).unwrap_or_default())
}

fn decode_time(v: &Value) -> Option<u64> {
    let [secs, micros] = array(v)? else { return None };
    let secs = u64::try_from(int(secs)?).ok()?;
    let micros = u64::try_from(int(micros)?).ok()?;
    Some(secs * 1000 + micros / 1000)
}
