//! One turn of the supervision loop: the engine decides, this does. The
//! watchdog's word first (a lease that cannot be vouched for stops the job
//! before anything else), then a look at the job, the acquisition or
//! release it calls for, the job tended, and the heartbeat.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::watchdog::watchdog;
use super::{LONGEST_BEAT, Live, Unconfirmed, Worker};
use crate::clock::{Boot, millis};
use crate::error::Error;
use crate::history::{Cause, Record};
use crate::schema::BeatState;
use crate::snapshot::{Enabled, Snapshot};
use crate::work::engine::{Action, Renewal};
use crate::work::handover::Busy;
use crate::work::job::{Job, JobEnv, Killer, Work};
use crate::work::lock::Wait;
use crate::work::orphan::Orphan;

/// How soon a heartbeat Redis refused (out of memory, read-only, a slot
/// moving) is tried again: each try is a write Redis refuses, and a line.
const BEAT_RETRY: Duration = Duration::from_millis(500);

impl Worker {
    /// One turn; returns how soon to look again at the latest.
    pub(super) async fn step(&mut self, live: &mut Option<Live>) -> Result<Option<Duration>, Error> {
        // Safety first: a lock we can no longer vouch for stops the job now.
        if let Some(l) = live.as_mut() {
            let word = *l.renewals.borrow_and_update();
            let acts = self.engine.lease_word(Boot::now(), word);
            if self.perform(acts, live, None).await? {
                return Ok(None);
            }
        }
        let snap = match self.look().await {
            Ok(snap) => {
                if let Some(since) = self.unreadable_since.take() {
                    let lasted = crate::duration::human_duration(millis(since.elapsed()));
                    tracing::warn!(node = %self.opts.node, "the job can be read again, after {lasted}");
                }
                snap
            }
            Err(err) => {
                // Said once an outage, then how long it lasted.
                if self.unreadable_since.is_none() {
                    self.unreadable_since = Some(Instant::now());
                    tracing::warn!(node = %self.opts.node, error = %err, "cannot read the job; trying again every 0.5 s");
                } else {
                    tracing::debug!(node = %self.opts.node, error = %err, "cannot read the job");
                }
                self.conn = None;
                return Ok(Some(Duration::from_millis(500)));
            }
        };
        self.check_eviction().await;
        if !self.claimed {
            match self.claim(&snap).await {
                Ok(()) if !self.claimed => return Ok(Some(Duration::from_millis(500))),
                Ok(()) => {}
                Err(err @ Error::NodeTaken { .. }) => return Err(err),
                Err(err) => {
                    tracing::warn!(node = %self.opts.node, error = %err, "cannot write the first heartbeat; trying again");
                    self.conn = None;
                    return Ok(Some(Duration::from_millis(500)));
                }
            }
        }
        let enabled = self.enabled_now(&snap, live.is_some());
        let field = self.lock.field().to_owned();
        let acts = self.engine.look(Boot::now(), &snap, &field, enabled);
        if self.perform(acts, live, Some(&snap)).await? {
            return Ok(None);
        }
        self.tend(live).await?;
        self.publishing = crate::work::beat::publishes(&snap, &self.opts.node, live.is_some());
        self.beat_now(live.as_ref()).await?;
        Ok(self.engine.deadline().map(Boot::remaining))
    }

    /// How often this worker beats at least: at each look, and between
    /// looks spaced wider than [`LONGEST_BEAT`].
    pub(super) fn beat_every(&self) -> Duration {
        self.opts.tick.min(LONGEST_BEAT)
    }

