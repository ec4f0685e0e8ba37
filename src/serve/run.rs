//! The serve process: a watcher on each job served, their statuses into
//! the metrics, their events agreed on in Redis (each job's among the serve
//! processes of that job) and handed to one sender task per robot, shared
//! by every job (`sender`; one rate limit per robot); the claims this
//! process holds renewed until each robot is done with them, and others'
//! claims taken over when they run out unfinished (`ledger`, `lease`); and
//! a trouble still there with nobody on it told again, once, to the
//! escalation robots (`escalate_after`), agreed as an incident is.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};

use crate::connect::{Conn, Target};
use crate::keys::Keys;
use crate::status::{Event, EventKind, Stall, Status};
use crate::watcher::{self, Watcher};

use super::agree::{self, Closing, Family, Incident, Incidents, Post, Role, Verdict};
use super::deliver::{self, Retry};
use super::lease::RENEW_EVERY;
use super::ledger::Ledger;
use super::message::{Now, Story, is_alarm};
use super::metrics::Metrics;
use super::peers;
use super::robots::{Kind, Robot};
use super::sender::{self, Claim, Parcel};

mod claims;

/// How `lockwatch serve` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// This process's name among the serve processes of the job.
    pub node: String,
    pub robots: Vec<Robot>,
    /// Where to serve `/metrics`, if anywhere.
    pub metrics: Option<SocketAddr>,
    /// How long after an incident's message its repeats are only counted,
    /// for one summary at the end (zero: every incident is posted).
    pub repeat_window: Duration,
    pub retry: Retry,
    pub watch: watcher::Options,
}

/// Why `lockwatch serve` cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("cannot serve /metrics on {addr} ({cause}); give --metrics an address that is free here")]
    Listen { addr: SocketAddr, cause: String },
}

/// How long past the failover window a `dying` stall waits for what
/// follows it before it is posted itself.
const SETTLE_MARGIN: Duration = Duration::from_secs(2);

/// How often a serve process says in Redis that it watches the job.
const BEAT_EVERY: Duration = Duration::from_secs(5);

/// How long after another's claim runs out this process looks at it.
const TAKEOVER_MARGIN: Duration = Duration::from_millis(200);

