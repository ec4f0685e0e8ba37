//! A worker's presence: a subscription to `{job}:alive:<node>` held on a
//! connection of its own for as long as the process lives. When the process
//! dies (`kill -9`, the OOM killer, a crash) the kernel closes the socket,
//! Redis drops the subscription at once, and every watcher's next look reads
//! `PUBSUB NUMSUB` 0: a crash is told within a look, not after the
//! heartbeat's grace or the lease. The heartbeat says whether the
//! subscription is up (field `presence`), so a connection that broke while
//! the process lives is said in the next beat rather than taken for a death.
//!
//! On a Redis Cluster the subscription is sharded (`SSUBSCRIBE`) and held on
//! the owner of the job's slot, where the probe runs and counts it with
//! `PUBSUB SHARDNUMSUB`; it follows the slot when it moves
//! ([`crate::sharded`]). The heartbeat says which kind it is.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{Notify, watch};
use tokio::time::sleep;

use crate::connect::Target;
use crate::sharded::{Change, Shard, follow_shard};

/// How long subscribing may take before the connection counts as dead.
const SUBSCRIBE_PATIENCE: Duration = Duration::from_secs(3);

/// The heartbeat's `presence` while a plain subscription is held: the probe
/// counts it with `PUBSUB NUMSUB`.
pub(crate) const PLAIN: &str = "1";
/// The heartbeat's `presence` while a sharded subscription is held on the
/// slot's owner (a Redis Cluster): the probe counts it with `PUBSUB SHARDNUMSUB`.
pub(crate) const SHARDED: &str = "sharded";

/// What a worker's heartbeat says of a presence subscription it holds on `target`.
pub(crate) fn claim(target: &Target) -> &'static str {
    if target.is_cluster() { SHARDED } else { PLAIN }
}

/// Keeps the subscription to `channel` until `stop`; `up` says whether it is
/// held right now. A change of `up` wakes the supervision loop (`changed`),
/// so the heartbeat says it at once.
pub async fn keep(
    target: Target,
    channel: String,
    up: Arc<AtomicBool>,
    changed: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    if target.is_cluster() {
        let on_change = |change| {
            let now = match change {
                Change::Subscribed { .. } => true,
                Change::Lost => false,
                Change::Message => return,
            };
            if up.swap(now, Ordering::SeqCst) != now {
                changed.notify_one();
            }
        };
        return follow_shard(&target, Shard::channel(channel), on_change, stop).await;
    }
    let mut failures = 0u32;
    while !*stop.borrow() {
        let held = tokio::select! {
            held = hold(&target, &channel, &up, &changed) => held,
            _ = stop.changed() => return,
        };
        if up.swap(false, Ordering::SeqCst) {
            changed.notify_one();
        }
        failures = if held { 0 } else { failures + 1 };
        // Quickly at first: a watcher that looks while the subscription is
        // missing and the last beat still claims it sees a death.
        let wait = Duration::from_millis((100u64 << failures.min(4)).min(1_000));
        tokio::select! {
            _ = sleep(wait) => {}
            _ = stop.changed() => return,
        }
    }
}

/// Subscribes and waits until the connection ends; true when it was held.
async fn hold(target: &Target, channel: &str, up: &AtomicBool, changed: &Notify) -> bool {
    let Ok(mut pubsub) = target.pubsub().await else { return false };
    match tokio::time::timeout(SUBSCRIBE_PATIENCE, pubsub.subscribe(channel)).await {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            tracing::debug!(channel, error = %err, "cannot subscribe to the presence channel");
            return false;
        }
        Err(_) => return false,
    }
    up.store(true, Ordering::SeqCst);
    changed.notify_one();
    // Nobody publishes here: the stream ends only with the connection.
    let mut messages = pubsub.on_message();
    while messages.next().await.is_some() {}
    tracing::debug!(channel, "the presence connection closed; subscribing again");
    true
}
