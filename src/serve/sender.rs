//! One task per robot: it waits a moment after a message for the rest of a
//! burst, and as long as the robot's rate limit asks (this process's count,
//! then, right before the post, the count every serve process keeps in
//! Redis, which the serve loop asks: `quota`); folds what came into
//! one message (a webhook gets each event as it is); posts it, and tells
//! the serve loop which claimed incidents the robot is done with. Also
//! `--check`'s test message.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Instant, sleep_until};

use super::deliver::{self, Answer, Retry};
use super::limit::Limit;
use super::message::{Story, payload, render};
use super::robots::{Kind, Robot};

/// How long a sender waits after a message for others to fold into it.
const GATHER: Duration = Duration::from_millis(100);

/// A story for one robot, with the claimed incident it tells, if any.
#[derive(Debug, Clone)]
pub struct Parcel {
    /// The incident, when this process claimed it: the robot's being done
    /// with it is recorded in the claim.
    pub claim: Option<Claim>,
    pub story: Story,
}

/// A claimed incident: the job it is of (its place among those served)
/// and its id there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Claim {
    pub job: usize,
    pub id: String,
}

/// A robot done with claimed incidents: them and the robot's tag.
pub type Done = (Vec<Claim>, String);

/// Asked of the serve loop right before a post: which of these claims are
/// still this process's (renewing them), and, for a robot with a rate
/// limit, a place for the post among every serve process's.
#[derive(Debug)]
pub struct Confirm {
    pub claims: Vec<Claim>,
    /// Whether the post tells more than these claims (then it goes even
    /// when none of them is still this process's).
    pub unclaimed: bool,
    /// The robot's tag and windows, when it has a rate limit to keep.
    pub limit: Option<(String, Vec<(u64, usize)>)>,
    pub answer: oneshot::Sender<Confirmed>,
}

/// The serve loop's word on a [`Confirm`].
#[derive(Debug)]
pub struct Confirmed {
    /// The claims still this process's.
    pub still: Vec<Claim>,
    /// Zero when the post is counted in the robot's limit among every
    /// serve process (or has none); else how long to wait before asking again.
    pub wait: Duration,
}

/// How long a sender waits for the loop's word on its claims before it
/// posts anyway.
const CONFIRM_WITHIN: Duration = Duration::from_secs(2);

/// The links between a sender and the serve loop.
pub struct Loop {
    /// Where a sender says a robot is done with claimed incidents.
    pub done: mpsc::UnboundedSender<Done>,
    /// Where a sender asks, right before it posts, whether its claims are
    /// still this process's (one that ran out while this process was
    /// frozen was taken over, and is not posted twice) and whether the
    /// robot's rate limit, kept among every serve process, lets it post now.
    pub confirm: mpsc::UnboundedSender<Confirm>,
}

/// Runs `robot`'s sender until `parcels` closes or `stop` turns true; a
/// post under way is dropped on `stop` (its claim, not recorded, is taken
/// over by another serve process).
pub async fn send(
    robot: Robot,
    mut parcels: mpsc::UnboundedReceiver<Parcel>,
    serve: Loop,
    agent: ureq::Agent,
    retry: Retry,
    mut stop: watch::Receiver<bool>,
) {
    let start = Instant::now();
    let now_ms = move || start.elapsed().as_millis() as u64;
    let mut limit = Limit::for_robot(robot.kind, robot.limit);
    let tag = robot.tag();
    loop {
        let first = tokio::select! {
            parcel = parcels.recv() => match parcel { Some(parcel) => parcel, None => return },
            _ = stop.changed() => return,
        };
        let mut batch = vec![first];
        let limited = robot.kind != Kind::Webhook && !limit.windows().is_empty();
        let mut shared_wait = Duration::ZERO;
        let mut open = true;
        loop {
            if robot.kind != Kind::Webhook {
                let local = Duration::from_millis(limit.wait(now_ms()));
                let ready = Instant::now() + GATHER.max(local).max(shared_wait);
                loop {
                    tokio::select! {
                        parcel = parcels.recv(), if open => match parcel { Some(parcel) => batch.push(parcel), None => open = false },
                        _ = sleep_until(ready) => break,
                        _ = stop.changed() => return,
                    }
                }
            }
            let claims: Vec<Claim> = batch.iter().filter_map(|p| p.claim.clone()).collect();
            if claims.is_empty() && !limited {
                break;
            }
            let (tx, rx) = oneshot::channel();
            let ask = Confirm {
                unclaimed: batch.iter().any(|p| p.claim.is_none()),
                claims,
                limit: limited.then(|| (tag.clone(), limit.windows().to_vec())),
                answer: tx,
            };
            let _ = serve.confirm.send(ask);
            let word = tokio::select! {
                answer = tokio::time::timeout(CONFIRM_WITHIN, rx) => answer.ok().and_then(Result::ok),
                _ = stop.changed() => return,
            };
            // No word (the loop busy, Redis unreachable): post, keeping this process's limit alone.
            let Some(word) = word else {
                tracing::debug!(robot = %robot.label, "no word from the serve loop in time; posting with this process's rate limit alone");
                break;
            };
            batch.retain(|p| p.claim.as_ref().is_none_or(|id| word.still.contains(id)));
            if batch.is_empty() || word.wait.is_zero() {
                break;
            }
            // Other serve processes posted to this robot: what comes meanwhile folds into this post.
            tracing::debug!(robot = %robot.label, wait_ms = word.wait.as_millis() as u64, "the robot's rate limit, shared with the other serve processes, asks to wait");
            shared_wait = word.wait;
        }
        if batch.is_empty() {
            continue;
        }
        let posts: Vec<(Vec<Claim>, serde_json::Value)> = match robot.kind {
            Kind::Webhook => batch
                .iter()
                .map(|p| (p.claim.iter().cloned().collect(), webhook_body(&p.story)))
                .filter_map(|(ids, body)| Some((ids, body?)))
                .collect(),
            _ => {
                let messages: Vec<_> =
                    batch.iter().map(|p| render(&p.story, robot.language, robot.utc_offset_min)).collect();
                vec![(batch.iter().filter_map(|p| p.claim.clone()).collect(), payload(&robot, &messages))]
            }
        };
        let folded = if robot.kind == Kind::Webhook { 1 } else { batch.len() };
        for (ids, body) in posts {
            let mut tries = 0;
            let posting = deliver::post(&agent, &robot, body, retry, || {
                tries += 1;
                limit.record(now_ms());
            });
            let answer = tokio::select! {
                answer = posting => answer,
                _ = stop.changed() => return,
            };
            report(&robot, &answer, folded, tries);
            if !ids.is_empty() {
                let _ = serve.done.send((ids, tag.clone()));
            }
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
/// test as an event named `test`; an escalation as one named `escalated`,
/// the incident inside; repeats are not sent (the webhook had each as it
/// came).
fn webhook_body(story: &Story) -> Option<serde_json::Value> {
    match story {
        Story::Incident { event, .. } => serde_json::to_value(event).ok(),
        Story::Test { node, at_ms } => Some(serde_json::json!({
            "event": "test", "at_ms": at_ms, "reason": format!("lockwatch serve --check on {node}"),
        })),
        Story::Repeats { .. } => None,
        Story::Escalation { event, after_ms, told, .. } => Some(serde_json::json!({
            "event": "escalated", "job": event.job, "at_ms": event.at_ms, "after_ms": after_ms, "told": told,
            "incident": event,
        })),
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