/// Runs until `stop` completes. Makes this process non-dumpable first, as
/// a worker does: the robots' urls and secrets are in its memory and,
/// where the unit passes them, its environment.
///
/// # Errors
/// [`ServeError::Listen`] when the metrics address cannot be bound.
pub async fn run(
    target: Target,
    jobs: Vec<Keys>,
    options: Options,
    stop: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    crate::work::worker::hide_from_jobs();
    let (stop_tx, stop_rx) = watch::channel(false);
    let names: Vec<String> = jobs.iter().map(|k| k.job.clone()).collect();
    let metrics = Arc::new(Metrics::new(&names));
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    if let Some(addr) = options.metrics {
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|e| ServeError::Listen { addr, cause: e.to_string() })?;
        tasks.push(tokio::spawn(super::http::serve(listener, metrics.clone(), stop_rx.clone())));
    }
    let agent = deliver::agent();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel();
    let (confirm_tx, mut confirm_rx) = mpsc::unbounded_channel();
    let mut senders = Vec::new();
    for robot in &options.robots {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push(Sender { kind: robot.kind, tag: robot.tag(), tx, escalate_after: robot.escalate_after });
        let links = sender::Loop { done: done_tx.clone(), confirm: confirm_tx.clone() };
        let send = sender::send(robot.clone(), rx, links, agent.clone(), options.retry, stop_rx.clone());
        tasks.push(tokio::spawn(send));
    }
    drop((done_tx, confirm_tx));
    let first_told: Vec<String> =
        options.robots.iter().filter(|r| r.escalate_after.is_none()).map(|r| r.label.clone()).collect();
    let (feed_tx, mut feed_rx) = mpsc::unbounded_channel();
    let mut watchers = Vec::new();
    let mut serves = Vec::new();
    let watched = Watcher::spawn_all(target.clone(), jobs.iter().map(|k| (k.clone(), options.watch.clone())).collect());
    for (job, (keys, watcher)) in jobs.into_iter().zip(watched).enumerate() {
        tasks.push(tokio::spawn(feed(job, watcher.status(), watcher.events(), feed_tx.clone(), stop_rx.clone())));
        watchers.push(watcher);
        serves.push(Serve {
            job,
            target: target.clone(),
            keys,
            node: options.node.clone(),
            window: options.repeat_window,
            senders: senders.clone(),
            conn: None,
            peers: vec![options.node.clone()],
            incidents: Incidents::default(),
            closes: HashMap::new(),
            told_unreachable: false,
            held: Vec::new(),
            settle: Duration::from_millis(options.watch.engine.failover_window_ms) + SETTLE_MARGIN,
            ledger: Ledger::default(),
            escalations: Vec::new(),
            first_told: first_told.clone(),
        });
    }
    drop(feed_tx);
    // A process with no robot posts nothing: it takes no part in the agreement.
    let posts = !senders.is_empty();
    let status_of = |job: usize| watchers.get(job).and_then(|w| w.status().borrow().clone());
    let mut beat_at = Instant::now();
    let mut renew_at = Instant::now() + RENEW_EVERY;
    tokio::pin!(stop);
    loop {
        let far = Instant::now() + BEAT_EVERY * 100;
        let close_at = serves.iter().flat_map(|s| s.closes.values()).min().copied().unwrap_or(far);
        let held_at = serves.iter().flat_map(|s| s.held.iter().map(|h| h.0)).min().unwrap_or(far);
        let watch_at = serves.iter().filter_map(|s| s.ledger.next_due()).min().unwrap_or(far);
        let escalate_at = serves.iter().flat_map(|s| s.escalations.iter().map(|e| e.at)).min().unwrap_or(far);
        tokio::select! {
            _ = &mut stop => break,
            fed = feed_rx.recv() => match fed {
                None => break,
                Some(Feed::Status(status)) => metrics.update(&status),
                Some(Feed::Event(job, event)) => {
                    if event.event == EventKind::Failover {
                        metrics.failover(&event.job);
                    }
                    if posts && let Some(serve) = serves.get_mut(job) {
                        serve.event(event, status_of(job).as_ref()).await;
                    }
                }
                Some(Feed::Lagged(n)) => tracing::warn!("{n} events came faster than they could be agreed on, and were not posted"),
            },
            _ = sleep_until(beat_at), if posts => {
                for serve in &mut serves {
                    serve.beat().await;
                }
                beat_at = Instant::now() + BEAT_EVERY;
            }
            _ = sleep_until(close_at) => {
                for serve in &mut serves {
                    serve.close_due(status_of(serve.job).as_ref()).await;
                }
            }
            _ = sleep_until(held_at) => {
                for serve in &mut serves {
                    serve.release_held().await;
                }
            }
            Some(ask) = confirm_rx.recv() => claims::ready(&mut serves, ask).await,
            Some((done, tag)) = done_rx.recv() => {
                for serve in &mut serves {
                    let ids: Vec<String> = done.iter().filter(|c| c.job == serve.job).map(|c| c.id.clone()).collect();
                    if !ids.is_empty() {
                        serve.ledger.posted(&ids, &tag);
                        serve.record().await;
                    }
                }
            }
            _ = sleep_until(renew_at) => {
                for serve in &mut serves {
                    serve.renew().await;
                }
                renew_at = Instant::now() + RENEW_EVERY;
            }
            _ = sleep_until(watch_at) => {
                for serve in &mut serves {
                    serve.take_over_due().await;
                }
            }
            _ = sleep_until(escalate_at) => {
                for serve in &mut serves {
                    serve.escalate_due(status_of(serve.job).as_ref()).await;
                }
            }
        }
    }
    let _ = stop_tx.send(true);
    for watcher in watchers {
        watcher.stop().await;
    }
    for task in tasks {
        let _ = task.await;
    }
    Ok(())
}

/// What the watchers of the jobs tell the loop.
enum Feed {
    Status(Box<Status>),
    /// An event of the job at this place among those served.
    Event(usize, Event),
    Lagged(u64),
}

/// Passes what the watcher of the `job`-th job publishes on to the loop,
/// until `stop` turns true or the loop is gone.
async fn feed(
    job: usize,
    mut statuses: watch::Receiver<Option<Status>>,
    mut events: broadcast::Receiver<Event>,
    to: mpsc::UnboundedSender<Feed>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let fed = tokio::select! {
            changed = statuses.changed() => match changed {
                Ok(()) => statuses.borrow_and_update().clone().map(|s| Feed::Status(Box::new(s))),
                Err(_) => return,
            },
            event = events.recv() => match event {
                Ok(event) => Some(Feed::Event(job, event)),
                Err(broadcast::error::RecvError::Lagged(n)) => Some(Feed::Lagged(n)),
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = stop.changed() => return,
        };
        if let Some(fed) = fed
            && to.send(fed).is_err()
        {
            return;
        }
    }
}

