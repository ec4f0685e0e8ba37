//! What wakes the watchers between their looks, for every job one process
//! watches on one Redis: one connection reads all the jobs' event streams
//! (one blocking `XREAD`), one subscribes to all their channels, and each
//! entry or message wakes the job it belongs to. Anything heard proves that
//! Redis answers, for every job alike. On a Cluster each job's keys and
//! channels live on the node owning its slot: there each job has its own.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use redis::Value;
use tokio::sync::{Notify, watch};

use crate::clock::millis;
use crate::connect::{Backoff, Target};
use crate::heard::{Heard, Listeners};
use crate::keys::{Keys, keyspace_pattern};

/// One job's event stream and whom an entry wakes.
pub(super) struct Stream {
    pub key: String,
    pub entry: Arc<Notify>,
    pub heard: Arc<Heard>,
}

/// Wakes each job's watcher on every new entry of its event stream.
pub(super) async fn follow_streams(target: Target, streams: Vec<Stream>, mut stop: watch::Receiver<bool>) {
    // Long: each answer is a round trip Redis pays for, and an entry ends it at once.
    const BLOCK: Duration = Duration::from_secs(30);
    let mut backoff = Backoff::default();
    while !*stop.borrow() {
        let mut conn = tokio::select! {
            conn = target.dedicated(BLOCK) => match conn {
                Ok(conn) => conn,
                Err(_) => { backoff.wait(&mut stop).await; continue; }
            },
            _ = stop.changed() => return,
        };
        // From the newest entry of each stream on: one left at `$` would
        // miss what came while another's entry was being answered.
        let mut ids = Vec::with_capacity(streams.len());
        for stream in &streams {
            let newest = redis::cmd("XREVRANGE").arg(&stream.key).arg("+").arg("-").arg("COUNT").arg(1).to_owned();
            let id = match newest.query_async::<Value>(&mut conn).await {
                Ok(value) => entry_ids(&value).last().cloned().unwrap_or_else(|| "0-0".to_owned()),
                Err(_) => "$".to_owned(),
            };
            ids.push(id);
        }
        loop {
            let mut xread = redis::cmd("XREAD");
            xread.arg("COUNT").arg(100).arg("BLOCK").arg(millis(BLOCK)).arg("STREAMS");
            for stream in &streams {
                xread.arg(&stream.key);
            }
            xread.arg(&ids);
            let read = xread.query_async::<Value>(&mut conn);
            let reply = tokio::select! {
                reply = read => reply,
                _ = stop.changed() => return,
            };
            match reply {
                Ok(value) => {
                    backoff.reset();
                    for stream in &streams {
                        stream.heard.something();
                    }
                    for (key, last) in newest_entries(&value) {
                        if let Some(i) = streams.iter().position(|s| s.key.as_bytes() == key.as_slice()) {
                            ids[i] = last;
                            streams[i].entry.notify_one();
                        }
                    }
                }
                Err(err) => {
                    tracing::debug!(error = %err, "event stream read failed");
                    backoff.wait(&mut stop).await;
                    break;
                }
            }
        }
    }
}

/// Tells each job's `listeners` of Redisson unlock messages, flip
/// announcements, keyspace notifications (when the server sends them) and,
/// where they listen for them, the workers' beats.
pub(crate) async fn follow_channels(target: Target, jobs: Vec<(Keys, Listeners)>, mut stop: watch::Receiver<bool>) {
    if target.is_cluster() {
        let followed = jobs
            .into_iter()
            .map(|(keys, listeners)| crate::connect::sharded::follow(target.clone(), keys, listeners, stop.clone()));
        futures_util::future::join_all(followed).await;
        return;
    }
    let mut backoff = Backoff::default();
    while !*stop.borrow() {
        let mut pubsub = tokio::select! {
            conn = target.pubsub() => match conn {
                Ok(conn) => conn,
                Err(_) => { backoff.wait(&mut stop).await; continue; }
            },
            _ = stop.changed() => return,
        };
        // A server that accepted the connection may still never answer: the
        // subscriptions are bounded, and a stop request ends them at once.
        let subscribing = async {
            for (keys, listeners) in &jobs {
                subscribe(&mut pubsub, keys, listeners.beat_channel()).await?;
            }
            Ok::<(), redis::RedisError>(())
        };
        let subscribed = tokio::select! {
            result = tokio::time::timeout(SUBSCRIBE_PATIENCE * jobs.len().max(1) as u32, subscribing) => result,
            _ = stop.changed() => return,
        };
        if let Err(err) = subscribed
            .unwrap_or_else(|_| Err(redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))))
        {
            tracing::debug!(error = %err, "subscribing to the unlock channel failed");
            backoff.wait(&mut stop).await;
            continue;
        }
        backoff.reset();
        let mut messages = pubsub.on_message();
        loop {
            tokio::select! {
                message = messages.next() => match message {
                    Some(message) => tell(&jobs, message.get_channel_name().as_bytes(), message.get_payload_bytes()),
                    None => break,
                },
                _ = stop.changed() => return,
            }
        }
        // A connection that closed is news too: Redis may be gone, so look now.
        for (_, listeners) in &jobs {
            listeners.wake.notify_one();
        }
        backoff.wait(&mut stop).await;
    }
}

