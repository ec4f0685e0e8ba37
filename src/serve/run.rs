//! The serve process: a watcher on the job, its statuses into the
//! metrics, its events agreed on in Redis and handed to one sender task
//! per robot, which folds a burst into one message, keeps the robot's
//! rate limit and retries.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep, sleep_until};

use crate::connect::{Conn, Target};
use crate::keys::Keys;
use crate::status::{Event, EventKind, Stall};
use crate::watcher::{self, Watcher};

use super::agree::{self, Closing, Family, Incidents, Post};
use super::deliver::{self, Answer, Retry};
use super::limit::Limit;
use super::message::{Now, Story, payload, render};
use super::metrics::Metrics;
use super::robots::{Kind, Robot};

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

/// How long a sender waits after a message for others to fold into it.
const GATHER: Duration = Duration::from_millis(100);

/// How long past the failover window a `dying` stall waits for what
/// follows it before it is posted itself.
const SETTLE_MARGIN: Duration = Duration::from_secs(2);

/// How often a serve process says in Redis that it watches the job.
const BEAT_EVERY: Duration = Duration::from_secs(5);

/// Runs until `stop` completes. Makes this process non-dumpable first, as
/// a worker does: the robots' urls and secrets are in its memory and,
/// where the unit passes them, its environment.
///
/// # Errors
/// [`ServeError::Listen`] when the metrics address cannot be bound.
pub async fn run(
    target: Target,
    keys: Keys,
    options: Options,
    stop: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    crate::work::worker::hide_from_jobs();
    let (stop_tx, stop_rx) = watch::channel(false);
    let metrics = Arc::new(Metrics::new(&keys.job));
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    if let Some(addr) = options.metrics {
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|e| ServeError::Listen { addr, cause: e.to_string() })?;
        tasks.push(tokio::spawn(super::http::serve(listener, metrics.clone(), stop_rx.clone())));
    }
    let agent = deliver::agent();
    let mut senders = Vec::new();
    for robot in &options.robots {
        let (tx, rx) = mpsc::unbounded_channel();
        senders.push((robot.kind, tx));
        tasks.push(tokio::spawn(send(robot.clone(), rx, agent.clone(), options.retry, stop_rx.clone())));
    }
    let watcher = Watcher::spawn(target.clone(), keys.clone(), options.watch.clone());
    let mut serve = Serve {
        target,
        keys,
        node: options.node.clone(),
        window: options.repeat_window,
        senders,
        conn: None,
        peers: vec![options.node.clone()],
        incidents: Incidents::default(),
        closes: HashMap::new(),
        told_unreachable: false,
        held: Vec::new(),
        settle: Duration::from_millis(options.watch.engine.failover_window_ms) + SETTLE_MARGIN,
    };
    let mut statuses = watcher.status();
    let mut events = watcher.events();
    let mut beat_at = Instant::now();
    tokio::pin!(stop);
    loop {
        let far = Instant::now() + BEAT_EVERY * 100;
        let close_at = serve.closes.values().min().copied().unwrap_or(far);
        let held_at = serve.held.iter().map(|h| h.0).min().unwrap_or(far);
        tokio::select! {
            _ = &mut stop => break,
            changed = statuses.changed() => {
                if changed.is_err() { break; }
                if let Some(status) = statuses.borrow_and_update().clone() {
                    metrics.update(&status);
                }
            }
            event = events.recv() => match event {
                Ok(event) => {
                    if event.event == EventKind::Failover {
                        metrics.failover();
                    }
                    let status = watcher.status().borrow().clone();
                    serve.event(event, status.as_ref()).await;
                }
                Err(broadcast::error::RecvError::Lagged(n)) => tracing::warn!("{n} events came faster than they could be agreed on, and were not posted"),
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = sleep_until(beat_at) => {
                serve.beat().await;
                beat_at = Instant::now() + BEAT_EVERY;
            }
            _ = sleep_until(close_at) => serve.close_due(watcher.status().borrow().as_ref()).await,
            _ = sleep_until(held_at) => serve.release_held().await,
        }
    }
    let _ = stop_tx.send(true);
    watcher.stop().await;
    for task in tasks {
        let _ = task.await;
    }
    Ok(())
}

