//! The watcher: the async shell around the status engine. One task per job
//! looks at Redis every poll interval, and sooner when something happens: an
//! entry on the job's event stream, a Redisson unlock message, a keyspace
//! notification, or the moment the engine says the verdict may change (a
//! lease running out, a heartbeat ageing past its grace). Most looks are
//! glances ([`look`]): the full read comes when its fingerprint changed, a
//! flip was announced, and every `full_every`. While a steady job's beats
//! come (below), looks are three poll intervals apart (full reads three
//! times rarer for the jobs of a process that calls their roll).
//!
//! Between looks it listens: one worker publishes the job's beat every
//! 1.8 s ([`Heard`]), and while the beat comes Redis answers and the holder
//! lives, so the watcher sends nothing. When nothing was heard for a while
//! it asks Redis with one cheap command (`PING`); when the holder's beat
//! went quiet, it counts the holder's presence subscription instead, and
//! looks at once when it is gone, so a dead holder is told within about two
//! seconds even with no other worker left to tell it. A read or a check
//! that does not answer within the patience counts as a failed look while
//! it is still awaited, so a frozen Redis shows as `unknown` within seconds,
//! however long the poll interval, while one slow reply changes nothing. It
//! publishes the latest status and every event to any number of subscribers.
//!
//! When to look, check or wait is [`pace`]'s to decide, without I/O; this
//! file sends what it asks and listens.

mod listen;
mod looks;
mod pace;
mod roll_call;
mod shared;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};

use crate::clock::millis;
use crate::connect::Target;
use crate::error::{Error, RedisFailure};
use crate::heard::{BEAT_EVERY, BEAT_LATE, Heard, Listeners};
use crate::keys::Keys;
use crate::probe::Known;
use crate::snapshot::Snapshot;
use crate::status::{self, Engine, Event, State, Status, Step};
use looks::Looks;
use pace::{Ask, Ears, Knobs, Looked, Pace};
use shared::Shared;

pub(crate) use listen::follow_channels;

/// How a watcher looks.
#[derive(Debug, Clone)]
pub struct Options {
    /// Regular probe interval.
    pub poll: Duration,
    /// How long the watcher may hear nothing from Redis between looks, while
    /// no worker's beat comes, before it asks whether Redis still answers: a
    /// `PING` on the look's own connection (to the node that serves the job,
    /// on a cluster), far cheaper than a look. While beats come it asks once
    /// one is late ([`crate::heard::BEAT_LATE`]), and that late beat is the
    /// first silence. One check left unanswered for `patience` counts like a
    /// failed look, so a Redis that froze with its connections open is
    /// `unknown` within this plus `engine.confirmations` × `patience` (2.6 s
    /// with the defaults; 2.8 s after the last beat while beats come),
    pub alive_every: Duration,
    /// Longest wait between attempts while Redis cannot be reached.
    pub max_backoff: Duration,
    /// How long a read may go unanswered before each further stretch of
    /// silence counts as a failed look (the engine needs
    /// `engine.confirmations` of them in a row before it says `unknown`).
    pub patience: Duration,
    /// Longest time between two full reads, for writes nobody announced
    /// (an acknowledgement by an older client; a flag set by hand while no
    /// worker runs: a worker records the flips it sees on the stream, whose
    /// newest entry a glance sees).
    pub full_every: Duration,
    pub engine: status::Config,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            poll: Duration::from_secs(10),
            alive_every: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            patience: Duration::from_millis(800),
            full_every: Duration::from_secs(300),
            engine: status::Config::default(),
        }
    }
}

/// A running watcher. Dropping it stops it; [`Watcher::stop`] waits for that.
pub struct Watcher {
    status: watch::Receiver<Option<Status>>,
    events: broadcast::Sender<Event>,
    wake: Arc<Notify>,
    stop: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
    /// What it listens with, shared with the other watchers of its group.
    group: Option<Arc<Group>>,
}

