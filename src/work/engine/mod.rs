//! The worker's decisions, pure: what to do on the watchdog's word, a look
//! at the job, an acquisition's answer, the job's exit and a deadline. No
//! tokio, Redis or clock inside: the time comes in with each call (on the
//! lease's clock, [`Boot`]); actions, the heartbeat's state and the next
//! deadline come out. `work::worker` runs it against Redis and the job;
//! [`renewer`] decides the watchdog's turns the same way.
//!
//! What it keeps, and the tests hold it to: the job starts only while the
//! lease is confirmed (the last acquisition or renewal less than
//! [`Lease::stop_after`] ago, the watchdog saying nothing against it), never
//! before the holding before it is known to have stopped, and is killed no
//! later than `stop_after` after the last confirmation, whenever the shell
//! calls at [`Engine::deadline`].

mod action;
#[cfg(test)]
mod pair;
#[cfg(test)]
mod props;
pub mod renewer;
mod restarts;
#[cfg(test)]
mod scenarios;
#[cfg(test)]
mod world;

use std::time::Duration;

use crate::cause::{Cause, WaitCause};
use crate::clock::{Boot, millis};
use crate::schema::BeatState;
use crate::snapshot::Snapshot;
use crate::work::handover::{Busy, Taken, before_busy, busy_elsewhere};
use crate::work::lease::Lease;
use crate::work::outcome::{Acquire, Before, HeldSeen, Wait, is_lockwatch_field};

pub use action::Action;
pub use renewer::Renewal;
use restarts::Restarts;
pub use restarts::{BURST as RESTART_BURST, REFILL as RESTART_REFILL};

/// What the engine is told once, for a worker's whole life.
#[derive(Debug, Clone)]
pub struct Rules {
    /// This server's name (it may change to the fallback once, before any holding).
    pub node: String,
    /// This worker process's own id (its heartbeat's `instance`).
    pub instance: String,
    /// The lock's lease, with its fractions (renew, stop, kill).
    pub lease: Lease,
    /// Run the job every this long instead of restarting it when it exits.
    pub every: Option<Duration>,
    /// A job silent this long is `stalled`.
    pub stall_after: Option<Duration>,
}

/// The end of a wait, on the lease's clock and, for the heartbeat, in Redis time (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Until {
    at: Boot,
    redis_ms: u64,
}

impl Until {
    /// `left` from `now`, which is `now_ms` in Redis time.
    fn after(now: Boot, left: Duration, now_ms: u64) -> Until {
        Until { at: now + left, redis_ms: now_ms.saturating_add(millis(left)) }
    }
}

/// The lock while held, as far as decisions go.
#[derive(Debug, Clone)]
pub struct Holding {
    /// The holding's fencing token.
    pub fence: i64,
    /// When the lease was last confirmed (the confirming call's send time).
    lock_ok_at: Boot,
    /// Whether the job's process runs.
    running: bool,
    next_start: Boot,
    /// Until then the job must not start, for Redis's sake (lost data, new
    /// or restarted): an earlier holder may still run it.
    waits_until: Option<Until>,
    /// Another server that may still run the job, looked at again each
    /// turn until the job first starts.
    waits_for: Option<(String, Until)>,
    /// While nothing names the holding before ([`Before::Unknown`]), the
    /// end of the longest wait counted for it: a look that sees less (a
    /// heartbeat gone since) never shortens it.
    unknown_until: Option<Boot>,
    /// The holding before, as the acquisition found it, when the lock
    /// was taken (Redis ms), and since when only a foreign holder can have
    /// held it before this holding (Redis ms), if known.
    before: Before,
    acquired_ms: u64,
    foreign_since: Option<u64>,
    /// Whether Redis was told this holding starts its job (from then on a
    /// new holder waits for this one), and whether it has started.
    noted: bool,
    started: bool,
    restarts: u32,
    /// From the first failed renewal until the next good one, to record it once.
    renew_failing: bool,
}

impl Holding {
    /// When the job may start: not before `next_start`, nor before the
    /// server it waits for has stopped.
    fn start_at(&self) -> Boot {
        self.waits_for.as_ref().map_or(self.next_start, |(_, u)| u.at.max(self.next_start))
    }
}

