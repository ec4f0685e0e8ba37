//! One task per robot: it waits a moment after a message for the rest of a
//! burst, and as long as the robot's rate limit asks; folds what came into
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
    /// The incident's id, when this process claimed it: the robot's being
    /// done with it is recorded in the claim.
    pub claim: Option<String>,
    pub story: Story,
}

/// A robot done with claimed incidents: their ids and the robot's tag.
pub type Done = (Vec<String>, String);

/// Asks the serve loop which of these claims are still this process's
/// (renewing them): the answer comes on the oneshot.
pub type Confirm = (Vec<String>, oneshot::Sender<Vec<String>>);

/// How long a sender waits for the loop's word on its claims before it
/// posts anyway.
const CONFIRM_WITHIN: Duration = Duration::from_secs(2);

/// The links between a sender and the serve loop.
pub struct Loop {
    /// Where a sender says a robot is done with claimed incidents.
    pub done: mpsc::UnboundedSender<Done>,
    /// Where a sender asks, right before it posts, whether its claims are
    /// still this process's: one that ran out while this process was
    /// frozen was taken over, and is not posted twice.
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
        if robot.kind != Kind::Webhook {
            let ready = Instant::now() + GATHER.max(Duration::from_millis(limit.wait(now_ms())));
            loop {
                tokio::select! {
                    parcel = parcels.recv() => match parcel { Some(parcel) => batch.push(parcel), None => break },
                    _ = sleep_until(ready) => break,
                    _ = stop.changed() => return,
                }
            }
        }
        let claims: Vec<String> = batch.iter().filter_map(|p| p.claim.clone()).collect();
        if !claims.is_empty() {
            let (tx, rx) = oneshot::channel();
            let _ = serve.confirm.send((claims.clone(), tx));
            let still = tokio::select! {
                answer = tokio::time::timeout(CONFIRM_WITHIN, rx) => answer.ok().and_then(Result::ok),
                _ = stop.changed() => return,
            };
            // No word (the loop busy, Redis unreachable): post.
            if let Some(still) = still {
                batch.retain(|p| p.claim.as_ref().is_none_or(|id| still.contains(id)));
            }
            if batch.is_empty() {
                continue;
            }
        }
        let posts: Vec<(Vec<String>, serde_json::Value)> = match robot.kind {
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
