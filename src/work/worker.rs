//! The worker: runs a command on exactly one server of a cluster. It takes
//! the lock only while at least one supervisor has the job enabled, runs the
//! command while it holds it, renews the lease from a watchdog task, beats
//! from its supervision loop, stops the job the moment the lock is no longer
//! its own (or before the lease could run out while Redis is unreachable or
//! no replica confirms it), and records every lifecycle change on the job's
//! event stream.

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep, sleep_until};

use crate::clock::{Boot, millis};
use crate::schema::{self, BeatState, beat};

use crate::connect::{Conn, Target};
use crate::error::{Action, Error, describe};
use crate::heard::{BEAT_EVERY, Listeners};
use crate::history::{self, Cause, FlagFlip, Record};
use crate::input::ConnectionSpec;
use crate::keys::Keys;
use crate::probe::{self, Way};
use crate::snapshot::{Enabled, Flag, Snapshot};
use crate::watcher::{WakePace, follow_pubsub};
use crate::work::handover::{Busy, before_busy, busy_elsewhere};
use crate::work::identity::Claim;
use crate::work::job::{Job, JobEnv, Killer, Work};
use crate::work::lease::Lease;
use crate::work::lock::{Acquire, Before, Lock, Renew, Wait};
use crate::work::orphan::Orphan;
use crate::work::presence::Held;
use crate::work::trim;

static BEAT: LazyLock<redis::Script> = LazyLock::new(|| schema::script(include_str!("worker.lua")));

/// How often a standby counts the holder's presence subscription between
/// its looks: one cheap command, a few a second from each standby server.
const PEEK_EVERY: Duration = Duration::from_millis(200);

/// How often a worker asks whether Redis may evict the job's keys.
const EVICTION_CHECK_EVERY: Duration = Duration::from_secs(300);

/// How long the supervision loop waits on one Redis call before it moves on
/// (the lease's safety never waits on it: the watchdog kills the job itself).
const REDIS_PATIENCE: Duration = Duration::from_secs(2);

/// How a worker runs its job.
#[derive(Debug, Clone)]
pub struct Options {
    /// This server's name, as supervisors see it.
    pub node: String,
    /// The name to take instead when another live worker runs as `node`
    /// (the default name, the host name, on a cloned host); `None`: stop,
    /// saying so.
    pub fallback_node: Option<String>,
    /// Lock lease, and with it when the worker renews, stops and kills.
    pub lease: Lease,
    /// Run the command every this long instead of restarting it when it exits.
    pub every: Option<Duration>,
    /// A job silent this long is reported `stalled`.
    pub stall_after: Option<Duration>,
    /// Heartbeat and flag check interval.
    pub tick: Duration,
    /// Time the job gets to exit after SIGTERM before SIGKILL.
    pub stop_grace: Duration,
    /// What to run while holding the lock.
    pub work: Work,
    /// Where Redis is, as given: handed to each job's reaper, which lets go
    /// of the lock once the job's tree is gone should this worker die
    /// (`None`: the lease runs out instead).
    pub connection: Option<ConnectionSpec>,
}

/// The lock while held, with the job and the watchdog that renews it.
struct Holding {
    /// When the lease was last confirmed (the confirming call's send time),
    /// on the clock that counts a suspended host.
    lock_ok_at: Boot,
    fence: i64,
    job: Option<Job>,
    next_start: Instant,
    /// Until then the job must not start: an earlier holder may still run
    /// it (Redis lost its data, is new or restarted). The heartbeat says `starting`.
    waits_until: Option<Until>,
    /// Another server whose heartbeat still says it runs the job: the job
    /// must not start before it stops (looked at again each turn until the
    /// job first starts).
    waits_for: Option<Waiting>,
    /// The holding before this one, as the acquisition found it, and when
    /// the lock was taken (Redis ms): the job waits until it is known to
    /// have stopped, or could not run any more.
    before: Before,
    acquired_ms: u64,
    /// Whether the job has started in this holding.
    started: bool,
    restarts: u32,
    renewals: watch::Receiver<Renewal>,
    /// Set from the first failed renewal until the next good one, to record it once.
    renew_failing: bool,
    /// Lets the watchdog kill the job itself when the lease can no longer be vouched for.
    killer: Killer,
    watchdog: tokio::task::JoinHandle<()>,
}

impl Holding {
    /// When the job may start: not before `next_start` (which a wait for
    /// Redis's sake set), nor before the server it waits for has stopped.
    fn start_at(&self) -> Instant {
        self.waits_for.as_ref().map_or(self.next_start, |w| w.until.at.max(self.next_start))
    }

    /// What the heartbeat says the job waits for: the server (empty: none,
    /// it waits for Redis's sake) and until when (Redis ms), the later of both.
    fn shown_wait(&self) -> Option<(&str, u64)> {
        let redis = self.waits_until.filter(|u| Instant::now() < u.at).map(|u| u.redis_ms);
        match (&self.waits_for, redis) {
            (Some(w), r) => Some((w.node.as_str(), w.until.redis_ms.max(r.unwrap_or(0)))),
            (None, Some(r)) => Some(("", r)),
            (None, None) => None,
        }
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.watchdog.abort();
    }
}

/// The end of a wait, as this process waits for it and, for the
/// heartbeat, in Redis time (ms).
#[derive(Debug, Clone, Copy)]
struct Until {
    at: Instant,
    redis_ms: u64,
}

impl Until {
    /// `left` from now, which is `now_ms` in Redis time.
    fn after(left: Duration, now_ms: u64) -> Until {
        Until { at: Instant::now() + left, redis_ms: now_ms.saturating_add(millis(left)) }
    }
}

