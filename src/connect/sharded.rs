//! Sharded pub/sub on a Redis Cluster. Redisson 3.22+ on a Redis 7 cluster
//! publishes its unlock `0` with `SPUBLISH`, and only the node that owns a
//! channel's slot serves it: so the watcher and the worker `SSUBSCRIBE` the
//! unlock and wake channels there, and listen to that node's keyspace
//! notifications (each node sends only its own keys' events). Older
//! Redisson (or its sharded mode off) publishes plain, which the cluster
//! sends to every node: the unlock channel is subscribed plain there too.
//!
//! A worker's presence (`{job}:alive:<node>`, see [`crate::work::presence`]) is
//! held the same way, on a connection of its own, which also says which
//! server process holds it.
//!
//! Each slot owner gets a plain RESP3 connection used for nothing else.
//! When the slot moves away the server ends the subscription with a
//! `sunsubscribe` nobody asked for; on a connection that also sent commands
//! the driver would take it for a command's answer. Here it is the signal to
//! look (something moved) and to subscribe again on the slot's new owner.

use std::time::Duration;

use redis::{PushInfo, PushKind, Value};
use tokio::sync::{Notify, mpsc, watch};

use super::Backoff;
use crate::connect::Target;
use crate::error::{Action, Error, describe};
use crate::heard::Listeners;
use crate::keys::{Keys, keyspace_pattern};

/// How long finding the owner and subscribing may take before the attempt
/// counts as failed.
const PATIENCE: Duration = Duration::from_secs(5);

/// What happens to a shard's subscriptions, told to whoever follows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Subscribed on the slot's owner; `again` after an earlier loss.
    /// `server` is the owner's run id, for a shard that asks for it.
    Subscribed { again: bool, server: Option<String> },
    /// A message on one of the channels or patterns: its channel and payload.
    Message { channel: Vec<u8>, payload: Vec<u8> },
    /// The subscriptions ended: the slot moved away or the connection closed.
    /// Subscribing again follows at once.
    Lost,
}

/// The subscriptions that live on one slot's owner.
pub(crate) struct Shard {
    /// A key of the slot: names the owner to ask for.
    key: String,
    /// Sharded channels, and whether a refusal of it fails the subscriber
    /// (the wake channel is optional: users provisioned before it lack it).
    channels: Vec<(String, bool)>,
    /// Channels subscribed plain as well: Redisson before 3.22 publishes its
    /// unlock with `PUBLISH`.
    plain: Vec<String>,
    /// Keyspace-notification patterns: a bonus where the server sends them.
    patterns: Vec<String>,
    /// Whether to read the owner's run id before subscribing: a presence
    /// claim names the server process its subscription lives in.
    identify: bool,
}

impl Shard {
    /// A worker's presence: one required sharded channel, whose own slot
    /// names the owner, and the owner's run id.
    pub(crate) fn presence(channel: String) -> Shard {
        Shard {
            key: channel.clone(),
            channels: vec![(channel, true)],
            plain: Vec::new(),
            patterns: Vec::new(),
            identify: true,
        }
    }
}

/// Tells `listeners` of every unlock message, flip announcement, keyspace
/// notification and, where they listen for them, beat of the job until
/// `stop`; follows the slots when they move.
pub(crate) async fn follow(target: Target, keys: Keys, listeners: Listeners, stop: watch::Receiver<bool>) {
    let mut job = Shard {
        key: keys.fence(),
        channels: vec![(keys.wake_channel(), false)],
        plain: Vec::new(),
        patterns: vec![keyspace_pattern(&keys.prefix, true)],
        identify: false,
    };
    if let Some(beat) = listeners.beat_channel() {
        job.channels.push((beat.to_owned(), false));
    }
    let mut shards = Vec::new();
    // The unlock channel hashes like the lock key: with the job, or apart.
    if keys.lock_shares_slot() {
        job.channels.insert(0, (keys.unlock_channel(), true));
        job.plain.push(keys.unlock_channel());
    } else {
        shards.push(Shard {
            key: keys.lock.clone(),
            channels: vec![(keys.unlock_channel(), true)],
            plain: vec![keys.unlock_channel()],
            patterns: vec![keyspace_pattern(&keys.lock, false)],
            identify: false,
        });
    }
    shards.push(job);
    // Anything but the first subscription is news: a message, or a moment
    // nobody listened (a message may have gone out then; Redis may be gone).
    let on_change = |change: Change| match change {
        Change::Subscribed { again: false, .. } => {}
        Change::Message { channel, payload } => listeners.message(&channel, &payload),
        _ => listeners.wake.notify_one(),
    };
    let followers = shards.into_iter().map(|shard| follow_shard(&target, shard, &on_change, None, stop.clone()));
    futures_util::future::join_all(followers).await;
}

