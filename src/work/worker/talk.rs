//! The worker's writes to Redis: the heartbeat, the job's event stream, the
//! wake-ups it announces, the notes on its holding, and the connection they
//! share. Each waits at most [`REDIS_PATIENCE`]; a failure is logged, and
//! only a name found taken is fatal.

use std::sync::LazyLock;
use std::time::Duration;

use tokio::time::Instant;

use super::claim::other_worker;
use super::{REDIS_PATIENCE, Unconfirmed, Worker};
use crate::clock::{Boot, millis};
use crate::connect::{Conn, Vouch};
use crate::error::{Action, Error, describe};
use crate::heard::BEAT_EVERY;
use crate::history::{self, Record};
use crate::schema::{self, BeatState, beat};
use crate::work::lock::Acquire;

static BEAT: LazyLock<redis::Script> = LazyLock::new(|| schema::script(include_str!("worker.lua")));

/// Every how many beats one tidies the registry of servers gone for long.
const TIDY_EVERY: u64 = 10;

impl Worker {
    pub(super) async fn conn(&mut self) -> Result<&mut Conn, Error> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.target.manager().await?,
        };
        Ok(self.conn.insert(conn))
    }

    /// One acquisition attempt, and when it was sent: the earliest the
    /// lease can have begun.
    pub(super) async fn try_acquire(&mut self) -> Result<(Acquire, Boot), Error> {
        let lock = self.lock.clone();
        let target = self.target.clone();
        let conn = self.conn().await?;
        let sent = Boot::now();
        let acquired = lock.acquire(conn).await?;
        // Taken on a primary the sentinels do not vouch for (deposed or cut
        // off, still writable, a replica still following it): not a holding.
        // It expires; the next attempt asks the sentinels where the primary is.
        let Acquire::Acquired { fence, before, at_ms, counter, .. } = &acquired else { return Ok((acquired, sent)) };
        let (vouch, server) = target.primary_vouched_for(conn).await;
        self.engine.on_server(server);
        if vouch != Vouch::Yes {
            if self.unconfirmed.replace(Unconfirmed::Sentinels) != Some(Unconfirmed::Sentinels) {
                tracing::warn!(node = %self.opts.node, fence, "took the lock on a primary most sentinels do not name (said once until a lock taken counts); not starting the job");
            }
            let unconfirmed =
                Acquire::Unconfirmed { fence: *fence, before: before.clone(), at_ms: *at_ms, counter: *counter };
            self.conn = None;
            return Ok((unconfirmed, sent));
        }
        Ok((acquired, sent))
    }

    /// Notes that this holding starts its job; `false` when it must not
    /// (the lock is not its own any more, or Redis did not answer: the next
    /// turn tries again).
    pub(super) async fn note_started(&mut self) -> bool {
        let lock = self.lock.clone();
        let Ok(conn) = self.conn().await else { return false };
        match tokio::time::timeout(REDIS_PATIENCE, lock.started(conn)).await {
            Ok(Ok(started)) => started,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "cannot note that the job starts; trying again");
                self.conn = None;
                false
            }
            Err(_) => false,
        }
    }

    /// Notes that the job of the holding just lost has stopped, if Redis
    /// listens: a new holder waiting for it may start at once.
    pub(super) async fn note_stopped(&mut self) {
        let lock = self.lock.clone();
        let Ok(conn) = self.conn().await else { return };
        match tokio::time::timeout(REDIS_PATIENCE, lock.stopped(conn)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::debug!(error = %err, "cannot note that the job stopped"),
            Err(_) => tracing::debug!("cannot note that the job stopped: Redis did not answer in time"),
        }
    }

    /// Wakes every watcher and worker of the job for a full look at a change
    /// (a flip or an acknowledgement it saw, its job's state), naming this
    /// server; sharded on a cluster, where they listen on the slot's owner.
    /// Only a wake-up: a watcher that misses it sees the change at its next
    /// full read. Supervisors may not publish (a message's size has no ACL
    /// rule), so the workers announce their writes too.
    pub(super) async fn announce(&mut self) {
        if let Some(Err(err)) = self.publish_node(self.keys.wake_channel()).await {
            tracing::debug!(error = %err, "the change was made but not announced");
        }
    }

    /// Publishes this server's name on `channel`; `None` when there is no
    /// connection to send it on.
    async fn publish_node(&mut self, channel: String) -> Option<redis::RedisResult<()>> {
        let node = self.opts.node.clone();
        let conn = self.conn().await.ok()?;
        Some(redis::cmd(conn.publish_command()).arg(channel).arg(node).query_async::<i64>(conn).await.map(drop))
    }

    /// What the heartbeat says besides its sequence number; `wait` is the
    /// server the job waits for (empty: none, it waits for Redis's sake) and
    /// until when, while it waits.
    pub(super) fn beat_fields(
        &self,
        state: &BeatState,
        holding: Option<(&str, i64)>,
        child: Option<u32>,
        wait: Option<(&str, u64)>,
    ) -> Vec<(&'static str, String)> {
        let (field, fence) = holding.map(|(f, n)| (f.to_owned(), n.to_string())).unwrap_or_default();
        let (presence, presence_on) = match self.present.on() {
            Some(server) => (crate::work::presence::claim(&self.target), server),
            None => ("", String::new()),
        };
        let (waits_for, wait_until) = wait.map(|(node, ms)| (node.to_owned(), ms.to_string())).unwrap_or_default();
        vec![
            (beat::NODE, self.opts.node.clone()),
            (beat::HOST, self.host.clone()),
            (beat::PID, std::process::id().to_string()),
            (beat::INVOCATION, crate::work::unit::invocation().to_owned()),
            (beat::LOCK_FIELD, field),
            (beat::FENCE, fence),
            (beat::STATE, state.as_str().to_owned()),
            (beat::VERSION, env!("CARGO_PKG_VERSION").to_owned()),
            (beat::CHILD_PID, child.map(|p| p.to_string()).unwrap_or_default()),
            (beat::PRESENCE, presence.to_owned()),
            (beat::PRESENCE_ON, presence_on),
            (beat::WAITS_FOR, waits_for),
            (beat::WAIT_UNTIL_MS, wait_until),
            (beat::FLAGS_LOST, self.memory.lost().join(",")),
            (beat::LEASE_MS, crate::clock::millis(self.opts.lease.whole()).to_string()),
            (beat::HELD_UNTIL_MS, self.held_until.map(|ms| ms.to_string()).unwrap_or_default()),
            (beat::LAST_EXIT, self.last_exit.clone()),
        ]
    }

    /// Whether the job's beat is due (this worker publishes it).
    pub(super) fn publish_due(&self) -> bool {
        // One beat per BEAT_EVERY, however often this loop turns; a little early is on time.
        self.publishing && self.published_at.is_none_or(|at| at.elapsed() + Duration::from_millis(50) >= BEAT_EVERY)
    }

    /// Publishes the job's beat alone, between heartbeats: a failure is
    /// the next heartbeat's to find.
    pub(super) async fn publish_beat(&mut self) {
        let sent = Instant::now();
        match self.publish_node(self.keys.beat_channel()).await {
            Some(Ok(())) => self.published_at = Some(sent),
            Some(Err(err)) => tracing::debug!(error = %err, "the job's beat was not published"),
            None => {}
        }
    }

    /// Writes the heartbeat; `wait` is the server the job waits for (empty:
    /// none, it waits for Redis's sake) and until when, while it waits.
    pub(super) async fn beat(
        &mut self,
        state: BeatState,
        holding: Option<(&str, i64)>,
        child: Option<u32>,
        wait: Option<(&str, u64)>,
    ) -> Result<(), Error> {
        let fields = self.beat_fields(&state, holding, child, wait);
        self.seq += 1;
        let keys = (self.keys.node(&self.opts.node), self.keys.nodes());
        let node = self.opts.node.clone();
        let host = self.target.endpoint().clone();
        let due = self.publish_due();
        let publish = if due { self.conn().await?.publish_command() } else { "" };
        let sent = Instant::now();
        let keeps = millis(self.name_kept());
        let mut call = BEAT.key(keys.0);
        call.key(keys.1).arg(publish).arg(self.keys.beat_channel()).arg(&node);
        call.arg(&self.instance).arg(if self.claimed { "1" } else { "0" }).arg(&self.replaces).arg(keeps);
        // The registry tidied at every tenth beat (and the first).
        call.arg(self.last_beat_ms).arg(if self.seq % TIDY_EVERY == 1 { "1" } else { "0" });
        call.arg(beat::SEQ).arg(self.seq);
        for (k, v) in &fields {
            call.arg(*k).arg(v);
        }
        let answer: redis::Value =
            call.invoke_async(self.conn().await?).await.map_err(|e| describe(e, Action::WritingHeartbeat, &host))?;
        if let Ok((_, other_host, pid, age)) = redis::from_redis_value::<(String, String, String, u64)>(answer.clone())
        {
            let other_host = Some(other_host.as_str()).filter(|h| !h.is_empty());
            return Err(Error::NodeTaken { node, by: other_worker(&pid, other_host, Some(age)) });
        }
        if let Ok(at) = redis::from_redis_value::<u64>(answer) {
            self.last_beat_ms = at;
        }
        if due {
            self.published_at = Some(sent);
        }
        self.last_beat = Some((sent, fields));
        Ok(())
    }

    /// Appends a lifecycle event to the job's stream; failures are logged,
    /// never fatal.
    pub(super) async fn record(&mut self, record: Record) {
        let keys = self.keys.clone();
        let node = self.opts.node.clone();
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        let kind = record.kind().to_owned();
        match tokio::time::timeout(REDIS_PATIENCE, history::append(conn, &keys, &node, &record, &host)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::warn!(event = %kind, error = %err, "cannot record the event"),
            Err(_) => tracing::warn!(event = %kind, "cannot record the event: Redis did not answer in time"),
        }
    }

    /// Beats `idle` at once after the job was stopped under a lock found
    /// gone, and tells every watcher and worker: a new holder waiting for
    /// this server's job may start.
    pub(super) async fn say_idle(&mut self) {
        if self.beat(BeatState::Idle, None, None, None).await.is_ok() && self.beat_state != Some(BeatState::Idle) {
            self.beat_state = Some(BeatState::Idle);
            self.announce().await;
        }
    }
}