/// Another server the job waits for, and until when at the latest.
struct Waiting {
    node: String,
    until: Until,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renewal {
    Renewed(Boot),
    /// A renewal found the lock is not ours any more.
    Lost,
    /// A renewal failed; retrying.
    Failing,
    /// No renewal succeeded within three quarters of the lease; `unconfirmed`
    /// when Redis answered but no replica confirmed.
    Expiring {
        unconfirmed: bool,
    },
}

impl Renewal {
    /// Why the job must stop, when it must.
    fn stop_reason(self) -> Option<Cause> {
        match self {
            Renewal::Lost => Some(Cause::Lost),
            Renewal::Expiring { unconfirmed: true } => Some(Cause::ReplicaUnconfirmed),
            Renewal::Expiring { unconfirmed: false } => Some(Cause::Expired),
            Renewal::Renewed(_) | Renewal::Failing => None,
        }
    }
}

/// Listens for SIGTERM and SIGINT from this call on, not from the first
/// poll as `tokio::signal` futures do: a stop request that arrives while the
/// worker connects or acquires must not take the default action, which
/// kills the worker without stopping its job cleanly or releasing the lock.
/// The future completes on the first of them, logging the signal and
/// `then`, what the process does now.
///
/// # Errors
/// [`Error::Signal`] when the signal handlers cannot be installed.
pub fn stop_signals(then: &'static str) -> Result<std::pin::Pin<Box<dyn Future<Output = ()> + Send>>, Error> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let install = |kind: SignalKind, name: &'static str| {
            signal(kind).map_err(|e| Error::Signal { signal: name, cause: e.to_string() })
        };
        let mut term = install(SignalKind::terminate(), "SIGTERM")?;
        let mut int = install(SignalKind::interrupt(), "SIGINT")?;
        Ok(Box::pin(async move {
            let name = tokio::select! {
                _ = term.recv() => "SIGTERM",
                _ = int.recv() => "SIGINT",
            };
            tracing::info!("{name} received: {then}");
        }))
    }
    #[cfg(not(unix))]
    {
        Ok(Box::pin(async move {
            let _ = tokio::signal::ctrl_c().await;
            tracing::info!("Ctrl-C received: {then}");
        }))
    }
}