    /// Beats as the engine says now: between looks too, when a beat is due
    /// before the next look (the holder's job's beat for every desk, or a
    /// heartbeat fresh enough for their grace).
    pub(super) async fn beat_now(&mut self, live: Option<&Live>) -> Result<(), Error> {
        let field = self.lock.field().to_owned();
        let job = live.and_then(|l| l.job.as_ref());
        let now = self.engine.beat(Boot::now(), job.map(|j| j.liveness.silent_for()));
        let child = job.and_then(|j| j.pid);
        let holding = now.fence.map(|f| (field.as_str(), f));
        self.held_until = now.held_until;
        let wait = now.wait.as_ref().map(|(node, ms)| (node.as_str(), *ms));
        // A look between the job's beats that has nothing new to say
        // leaves the heartbeat as it is, fresh enough.
        let fields = self.beat_fields(&now.state, holding, child, wait);
        let said_lately = self
            .last_beat
            .as_ref()
            .is_some_and(|(at, said)| *said == fields && at.elapsed() + Duration::from_millis(100) < self.beat_every());
        if said_lately && !self.publish_due() {
            return Ok(());
        }
        if said_lately {
            // The heartbeat is fresh and says the same: the job's beat alone.
            self.publish_beat().await;
            return Ok(());
        }
        match self.beat(now.state.clone(), holding, child, wait).await {
            Ok(()) if self.beat_state.as_ref() != Some(&now.state) => {
                // Watchers glance seldom: a job turning stalled (or running
                // again) is told to them at once, as a flip is.
                let first = self.beat_state.is_none();
                self.beat_state = Some(now.state);
                if !first {
                    self.announce().await;
                }
            }
            Ok(()) => {}
            Err(err @ Error::NodeTaken { .. }) => return Err(err),
            Err(err) => {
                let failed = self.beat_failing.map_or(0, |(_, n)| n) + 1;
                if failed == 1 {
                    tracing::warn!(error = %err, "heartbeat failed; trying again every {} ms until one is written", BEAT_RETRY.as_millis());
                } else {
                    tracing::debug!(error = %err, failed, "heartbeat failed again");
                }
                self.beat_failing = Some((Instant::now() + BEAT_RETRY, failed));
                self.conn = None;
                return Ok(());
            }
        }
        if let Some((_, failed)) = self.beat_failing.take() {
            tracing::info!("heartbeat written again, after {failed} failed");
        }
        Ok(())
    }

    /// Whether anybody has the job enabled, as the engine takes it (`None`:
    /// cannot be told); says so once per spell of flags that cannot be read.
    pub(super) fn enabled_now(&mut self, snap: &Snapshot, holding: bool) -> Option<bool> {
        let enabled = match self.enabled_in(snap) {
            Enabled::Yes => Some(true),
            Enabled::No => Some(false),
            Enabled::Unknown { reason } => {
                // Once per spell (`self.enabled` is `None` during one), or at
                // start, before the first heartbeat; a loss waiting a look
                // for what tracking heard is no spell.
                if (self.enabled.is_some() || self.seq == 0) && !self.memory.waiting() {
                    let doing = if holding { "keeps running the job" } else { "does not start the job" };
                    tracing::warn!(node = %self.opts.node, problem = %reason, "cannot tell whether the job is enabled; {doing} until the flags can be read");
                }
                None
            }
        };
        self.enabled = enabled;
        enabled
    }

    /// Does what the engine decided; true when the holding was lost, which
    /// ends the turn. `snap` is the look the actions came from.
    pub(super) async fn perform(
        &mut self,
        acts: Vec<Action>,
        live: &mut Option<Live>,
        snap: Option<&Snapshot>,
    ) -> Result<bool, Error> {
        let mut lost = false;
        let mut queue: std::collections::VecDeque<Action> = acts.into();
        while let Some(act) = queue.pop_front() {
            match act {
                Action::Acquire => {
                    let Some(snap) = snap else { continue };
                    match self.try_acquire().await {
                        Ok((answer, since)) => {
                            let field = self.lock.field().to_owned();
                            queue.extend(self.engine.acquired(Boot::now(), since, answer, snap, &field));
                        }
                        Err(err) => {
                            tracing::warn!(error = %err, "acquire failed");
                            self.conn = None;
                        }
                    }
                }
                Action::HeldBack { until_ms } => tracing::warn!(
                    node = %self.opts.node,
                    "the job was switched off and on too often lately; it starts again at {} (after a switch-off it starts {} times at once, then once every {} min)",
                    crate::status::clock_utc(until_ms),
                    crate::work::engine::RESTART_BURST,
                    crate::work::engine::RESTART_REFILL.as_secs() / 60,
                ),
                Action::Guard { since, .. } => *live = Some(self.guard(since)),
                Action::Acquired { fence, wait, prev_beat_ms, after_foreign } => {
                    self.unconfirmed = None;
                    self.note_acquired(fence, wait, prev_beat_ms, after_foreign).await;
                }
                // Said once until a lock taken counts; the sentinels' refusal was said where it was made.
                Action::Unconfirmed { .. } if self.unconfirmed.is_some() => {}
                Action::Unconfirmed { fence } => {
                    self.unconfirmed = Some(Unconfirmed::Replica);
                    tracing::warn!(
                        node = %self.opts.node,
                        fence,
                        "took the lock, but no replica confirmed it within {:?}; not starting the job (said once until a lock taken counts)",
                        self.lock.lease().confirm_within()
                    )
                }
                Action::Waits(busy) => {
                    tracing::warn!(node = %self.opts.node, other = %busy.node, "{}", waiting_sentence(&busy))
                }
                Action::RenewFailing { fence } => self.record(Record::RenewFailed { fence: Some(fence) }).await,
                Action::Exited { fence, status } => {
                    self.last_exit = status.clone();
                    self.record(Record::JobExited { fence: Some(fence), status }).await;
                }
                Action::NoteStarted => {
                    let noted = self.note_started().await;
                    queue.extend(self.engine.start_noted(Boot::now(), noted, word_of(live.as_ref())));
                }
                Action::Start { fence } => self.start(fence, live).await?,
                Action::Kill { fence, cause, say_idle } => {
                    self.lose(live.take(), fence, cause).await;
                    if say_idle {
                        self.say_idle().await;
                    }
                    lost = true;
                }
                Action::LetGo { fence, cause } => {
                    if let Some(l) = live.take() {
                        self.let_go(l, fence, cause).await;
                    }
                }
            }
        }
        Ok(lost)
    }