/// What the loop keeps between events, for one job.
struct Serve {
    /// The job's place among those served.
    job: usize,
    target: Target,
    keys: Keys,
    node: String,
    window: Duration,
    senders: Vec<Sender>,
    conn: Option<Conn>,
    /// The serve processes beating at the last look, first name first.
    peers: Vec<String>,
    incidents: Incidents,
    /// When each open window of repeats ends.
    closes: HashMap<Family, Instant>,
    /// Whether this process posted `unreachable` (and so posts `reachable`).
    told_unreachable: bool,
    /// `dying` stalls, until their lock expires and the failover window
    /// passes: what comes next (a failover, a death, a recovery) tells the
    /// incident in one message instead; only a dying that nothing follows
    /// is posted, then.
    held: Vec<(Instant, Event, Option<crate::status::Status>)>,
    /// How long after a dying lock expires the next event may take.
    settle: Duration,
    /// The claims this process owes robots, and others' it may take over.
    ledger: Ledger,
    /// The troubles to tell the escalation robots of when still there.
    escalations: Vec<Escalation>,
    /// The robots told of each incident at once, as an escalation names them.
    first_told: Vec<String>,
}

/// A trouble to tell again: when, after how long (the escalation robots'
/// `escalate_after`), which incident, and its event.
struct Escalation {
    at: Instant,
    after: Duration,
    id: String,
    event: Event,
}

/// The way to one robot's sender task.
#[derive(Clone)]
struct Sender {
    kind: Kind,
    /// The robot's [`Robot::tag`], as claims record it.
    tag: String,
    tx: mpsc::UnboundedSender<Parcel>,
    /// An escalation robot's delay: told only of escalations after it.
    escalate_after: Option<Duration>,
}

impl Serve {
    /// A connection for the agreement, made when there is none.
    async fn conn(&mut self) -> Option<&mut Conn> {
        if self.conn.is_none() {
            match tokio::time::timeout(Duration::from_secs(2), self.target.manager()).await {
                Ok(Ok(conn)) => self.conn = Some(conn),
                Ok(Err(err)) => tracing::debug!(error = %err, "no connection for the agreement"),
                Err(_) => tracing::debug!("no connection for the agreement within 2 s"),
            }
        }
        self.conn.as_mut()
    }

    async fn beat(&mut self) {
        let (keys, node) = (self.keys.clone(), self.node.clone());
        let Some(conn) = self.conn().await else { return };
        match peers::beat(conn, &keys, &node).await {
            Ok(peers) => self.peers = peers,
            Err(err) => {
                tracing::debug!(error = %err, "beat failed");
                self.conn = None;
            }
        }
    }

    /// Hands `story` to the robots (`everyone`, or the webhooks alone)
    /// but those in `skip`; with the claim `id` it tells, when this process
    /// holds one, which it then owes those robots. An escalation goes to the
    /// escalation robots of its delay, everything else to the others.
    fn tell(&mut self, claim: Option<&str>, story: &Story, everyone: bool, skip: &HashSet<String>) {
        let after = match story {
            Story::Escalation { after_ms, .. } => Some(*after_ms),
            _ => None,
        };
        let chosen: Vec<&Sender> = self
            .senders
            .iter()
            .filter(|s| s.escalate_after.map(|d| d.as_millis() as u64) == after)
            .filter(|s| (everyone || s.kind == Kind::Webhook) && !skip.contains(&s.tag))
            .collect();
        if let Some(id) = claim {
            self.ledger.own(id, chosen.iter().map(|s| s.tag.clone()));
        }
        for s in chosen {
            let claim = claim.map(|id| Claim { job: self.job, id: id.to_owned() });
            let _ = s.tx.send(Parcel { claim, story: story.clone() });
        }
    }

