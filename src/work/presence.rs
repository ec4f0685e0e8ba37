//! A worker's presence: a subscription to `{job}:alive:<node>` held on a
//! connection of its own for as long as the process lives. When the process
//! dies (`kill -9`, the OOM killer, a crash) the kernel closes the socket,
//! Redis drops the subscription at once, and every watcher's next look reads
//! `PUBSUB NUMSUB` 0: a crash is told within a look, not after the
//! heartbeat's grace or the lease. The heartbeat says whether the
//! subscription is up (field `presence`), so a connection that broke while
//! the process lives is said in the next beat rather than taken for a death.
//!
//! A subscription lives in one server process and is not replicated, while
//! the heartbeat is: after a failover the promoted replica has the claim but
//! not the subscription until the worker subscribes there again. So the
//! heartbeat also names the process that holds it (`presence_on`, its run
//! id), and a probe counts a missing subscription only on that process.
//!
//! On a Redis Cluster the subscription is sharded (`SSUBSCRIBE`) and held on
//! the owner of the job's slot, where the probe runs and counts it with
//! `PUBSUB SHARDNUMSUB`; it follows the slot when it moves
//! (`connect::sharded`). The heartbeat says which kind it is.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::PushKind;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::sleep;

use crate::connect::sharded::{Change, Shard, follow_shard};
use crate::connect::{Target, run_id};
use crate::keys::{PRESENCE_PLAIN, PRESENCE_SHARDED};

/// How long subscribing may take before the connection counts as dead.
const SUBSCRIBE_PATIENCE: Duration = Duration::from_secs(3);

/// What a worker's heartbeat says of a presence subscription it holds on `target`.
pub(crate) fn claim(target: &Target) -> &'static str {
    if target.is_cluster() { PRESENCE_SHARDED } else { PRESENCE_PLAIN }
}

/// Whether a worker's presence subscription is held right now, and in which
/// server process: its heartbeat says both.
#[derive(Debug, Default)]
pub struct Held {
    on: Mutex<Option<String>>,
    /// Asks for the subscription to be made again, where the job is read now.
    again: Notify,
}

impl Held {
    /// The run id of the server process that holds the subscription (empty
    /// when it could not be read), or `None` while none is held.
    pub fn on(&self) -> Option<String> {
        self.on.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Drops the subscription and makes it again: it is held in a process
    /// where no probe counts it, such as a Redis Cluster node that a failover
    /// turned into a replica (the server keeps sharded subscriptions there).
    pub fn subscribe_again(&self) {
        self.again.notify_one();
    }

    /// Records what is held now; true when that changed.
    fn set(&self, now: Option<String>) -> bool {
        let mut held = self.on.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = *held != now;
        *held = now;
        changed
    }
}

/// Keeps the subscription to `channel` until `stop`; `held` says whether it
/// is held right now, and where. A change of it wakes the supervision loop
/// (`changed`), so the heartbeat says it at once.
pub async fn keep(
    target: Target,
    channel: String,
    held: Arc<Held>,
    changed: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let record = |now: Option<String>| {
        if held.set(now) {
            changed.notify_one();
        }
    };
    if target.is_cluster() {
        let on_change = |change| {
            let now = match change {
                Change::Subscribed { server, .. } => Some(server.unwrap_or_default()),
                Change::Lost => None,
                Change::Message { .. } => return,
            };
            record(now);
        };
        return follow_shard(&target, Shard::presence(channel), on_change, Some(&held.again), stop).await;
    }
    let mut failures = 0u32;
    while !*stop.borrow() {
        let held = tokio::select! {
            held = hold(&target, &channel, &record, &held.again) => held,
            _ = stop.changed() => return,
        };
        record(None);
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

/// Subscribes, tells `record` in which server process, and waits until the
/// connection ends or `again` asks for a new one; true when it was held.
async fn hold(target: &Target, channel: &str, record: &impl Fn(Option<String>), again: &Notify) -> bool {
    let (pushes, mut received) = mpsc::unbounded_channel();
    // Held until the connection ends.
    let Ok(mut conn) = target.subscriber(pushes).await else { return false };
    let subscribing = async {
        // Asked on the connection that subscribes: the process it lives in.
        let server = run_id(&mut conn).await;
        conn.subscribe(channel).await.map(|()| server)
    };
    let server = match tokio::time::timeout(SUBSCRIBE_PATIENCE, subscribing).await {
        Ok(Ok(server)) => server,
        Ok(Err(err)) => {
            tracing::debug!(channel, error = %err, "cannot subscribe to the presence channel");
            return false;
        }
        Err(_) => return false,
    };
    record(Some(server.unwrap_or_default()));
    // Nobody publishes here: the connection's end is the only news.
    let closed = async {
        while let Some(push) = received.recv().await {
            if push.kind == PushKind::Disconnection {
                break;
            }
        }
    };
    tokio::select! {
        _ = closed => tracing::debug!(channel, "the presence connection closed; subscribing again"),
        _ = again.notified() => tracing::info!(channel, "the presence is not counted where the job is read; subscribing again"),
    }
    true
}