/// Tells a message to the job it belongs to; that Redis answers, to all.
fn tell(jobs: &[(Keys, Listeners)], channel: &[u8], payload: &[u8]) {
    if let [(_, listeners)] = jobs {
        return listeners.message(channel, payload);
    }
    for (_, listeners) in jobs {
        if listeners.owns(channel) {
            listeners.message(channel, payload);
        } else {
            listeners.something();
        }
    }
}

/// How long subscribing to one job's channels may take before the
/// connection counts as dead.
const SUBSCRIBE_PATIENCE: Duration = Duration::from_secs(3);

/// Subscribes to Redisson's unlock channel and, where the server sends them,
/// the keyspace notifications of the job's keys.
async fn subscribe(pubsub: &mut redis::aio::PubSub, keys: &Keys, beats: Option<&str>) -> redis::RedisResult<()> {
    pubsub.subscribe(keys.unlock_channel()).await?;
    // A supervisor's flip and the workers' beats: optional, as a user
    // provisioned before them may lack the channels (the watcher then asks).
    let mut optional = vec![keys.wake_channel()];
    optional.extend(beats.map(str::to_owned));
    for channel in optional {
        if let Err(err) = pubsub.subscribe(&channel).await {
            tracing::debug!(channel = %channel, error = %err, "channel unavailable");
        }
    }
    // Keyspace notifications are a bonus: a server without them, or an ACL
    // without the pattern, still leaves the unlock channel and the stream.
    let mut patterns = vec![keyspace_pattern(&keys.prefix, true)];
    if !keys.lock.starts_with(&keys.prefix) {
        patterns.push(keyspace_pattern(&keys.lock, false));
    }
    for pattern in patterns {
        if let Err(err) = pubsub.psubscribe(&pattern).await {
            tracing::debug!(pattern = %pattern, error = %err, "keyspace notifications unavailable");
        }
    }
    Ok(())
}

/// Each stream of an `XREAD` reply with the id of its last entry.
fn newest_entries(value: &Value) -> Vec<(Vec<u8>, String)> {
    let streams = match value {
        Value::Array(streams) => streams.iter().filter_map(|s| as_pair(s)).collect(),
        // RESP3 answers with a map of stream → entries.
        Value::Map(streams) => streams.iter().map(|(k, v)| (k, v)).collect(),
        _ => Vec::new(),
    };
    streams
        .into_iter()
        .filter_map(|(key, entries)| {
            let key = match key {
                Value::BulkString(key) => key.clone(),
                Value::SimpleString(key) => key.clone().into_bytes(),
                _ => return None,
            };
            Some((key, entry_ids(entries).pop()?))
        })
        .collect()
}

fn as_pair(value: &Value) -> Option<(&Value, &Value)> {
    match value {
        Value::Array(pair) if pair.len() == 2 => Some((&pair[0], &pair[1])),
        _ => None,
    }
}

/// The ids of a list of stream entries, in order.
fn entry_ids(entries: &Value) -> Vec<String> {
    let Value::Array(entries) = entries else { return Vec::new() };
    entries
        .iter()
        .filter_map(|entry| match entry {
            Value::Array(entry) => match entry.first() {
                Some(Value::BulkString(id)) => Some(String::from_utf8_lossy(id).into_owned()),
                Some(Value::SimpleString(id)) => Some(id.clone()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    fn entry(id: &str) -> Value {
        Value::Array(vec![bulk(id), Value::Array(vec![bulk("event"), bulk("x")])])
    }

    #[test]
    fn each_stream_of_a_reply_names_its_newest_entry() {
        let reply = Value::Array(vec![
            Value::Array(vec![bulk("{a}:events"), Value::Array(vec![entry("1-0"), entry("2-0")])]),
            Value::Array(vec![bulk("{b}:events"), Value::Array(vec![entry("7-1")])]),
        ]);
        let found = newest_entries(&reply);
        assert_eq!(found, vec![(b"{a}:events".to_vec(), "2-0".to_owned()), (b"{b}:events".to_vec(), "7-1".to_owned())]);
        assert!(newest_entries(&Value::Nil).is_empty(), "a timeout names nothing");
        let map = Value::Map(vec![(bulk("{c}:events"), Value::Array(vec![entry("3-0")]))]);
        assert_eq!(newest_entries(&map), vec![(b"{c}:events".to_vec(), "3-0".to_owned())]);
    }

    #[test]
    fn a_message_wakes_its_own_job_only() {
        use futures_util::FutureExt as _;
        let jobs: Vec<(Keys, Listeners)> = ["a", "b"]
            .iter()
            .map(|job| {
                let keys = Keys::new(job);
                let listeners = Listeners::new(&keys, Arc::new(Notify::new())).hearing(Arc::new(Heard::default()));
                (keys, listeners)
            })
            .collect();
        tell(&jobs, b"{b}:wake", b"alice");
        let woken = |i: usize| jobs[i].1.wake.notified().now_or_never().is_some();
        assert!(!woken(0) && woken(1));
        tell(&jobs, b"__keyspace@0__:{a}:lock", b"del");
        assert!(woken(0) && !woken(1));
    }
}