/// What the heartbeat says now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeatNow {
    /// The heartbeat's state: idle, starting, running or stalled.
    pub state: BeatState,
    /// The holding's fence, while there is one.
    pub fence: Option<i64>,
    /// The server the job waits for (empty: none, it waits for Redis's
    /// sake) and until when (Redis ms), while it waits.
    pub wait: Option<(String, u64)>,
    /// Until when (Redis ms) it holds back from starting the job again,
    /// which switches stopped and started too often ([`restarts`]).
    pub held_until: Option<u64>,
}

/// The worker's decisions and what they rest on.
#[derive(Debug)]
pub struct Engine {
    rules: Rules,
    holding: Option<Holding>,
    /// An acquisition no replica confirmed yet (fence, the holding before,
    /// when): a later attempt that gets the confirmation finds the lock
    /// ours already, and this is what it took over.
    unconfirmed: Option<(i64, Before, u64, Option<i64>)>,
    /// When the lock another holds expires, as the last attempt was told.
    retry_at: Option<Boot>,
    /// While another holds the lock: since when the refused attempts have
    /// seen only foreign holders, none recorded or beating as lockwatch's,
    /// and the fence counter then (no lockwatch holding began while it stays).
    foreign: Option<Foreign>,
    /// The starts after a switch-off left, until when one is held back,
    /// and whether that was said since the last start.
    restarts: Restarts,
    held: Option<Until>,
    held_said: bool,
    /// The run id of the server the last acquisition was made on, when the
    /// shell read it (through Sentinel).
    server: Option<String>,
}

/// Foreign holders seen by refused attempts, with no lockwatch holding between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Foreign {
    since_ms: u64,
    counter: Option<i64>,
    /// The last refusal that saw them (Redis ms).
    last_ms: u64,
}

/// How recent the last sighting of a foreign holder must be for an
/// acquisition to trust that only it held the lock since: a standby tries
/// every look (a second), so a longer gap means this worker was frozen or
/// cut off, and Redis may have lost a lockwatch holding meanwhile with the
/// counter as it was (a missing counter stays missing).
const FOREIGN_FRESH_MS: u64 = 3_000;

/// Whether every holder of the lock, as a refused attempt and the look
/// before it saw them, is foreign: no lockwatch field mark, no handover
/// record and no heartbeat names it.
fn foreign_holders(snap: &Snapshot, seen: &HeldSeen) -> bool {
    let holders = &snap.lock.holders;
    !seen.recorded
        && !holders.is_empty()
        && holders
            .iter()
            .all(|f| !is_lockwatch_field(f) && !snap.beats.iter().any(|b| b.lock_field.as_deref() == Some(f.as_str())))
}

impl Engine {
    /// An engine holding nothing yet.
    pub fn new(rules: Rules) -> Engine {
        Engine {
            rules,
            holding: None,
            unconfirmed: None,
            retry_at: None,
            foreign: None,
            restarts: Restarts::default(),
            held: None,
            held_said: false,
            server: None,
        }
    }

    /// The holding, if the lock is ours.
    pub fn holding(&self) -> Option<&Holding> {
        self.holding.as_ref()
    }

    /// Takes the fallback name (only ever before the first holding).
    pub fn rename(&mut self, node: String) {
        self.rules.node = node;
    }

    /// Safety first, at each turn: the watchdog's last word. A lock that
    /// cannot be vouched for any more stops the job now.
    #[must_use]
    pub fn lease_word(&mut self, now: Boot, word: Renewal) -> Vec<Action> {
        let stop_after = self.rules.lease.stop_after();
        let Some(h) = self.holding.as_mut() else { return Vec::new() };
        if let Some(cause) = word.stop_reason() {
            return self.kill(cause, false).into_iter().collect();
        }
        let mut acts = Vec::new();
        match word {
            Renewal::Renewed(at) => {
                h.lock_ok_at = h.lock_ok_at.max(at);
                h.renew_failing = false;
            }
            Renewal::Failing if !h.renew_failing => {
                h.renew_failing = true;
                acts.push(Action::RenewFailing { fence: h.fence });
            }
            _ => {}
        }
        if expired(h.lock_ok_at, now, stop_after) {
            acts.extend(self.kill(Cause::Expired, false));
        }
        acts
    }