    async fn event(&mut self, event: Event, status: Option<&crate::status::Status>) {
        use EventKind::*;
        if matches!(event.event, Failover | Died | Recovered | Restarted | Stopped | Conflict | DataLost) {
            self.held.clear();
        }
        // The trouble ended (the job runs again, or nobody wants it): nothing to escalate.
        match event.event {
            Recovered | Started | Stopped => self.escalations.retain(|e| e.event.event == StandbyLost),
            StandbyBack => self.escalations.retain(|e| e.event.event != StandbyLost),
            _ => {}
        }
        if let (Stalled, Some(Stall::Dying), Some(left)) = (event.event, event.stall, event.ms) {
            let at = Instant::now() + Duration::from_millis(left) + self.settle;
            self.held.push((at, event, status.cloned()));
            return;
        }
        self.agree(event, status).await;
    }

    /// Posts the `dying` stalls that nothing followed.
    async fn release_held(&mut self) {
        let now = Instant::now();
        let (due, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held).into_iter().partition(|h| h.0 <= now);
        self.held = kept;
        for (_, event, status) in due {
            self.agree(event, status.as_ref()).await;
        }
    }

    /// Agrees in Redis on who posts `event`, and posts it if this process does.
    async fn agree(&mut self, event: Event, status: Option<&crate::status::Status>) {
        let now = status.map(Now::of).unwrap_or_default();
        let fence = status.and_then(|s| s.lock.fence);
        let story = Story::Incident { event: event.clone(), now, seen_by: self.node.clone() };
        match event.event {
            EventKind::Unreachable => {
                // Nobody can agree through a Redis nobody reaches: the first of those beating tells.
                if self.peers.first() == Some(&self.node) {
                    self.told_unreachable = true;
                    self.tell(None, &story, true, &HashSet::new());
                }
                return;
            }
            EventKind::Reachable => {
                if std::mem::take(&mut self.told_unreachable) {
                    self.tell(None, &story, true, &HashSet::new());
                }
                return;
            }
            _ => {}
        }
        let Some(incident) = self.incidents.name(&event, fence) else { return };
        let Some(verdict) = self.claim(&incident, self.window).await else {
            tracing::warn!(
                "could not agree through Redis on {} about job {}: not posted here (a serve process that reaches Redis posts it)",
                event.event.as_str(),
                event.job
            );
            return;
        };
        if let Some(repeats) = verdict.closed {
            self.tell(None, &repeats_story(&event.job, repeats, status), true, &HashSet::new());
        }
        match verdict.post {
            Post::Post | Post::Counted => {
                self.tell(Some(&incident.id), &story, verdict.post == Post::Post, &HashSet::new());
                self.record().await;
            }
            Post::Taken(Some(left)) => self.ledger.watch(&incident.id, story, Instant::now() + left + TAKEOVER_MARGIN),
            Post::Taken(None) => {}
        }
        if let Some(left) = verdict.window_left {
            self.closes.insert(incident.family, Instant::now() + left);
        }
        // Every serve process keeps the escalation of a trouble, whoever
        // posted it or counted it as a repeat: whichever is alive then tells
        // it, once. One of a kind at a time: a flapping job is one trouble.
        let pending = self.escalations.iter().any(|e| e.event.event == incident.kind);
        if incident.role == Role::Problem && is_alarm(incident.kind) && !pending {
            let mut delays: Vec<Duration> = self.senders.iter().filter_map(|s| s.escalate_after).collect();
            delays.sort();
            delays.dedup();
            for after in delays {
                let id = incident.id.clone();
                self.escalations.push(Escalation { at: Instant::now() + after, after, id, event: event.clone() });
            }
        }
    }

    /// Claims `incident` in Redis, trying three times; `None` when Redis
    /// could not be asked (another serve process that reaches it tells it).
    async fn claim(&mut self, incident: &Incident, window: Duration) -> Option<Verdict> {
        let (keys, node) = (self.keys.clone(), self.node.clone());
        for _ in 0..3 {
            if let Some(conn) = self.conn().await {
                match agree::claim(conn, &keys, &node, incident, window).await {
                    Ok(verdict) => return Some(verdict),
                    Err(err) => {
                        tracing::debug!(error = %err, "claim failed");
                        self.conn = None;
                    }
                }
            }
            sleep(Duration::from_millis(200)).await;
        }
        None
    }