/// What the loop keeps between events.
struct Serve {
    target: Target,
    keys: Keys,
    node: String,
    window: Duration,
    senders: Vec<(Kind, mpsc::UnboundedSender<Story>)>,
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
        match agree::beat(conn, &keys, &node).await {
            Ok(peers) => self.peers = peers,
            Err(err) => {
                tracing::debug!(error = %err, "beat failed");
                self.conn = None;
            }
        }
    }

    /// Hands `story` to the robots: `everyone`, or the webhooks alone.
    fn tell(&self, story: &Story, everyone: bool) {
        for (kind, tx) in &self.senders {
            if everyone || *kind == Kind::Webhook {
                let _ = tx.send(story.clone());
            }
        }
    }

    async fn event(&mut self, event: Event, status: Option<&crate::status::Status>) {
        use EventKind::*;
        if matches!(event.event, Failover | Died | Recovered | Restarted | Stopped | Conflict | DataLost) {
            self.held.clear();
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
                    self.tell(&story, true);
                }
                return;
            }
            EventKind::Reachable => {
                if std::mem::take(&mut self.told_unreachable) {
                    self.tell(&story, true);
                }
                return;
            }
            _ => {}
        }
        let Some(incident) = self.incidents.name(&event, fence) else { return };
        let (keys, node, window) = (self.keys.clone(), self.node.clone(), self.window);
        let mut verdict = None;
        for _ in 0..3 {
            if let Some(conn) = self.conn().await {
                match agree::claim(conn, &keys, &node, &incident, window).await {
                    Ok(v) => {
                        verdict = Some(v);
                        break;
                    }
                    Err(err) => {
                        tracing::debug!(error = %err, "claim failed");
                        self.conn = None;
                    }
                }
            }
            sleep(Duration::from_millis(200)).await;
        }
        let Some(verdict) = verdict else {
            tracing::warn!(
                "could not agree through Redis on {} about job {}: not posted here (a serve process that reaches Redis posts it)",
                event.event.as_str(),
                event.job
            );
            return;
        };
        if let Some(repeats) = verdict.closed {
            self.tell(&repeats_story(&event.job, repeats, status), true);
        }
        match verdict.post {
            Post::Post => self.tell(&story, true),
            Post::Counted => self.tell(&story, false),
            Post::Taken => {}
        }
        if let Some(left) = verdict.window_left {
            self.closes.insert(incident.family, Instant::now() + left);
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
                Ok(Closing::Closed(Some(repeats))) => self.tell(&repeats_story(&keys.job, repeats, status), true),
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

fn repeats_story(job: &str, r: agree::Repeats, status: Option<&crate::status::Status>) -> Story {
    Story::Repeats {
        job: job.to_owned(),
        counts: r.counts,
        first_ms: r.first_ms,
        last_ms: r.last_ms,
        now: status.map(Now::of).unwrap_or_default(),
    }
}

/// One robot's sender: waits a moment after a message for the rest of a
/// burst, and as long as the robot's rate limit asks; folds what came into
/// one message (a webhook gets each event as it is); posts it.
async fn send(
    robot: Robot,
    mut stories: mpsc::UnboundedReceiver<Story>,
    agent: ureq::Agent,
    retry: Retry,
    mut stop: watch::Receiver<bool>,
) {
    let start = Instant::now();
    let now_ms = move || start.elapsed().as_millis() as u64;
    let mut limit = Limit::of(robot.kind);
    loop {
        let first = tokio::select! {
            story = stories.recv() => match story { Some(story) => story, None => return },
            _ = stop.changed() => return,
        };
        let mut batch = vec![first];
        if robot.kind != Kind::Webhook {
            let ready = Instant::now() + GATHER.max(Duration::from_millis(limit.wait(now_ms())));
            loop {
                tokio::select! {
                    story = stories.recv() => match story { Some(story) => batch.push(story), None => break },
                    _ = sleep_until(ready) => break,
                    _ = stop.changed() => return,
                }
            }
        }
        let bodies: Vec<(usize, serde_json::Value)> = match robot.kind {
            Kind::Webhook => batch.iter().filter_map(|story| Some((1, webhook_body(story)?))).collect(),
            _ => {
                let messages: Vec<_> = batch.iter().map(|s| render(s, robot.language, robot.utc_offset_min)).collect();
                vec![(messages.len(), payload(&robot, &messages))]
            }
        };
        for (folded, body) in bodies {
            let mut tries = 0;
            let answer = deliver::post(&agent, &robot, body, retry, || {
                tries += 1;
                limit.record(now_ms());
            })
            .await;
            report(&robot, &answer, folded, tries);
        }
    }
}

/// The log line for an answer: one sentence.
fn report(robot: &Robot, answer: &Answer, folded: usize, tries: u32) {
    match answer {
        Answer::Sent { .. } => tracing::info!(robot = %robot.label, messages = folded, tries, "posted"),
        Answer::Refused { sentence, .. } => {
            tracing::warn!("{} refused the message, which was not sent: {sentence}", robot.label)
        }
        Answer::TooFast { said } => {
            tracing::warn!("{} kept saying too fast after {tries} tries; the message was not sent: {said}", robot.label)
        }
        Answer::Failed { sentence } => {
            tracing::warn!("{} did not take the message after {tries} tries: {sentence}", robot.label)
        }
    }
}

/// A webhook's body: the event as `lockwatch watch --json` prints it; a
/// test as an event named `test`; repeats are not sent (the webhook had
/// each as it came).
fn webhook_body(story: &Story) -> Option<serde_json::Value> {
    match story {
        Story::Incident { event, .. } => serde_json::to_value(event).ok(),
        Story::Test { node, at_ms } => Some(serde_json::json!({
            "event": "test", "at_ms": at_ms, "reason": format!("lockwatch serve --check on {node}"),
        })),
        Story::Repeats { .. } => None,
    }
}

/// Posts a test message to each robot, once: each robot's answer.
pub async fn check(robots: &[Robot], node: &str) -> Vec<Answer> {
    let agent = deliver::agent();
    let at_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    let story = Story::Test { node: node.to_owned(), at_ms };
    let once = Retry { tries: 1, first_wait: Duration::ZERO };
    let mut answers = Vec::new();
    for robot in robots {
        let body = match robot.kind {
            Kind::Webhook => webhook_body(&story).unwrap_or_default(),
            _ => payload(robot, &[render(&story, robot.language, robot.utc_offset_min)]),
        };
        answers.push(deliver::post(&agent, robot, body, once, || {}).await);
    }
    answers
}
