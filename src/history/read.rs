//! Reading what the history is built from: the job's event stream (by
//! pages, from a bound), the flags with their reasons, the heartbeats and
//! Redis time. Only commands a supervisor's ACL grants (`EVALSHA_RO` via the
//! probe, `HMGET`, `XRANGE`, `XREVRANGE`).

use std::time::Duration;

use redis::Value;
use redis::aio::ConnectionLike;

use super::entry::{Entry, FlagFlip};
use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::keys::Keys;
use crate::probe::probe;
use crate::schema;
use crate::snapshot::{Beat, Flag, escape_bytes};

/// Entries fetched per `XRANGE` call.
const PAGE: usize = 1_000;

/// The most entries read: the workers cap the stream at about 10,000.
const MOST: usize = 20_000;

/// Entries read from before `since`, so that the run going on then is known.
const CONTEXT: usize = 64;

/// What one read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    /// Redis time of the read, ms.
    pub now_ms: u64,
    /// Stream entries, oldest first.
    pub entries: Vec<Entry>,
    /// Every readable flag's latest flip.
    pub flags: Vec<FlagFlip>,
    pub beats: Vec<Beat>,
    /// The acknowledgements in force ("I'm on it").
    pub acks: Vec<crate::snapshot::Ack>,
    /// The Redis time the read went back to, when it was bounded.
    pub since_ms: Option<u64>,
}

/// Reads the job's stream (the last `since` of it by Redis time, with a
/// little context before, or whole), flags and heartbeats.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses a read,
/// [`Error::Unreadable`] when the job's data has not the shape lockwatch writes.
pub async fn read<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &Keys,
    server: &Endpoint,
    since: Option<Duration>,
) -> Result<Read, Error> {
    let snap = probe(conn, keys, server).await?;
    let since_ms = since.map(|d| snap.time_ms.saturating_sub(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)));
    let flags = flags(conn, keys, &snap.flags, server).await?;
    let entries = entries(conn, keys, server, since_ms).await?;
    Ok(Read { now_ms: snap.time_ms, entries, flags, beats: snap.beats, acks: snap.acks, since_ms })
}

/// The latest flip of each readable flag in `read` (as the probe found
/// them), with its reason, which the probe does not keep.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses the read.
pub async fn flags<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &Keys,
    read: &[Flag],
    server: &Endpoint,
) -> Result<Vec<FlagFlip>, Error> {
    let readable: Vec<&Flag> = read.iter().filter(|f| f.on.is_some()).collect();
    if readable.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipe = redis::pipe();
    for f in &readable {
        pipe.cmd("HMGET").arg(keys.enabled(&f.user)).arg(schema::flag::REASON);
    }
    let reasons: Vec<Value> = pipe.query_async(conn).await.map_err(|e| describe(e, Action::ReadingReasons, server))?;
    Ok(readable
        .iter()
        .zip(reasons.iter().map(|r| array(r).and_then(|a| a.first()).and_then(text).filter(|r| !r.is_empty())))
        .map(|(f, reason)| FlagFlip {
            user: f.user.clone(),
            on: f.on == Some(true),
            at_ms: f.at_ms,
            host: f.host.clone(),
            reason,
        })
        .collect())
}