/// The listeners of a group of watchers, which end with the last of them.
struct Group {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Group {
    async fn end(mut self) {
        let _ = self.stop.send(true);
        for task in std::mem::take(&mut self.tasks) {
            let _ = task.await;
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl Watcher {
    /// Starts watching `keys` on `target`.
    pub fn spawn(target: Target, keys: Keys, options: Options) -> Watcher {
        let mut one = Watcher::spawn_all(target, vec![(keys, options)]);
        one.swap_remove(0)
    }

    /// Starts watching each of `jobs` on `target`, all on one set of
    /// connections: one for the looks, one reading the event streams, one
    /// subscribed to the channels (on a Cluster, each job's streams and
    /// channels on the node that owns them). Their looks fall on one grid
    /// and go together, one call for all of them, where the server allows
    /// ([`looks`]).
    pub fn spawn_all(target: Target, jobs: Vec<(Keys, Options)>) -> Vec<Watcher> {
        let shared = Arc::new(Shared::new(target.clone()));
        let (group_stop, group_stop_rx) = watch::channel(false);
        let (start, spread) = (Instant::now(), spread());
        let (looks, gatherer) = if jobs.len() > 1 && !target.is_cluster() {
            let (asked, gathered) = tokio::sync::mpsc::unbounded_channel();
            let gatherer = tokio::spawn(looks::gather(shared.clone(), gathered, group_stop_rx.clone()));
            (Looks::Together(shared.clone(), asked), Some(gatherer))
        } else {
            (Looks::Alone(shared.clone()), None)
        };
        let (mut watchers, mut streams, mut channels, mut roll) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        // Many jobs' beats would cost Redis a message to this process for
        // each; a roll call of their holders costs it one command. (On a
        // Cluster each job's holders are counted on its own node.)
        let calling = jobs.len() >= ROLL_CALL_FROM && !target.is_cluster();
        let pace = jobs.first().map(|(_, o)| (roll_call::every(o.patience), o.patience));
        for (keys, options) in jobs {
            let (status_tx, status) = watch::channel(None);
            let (events, _) = broadcast::channel(EVENTS_KEPT);
            let (stop, stop_rx) = watch::channel(false);
            let (wake, entry, heard) = (Arc::new(Notify::new()), Arc::new(Notify::new()), Arc::new(Heard::default()));
            streams.push(listen::Stream { key: keys.events(), entry: entry.clone(), heard: heard.clone() });
            let listeners = Listeners::new(&keys, wake.clone());
            if calling {
                channels.push((keys.clone(), listeners.hearing_no_beats(heard.clone())));
                roll.push(roll_call::Roll { keys: keys.clone(), heard: heard.clone(), entry: entry.clone() });
            } else {
                channels.push((keys.clone(), listeners.hearing(heard.clone())));
            }
            let shell = Shell {
                shared: shared.clone(),
                looks: looks.clone(),
                start,
                spread,
                keys,
                options,
                rolled: calling,
                status: status_tx,
                events: events.clone(),
                wake: wake.clone(),
                entry,
                heard,
                stop: stop_rx,
            };
            let task = tokio::spawn(shell.run());
            watchers.push(Watcher { status, events, wake, stop, task: Some(task), group: None });
        }
        // A blocking read of streams on different nodes is refused.
        let streams = if target.is_cluster() { streams.into_iter().map(|s| vec![s]).collect() } else { vec![streams] };
        let mut tasks: Vec<JoinHandle<()>> = streams
            .into_iter()
            .map(|streams| tokio::spawn(listen::follow_streams(target.clone(), streams, group_stop_rx.clone())))
            .collect();
        tasks.push(tokio::spawn(follow_channels(target, channels, group_stop_rx.clone())));
        tasks.extend(gatherer);
        if let (false, Some((every, patience))) = (roll.is_empty(), pace) {
            tasks.push(tokio::spawn(roll_call::roll_call(shared, roll, every, patience, group_stop_rx)));
        }
        let group = Arc::new(Group { stop: group_stop, tasks });
        for watcher in &mut watchers {
            watcher.group = Some(group.clone());
        }
        watchers
    }

    /// The latest status (`None` until the first probe answered or failed).
    pub fn status(&self) -> watch::Receiver<Option<Status>> {
        self.status.clone()
    }

    /// Every event from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Probe at once, e.g. after this desktop flipped a flag.
    pub fn refresh(&self) {
        self.wake.notify_one();
    }

    /// Stops the watcher and waits until its tasks are gone (the
    /// listeners too, when it was the last of its group).
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        if let Some(group) = self.group.take().and_then(Arc::into_inner) {
            group.end().await;
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

struct Shell {
    shared: Arc<Shared>,
    looks: Looks,
    /// The group's clock and grid: when it began, and where in the poll
    /// interval its looks fall (0 to 1).
    start: Instant,
    spread: f64,
    keys: Keys,
    options: Options,
    /// Whether its holder is asked after by the group's roll call.
    rolled: bool,
    status: watch::Sender<Option<Status>>,
    events: broadcast::Sender<Event>,
    /// A message (a flip announced, an unlock, a keyspace event) or a
    /// refresh: a full read. A stream entry: a look (a glance sees it).
    wake: Arc<Notify>,
    entry: Arc<Notify>,
    heard: Arc<Heard>,
    stop: watch::Receiver<bool>,
}

impl Shell {
    async fn run(self) {
        let Shell { shared, looks, start, spread, keys, options, rolled, status, events, wake, entry, heard, mut stop } =
            self;
        // The pacing's clock: ms since the group began.
        let at = move |i: Instant| millis(i.saturating_duration_since(start));
        let knobs = Knobs {
            poll: millis(options.poll),
            alive_every: millis(options.alive_every),
            max_backoff: millis(options.max_backoff),
            full_every: millis(options.full_every) * if rolled { ROLLED_FULL_FACTOR } else { 1 },
            confirmations: options.engine.confirmations,
            beat_every: millis(BEAT_EVERY),
            beat_late: millis(BEAT_LATE),
        };
        let phase = (knobs.poll as f64 * spread) as u64;
        let mut pace = Pace::new(knobs, at(Instant::now()), spread).on_grid(phase);
        let mut known = Known::default();
        let mut engine = Engine::new(&keys.job, &keys.lock, options.engine.clone());
        let mut last = Instant::now();
        let mut settle = WakePace::new();
        let alive_key = keys.fence();
        // Why the job is unknown, as last said: `Some(None)` when Redis
        // answered but the job cannot be told (no such job). A new cause
        // while it stays unknown (no job, then refused; refused, then a
        // password refused) is said too: the state alone does not change.
        let mut cause: Option<Option<RedisFailure>> = None;
        let publish = |step: Step| {
            status.send_if_modified(|shown| {
                let changed = shown.as_ref() != Some(&step.status);
                *shown = Some(step.status.clone());
                changed
            });
            for event in step.events {
                tracing::info!(job = %event.job, event = event.event.as_str(), reason = %event.reason, "event");
                let _ = events.send(event);
            }
            (step.next_check_ms, step.steady)
        };
        'run: loop {
            let asked = Instant::now();
            let (last_heard, beat) = heard_since(&heard, start);
            let mut ask = pace.ask(at(asked), &Ears { last: last_heard, beat: &beat });
            // The shared connection as it is now: one another watcher saw
            // break is not used again, here either.
            let mut conn = shared.current();
            if conn.is_none() {
                ask = Ask::Look { full: matches!(ask, Ask::Look { full: true }) };
            }
            if ask == (Ask::Look { full: true }) {
                known.forget();
            }
            let mut silences = 0u32;
            if let Ask::Check { missed: true, .. } = ask {
                silences = 1;
                let reason = format!(
                    "Redis on {} has sent nothing for {:.1} s, not even the workers' beat",
                    shared.target().host(),
                    heard.last().elapsed().as_secs_f64()
                );
                let elapsed_ms = millis(std::mem::replace(&mut last, Instant::now()).elapsed());
                let _ = publish(engine.handle_failure(reason, elapsed_ms));
                pace.failed();
            }
            let reply = {
                let request = async {
                    if let (Ask::Check { quiet, .. }, Some((_, node))) = (&ask, conn.as_mut()) {
                        let asking = quiet.as_deref().map(|q| keys.alive_channel(q));
                        return Reply::Alive(node.ask_owner(&alive_key, asking.as_deref()).await);
                    }
                    Reply::Look(looks.look(&keys, &mut known).await)
                };
                tokio::pin!(request);
                loop {
                    tokio::select! {
                        reply = &mut request => break Some(reply),
                        _ = sleep(options.patience) => {
                            // Silence is a failed look; the answer, when it comes, still counts.
                            silences += 1;
                            let waited = asked.elapsed().as_secs_f64();
                            let reason = format!(
                                "Redis on {} has not answered for {waited:.1} s; check the server's load and the network",
                                shared.target().host()
                            );
                            let elapsed_ms = millis(std::mem::replace(&mut last, Instant::now()).elapsed());
                            let _ = publish(engine.handle_failure(reason, elapsed_ms));
                            pace.failed();
                        }
                        _ = stop.changed() => break None,
                    }
                }
            };
            let Some(reply) = reply else { break };
            match reply {
                Reply::Look(answer) => {
                    let elapsed_ms = millis(std::mem::replace(&mut last, Instant::now()).elapsed());
                    let mut looked = Looked::default();
                    let step = match answer {
                        Ok(snapshot) => {
                            heard.something();
                            let found = present_holder(&snapshot);
                            // A holder newly found present counts as heard: its beats are awaited from now.
                            if let Some(node) = found.as_deref().filter(|_| found.as_deref() != pace.holder()) {
                                heard.vouch(node);
                            }
                            heard.holding(found.clone());
                            looked = Looked { answered: true, holder: found, held: snapshot.lock.is_held(), ..looked };
                            let step = engine.handle_read(&snapshot);
                            cause = (step.status.state == State::Unknown).then_some(None);
                            step
                        }
                        Err(err) => {
                            tracing::debug!(job = %keys.job, error = %err, "probe failed");
                            let mut step = engine.handle_failure(err.to_string(), elapsed_ms);
                            if step.status.checked_at_ms.is_none() {
                                step.status.failure = err.redis_failure();
                            }
                            if step.status.state == State::Unknown && cause != Some(step.status.failure) {
                                if cause.is_some() {
                                    tracing::info!(job = %keys.job, reason = %err, "the job is still unknown, now for another reason");
                                }
                                cause = Some(step.status.failure);
                            }
                            step
                        }
                    };
                    let (next_check_ms, steady) = publish(step);
                    let failures = engine.failures();
                    pace.looked(at(Instant::now()), Looked { next_check_ms, steady, failures, ..looked });
                }
                // Redis answers, and the holder (if asked after) is there: nothing new.
                Reply::Alive(Ok(count)) if silences == 0 && count > 0 => {
                    heard.something();
                    if let Ask::Check { quiet: Some(node), .. } = &ask {
                        heard.vouch(node);
                    }
                }
                Reply::Alive(result) => {
                    // A late answer (the silence counted), a refusal, or the
                    // holder's subscription gone: the look tells what it means.
                    if let Err(err) = result {
                        tracing::debug!(job = %keys.job, error = %err, "liveness check failed");
                    }
                    pace.look_now(at(Instant::now()));
                    continue;
                }
            }
            // Until the next look or check; each beat heard meanwhile puts a check off.
            loop {
                let (last_heard, beat) = heard_since(&heard, start);
                let until = pace.wait_until(at(Instant::now()), &Ears { last: last_heard, beat: &beat });
                tokio::select! {
                    _ = sleep_until(start + Duration::from_millis(until)) => {
                        let now = at(Instant::now());
                        let (last_heard, beat) = heard_since(&heard, start);
                        if pace.wait_until(now, &Ears { last: last_heard, beat: &beat }) <= now {
                            break;
                        }
                    }
                    _ = wake.notified() => {
                        // Writes come in bursts (an acquisition touches several keys): let it
                        // settle; and wake-ups in a flood are one look per gap.
                        settle.wait(Duration::from_millis(15)).await;
                        let now = at(Instant::now());
                        pace.read_fully(now);
                        pace.look_now(now);
                        break;
                    }
                    _ = entry.notified() => {
                        settle.wait(Duration::from_millis(15)).await;
                        pace.look_now(at(Instant::now()));
                        break;
                    }
                    _ = stop.changed() => break 'run,
                }
            }
        }
    }
}

/// What came back from Redis: a look, or a check between looks (the
/// holder's presence subscriptions counted, or 1 for a `PING`).
#[allow(clippy::large_enum_variant)] // one at a time, moved once; boxing would only add noise
enum Reply {
    Look(Result<Snapshot, Error>),
    Alive(redis::RedisResult<i64>),
}

/// What was heard, on the pacing's clock (ms since `start`): when Redis was
/// last heard from, and when each node's beat (any for `None`) last was.
fn heard_since(heard: &Heard, start: Instant) -> (u64, impl Fn(Option<&str>) -> Option<u64> + '_) {
    let at = move |i: Instant| millis(i.saturating_duration_since(start));
    (at(heard.last()), move |node: Option<&str>| heard.last_beat(node).map(at))
}

/// The node holding the lock, when the look counted its presence
/// subscription: its beat going quiet is worth counting it again.
fn present_holder(snapshot: &Snapshot) -> Option<String> {
    snapshot.holder_beat().filter(|b| b.present == Some(true)).map(|b| b.node.clone())
}

/// How many of a job's events wait for a slow subscriber before the oldest
/// are dropped (it is told how many). Each slot is allocated up front, for
/// every job a process watches: events come one or two at a time, and a
/// burst of a flapping job is still far below this.
const EVENTS_KEPT: usize = 32;

/// From how many jobs on one Redis a process calls the roll of their
/// holders rather than hearing each one's beat ([`roll_call`]): one job's
/// beat is about half a message a second, a roll call two commands.
const ROLL_CALL_FROM: usize = 4;

/// How many times `full_every` apart a process calling the roll of its jobs
/// reads each in full (15 minutes by default): the full reads are most of
/// what watching many jobs costs Redis, and what they alone would see is
/// rare (a flag written by hand while no worker runs, an acknowledgement
/// while none runs); every change a worker records or a lockwatch client
/// announces is read at once, as for one job.
const ROLLED_FULL_FACTOR: u64 = 3;

/// The shortest time between two reads a wake-up asks for. Anyone allowed
/// to publish on `{job}:wake` (a supervisor, for her flips) could otherwise
/// make every watcher and worker read the whole job once per message: a
/// flood costs at most a few reads a second per process, and a flip after
/// a quiet spell is still read at once.
pub(crate) const WAKE_GAP: Duration = Duration::from_millis(250);

/// The pace of the reads wake-ups ask for: one per [`WAKE_GAP`] at most.
pub(crate) struct WakePace {
    /// When the last read a wake-up asked for was due.
    last: Instant,
}

impl WakePace {
    pub(crate) fn new() -> WakePace {
        WakePace { last: Instant::now().checked_sub(WAKE_GAP).unwrap_or_else(Instant::now) }
    }

    /// Waits until a wake-up may be read: `settle` from now at the
    /// earliest, and a gap after the last.
    pub(crate) async fn wait(&mut self, settle: Duration) {
        self.last = (Instant::now() + settle).max(self.last + WAKE_GAP);
        sleep_until(self.last).await;
    }
}

/// A fraction in [0, 1), different for each watcher.
fn spread() -> f64 {
    use std::hash::BuildHasher;
    let random = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    (random % 1_000) as f64 / 1_000.0
}
