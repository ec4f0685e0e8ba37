//! The roll call of a process watching many jobs on one Redis: instead of
//! hearing every job's beat (each one a message Redis writes to this
//! process, about one a second for every two jobs), it asks after the
//! presence subscription of each job's holder in one `PUBSUB NUMSUB`, about
//! as often as one job's beat comes. An answer tells every job that Redis
//! answers, a holder counted is as good as its beat, and a holder not
//! counted wakes its job for a look. A roll call left unanswered tells
//! nothing: each job's own checks then go out as they would without it.

use std::sync::Arc;
use std::time::Duration;

use redis::Value;
use tokio::sync::{Notify, watch};

use super::shared::Shared;
use crate::connect::numsub_counts;
use crate::error::{Action, describe};
use crate::heard::{BEAT_LATE, Heard};
use crate::keys::Keys;

/// One job as the roll call sees it.
pub(super) struct Roll {
    pub keys: Keys,
    pub heard: Arc<Heard>,
    /// Woken for a look when its holder was not counted.
    pub entry: Arc<Notify>,
}

/// How often the roll is called: each answer, awaited at most `patience`,
/// comes before a job's beat would count as late ([`BEAT_LATE`]), so no
/// job asks on its own while the roll call answers (1.2 s by default).
pub(super) fn every(patience: Duration) -> Duration {
    BEAT_LATE.saturating_sub(patience).max(BEAT_LATE / 4)
}

/// Calls the roll every `every` on the shared connection, each answer
/// awaited at most `patience`, until `stop`.
pub(super) async fn roll_call(
    shared: Arc<Shared>,
    jobs: Vec<Roll>,
    every: Duration,
    patience: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        // A connection being made is the looks' to wait for.
        let Some((made, mut conn)) = shared.current() else { continue };
        let asked: Vec<(usize, String)> =
            jobs.iter().enumerate().filter_map(|(i, job)| job.heard.holder().map(|node| (i, node))).collect();
        let mut numsub = redis::cmd("PUBSUB");
        numsub.arg("NUMSUB");
        for (i, node) in &asked {
            numsub.arg(jobs[*i].keys.alive_channel(node));
        }
        let answer = tokio::select! {
            answer = tokio::time::timeout(patience, numsub.query_async::<Value>(&mut conn)) => answer,
            _ = stop.changed() => return,
        };
        match answer {
            Ok(Ok(reply)) => {
                for job in &jobs {
                    job.heard.something();
                }
                for ((i, node), count) in asked.iter().zip(numsub_counts(&reply, asked.len())) {
                    if count > 0 {
                        jobs[*i].heard.present(node);
                    } else {
                        jobs[*i].entry.notify_one();
                    }
                }
            }
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "roll call failed");
                shared.failed(made, &describe(err, Action::ReadingJob, shared.target().endpoint())).await;
            }
            Err(_) => {}
        }
    }
}