/// The stream's entries, oldest first: from `since_ms` on (with up to
/// 64 entries before it, for context), or all of them.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses the read.
pub async fn entries<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &Keys,
    server: &Endpoint,
    since_ms: Option<u64>,
) -> Result<Vec<Entry>, Error> {
    let stream = keys.events();
    let failed = |e| describe(e, Action::ReadingStream { key: stream.clone() }, server);
    let mut out = Vec::new();
    let mut start = "-".to_owned();
    if let Some(since) = since_ms {
        let before: Value = redis::cmd("XREVRANGE")
            .arg(&stream)
            .arg(format!("({since}-0"))
            .arg("-")
            .arg("COUNT")
            .arg(CONTEXT)
            .query_async(conn)
            .await
            .map_err(failed)?;
        out = decode_range(&before);
        out.reverse();
        start = format!("{since}-0");
    }
    loop {
        let page: Value = redis::cmd("XRANGE")
            .arg(&stream)
            .arg(&start)
            .arg("+")
            .arg("COUNT")
            .arg(PAGE)
            .query_async(conn)
            .await
            .map_err(failed)?;
        let (entries, last) = (decode_range(&page), last_id(&page));
        let full = array(&page).is_some_and(|a| a.len() >= PAGE);
        out.extend(entries);
        match last {
            Some(id) if full && out.len() < MOST => start = format!("({id}"),
            _ => break,
        }
    }
    Ok(out)
}

/// The latest flip recorded of each of `users` (on: true) among the last
/// [`PAGE`] entries; users with none there are left out.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses the read.
pub async fn latest_flips<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &Keys,
    users: &[String],
    server: &Endpoint,
) -> Result<Vec<(String, bool)>, Error> {
    let stream = keys.events();
    let page: Value = redis::cmd("XREVRANGE")
        .arg(&stream)
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(PAGE)
        .query_async(conn)
        .await
        .map_err(|e| describe(e, Action::ReadingStream { key: stream.clone() }, server))?;
    let mut found: Vec<(String, bool)> = Vec::new();
    for entry in decode_range(&page) {
        if let super::Record::FlagsChanged(flip) = entry.record
            && users.contains(&flip.user)
            && !found.iter().any(|(u, _)| *u == flip.user)
        {
            found.push((flip.user, flip.on));
        }
    }
    Ok(found)
}

/// Entries of an `XRANGE`/`XREVRANGE` reply, in its order; entries that are
/// not lockwatch's (no `type`, a bad id) are left out.
pub fn decode_range(reply: &Value) -> Vec<Entry> {
    array(reply)
        .unwrap_or_default()
        .iter()
        .filter_map(|item| {
            let parts = array(item)?;
            let id = parts.first().and_then(text)?;
            let fields: Vec<(String, String)> = array(parts.get(1)?)?
                .chunks(2)
                .filter_map(|c| Some((c.first().and_then(text)?, c.get(1).and_then(text)?)))
                .collect();
            Entry::decode(&id, &fields)
        })
        .collect()
}

/// The last id of a range reply, to go on after it.
fn last_id(reply: &Value) -> Option<String> {
    array(reply)?.last().and_then(array).and_then(|p| p.first()).and_then(text)
}

fn array(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::BulkString(b) => Some(escape_bytes(b)),
        Value::SimpleString(s) => Some(escape_bytes(s.as_bytes())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::Record;
    use crate::schema::{entry as f, kind};

    fn s(t: &str) -> Value {
        Value::BulkString(t.as_bytes().to_vec())
    }

    #[test]
    fn a_range_reply_becomes_entries_and_foreign_ones_are_skipped() {
        let entry =
            |id: &str, fields: &[&str]| Value::Array(vec![s(id), Value::Array(fields.iter().map(|f| s(f)).collect())]);
        let reply = Value::Array(vec![
            entry("1700000000000-0", &[f::TYPE, kind::ACQUIRED, f::NODE, "srv-a", f::FENCE, "3", f::FIELD, "u:1"]),
            entry("1700000000001-0", &["note", "written by hand"]),
            entry("1700000000002-0", &[f::TYPE, kind::RELEASED, f::NODE, "srv-a", f::FENCE, "3", f::CAUSE, "shutdown"]),
        ]);
        let entries = decode_range(&reply);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].node.as_deref(), Some("srv-a"));
        assert!(matches!(entries[0].record, Record::Acquired { fence: Some(3), .. }));
        assert_eq!(last_id(&reply).as_deref(), Some("1700000000002-0"));
        assert!(decode_range(&Value::Nil).is_empty());
    }
}