    /// Notes the job's exit, and starts it when due.
    pub(super) async fn tend(&mut self, live: &mut Option<Live>) -> Result<(), Error> {
        let Some(l) = live.as_mut() else { return Ok(()) };
        if let Some(status) = l.job.as_mut().and_then(Job::exited) {
            l.job = None;
            l.killer.disarm();
            let acts = self.engine.exited(Boot::now(), status);
            self.perform(acts.into_iter().collect(), live, None).await?;
        }
        let acts = self.engine.tend(Boot::now(), word_of(live.as_ref()));
        self.perform(acts.into_iter().collect(), live, None).await?;
        Ok(())
    }

    /// Starts the job of the holding with `fence`.
    pub(super) async fn start(&mut self, fence: i64, live: &mut Option<Live>) -> Result<(), Error> {
        let Some(l) = live.as_mut() else {
            tracing::error!(node = %self.opts.node, fence, "a holding without its watchdog: not starting the job");
            return Ok(());
        };
        let orphan = self.opts.connection.clone().map(|connection| Orphan {
            connection,
            job: self.keys.job.clone(),
            lock_key: self.keys.lock.clone(),
            node: self.opts.node.clone(),
            field: self.lock.field().to_owned(),
            fence,
            lease_ms: millis(self.opts.lease.whole()),
        });
        let env = JobEnv { fence, node: &self.opts.node, job: &self.keys.job, orphan: orphan.as_ref() };
        // The killer is pointed at the job as it starts, before any wait.
        let job = Job::start(&self.opts.work, &env, &l.killer)
            .await
            .map_err(|e| Error::JobStart { command: shown_work(&self.opts.work), cause: e.to_string() })?;
        let pid = job.pid;
        l.job = Some(job);
        self.engine.job_started(Boot::now());
        self.record(Record::JobStarted { fence: Some(fence), pid }).await;
        Ok(())
    }

    /// Starts holding: the watchdog renews from `since`, when the acquiring
    /// call was sent, the earliest the lease can have begun.
    pub(super) fn guard(&self, since: Boot) -> Live {
        let (tx, rx) = watch::channel(Renewal::Renewed(since));
        let killer = Killer::default();
        killer.feed(since + self.opts.lease.kill_after());
        let watchdog = tokio::spawn(watchdog(self.target.clone(), self.lock.clone(), tx, killer.clone(), since));
        Live { job: None, renewals: rx, killer, watchdog }
    }