/// Holds the shard's subscriptions on its slot's owner until `stop`, and
/// on its next owner when the slot moves or `again` asks for it; tells `on`
/// of every [`Change`].
pub(crate) async fn follow_shard(
    target: &Target,
    shard: Shard,
    on: impl Fn(Change),
    again: Option<&Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Backoff::default();
    let mut first = true;
    while !*stop.borrow() {
        let (pushes, mut received) = mpsc::unbounded_channel();
        let subscribed = tokio::select! {
            result = tokio::time::timeout(PATIENCE, subscribe(target, &shard, pushes)) => result,
            _ = stop.changed() => return,
        };
        // Held for as long as the subscriptions are wanted.
        let (_conn, server) = match subscribed {
            Ok(Ok(held)) => held,
            Ok(Err(err)) => {
                tracing::debug!(key = %shard.key, error = %err, "sharded subscription failed");
                backoff.wait(&mut stop).await;
                continue;
            }
            Err(_) => {
                tracing::debug!(key = %shard.key, "sharded subscription did not answer in time");
                backoff.wait(&mut stop).await;
                continue;
            }
        };
        backoff.reset();
        on(Change::Subscribed { again: !first, server });
        first = false;
        loop {
            tokio::select! {
                push = received.recv() => match push.map(|p| (p.kind, p.data)) {
                    Some((PushKind::Message | PushKind::SMessage | PushKind::PMessage, data)) => on(message(&data)),
                    Some((PushKind::SUnsubscribe, _)) => {
                        tracing::debug!(key = %shard.key, "the slot moved; subscribing on its new owner");
                        on(Change::Lost);
                        break;
                    }
                    Some((PushKind::Disconnection, _)) | None => {
                        on(Change::Lost);
                        break;
                    }
                    Some(_) => {}
                },
                _ = async { match again { Some(again) => again.notified().await, None => std::future::pending().await } } => {
                    tracing::info!(key = %shard.key, "subscribing again on the slot's owner");
                    on(Change::Lost);
                    break;
                }
                _ = stop.changed() => return,
            }
        }
    }
}

/// Subscribes on the owner of the shard's slot, following a redirection
/// when the cluster's map was already out of date; returns the connection
/// and, if the shard asks for it, the owner's run id.
async fn subscribe(
    target: &Target,
    shard: &Shard,
    pushes: mpsc::UnboundedSender<PushInfo>,
) -> Result<(redis::aio::MultiplexedConnection, Option<String>), Error> {
    let mut owner = target.slot_owner(&shard.key).await?;
    let mut hops = 0;
    'node: loop {
        let at = crate::address::Endpoint::new(format!("{}:{}", owner.0, owner.1), target.endpoint().tls());
        let mut conn = target.node_subscriber(&owner, pushes.clone()).await?;
        // Asked before subscribing: on this connection a server's answer
        // cannot be mistaken for the `sunsubscribe` of a moved slot.
        let server = if shard.identify { crate::connect::run_id(&mut conn).await } else { None };
        for (channel, required) in &shard.channels {
            match redis::cmd("SSUBSCRIBE").arg(channel).query_async::<Value>(&mut conn).await {
                Ok(_) => {}
                Err(err) if err.redirect_node().is_some() && hops < 3 => {
                    if let Some(to) = err.redirect_node().and_then(|(addr, _)| split_addr(addr)) {
                        hops += 1;
                        owner = to;
                        continue 'node;
                    }
                    return Err(describe(err, Action::Subscribing, &at));
                }
                Err(err) if *required => return Err(describe(err, Action::Subscribing, &at)),
                Err(err) => tracing::debug!(channel = %channel, error = %err, "sharded channel unavailable"),
            }
        }
        for channel in &shard.plain {
            if let Err(err) = redis::cmd("SUBSCRIBE").arg(channel).query_async::<Value>(&mut conn).await {
                tracing::debug!(channel = %channel, error = %err, "plain channel unavailable");
            }
        }
        for pattern in &shard.patterns {
            if let Err(err) = redis::cmd("PSUBSCRIBE").arg(pattern).query_async::<Value>(&mut conn).await {
                tracing::debug!(pattern = %pattern, error = %err, "keyspace notifications unavailable");
            }
        }
        return Ok((conn, server));
    }
}

/// A message push as a [`Change`]: its data ends with the channel and the
/// payload (a pattern's message names the pattern first).
fn message(data: &[Value]) -> Change {
    let bytes = |v: Option<&Value>| match v {
        Some(Value::BulkString(b)) => b.clone(),
        Some(Value::SimpleString(s)) => s.clone().into_bytes(),
        _ => Vec::new(),
    };
    let at = data.len().saturating_sub(2);
    Change::Message { channel: bytes(data.get(at)), payload: bytes(data.get(at + 1)) }
}

/// `host:port` of a redirection, as `(host, port)`.
fn split_addr(addr: &str) -> Option<(String, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    Some((host.trim_matches(['[', ']']).to_owned(), port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirection_names_host_and_port() {
        assert_eq!(split_addr("127.0.0.1:30001"), Some(("127.0.0.1".into(), 30001)));
        assert_eq!(split_addr("[::1]:30001"), Some(("::1".into(), 30001)));
        assert_eq!(split_addr("nowhere"), None);
    }
}
