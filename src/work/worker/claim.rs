//! The node name, made this process's own: a first heartbeat claims it
//! unless another live worker runs under it (a cloned host), and the death
//! of the process that had it before is recorded.

use std::time::Duration;

use tokio::time::Instant;

use super::{REDIS_PATIENCE, Worker};
use crate::error::Error;
use crate::history::Record;
use crate::schema::BeatState;
use crate::snapshot::Snapshot;
use crate::work::identity::Claim;
use crate::work::lock::Lock;

impl Worker {
    /// Makes the node name this process's own with a first heartbeat,
    /// unless another live worker has it: one whose presence subscription
    /// Redis counts (even when it is stopped or hung), or that beat less than
    /// a lease and a second ago while its presence cannot be counted (a
    /// predecessor just killed, whose subscription Redis has not dropped
    /// yet, may look so: that refusal is retried until a lease and a second
    /// have passed). One whose subscription is gone and whose heartbeat says
    /// it runs no job is replaced at once; one that says it runs the job
    /// keeps the name a lease past its beat (it may be frozen, cut off). Takes the fallback name, if there is one, when the name is taken.
    ///
    /// Returns with the name not claimed yet when it is to be asked again.
    ///
    /// # Errors
    /// [`Error::NodeTaken`] when the name is another's and there is no
    /// fallback; [`Error::Redis`] when the heartbeat cannot be written.
    pub(super) async fn claim(&mut self, snap: &Snapshot) -> Result<(), Error> {
        loop {
            let claim = crate::work::identity::claim(snap, &self.opts.node, &self.instance);
            self.replaces = match claim {
                Claim::Replaces(dead) => dead.to_owned(),
                _ => String::new(),
            };
            let alive = matches!(claim, Claim::Taken(_));
            let result = match claim {
                Claim::Taken(b) => {
                    let age = b.beat_ms.map(|at| snap.time_ms.saturating_sub(at));
                    let pid = b.pid.map(|p| p.to_string()).unwrap_or_default();
                    Err(Error::NodeTaken {
                        node: self.opts.node.clone(),
                        by: other_worker(&pid, b.host.as_deref(), age),
                    })
                }
                _ => self.beat(BeatState::Idle, None, None, None).await,
            };
            match result {
                Ok(()) => {
                    self.claimed = true;
                    self.tell_dead_holding(snap).await;
                    self.register(snap.time_ms).await;
                    return Ok(());
                }
                Err(err @ Error::NodeTaken { .. }) => {
                    let since = *self.refused_since.get_or_insert_with(Instant::now);
                    if !alive && since.elapsed() < self.name_kept_in(snap) {
                        tracing::debug!(node = %self.opts.node, "{err}; trying again");
                        return Ok(());
                    }
                    let Some(fallback) = self.opts.fallback_node.take() else { return Err(err) };
                    self.refused_since = None;
                    tracing::warn!(node = %fallback, "{err}; this one runs as {fallback}");
                    self.lock = Lock::new(self.keys.clone(), &fallback, self.opts.lease, self.target.endpoint())
                        .sharded(self.target.is_cluster())
                        .for_instance(&self.instance);
                    self.engine.rename(fallback.clone());
                    self.opts.node = fallback;
                }
                Err(err) => return Err(err),
            }
        }
    }

    /// Records, once the name is this process's, that the process before it
    /// under the name held the job and died without a word: its heartbeat,
    /// which this one's first beat replaced, was the only trace of when it
    /// last lived, and the history needs it for the outage.
    pub(super) async fn tell_dead_holding(&mut self, snap: &Snapshot) {
        let dead = snap.beats.iter().find(|b| {
            b.node == self.opts.node
                && b.instance.as_deref().is_some_and(|i| i != self.instance)
                && b.claims_job()
                && b.fence.is_some()
        });
        if let Some(b) = dead {
            let (fence, last_beat_ms) = (b.fence, b.beat_ms);
            tracing::warn!(node = %self.opts.node, fence, "the worker before this one here held the job and died without a word");
            self.record(Record::Died { fence, last_beat_ms }).await;
        }
    }

    /// How long a worker process's last beat keeps its name its own: one
    /// silent past a lease runs no job any more (its reaper saw to that).
    pub(super) fn name_kept(&self) -> Duration {
        self.opts.lease.whole() + Duration::from_secs(1)
    }

    /// As [`name_kept`](Self::name_kept), or longer when the heartbeat under
    /// the name in `snap` names a longer lease (`worker.lua` keeps it so).
    fn name_kept_in(&self, snap: &Snapshot) -> Duration {
        let theirs = snap.beats.iter().find(|b| b.node == self.opts.node).and_then(|b| b.lease_ms);
        self.name_kept().max(Duration::from_millis(theirs.unwrap_or(0)) + Duration::from_secs(1))
    }

    /// Adds the job to the registry of jobs (`--job '*'` reads it); a
    /// refusal is said once and changes nothing else.
    async fn register(&mut self, now_ms: u64) {
        let (job, host) = (self.keys.job.clone(), self.target.endpoint().clone());
        let Ok(conn) = self.conn().await else { return };
        match tokio::time::timeout(REDIS_PATIENCE, crate::registry::register(conn, &job, now_ms, &host)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "the job is not in the registry of jobs, so --job '*' does not list it; grant what lockwatch acl --worker prints")
            }
            Err(_) => tracing::warn!("the job is not in the registry of jobs: Redis did not answer in time"),
        }
    }
}

/// Another worker process as an error names it: its pid, host and last beat.
pub(super) fn other_worker(pid: &str, host: Option<&str>, age_ms: Option<u64>) -> String {
    let pid = if pid.is_empty() { "pid unknown".to_owned() } else { format!("pid {pid}") };
    let host = host.map(|h| format!(" on {h}")).unwrap_or_default();
    let age = age_ms.map(|ms| format!(", last beat {} ago", crate::duration::human_duration(ms))).unwrap_or_default();
    format!("{pid}{host}{age}")
}