    pub(super) async fn note_acquired(
        &mut self,
        fence: i64,
        wait: Option<Wait>,
        prev_beat_ms: Option<u64>,
        after_foreign: bool,
    ) {
        let field = Some(self.lock.field().to_owned());
        if after_foreign {
            tracing::info!(
                node = %self.opts.node,
                fence,
                "the holder before was no lockwatch worker (a Redisson service or another client) and let the lock go: nothing of lockwatch's is left to wait for"
            );
        }
        let Some(wait) = wait else {
            tracing::info!(node = %self.opts.node, fence, "acquired the lock");
            self.record(Record::Acquired { fence: Some(fence), field, wait: None, prev_beat_ms }).await;
            return;
        };
        let why = wait.reason();
        tracing::warn!(
            node = %self.opts.node,
            fence,
            "acquired the lock; {why}; waiting {} s so an earlier holder has stopped",
            wait.left.as_secs_f64()
        );
        let wait = Some((millis(wait.left), Some(wait.why)));
        self.record(Record::Acquired { fence: Some(fence), field, wait, prev_beat_ms }).await;
    }

    /// Lost the lock: kill the job at once, say so if Redis listens.
    pub(super) async fn lose(&mut self, live: Option<Live>, fence: i64, cause: Cause) {
        tracing::error!(node = %self.opts.node, fence, "{}; killing the job", cause.sentence());
        if let Some(mut job) = live.and_then(|mut l| l.job.take()) {
            job.kill_and_wait().await;
        }
        self.note_stopped().await;
        self.record(Record::Lost { fence: Some(fence), cause: Some(cause) }).await;
        self.lock.next_holding();
    }

    /// Gives the lock up cleanly: stop the job, stop claiming it, release.
    pub(super) async fn let_go(&mut self, mut live: Live, fence: i64, cause: Cause) {
        if let Some(job) = live.job.take() {
            let field = self.lock.field().to_owned();
            let _ = self.beat(BeatState::Stopping, Some((&field, fence)), job.pid, None).await;
            if let Some(status) = job.stop(self.opts.stop_grace).await {
                self.last_exit = status.clone();
                self.record(Record::JobExited { fence: Some(fence), status }).await;
            }
        }
        live.watchdog.abort();
        let _ = self.beat(BeatState::Idle, None, None, None).await;
        let lock = self.lock.clone();
        let released = match self.conn().await {
            Ok(conn) => lock.release(conn).await,
            Err(err) => Err(err),
        };
        match released {
            Ok(true) => {
                tracing::info!(node = %self.opts.node, fence, "released the lock");
                self.record(Record::Released { fence: Some(fence), cause: Some(cause) }).await;
            }
            Ok(false) => {
                tracing::error!(node = %self.opts.node, fence, "when releasing: {}", Cause::Lost.sentence());
                self.record(Record::Lost { fence: Some(fence), cause: Some(Cause::Lost) }).await;
            }
            Err(err) => tracing::warn!(error = %err, "release failed; the lease will expire"),
        }
        self.lock.next_holding();
    }
}

/// The watchdog's word right now, as the engine takes it: a killer that
/// fired says the lease is gone even before its report arrives.
fn word_of(live: Option<&Live>) -> Renewal {
    // No watchdog, no lease to vouch for (the engine and the shell hold together).
    let Some(l) = live else { return Renewal::Lost };
    let word = *l.renewals.borrow();
    if l.killer.fired() && word.stop_reason().is_none() { Renewal::Expiring { unconfirmed: false } } else { word }
}

/// What the log says while a new holder waits for a job that may still run elsewhere.
fn waiting_sentence(busy: &Busy) -> String {
    let left = busy.left.as_secs_f64();
    if busy.node.is_empty() {
        format!(
            "holds the lock, but nothing says whether the lockwatch holding before it stopped its job (Redis lost the handover record, or an older lockwatch wrote none); waiting {left:.1} s, until it could not run any more"
        )
    } else {
        format!(
            "holds the lock, but {} may still run the job (nothing from its own worker says it stopped); waiting up to {left:.1} s for it to stop",
            busy.node
        )
    }
}

/// The job as an error names it: the command line, arguments with spaces quoted.
fn shown_work(work: &Work) -> String {
    match work {
        Work::Command(command) => command
            .iter()
            .map(
                |arg| {
                    if arg.is_empty() || arg.contains(char::is_whitespace) { format!("{arg:?}") } else { arg.clone() }
                },
            )
            .collect::<Vec<_>>()
            .join(" "),
        Work::Task(_) => "(the embedded task)".to_owned(),
    }
}