    /// Tells the escalation robots of each trouble that is due, still there
    /// and with nobody on it ("I'm on it" in force): once among the serve
    /// processes, claimed as an incident is.
    async fn escalate_due(&mut self, status: Option<&crate::status::Status>) {
        let now = Instant::now();
        let (due, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.escalations).into_iter().partition(|e| e.at <= now);
        self.escalations = kept;
        for escalation in due {
            let Some(status) = status.filter(|s| s.state != crate::status::State::Unknown) else {
                // Not known now (Redis away): look again in a second.
                self.escalations.push(Escalation { at: now + Duration::from_secs(1), ..escalation });
                continue;
            };
            if !persists(escalation.event.event, status) {
                continue;
            }
            let mut now_facts = Now::of(status);
            // Who is on it, read now: nobody announces an acknowledgement
            // while no worker runs, and the watcher's read may predate it.
            let (keys, target) = (self.keys.clone(), self.target.clone());
            match self.conn().await {
                Some(conn) => match crate::probe::probe(conn, &keys, target.endpoint()).await {
                    Ok(snapshot) => {
                        now_facts.on_it = snapshot.acks.iter().map(|a| (a.user.clone(), a.note.clone())).collect()
                    }
                    Err(err) => tracing::debug!(error = %err, "reading who is on it failed; the last read counts"),
                },
                None => tracing::debug!("no connection to read who is on it; the last read counts"),
            }
            if !now_facts.on_it.is_empty() {
                continue;
            }
            let after_ms = escalation.after.as_millis() as u64;
            let incident = Incident {
                id: format!("escalated:{after_ms}:{}", escalation.id),
                family: Family::Escalation,
                role: Role::Problem,
                kind: escalation.event.event,
                at_ms: escalation.event.at_ms,
            };
            let Some(verdict) = self.claim(&incident, Duration::ZERO).await else {
                // Redis away for now (a failover, say): every serve process tries again.
                tracing::debug!(incident = %incident.id, "could not agree on an escalation; trying again");
                self.escalations.push(Escalation { at: Instant::now() + Duration::from_secs(1), ..escalation });
                continue;
            };
            let story =
                Story::Escalation { event: escalation.event, now: now_facts, after_ms, told: self.first_told.clone() };
            match verdict.post {
                Post::Post | Post::Counted => {
                    self.tell(Some(&incident.id), &story, true, &HashSet::new());
                    self.record().await;
                }
                Post::Taken(Some(left)) => {
                    self.ledger.watch(&incident.id, story, Instant::now() + left + TAKEOVER_MARGIN)
                }
                Post::Taken(None) => {}
            }
        }
    }

    /// Closes the windows of repeats that are due; one summary for each
    /// that this process closed with repeats in it.
    async fn close_due(&mut self, status: Option<&crate::status::Status>) {
        let now = Instant::now();
        let due: Vec<Family> = self.closes.iter().filter(|(_, at)| **at <= now).map(|(f, _)| *f).collect();
        let keys = self.keys.clone();
        for family in due {
            self.closes.remove(&family);
            let Some(conn) = self.conn().await else {
                self.closes.insert(family, now + Duration::from_secs(1));
                continue;
            };
            match agree::close(conn, &keys, family).await {
                Ok(Closing::Closed(Some(repeats))) => {
                    self.tell(None, &repeats_story(&keys.job, repeats, status), true, &HashSet::new())
                }
                Ok(Closing::Later(left)) => {
                    self.closes.insert(family, Instant::now() + left);
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::debug!(error = %err, "closing a window failed");
                    self.conn = None;
                    self.closes.insert(family, now + Duration::from_secs(1));
                }
            }
        }
    }
}

/// Whether the trouble an event told is still there, as `status` has it.
fn persists(kind: EventKind, status: &crate::status::Status) -> bool {
    use crate::status::State;
    match kind {
        EventKind::Died => status.state == State::Down,
        EventKind::Stalled => status.state == State::Stale,
        EventKind::Conflict => status.state == State::Conflict,
        EventKind::StandbyLost => status.no_standby.is_some(),
        _ => status.state.severity() > State::Pending.severity(),
    }
}

fn repeats_story(job: &str, r: agree::Repeats, status: Option<&crate::status::Status>) -> Story {
    Story::Repeats {
        job: job.to_owned(),
        counts: r.counts,
        first_ms: r.first_ms,
        last_ms: r.last_ms,
        now: status.map(Now::of).unwrap_or_default(),
    }
}