    /// A look at the job: `field` is this worker's field in the lock hash,
    /// `enabled` whether anybody has the job enabled (`None`: cannot be told).
    #[must_use]
    pub fn look(&mut self, now: Boot, snap: &Snapshot, field: &str, enabled: Option<bool>) -> Vec<Action> {
        self.retry_at = None;
        // The lock gone from under a holder (deleted, force-unlocked,
        // evicted, lost in a restart) or taken by another: stop now, and say
        // so, so a new holder waiting for this server's job may start.
        if self.holding.is_some() && !snap.lock.holders.iter().any(|f| f == field) {
            return self.kill(Cause::Lost, true).into_iter().collect();
        }
        // Flags that cannot be read neither start nor stop the job.
        match (self.holding.is_some(), enabled.unwrap_or(self.holding.is_some())) {
            // Held by another lockwatch holding: an attempt would only be
            // refused (each a script call on Redis). Its expiry is awaited,
            // and an unlock or a look that finds it free comes sooner.
            (false, true) if held_by_other_lockwatch(snap, field) => {
                self.foreign = None;
                self.retry_at = snap.lock.ttl_ms.map(|t| now + Duration::from_millis(t + 2));
                Vec::new()
            }
            (false, true) => {
                let by: Vec<&str> = snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.as_str()).collect();
                self.start_again(now, snap.time_ms, &by).into_iter().collect()
            }
            (true, false) => {
                self.restarts.switched_off();
                self.let_go(Cause::Disabled).into_iter().collect()
            }
            (true, true) => self.wait_for_others(now, snap, field).into_iter().collect(),
            (false, false) => {
                self.held = None;
                Vec::new()
            }
        }
    }

    /// Enabled by the flags of `by`, and nothing held: acquire, unless
    /// their switches stopped and started the job too often lately (said
    /// once until it starts again, however she goes on switching).
    fn start_again(&mut self, now: Boot, now_ms: u64, by: &[&str]) -> Option<Action> {
        let Some(left) = self.restarts.start(now, by) else {
            self.held = None;
            self.held_said = false;
            return Some(Action::Acquire);
        };
        let until = Until::after(now, left, now_ms);
        self.held = Some(until);
        let news = !std::mem::replace(&mut self.held_said, true);
        news.then_some(Action::HeldBack { until_ms: until.redis_ms })
    }

    /// The answer to [`Action::Acquire`]: `since` is when the call was sent,
    /// the earliest the lease can have begun; `snap` the look before it.
    #[must_use]
    pub fn acquired(&mut self, now: Boot, since: Boot, answer: Acquire, snap: &Snapshot, field: &str) -> Vec<Action> {
        match answer {
            Acquire::Acquired { fence, mut wait, mut before, mut at_ms, mut counter } => {
                if let Some((_, b, at, c)) = self.unconfirmed.take().filter(|u| u.0 == fence) {
                    (before, at_ms, counter) = (b, at, c);
                }
                // Only a foreign holder since then, if no lockwatch holding
                // began since (the counter is as the refusals saw it).
                let foreign_since = self
                    .foreign
                    .take()
                    .filter(|f| f.counter == counter && at_ms.saturating_sub(f.last_ms) <= FOREIGN_FRESH_MS)
                    .map(|f| f.since_ms);
                let after_foreign = foreign_since.is_some() && matches!(before, Before::Unknown | Before::Stopped);
                if let (Some(since), Some(w)) = (foreign_since, wait) {
                    // A counter missing while only a foreign holder held the
                    // lock: a lockwatch holding in data Redis lost had lost
                    // the lock before then.
                    if w.why == WaitCause::CounterMissing {
                        let left = since.saturating_add(millis(self.rules.lease.whole())).saturating_sub(at_ms);
                        wait = (left > 0).then(|| Wait { left: w.left.min(Duration::from_millis(left)), ..w });
                    }
                }
                // Counted from `now`, when the answer came: the latest the
                // acquisition can have happened, so the wait is never short.
                let waits_until = wait.map(|w| Until::after(now, w.left, snap.time_ms));
                self.holding = Some(Holding {
                    fence,
                    lock_ok_at: since,
                    running: false,
                    next_start: waits_until.map_or(now, |w| w.at),
                    waits_until,
                    waits_for: None,
                    unknown_until: None,
                    before,
                    acquired_ms: at_ms,
                    foreign_since,
                    noted: false,
                    started: false,
                    restarts: 0,
                    renew_failing: false,
                });
                let prev_beat_ms = previous_beat(snap, &self.rules.node, fence);
                let mut acts =
                    vec![Action::Guard { fence, since }, Action::Acquired { fence, wait, prev_beat_ms, after_foreign }];
                acts.extend(self.wait_for_others(now, snap, field));
                acts
            }
            Acquire::Unconfirmed { fence, before, at_ms, counter } => {
                if self.unconfirmed.as_ref().is_none_or(|u| u.0 != fence) {
                    self.unconfirmed = Some((fence, before, at_ms, counter));
                }
                vec![Action::Unconfirmed { fence }]
            }
            Acquire::Held { ttl, seen } => {
                self.retry_at = ttl.map(|t| now + t + Duration::from_millis(2));
                self.foreign = foreign_holders(snap, &seen).then(|| match self.foreign {
                    Some(f) if f.counter == seen.counter => Foreign { last_ms: seen.at_ms, ..f },
                    _ => Foreign { since_ms: seen.at_ms, counter: seen.counter, last_ms: seen.at_ms },
                });
                Vec::new()
            }
        }
    }

    /// The job exited with `status`: when to start it again.
    #[must_use]
    pub fn exited(&mut self, now: Boot, status: String) -> Option<Action> {
        let h = self.holding.as_mut().filter(|h| h.running)?;
        h.running = false;
        h.next_start = match self.rules.every {
            Some(every) => {
                let due = h.next_start + every;
                if due < now { now } else { due }
            }
            None => {
                h.restarts += 1;
                now + Duration::from_millis(500u64 << h.restarts.min(6)).min(Duration::from_secs(30))
            }
        };
        Some(Action::Exited { fence: h.fence, status })
    }

    /// Whether the job is due now and the lease vouched for: then the first
    /// start of the holding is noted first ([`Action::NoteStarted`]), a
    /// later one started at once. `word` is the watchdog's word right now.
    #[must_use]
    pub fn tend(&mut self, now: Boot, word: Renewal) -> Option<Action> {
        let stop_after = self.rules.lease.stop_after();
        let h = self.holding.as_mut().filter(|h| !h.running && now >= h.start_at())?;
        if let Renewal::Renewed(at) = word {
            h.lock_ok_at = h.lock_ok_at.max(at);
        }
        if word.stop_reason().is_some() || expired(h.lock_ok_at, now, stop_after) {
            return None;
        }
        Some(if h.noted { Action::Start { fence: h.fence } } else { Action::NoteStarted })
    }

    /// The answer to [`Action::NoteStarted`]: start, or try again shortly
    /// (the lock is not ours any more, or Redis did not answer).
    #[must_use]
    pub fn start_noted(&mut self, now: Boot, noted: bool, word: Renewal) -> Option<Action> {
        let h = self.holding.as_mut()?;
        if !noted {
            h.next_start = now + Duration::from_millis(250);
            return None;
        }
        h.noted = true;
        self.tend(now, word)
    }

    /// The job was started.
    pub fn job_started(&mut self, now: Boot) {
        if let Some(h) = self.holding.as_mut() {
            h.running = true;
            h.started = true;
            if self.rules.every.is_some() {
                h.next_start = now;
            }
        }
    }

    /// The worker stops: the job too, and the lock is released.
    #[must_use]
    pub fn shutdown(&mut self) -> Option<Action> {
        self.let_go(Cause::Shutdown)
    }

    /// What the heartbeat says: `silent_for` is how long the running job
    /// has given no sign of life.
    pub fn beat(&self, now: Boot, silent_for: Option<Duration>) -> BeatNow {
        let Some(h) = &self.holding else {
            let held_until = self.held.filter(|u| now < u.at).map(|u| u.redis_ms);
            return BeatNow { state: BeatState::Idle, fence: None, wait: None, held_until };
        };
        let stalled = h.running && self.rules.stall_after.zip(silent_for).is_some_and(|(limit, s)| s >= limit);
        let state = if stalled {
            BeatState::Stalled
        } else if !h.started {
            BeatState::Starting
        } else {
            BeatState::Running
        };
        let wait = if h.started {
            None
        } else {
            let redis = h.waits_until.filter(|u| now < u.at).map(|u| u.redis_ms);
            match (&h.waits_for, redis) {
                (Some((node, u)), r) => Some((node.clone(), u.redis_ms.max(r.unwrap_or(0)))),
                (None, Some(r)) => Some((String::new(), r)),
                (None, None) => None,
            }
        };
        BeatNow { state, fence: Some(h.fence), wait, held_until: None }
    }

    /// The run id of the server an acquisition is being made on, as the
    /// shell read it (`None`: not known): a holding before whose heartbeat
    /// names another server process is not counted from its last sign there.
    pub fn on_server(&mut self, run_id: Option<String>) {
        self.server = run_id;
    }

    /// When the engine must be asked again at the latest: the lease's
    /// safety deadline, the job's start, a held lock's expiry, the end of
    /// holding back.
    pub fn deadline(&self) -> Option<Boot> {
        let holding = self.holding.as_ref().map(|h| {
            let safety = h.lock_ok_at + self.rules.lease.stop_after();
            if h.running { safety } else { safety.min(h.start_at()) }
        });
        [holding, self.retry_at, self.held.map(|u| u.at)].into_iter().flatten().min()
    }

    fn kill(&mut self, cause: Cause, say_idle: bool) -> Option<Action> {
        let h = self.holding.take()?;
        Some(Action::Kill { fence: h.fence, cause, say_idle })
    }

    fn let_go(&mut self, cause: Cause) -> Option<Action> {
        let h = self.holding.take()?;
        Some(Action::LetGo { fence: h.fence, cause })
    }

    /// Before the job first starts in this holding: whether another
    /// server's heartbeat still says it runs the job, or the holding before
    /// is not known to have stopped; said once per server.
    fn wait_for_others(&mut self, now: Boot, snap: &Snapshot, field: &str) -> Option<Action> {
        let (node, lease) = (&self.rules.node, self.rules.lease);
        let h = self.holding.as_mut().filter(|h| !h.started)?;
        let taken = Taken {
            instance: &self.rules.instance,
            acquired_ms: h.acquired_ms,
            foreign_since: h.foreign_since,
            server: self.server.as_deref(),
        };
        let mut before = before_busy(snap, &h.before, taken, lease);
        if h.before == Before::Unknown {
            let longest = [h.unknown_until, before.as_ref().map(|b| now + b.left)].into_iter().flatten().max();
            h.unknown_until = longest;
            before = longest
                .filter(|at| *at > now)
                .map(|at| Busy { node: String::new(), left: Duration::from_millis(at.as_millis() - now.as_millis()) });
        }
        let busy = [busy_elsewhere(snap, node, field, lease), before].into_iter().flatten().max_by_key(|b| b.left);
        let news = busy.as_ref().filter(|b| h.waits_for.as_ref().is_none_or(|(n, _)| *n != b.node)).cloned();
        h.waits_for = busy.map(|b| (b.node, Until::after(now, b.left, snap.time_ms)));
        news.map(Action::Waits)
    }
}

/// Whether the lock is held, and only by lockwatch holdings other than
/// this worker's own `field` (one of its own may await a replica's
/// confirmation, which a new attempt brings).
fn held_by_other_lockwatch(snap: &Snapshot, field: &str) -> bool {
    let holders = &snap.lock.holders;
    !holders.is_empty() && holders.iter().all(|f| f != field && is_lockwatch_field(f))
}

/// Whether a lease last confirmed at `ok_at` can no longer be vouched for.
fn expired(ok_at: Boot, now: Boot, stop_after: Duration) -> bool {
    now >= ok_at + stop_after
}

/// The last heartbeat of the holder before this one on another server (its
/// heartbeat names the highest fence below `fence` and says it held the
/// lock), as the look before the acquisition found it.
fn previous_beat(snap: &Snapshot, node: &str, fence: i64) -> Option<u64> {
    snap.beats
        .iter()
        .filter(|b| b.node != node && b.state.as_ref().is_some_and(BeatState::holds_lock))
        .filter(|b| b.fence.is_some_and(|f| f < fence))
        .max_by_key(|b| b.fence)
        .and_then(|b| b.beat_ms)
}
