//! The worker: runs a command on exactly one server of a cluster. It takes
//! the lock only while at least one supervisor has the job enabled, runs the
//! command while it holds it, renews the lease from a watchdog task, beats
//! from its supervision loop, stops the job the moment the lock is no longer
//! its own (or before the lease could run out while Redis is unreachable or
//! no replica confirms it), and records every lifecycle change on the job's
//! event stream. What to do is decided by [`crate::work::engine`]; this is
//! the shell that does it.

mod claim;
mod look;
mod signals;
mod talk;
mod turn;
mod watchdog;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep};

use crate::connect::{Conn, Target};
use crate::error::Error;
use crate::heard::{BEAT_EVERY, Listeners};
use crate::history::budget::Budget;
use crate::input::ConnectionSpec;
use crate::keys::Keys;
use crate::probe::Known;
use crate::schema::BeatState;
use crate::snapshot::Flag;
use crate::watcher::{WakePace, follow_channels};
use crate::work::engine::{Action, Engine, Renewal, Rules};
use crate::work::job::{Job, Killer, Work};
use crate::work::lease::Lease;
use crate::work::lock::Lock;
use crate::work::presence::Held;
use crate::work::{flips, lost};

pub use signals::{hide_from_jobs, stop_signals};

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

/// The lock while held, as the shell holds it: the job's process, the
/// watchdog that renews the lease and what it says, the kill it arms.
struct Live {
    job: Option<Job>,
    renewals: watch::Receiver<Renewal>,
    /// Lets the watchdog kill the job itself when the lease can no longer be vouched for.
    killer: Killer,
    watchdog: tokio::task::JoinHandle<()>,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.watchdog.abort();
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
        return Err(Error::LockSlot { lock: keys.lock.clone(), prefix: keys.prefix.clone() });
    }
    let host = crate::supervise::flags::this_host();
    tracing::info!(
        node = %opts.node,
        "worker for job {} on {}: runs it while somebody has it enabled and no other server does (lease {})",
        keys.job,
        target.endpoint(),
        crate::duration::human_duration(crate::clock::millis(opts.lease.whole()))
    );
    let instance = uuid::Uuid::new_v4().to_string();
    let lock = Lock::new(keys.clone(), &opts.node, opts.lease, target.endpoint())
        .sharded(target.is_cluster())
        .for_instance(&instance);
    let wake = Arc::new(Notify::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    // An unlock is acted on at once; other wake-ups are paced (anyone who
    // may flip a flag may publish on the wake channel).
    let unlocked = Arc::new(Notify::new());
    let listeners = Listeners::new(&keys, wake.clone()).unlocking(unlocked.clone());
    let waker = tokio::spawn(follow_channels(target.clone(), vec![(keys.clone(), listeners)], stop_rx.clone()));
    let writes = Arc::new(flips::Writes::default());
    let flips = tokio::spawn(flips::hear(target.clone(), keys.clone(), wake.clone(), writes.clone(), stop_rx.clone()));
    let present = Arc::new(Held::default());
    // The presence subscription starts once the name is this worker's: made
    // before, it would count as the live worker the claim looks for.
    let mut presence = None;
    let engine = Engine::new(Rules {
        node: opts.node.clone(),
        instance: instance.clone(),
        lease: opts.lease,
        every: opts.every,
        stall_after: opts.stall_after,
    });
    let mut w = Worker {
        target,
        keys,
        opts,
        host,
        engine,
        lock,
        conn: None,
        seq: 0,
        last_beat_ms: 0,
        enabled: None,
        memory: lost::Memory::default(),
        missed: false,
        told_lease: false,
        held_until: None,
        flags_seen: None,
        acks_seen: Vec::new(),
        flip_budget: Budget::default(),
        beat_state: None,
        known: Known::default(),
        writes,
        last_beat: None,
        beat_failing: None,
        full_at: None,
        looked_at: None,
        told_gone: None,
        peek: None,
        publishing: false,
        published_at: None,
        unreadable_since: None,
        eviction_asked: None,
        eviction_said: None,
        instance,
        claimed: false,
        replaces: String::new(),
        refused_since: None,
        unconfirmed: None,
        last_exit: String::new(),
        present,
    };
    tokio::pin!(shutdown);
    let mut live: Option<Live> = None;
    // A flood of wake-ups is one look per gap.
    let mut pace = WakePace::new();
    // When the next look is due, and whether the wait ends on the job's
    // beat alone (due before it: a beat between looks).
    let mut next_look = Instant::now();
    let mut beat_only = false;
    let result = loop {
        if beat_only {
            if let Err(err @ Error::NodeTaken { .. }) = w.beat_now(live.as_ref()).await {
                break Err(err);
            }
        } else {
            let mut wait = w.look_every(w.writes.tracked());
            match w.step(&mut live).await {
                Ok(Some(hint)) => wait = wait.min(hint),
                Ok(None) => {}
                Err(err) => break Err(err),
            }
            next_look = Instant::now() + wait;
        }
        // The engine's deadline, whatever the turn ended on (a look that
        // failed included): the lease's safety is checked on time.
        let mut wait = next_look.saturating_duration_since(Instant::now());
        if let Some(at) = w.engine.deadline() {
            wait = wait.min(at.remaining());
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
        // The next heartbeat on time (the job's beat, for the holder that
        // publishes it), whatever woke the loop in between; alone, it needs
        // no look.
        let beat_due = [
            w.published_at.filter(|_| w.publishing).map(|at| at + BEAT_EVERY),
            w.last_beat.as_ref().map(|(at, _)| *at + w.beat_every()),
        ]
        .into_iter()
        .flatten()
        .min()
        // A heartbeat Redis refused is tried again paced, not at once.
        .map(|at| w.beat_failing.map_or(at, |(retry, _)| at.max(retry)))
        .map(|at| at.saturating_duration_since(Instant::now()));
        let beat_first = beat_due.is_some_and(|due| due < wait);
        wait = beat_due.map_or(wait, |due| wait.min(due));
        beat_only = false;
        let standby = live.is_none();
        // Wakes on the job's exit or on news from the watchdog.
        let holding_news = async {
            match live.as_mut() {
                Some(Live { job: Some(job), renewals, .. }) => {
                    tokio::select! {
                        _ = job.wait() => {}
                        _ = renewals.changed() => {}
                    }
                }
                Some(Live { renewals, .. }) => {
                    let _ = renewals.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep(wait) => beat_only = beat_first,
            _ = unlocked.notified() => {}
            _ = wake.notified() => {
                // Paced, but never past an unlock or a stop request: a
                // hand-over right after a wake-up is not held back.
                tokio::select! {
                    _ = pace.wait(Duration::ZERO) => {}
                    _ = unlocked.notified() => {}
                    _ = &mut shutdown => break Ok(()),
                }
            }
            _ = holding_news => {}
            _ = w.holder_gone(standby) => {}
            _ = &mut shutdown => break Ok(()),
        }
    };
    if let (Some(Action::LetGo { fence, cause }), Some(l)) = (w.engine.shutdown(), live.take()) {
        w.let_go(l, fence, cause).await;
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

/// How often a worker looks while nothing tells it of writes.
const UNTRACKED_LOOK: Duration = Duration::from_secs(1);

/// The longest between two heartbeats, looks or not: a desk's heartbeat
/// grace (7 s by default) spans two.
const LONGEST_BEAT: Duration = Duration::from_secs(3);

struct Worker {
    target: Target,
    keys: Keys,
    opts: Options,
    host: String,
    /// What to do, decided.
    engine: Engine,
    lock: Lock,
    conn: Option<Conn>,
    seq: u64,
    /// Redis time of this process's last beat: a beat of another process
    /// under its name that is older came back with old data, took nothing.
    last_beat_ms: u64,
    enabled: Option<bool>,
    /// The flags read on at the last look, and those Redis lost since, to
    /// tell a lost flag from one switched off.
    memory: lost::Memory,
    /// Whether a look failed since the last that read: what tracking heard
    /// meanwhile went with it.
    missed: bool,
    /// Whether another worker's longer lease was said.
    told_lease: bool,
    /// Until when (Redis ms) it holds back from starting the job again, as
    /// the engine last said.
    held_until: Option<u64>,
    /// Each flag as last read (`None` before the first read), to record flips.
    flags_seen: Option<Vec<Flag>>,
    /// How many more of each person's flips the history takes.
    flip_budget: Budget,
    /// Who was on it, with their notes, at the last look, to announce a change.
    acks_seen: Vec<(String, String)>,
    /// The state the last heartbeat said, to announce a change of it.
    beat_state: Option<BeatState>,
    /// The last full read, for glances while nothing it covers changed.
    known: Known,
    /// Whether the flags and acknowledgements may have changed since.
    writes: Arc<flips::Writes>,
    /// When the last heartbeat was sent, and what it said besides its number.
    last_beat: Option<(Instant, Vec<(&'static str, String)>)>,
    /// While heartbeats fail: when the next may be tried, and how many
    /// failed in a row (said once, then again when one is written).
    beat_failing: Option<(Instant, u32)>,
    /// When the next look reads everything, whatever was heard.
    full_at: Option<Instant>,
    /// Redis time (ms) of the last look's read.
    looked_at: Option<u64>,
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
    /// Why the acquisitions since the last that counted did not, as said
    /// once (`None`: the last counted, or none was refused yet).
    unconfirmed: Option<Unconfirmed>,
    /// When the memory policy was last asked, and what was said of it.
    eviction_asked: Option<Instant>,
    eviction_said: Option<String>,
    last_exit: String,
    /// Whether the presence subscription (`{job}:alive:<node>`) is held, and
    /// in which server process, which the heartbeat says so that watchers
    /// may read a closed one as a death, on that process only.
    present: Arc<Held>,
}

/// Why a lock taken did not count as a holding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unconfirmed {
    /// No replica confirmed it in time.
    Replica,
    /// The sentinels did not vouch for the primary it was taken on.
    Sentinels,
}