/// Runs the worker until `shutdown` completes; then stops the job, releases
/// the lock and returns.
///
/// With a [`Work::Command`] on Linux, this process becomes non-dumpable
/// (`PR_SET_DUMPABLE` 0): a job running as the same user can then read
/// neither its environment nor its memory under `/proc`, where the Redis
/// password may be; it also writes no core dumps.
///
/// # Errors
/// Only for what cannot be retried: [`Error::JobStart`] when the command
/// cannot be started at all.
pub async fn run(target: Target, keys: Keys, opts: Options, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    if matches!(opts.work, Work::Command(_)) {
        hide_from_jobs();
        #[cfg(unix)]
        if crate::work::reaper::available() {
            crate::work::reaper::adopt_orphans();
        }
    }
    if target.is_cluster() && !keys.lock_shares_slot() {
        return Err(Error::Invalid(format!(
            "the lock key {} is in another Redis Cluster slot than the job's keys ({}:…), and the worker's scripts need them in one; name the lock with the job's hash tag (such as {}:lock) or leave --lock-key out",
            keys.lock, keys.prefix, keys.prefix
        )));
    }
    let host = crate::supervise::flags::this_host();
    tracing::info!(
        node = %opts.node,
        "worker for job {} on {}: runs it while somebody has it enabled and no other server does (lease {})",
        keys.job,
        target.endpoint(),
        crate::duration::human_duration(crate::clock::millis(opts.lease.whole()))
    );
    let lock = Lock::new(keys.clone(), &opts.node, opts.lease, target.endpoint()).sharded(target.is_cluster());
    let wake = Arc::new(Notify::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    // An unlock is acted on at once; other wake-ups are paced (anyone who
    // may flip a flag may publish on the wake channel).
    let unlocked = Arc::new(Notify::new());
    let listeners = Listeners::new(&keys, wake.clone()).unlocking(unlocked.clone());
    let waker = tokio::spawn(follow_pubsub(target.clone(), keys.clone(), listeners, stop_rx.clone()));
    let flips = tokio::spawn(crate::work::flips::hear(target.clone(), keys.clone(), wake.clone(), stop_rx.clone()));
    let present = Arc::new(Held::default());
    // The presence subscription starts once the name is this worker's: made
    // before, it would count as the live worker the claim looks for.
    let mut presence = None;
    let mut w = Worker {
        target,
        keys,
        opts,
        host,
        lock,
        conn: None,
        seq: 0,
        enabled: None,
        were_on: Vec::new(),
        flags_seen: None,
        acks_seen: Vec::new(),
        beat_state: None,
        way: Way::default(),
        told_gone: None,
        peek: None,
        publishing: false,
        published_at: None,
        unreadable_since: None,
        unconfirmed: None,
        eviction_asked: None,
        eviction_said: None,
        instance: uuid::Uuid::new_v4().to_string(),
        claimed: false,
        replaces: String::new(),
        refused_since: None,
        last_exit: String::new(),
        present,
    };
    tokio::pin!(shutdown);
    let mut holding: Option<Holding> = None;
    // A flood of wake-ups is one look per gap.
    let mut pace = WakePace::new();
    let result = loop {
        let mut wait = w.opts.tick;
        match w.step(&mut holding).await {
            Ok(Some(hint)) => wait = wait.min(hint),
            Ok(None) => {}
            Err(err) => break Err(err),
        }
        if presence.is_none() && w.claimed {
            let channel = w.keys.alive_channel(&w.opts.node);
            let keep = crate::work::presence::keep(
                w.target.clone(),
                channel,
                w.present.clone(),
                wake.clone(),
                stop_rx.clone(),
            );
            presence = Some(tokio::spawn(keep));
        }
        if let Some(at) = w.published_at.filter(|_| w.publishing) {
            // The next beat on time, whatever woke the loop in between.
            wait = wait.min((at + BEAT_EVERY).saturating_duration_since(Instant::now()));
        }
        let safety = holding.as_ref().map(|h| Instant::now() + (h.lock_ok_at + w.opts.lease.stop_after()).remaining());
        let standby = holding.is_none();
        // Wakes on the job's exit or on news from the watchdog.
        let holding_news = async {
            match holding.as_mut() {
                Some(Holding { job: Some(job), renewals, .. }) => {
                    tokio::select! {
                        _ = job.wait() => {}
                        _ = renewals.changed() => {}
                    }
                }
                Some(Holding { renewals, .. }) => {
                    let _ = renewals.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep(wait) => {}
            _ = unlocked.notified() => {}
            _ = wake.notified() => {
                pace.wait(Duration::ZERO).await;
            }
            _ = holding_news => {}
            _ = w.holder_gone(standby) => {}
            _ = async { match safety { Some(at) => sleep_until(at).await, None => std::future::pending().await } } => {}
            _ = &mut shutdown => break Ok(()),
        }
    };
    if let Some(h) = holding.take() {
        w.let_go(h, Cause::Shutdown).await;
    }
    if w.claimed {
        let _ = w.beat(BeatState::Idle, None, None, None).await;
    }
    if result.is_ok() {
        tracing::info!(node = %w.opts.node, "worker stopped");
    }
    let _ = stop_tx.send(true);
    let _ = waker.await;
    let _ = flips.await;
    if let Some(presence) = presence {
        let _ = presence.await;
    }
    result
}

/// Another worker process as an error names it: its pid, host and last beat.
fn other_worker(pid: &str, host: Option<&str>, age_ms: Option<u64>) -> String {
    let pid = if pid.is_empty() { "pid unknown".to_owned() } else { format!("pid {pid}") };
    let host = host.map(|h| format!(" on {h}")).unwrap_or_default();
    let age = age_ms.map(|ms| format!(", last beat {} ago", crate::duration::human_duration(ms))).unwrap_or_default();
    format!("{pid}{host}{age}")
}

/// What the log says while a new holder waits for a job that may still run elsewhere.
fn waiting_sentence(busy: &Busy) -> String {
    let left = busy.left.as_secs_f64();
    if busy.node.is_empty() {
        format!(
            "holds the lock, but nothing says whether the holder before stopped its job (Redis lost that record: evicted, or written by an older lockwatch); waiting {left:.1} s, until it could not run any more"
        )
    } else {
        format!(
            "holds the lock, but {} may still run the job (its heartbeat says so, or is gone); waiting up to {left:.1} s for it to stop",
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

/// Makes this process non-dumpable, so that only root (with
/// `CAP_SYS_PTRACE`) can read its `/proc/<pid>/environ` and memory: a job
/// running as the same user reads no password there.
pub fn hide_from_jobs() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl(PR_SET_DUMPABLE) only changes this process's own
        // dumpable flag; it takes no pointers.
        let failed = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0;
        if failed {
            let err = std::io::Error::last_os_error();
            tracing::warn!(error = %err, "cannot make the worker non-dumpable; a job could read its environment");
        }
    }
}

struct Worker {
    target: Target,
    keys: Keys,
    opts: Options,
    host: String,
    lock: Lock,
    conn: Option<Conn>,
    seq: u64,
    enabled: Option<bool>,
    /// The users whose flags were on at the last look (and those whose flag
    /// Redis lost since), to tell a lost flag from one switched off.
    were_on: Vec<String>,
    /// Each flag as last read (`None` before the first read), to record flips.
    flags_seen: Option<Vec<Flag>>,
    /// The acknowledgements as last read, to announce a change of them.
    acks_seen: Vec<crate::snapshot::Ack>,
    /// The state the last heartbeat said, to announce a change of it.
    beat_state: Option<BeatState>,
    /// How the probe last ran on this worker's connection.
    way: Way,
    /// The holder (node, heartbeat seq) last announced gone, to say it once.
    told_gone: Option<(String, Option<u64>)>,
    /// The presence channel of another server holding the lock, counted
    /// between looks while this one stands by.
    peek: Option<String>,
    /// Whether this worker's heartbeats publish the job's beat (`work::beat`),
    /// and when one last did.
    publishing: bool,
    published_at: Option<Instant>,
    /// Since when the job could not be read, to say an outage once.
    unreadable_since: Option<Instant>,
    /// This process's id in its heartbeat (`instance`), and whether the
    /// node name is its own yet (its first beat claimed it); `replaces`
    /// names a process that had the name and is known dead.
    instance: String,
    claimed: bool,
    replaces: String,
    /// Since when claiming the name is refused for a beat too recent.
    refused_since: Option<Instant>,
    /// When the memory policy was last asked, and what was said of it.
    eviction_asked: Option<Instant>,
    eviction_said: Option<String>,
    /// An acquisition no replica confirmed yet (fence, the holding before,
    /// when): a later attempt that gets the confirmation finds the lock
    /// ours already, and this is what it took over.
    unconfirmed: Option<(i64, Before, u64)>,
    last_exit: String,
    /// Whether the presence subscription (`{job}:alive:<node>`) is held, and
    /// in which server process, which the heartbeat says so that watchers
    /// may read a closed one as a death, on that process only.
    present: Arc<Held>,
}

impl Worker {
    /// One turn of the supervision loop; returns how soon to look again.
    async fn step(&mut self, holding: &mut Option<Holding>) -> Result<Option<Duration>, Error> {
        // Safety first: a lock we can no longer vouch for stops the job now.
        if let Some(h) = holding.as_mut() {
            let renewal = *h.renewals.borrow_and_update();
            if let Some(why) = renewal.stop_reason() {
                let h = holding.take();
                self.lose(h, why).await;
                return Ok(None);
            }
            match renewal {
                Renewal::Renewed(at) => {
                    h.lock_ok_at = h.lock_ok_at.max(at);
                    h.renew_failing = false;
                }
                Renewal::Failing if !h.renew_failing => {
                    h.renew_failing = true;
                    let fence = Some(h.fence);
                    self.record(Record::RenewFailed { fence }).await;
                }
                _ => {}
            }
            if h.lock_ok_at.elapsed() >= self.opts.lease.stop_after() {
                let h = holding.take();
                self.lose(h, Cause::Expired).await;
                return Ok(None);
            }
        }

        let snap = match self.look().await {
            Ok(snap) => {
                if let Some(since) = self.unreadable_since.take() {
                    let lasted = crate::duration::human_duration(crate::clock::millis(since.elapsed()));
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
        // The lock gone from under a running holder (deleted, force-unlocked,
        // evicted, lost in a restart) or taken by another: stop now, not at
        // the next renewal, and say so, so a new holder waiting for this
        // server's job may start.
        if holding.is_some() && !snap.lock.holders.iter().any(|f| f == self.lock.field()) {
            let h = holding.take();
            self.lose(h, Cause::Lost).await;
            self.say_idle().await;
            return Ok(None);
        }
        let enabled = match self.enabled_in(&snap) {
            Enabled::Yes => Some(true),
            Enabled::No => Some(false),
            Enabled::Unknown { reason } => {
                // Once per spell of unreadable flags (`self.enabled` is `None`
                // during one), or at start, before the first heartbeat.
                if self.enabled.is_some() || self.seq == 0 {
                    let doing = if holding.is_some() { "keeps running the job" } else { "does not start the job" };
                    tracing::warn!(node = %self.opts.node, problem = %reason, "cannot tell whether the job is enabled; {doing} until the flags can be read");
                }
                None
            }
        };
        self.enabled = enabled;
        // Flags that cannot be read neither start nor stop the job.
        let enabled = enabled.unwrap_or(holding.is_some());

        let mut hint = None;
        match (holding.is_some(), enabled) {
            (false, true) => match self.try_acquire().await {
                Ok((Acquire::Acquired { fence, wait, mut before, mut at_ms }, since)) => {
                    if let Some((_, b, at)) = self.unconfirmed.take().filter(|u| u.0 == fence) {
                        (before, at_ms) = (b, at);
                    }
                    // Counted from when the answer came, the latest the
                    // acquisition can have happened.
                    let waits_until = wait.map(|w| Until::after(w.left, snap.time_ms));
                    *holding = Some(self.hold(fence, since, waits_until, before, at_ms));
                    let prev_beat_ms = self.previous_beat(&snap, fence);
                    self.note_acquired(fence, wait, prev_beat_ms).await;
                }
                Ok((Acquire::Unconfirmed { fence, before, at_ms }, _)) => {
                    // Not a holding: the next attempt takes it again (it is
                    // ours) and may get the confirmation; else it expires.
                    if self.unconfirmed.as_ref().is_none_or(|u| u.0 != fence) {
                        self.unconfirmed = Some((fence, before, at_ms));
                    }
                    tracing::warn!(
                        node = %self.opts.node,
                        fence,
                        "took the lock, but no replica confirmed it within {:?}; not starting the job",
                        self.lock.lease().confirm_within()
                    );
                }
                Ok((Acquire::Held { ttl }, _)) => hint = ttl.map(|t| t + Duration::from_millis(2)),
                Err(err) => {
                    tracing::warn!(error = %err, "acquire failed");
                    self.conn = None;
                }
            },
            (true, false) => {
                if let Some(h) = holding.take() {
                    self.let_go(h, Cause::Disabled).await;
                }
            }
            _ => {}
        }

        if let Some(h) = holding.as_mut() {
            if !h.started {
                self.wait_for_others(h, &snap);
            }
            self.tend_job(h).await?;
        }
        let (state, field, fence, child) = match holding.as_ref() {
            Some(h) => {
                let stalled =
                    self.opts.stall_after.zip(h.job.as_ref()).is_some_and(|(d, j)| j.liveness.silent_for() >= d);
                (
                    if stalled {
                        BeatState::Stalled
                    } else if !h.started {
                        BeatState::Starting
                    } else {
                        BeatState::Running
                    },
                    Some(self.lock.field().to_owned()),
                    Some(h.fence),
                    h.job.as_ref().and_then(|j| j.pid),
                )
            }
            None => (BeatState::Idle, None, None, None),
        };
        let wait = holding.as_ref().filter(|h| !h.started).and_then(Holding::shown_wait);
        self.publishing = crate::work::beat::publishes(&snap, &self.opts.node, holding.is_some());
        match self.beat(state.clone(), field.as_deref().zip(fence), child, wait).await {
            Ok(()) if self.beat_state.as_ref() != Some(&state) => {
                // Watchers glance seldom: a job turning stalled (or running
                // again) is told to them at once, as a flip is.
                let first = self.beat_state.is_none();
                self.beat_state = Some(state);
                if !first {
                    self.announce().await;
                }
            }
            Ok(()) => {}
            Err(err @ Error::NodeTaken { .. }) => return Err(err),
            Err(err) => {
                tracing::warn!(error = %err, "heartbeat failed");
                self.conn = None;
            }
        }
        if let Some(h) = holding.as_ref()
            && h.job.is_none()
        {
            hint = Some(h.start_at().saturating_duration_since(Instant::now()));
        }
        Ok(hint)
    }

    /// Starts the job when due, notes its exit.
    async fn tend_job(&mut self, h: &mut Holding) -> Result<(), Error> {
        if let Some(job) = h.job.as_mut()
            && let Some(status) = job.exited()
        {
            self.last_exit = status.clone();
            self.record(Record::JobExited { fence: Some(h.fence), status }).await;
            h.job = None;
            h.killer.disarm();
            h.next_start = match self.opts.every {
                Some(every) => h.next_start.max(Instant::now() - every) + every,
                None => {
                    h.restarts += 1;
                    Instant::now() + Duration::from_millis(500u64 << h.restarts.min(6)).min(Duration::from_secs(30))
                }
            };
        }
        if h.job.is_none() && Instant::now() >= h.start_at() && self.lease_vouched_for(h) {
            // The first start in this holding is noted first: from then on a
            // new holder waits for this one, not for the one it waited for.
            if !h.started && !self.note_started().await {
                return Ok(());
            }
            let orphan = self.opts.connection.clone().map(|connection| Orphan {
                connection,
                job: self.keys.job.clone(),
                lock_key: self.keys.lock.clone(),
                node: self.opts.node.clone(),
                field: self.lock.field().to_owned(),
                fence: h.fence,
                lease_ms: millis(self.opts.lease.whole()),
            });
            let env = JobEnv { fence: h.fence, node: &self.opts.node, job: &self.keys.job, orphan: orphan.as_ref() };
            // The killer is pointed at the job as it starts, before any wait.
            let job = Job::start(&self.opts.work, &env, &h.killer)
                .await
                .map_err(|e| Error::JobStart { command: shown_work(&self.opts.work), cause: e.to_string() })?;
            if self.opts.every.is_some() {
                h.next_start = Instant::now();
            }
            let pid = job.pid;
            h.job = Some(job);
            h.started = true;
            self.record(Record::JobStarted { fence: Some(h.fence), pid }).await;
        }
        Ok(())
    }

    /// Whether the lease is still ours right now, as far as the watchdog
    /// knows: checked again right before the job starts.
    fn lease_vouched_for(&self, h: &mut Holding) -> bool {
        let renewal = *h.renewals.borrow();
        if let Renewal::Renewed(at) = renewal {
            h.lock_ok_at = h.lock_ok_at.max(at);
        }
        renewal.stop_reason().is_none() && !h.killer.fired() && h.lock_ok_at.elapsed() < self.opts.lease.stop_after()
    }

    /// Looks again, before the job first starts in this holding, whether
    /// another server's heartbeat still says it runs the job, or the holding
    /// before is not known to have stopped; says so once.
    fn wait_for_others(&self, h: &mut Holding, snap: &Snapshot) {
        let lease = self.opts.lease;
        let busy = [
            busy_elsewhere(snap, &self.opts.node, self.lock.field(), lease),
            before_busy(snap, &h.before, &self.opts.node, lease, h.acquired_ms),
        ]
        .into_iter()
        .flatten()
        .max_by_key(|b| b.left);
        if let Some(b) = &busy
            && h.waits_for.as_ref().is_none_or(|w| w.node != b.node)
        {
            tracing::warn!(node = %self.opts.node, other = %b.node, "{}", waiting_sentence(b));
        }
        h.waits_for = busy.map(|b| Waiting { until: Until::after(b.left, snap.time_ms), node: b.node });
    }

    /// Starts holding: `since` is when the acquiring call was sent, the
    /// earliest the lease can have begun; the job starts at once, or once
    /// `waits_until` has passed.
    fn hold(&self, fence: i64, since: Boot, waits_until: Option<Until>, before: Before, acquired_ms: u64) -> Holding {
        let (tx, rx) = watch::channel(Renewal::Renewed(since));
        let killer = Killer::default();
        killer.feed(since + self.opts.lease.kill_after());
        let watchdog = tokio::spawn(watchdog(self.target.clone(), self.lock.clone(), tx, killer.clone(), since));
        Holding {
            lock_ok_at: since,
            fence,
            job: None,
            next_start: waits_until.map_or_else(Instant::now, |w| w.at),
            waits_until,
            waits_for: None,
            before,
            acquired_ms,
            started: false,
            restarts: 0,
            renew_failing: false,
            killer,
            renewals: rx,
            watchdog,
        }
    }

    /// Says that the lock is ours, and why the job waits if it does.
    /// The last heartbeat of the holder before this one on another server
    /// (its heartbeat names the highest fence below `fence` and says it held
    /// the job), as the look before the acquisition found it.
    fn previous_beat(&self, snap: &Snapshot, fence: i64) -> Option<u64> {
        snap.beats
            .iter()
            .filter(|b| b.node != self.opts.node && b.state.as_ref().is_some_and(BeatState::holds_lock))
            .filter(|b| b.fence.is_some_and(|f| f < fence))
            .max_by_key(|b| b.fence)
            .and_then(|b| b.beat_ms)
    }

    async fn note_acquired(&mut self, fence: i64, wait: Option<Wait>, prev_beat_ms: Option<u64>) {
        let field = Some(self.lock.field().to_owned());
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
    async fn lose(&mut self, h: Option<Holding>, cause: Cause) {
        let Some(mut h) = h else { return };
        tracing::error!(node = %self.opts.node, fence = h.fence, "{}; killing the job", cause.sentence());
        if let Some(mut job) = h.job.take() {
            job.kill_and_wait().await;
        }
        self.note_stopped().await;
        self.record(Record::Lost { fence: Some(h.fence), cause: Some(cause) }).await;
        self.lock.next_holding();
    }

    /// Notes that this holding starts its job; `false` when it must not
    /// (the lock is not its own any more, or Redis did not answer: the next
    /// turn tries again).
    async fn note_started(&mut self) -> bool {
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
    async fn note_stopped(&mut self) {
        let lock = self.lock.clone();
        let Ok(conn) = self.conn().await else { return };
        match tokio::time::timeout(REDIS_PATIENCE, lock.stopped(conn)).await {
            Ok(Ok(())) => {}
            Ok(Err(err)) => tracing::debug!(error = %err, "cannot note that the job stopped"),
            Err(_) => tracing::debug!("cannot note that the job stopped: Redis did not answer in time"),
        }
    }

    /// Gives the lock up cleanly: stop the job, stop claiming it, release.
    async fn let_go(&mut self, mut h: Holding, cause: Cause) {
        if let Some(job) = h.job.take() {
            let field = self.lock.field().to_owned();
            let _ = self.beat(BeatState::Stopping, Some((&field, h.fence)), job.pid, None).await;
            if let Some(status) = job.stop(self.opts.stop_grace).await {
                self.last_exit = status.clone();
                self.record(Record::JobExited { fence: Some(h.fence), status }).await;
            }
        }
        h.watchdog.abort();
        let _ = self.beat(BeatState::Idle, None, None, None).await;
        let lock = self.lock.clone();
        let released = match self.conn().await {
            Ok(conn) => lock.release(conn).await,
            Err(err) => Err(err),
        };
        match released {
            Ok(true) => {
                tracing::info!(node = %self.opts.node, fence = h.fence, "released the lock");
                self.record(Record::Released { fence: Some(h.fence), cause: Some(cause) }).await;
            }
            Ok(false) => {
                tracing::error!(node = %self.opts.node, fence = h.fence, "when releasing: {}", Cause::Lost.sentence());
                self.record(Record::Lost { fence: Some(h.fence), cause: Some(Cause::Lost) }).await;
            }
            Err(err) => tracing::warn!(error = %err, "release failed; the lease will expire"),
        }
        self.lock.next_holding();
    }

    async fn conn(&mut self) -> Result<&mut Conn, Error> {
        let conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.target.manager().await?,
        };
        Ok(self.conn.insert(conn))
    }

    /// One acquisition attempt, and when it was sent: the earliest the
    /// lease can have begun.
    async fn try_acquire(&mut self) -> Result<(Acquire, Boot), Error> {
        let lock = self.lock.clone();
        let conn = self.conn().await?;
        let sent = Boot::now();
        Ok((lock.acquire(conn).await?, sent))
    }

    /// Whether anybody has the job enabled: as `snap` says, unless no flag is
    /// on and Redis lost the flag of a user whose flag was on at an earlier
    /// look (evicted or deleted, never switched off): then it cannot be
    /// told, and the job neither starts nor stops until that user's flag is
    /// written again.
    fn enabled_in(&mut self, snap: &Snapshot) -> Enabled {
        let lost: Vec<String> = snap.flags_lost(&self.were_on).into_iter().map(str::to_owned).collect();
        self.were_on = snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.clone()).collect();
        self.were_on.extend(lost.iter().cloned());
        // One flag on is enough to run: a lost flag of someone else cannot stop it.
        let enabled = snap.enabled();
        if lost.is_empty() || enabled == Enabled::Yes {
            return enabled;
        }
        let reason = format!(
            "Redis lost the flag of {} (switched on at the last look; its hash is gone, no flip switched it off); it counts again once written again",
            lost.join(", ")
        );
        Enabled::Unknown { reason }
    }

    /// Says, at start and whenever it changes, that Redis may evict the
    /// job's keys (asked every few minutes); a refused or failed question
    /// is asked again later.
    async fn check_eviction(&mut self) {
        if self.eviction_asked.is_some_and(|at| at.elapsed() < EVICTION_CHECK_EVERY) {
            return;
        }
        self.eviction_asked = Some(Instant::now());
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        let Ok(Ok(said)) = tokio::time::timeout(REDIS_PATIENCE, crate::eviction::check(conn, &host)).await else {
            return;
        };
        if said != self.eviction_said {
            match &said {
                Some(warning) => tracing::warn!(node = %self.opts.node, "{warning}"),
                None if self.eviction_said.is_some() => {
                    tracing::info!(node = %self.opts.node, "Redis no longer evicts the job's keys");
                }
                None => {}
            }
            self.eviction_said = said;
        }
    }

    /// Makes the node name this process's own with a first heartbeat,
    /// unless another live worker has it: one whose presence subscription
    /// Redis counts (even when it is stopped or hung), or that beat less than
    /// a lease and a second ago while its presence cannot be counted (a
    /// predecessor just killed, whose subscription Redis has not dropped
    /// yet, may look so: that refusal is retried until a lease and a second
    /// have passed). One known dead (its subscription gone) is replaced at
    /// once. Takes the fallback name, if there is one, when the name is taken.
    ///
    /// Returns with the name not claimed yet when it is to be asked again.
    ///
    /// # Errors
    /// [`Error::NodeTaken`] when the name is another's and there is no
    /// fallback; [`Error::Redis`] when the heartbeat cannot be written.
    async fn claim(&mut self, snap: &Snapshot) -> Result<(), Error> {
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
                    return Ok(());
                }
                Err(err @ Error::NodeTaken { .. }) => {
                    let since = *self.refused_since.get_or_insert_with(Instant::now);
                    if !alive && since.elapsed() < self.name_kept() {
                        tracing::debug!(node = %self.opts.node, "{err}; trying again");
                        return Ok(());
                    }
                    let Some(fallback) = self.opts.fallback_node.take() else { return Err(err) };
                    self.refused_since = None;
                    tracing::warn!(node = %fallback, "{err}; this one runs as {fallback}");
                    self.lock = Lock::new(self.keys.clone(), &fallback, self.opts.lease, self.target.endpoint())
                        .sharded(self.target.is_cluster());
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
    async fn tell_dead_holding(&mut self, snap: &Snapshot) {
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
    fn name_kept(&self) -> Duration {
        self.opts.lease.whole() + Duration::from_secs(1)
    }

    /// Reads the whole job; records the flips seen since the last read, or
    /// the flags as found at the first (every worker does: supervisors may
    /// not write the stream).
    async fn look(&mut self) -> Result<Snapshot, Error> {
        let keys = self.keys.clone();
        let host = self.target.endpoint().clone();
        let mut way = self.way;
        let conn = self.conn().await?;
        let read = tokio::time::timeout(REDIS_PATIENCE, probe::read(conn, &keys, &host, &mut way)).await;
        self.way = way;
        let snap = read.map_err(|_| Error::Timeout {
            action: Action::ReadingJob,
            host: host.clone(),
            after: REDIS_PATIENCE,
        })??;
        // A flip is a flag written with its time: a registered user with no
        // flag yet flipped nothing. The first look records the flags as
        // found (flips made before any worker ran, as the demo's); the
        // history counts a flip once, whoever recorded it how often.
        let first = self.flags_seen.is_none();
        let seen = self.flags_seen.as_deref().unwrap_or_default();
        let changed: Vec<Flag> = snap
            .flags
            .iter()
            .filter(|f| f.on.is_some() && f.at_ms.is_some())
            .filter(|f| !seen.iter().any(|s| s.user == f.user && s.on == f.on && s.at_ms == f.at_ms))
            .cloned()
            .collect();
        self.flags_seen = Some(snap.flags.clone());
        if !changed.is_empty() {
            self.record_flips(&changed).await;
        }
        // Supervisors may not publish: the workers tell every watcher of
        // their flips and acknowledgements.
        let acks_changed = self.acks_seen != snap.acks;
        if acks_changed {
            self.acks_seen.clone_from(&snap.acks);
        }
        if !first && (!changed.is_empty() || acks_changed) {
            self.announce().await;
        }
        self.tell_if_holder_gone(&snap).await;
        self.peek = snap
            .holder_beat()
            .filter(|b| b.node != self.opts.node && b.present == Some(true))
            .map(|b| self.keys.alive_channel(&b.node));
        self.check_own_presence(&snap);
        for key in &snap.oversized {
            self.trim(key).await;
        }
        Ok(snap)
    }

    /// Beats `idle` at once after the job was stopped under a lock found
    /// gone, and tells every watcher and worker: a new holder waiting for
    /// this server's job may start.
    async fn say_idle(&mut self) {
        if self.beat(BeatState::Idle, None, None, None).await.is_ok() && self.beat_state != Some(BeatState::Idle) {
            self.beat_state = Some(BeatState::Idle);
            self.announce().await;
        }
    }

    /// Makes the presence subscription again when the heartbeat just read
    /// names the process that holds it, yet it was not counted there: it is
    /// held where no probe reads (after a Redis Cluster failover the demoted
    /// owner keeps its sharded subscribers; after a switchover without
    /// `CLIENT KILL`, the old primary its plain ones), so a crash would be
    /// told only after the heartbeat's grace.
    fn check_own_presence(&self, snap: &crate::snapshot::Snapshot) {
        let Some(held_on) = self.present.on().filter(|id| !id.is_empty()) else { return };
        let own = snap.beats.iter().find(|b| b.node == self.opts.node);
        if let Some(beat) = own
            && beat.presence_on.as_deref() == Some(held_on.as_str())
            && (beat.present == Some(false) || beat.presence_elsewhere)
        {
            self.present.subscribe_again();
        }
    }

    /// Announces, once, a holder whose presence subscription Redis dropped:
    /// no watcher is told of a connection closing, and they glance seldom,
    /// so the servers that survive it tell them (within this worker's tick).
    async fn tell_if_holder_gone(&mut self, snap: &crate::snapshot::Snapshot) {
        let Some(field) = snap.lock.holders.first() else { return };
        let gone = snap.beats.iter().find(|b| {
            b.node != self.opts.node && b.lock_field.as_deref() == Some(field.as_str()) && b.present == Some(false)
        });
        let Some(beat) = gone else { return };
        let this = (beat.node.clone(), beat.seq);
        if self.told_gone.as_ref() != Some(&this) {
            tracing::info!(node = %self.opts.node, holder = %beat.node, "the holder's connection to Redis closed");
            self.told_gone = Some(this);
            self.announce().await;
        }
    }

    /// Returns once the holder's presence subscription is gone, counted
    /// every [`PEEK_EVERY`] while this server stands by: its next look then
    /// tells every watcher within a fraction of a second, and not at the
    /// next tick. Never returns while there is nothing to count, or counting
    /// fails (the regular look then tells).
    async fn holder_gone(&mut self, standby: bool) {
        let Some(channel) = self.peek.clone().filter(|_| standby) else {
            return std::future::pending().await;
        };
        let key = self.keys.fence();
        loop {
            sleep(PEEK_EVERY).await;
            let Ok(conn) = self.conn().await else { return std::future::pending().await };
            match tokio::time::timeout(REDIS_PATIENCE, conn.ask_owner(&key, Some(&channel))).await {
                Ok(Ok(0)) => return,
                Ok(Ok(_)) => {}
                _ => return std::future::pending().await,
            }
        }
    }

    /// Wakes every watcher and worker of the job for a full look at a change
    /// (a flip or an acknowledgement it saw, its job's state), naming this
    /// server; sharded on a cluster, where they listen on the slot's owner.
    /// Only a wake-up: a watcher that misses it sees the change at its next
    /// full read. Supervisors may not publish (a message's size has no ACL
    /// rule), so the workers announce their writes too.
    async fn announce(&mut self) {
        let channel = self.keys.wake_channel();
        let node = self.opts.node.clone();
        let Ok(conn) = self.conn().await else { return };
        let woken: Result<i64, _> = redis::cmd(conn.publish_command()).arg(channel).arg(node).query_async(conn).await;
        if let Err(err) = woken {
            tracing::debug!(error = %err, "the change was made but not announced");
        }
    }

    /// Cuts a supervisor's hash that holds junk back to its fields, and says
    /// whose it was; failures are logged.
    async fn trim(&mut self, key: &str) {
        let keys = self.keys.clone();
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        match tokio::time::timeout(REDIS_PATIENCE, trim::trim(conn, &keys, key, &host)).await {
            Ok(Ok(bytes)) => tracing::warn!(
                node = %self.opts.node,
                "{key} took {bytes} bytes, far more than lockwatch writes there: cut back to its own fields"
            ),
            Ok(Err(err)) => tracing::warn!(node = %self.opts.node, error = %err, "cannot trim {key}"),
            Err(_) => tracing::warn!(node = %self.opts.node, "cannot trim {key}: Redis did not answer in time"),
        }
    }

    /// Records each flip in `changed` with its reason; failures are logged.
    async fn record_flips(&mut self, changed: &[Flag]) {
        let keys = self.keys.clone();
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        let flips = match tokio::time::timeout(REDIS_PATIENCE, history::read::flags(conn, &keys, changed, &host)).await
        {
            Ok(Ok(flips)) => flips,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "cannot read the reasons of the flags that changed");
                changed
                    .iter()
                    .map(|f| FlagFlip {
                        user: f.user.clone(),
                        on: f.on == Some(true),
                        at_ms: f.at_ms,
                        host: f.host.clone(),
                        reason: None,
                    })
                    .collect()
            }
            Err(_) => {
                tracing::warn!("cannot read the reasons of the flags that changed: Redis did not answer in time");
                return;
            }
        };
        for flip in flips {
            self.record(Record::FlagsChanged(flip)).await;
        }
    }

    /// Writes the heartbeat; `wait` is the server the job waits for (empty:
    /// none, it waits for Redis's sake) and until when, while it waits.
    async fn beat(
        &mut self,
        state: BeatState,
        holding: Option<(&str, i64)>,
        child: Option<u32>,
        wait: Option<(&str, u64)>,
    ) -> Result<(), Error> {
        self.seq += 1;
        let (field, fence) = holding.map(|(f, n)| (f.to_owned(), n.to_string())).unwrap_or_default();
        let (presence, presence_on) = match self.present.on() {
            Some(server) => (crate::work::presence::claim(&self.target), server),
            None => ("", String::new()),
        };
        let (waits_for, wait_until) = wait.map(|(node, ms)| (node.to_owned(), ms.to_string())).unwrap_or_default();
        let pairs: [(&str, String); 13] = [
            (beat::NODE, self.opts.node.clone()),
            (beat::HOST, self.host.clone()),
            (beat::PID, std::process::id().to_string()),
            (beat::LOCK_FIELD, field),
            (beat::FENCE, fence),
            (beat::SEQ, self.seq.to_string()),
            (beat::STATE, state.as_str().to_owned()),
            (beat::VERSION, env!("CARGO_PKG_VERSION").to_owned()),
            (beat::CHILD_PID, child.map(|p| p.to_string()).unwrap_or_default()),
            (beat::PRESENCE, presence.to_owned()),
            (beat::PRESENCE_ON, presence_on),
            (beat::WAITS_FOR, waits_for),
            (beat::WAIT_UNTIL_MS, wait_until),
        ];
        let keys = (self.keys.node(&self.opts.node), self.keys.nodes());
        let node = self.opts.node.clone();
        let last_exit = self.last_exit.clone();
        let host = self.target.endpoint().clone();
        // One beat per BEAT_EVERY, however often this loop turns; a little early is on time.
        let due = self.publishing
            && self.published_at.is_none_or(|at| at.elapsed() + Duration::from_millis(50) >= BEAT_EVERY);
        let publish = if due { self.conn().await?.publish_command() } else { "" };
        let sent = Instant::now();
        let keeps = millis(self.name_kept());
        let mut call = BEAT.key(keys.0);
        call.key(keys.1).arg(publish).arg(self.keys.beat_channel()).arg(&node);
        call.arg(&self.instance).arg(if self.claimed { "1" } else { "0" }).arg(&self.replaces).arg(keeps);
        for (k, v) in pairs {
            call.arg(k).arg(v);
        }
        call.arg(beat::LAST_EXIT).arg(last_exit);
        let answer: redis::Value =
            call.invoke_async(self.conn().await?).await.map_err(|e| describe(e, Action::WritingHeartbeat, &host))?;
        if let Ok((_, other_host, pid, age)) = redis::from_redis_value::<(String, String, String, u64)>(answer) {
            let other_host = Some(other_host.as_str()).filter(|h| !h.is_empty());
            return Err(Error::NodeTaken { node, by: other_worker(&pid, other_host, Some(age)) });
        }
        if due {
            self.published_at = Some(sent);
        }
        Ok(())
    }

    /// Appends a lifecycle event to the job's stream; failures are logged,
    /// never fatal.
    async fn record(&mut self, record: Record) {
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
}

/// Renews the lease every third of it and reports each outcome. When the
/// lock is no longer ours, or three quarters of the lease pass without a
/// successful renewal, it kills the job itself, whatever the supervision
/// loop is waiting on, so the job never outlives the lease.
async fn watchdog(target: Target, lock: Lock, report: watch::Sender<Renewal>, killer: Killer, since: Boot) {
    let lease = lock.lease();
    let mut last_ok = since;
    let mut conn: Option<Conn> = None;
    // The last attempt reached Redis but no replica confirmed it.
    let mut unconfirmed = false;
    loop {
        sleep((last_ok + lease.renew_every()).remaining()).await;
        // Said once a round, not at every retry.
        let mut said = false;
        loop {
            let deadline = Instant::now() + (last_ok + lease.stop_after()).remaining();
            let sent = Boot::now();
            let attempt = async {
                let c = match conn.take() {
                    Some(c) => c,
                    None => target.manager().await?,
                };
                let c = conn.insert(c);
                lock.renew(c).await
            };
            let mut out_of_time = match tokio::time::timeout_at(deadline, attempt).await {
                Ok(Ok(Renew::Renewed)) => {
                    last_ok = sent;
                    unconfirmed = false;
                    killer.feed(sent + lease.kill_after());
                    let _ = report.send(Renewal::Renewed(sent));
                    break;
                }
                Ok(Ok(Renew::NotOurs)) => {
                    killer.kill();
                    let _ = report.send(Renewal::Lost);
                    return;
                }
                Ok(Ok(Renew::Unconfirmed)) => {
                    if !std::mem::replace(&mut said, true) {
                        tracing::warn!("no replica confirmed the lease renewal in time; retrying");
                    }
                    unconfirmed = true;
                    false
                }
                Ok(Err(err)) => {
                    if !std::mem::replace(&mut said, true) {
                        tracing::warn!(error = %err, "lease renewal failed; retrying until the lease runs out");
                    }
                    conn = None;
                    unconfirmed = false;
                    false
                }
                Err(_) => true,
            };
            if !out_of_time {
                let _ = report.send(Renewal::Failing);
                out_of_time = tokio::time::timeout_at(deadline, sleep(Duration::from_millis(250))).await.is_err();
            }
            if out_of_time {
                killer.kill();
                let _ = report.send(Renewal::Expiring { unconfirmed });
                return;
            }
        }
    }
}
