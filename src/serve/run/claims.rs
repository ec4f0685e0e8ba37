//! The serve loop's part in the claims as leases: record which robots are
//! done with the claims this process holds, renew those still owed, and
//! take over others' claims that ran out unfinished; and, right before a
//! sender posts, confirm its claims and reserve the post in the robot's
//! rate limit shared among the serve processes and the jobs (`quota`).

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use super::super::agree::Post;
use super::super::lease::{self, Takeover};
use super::super::quota;
use super::super::sender::{Claim, Confirm, Confirmed};
use super::{Serve, TAKEOVER_MARGIN};

impl Serve {
    /// Records in Redis which robots are done with the claims this process
    /// holds; what Redis does not take now is tried again at the next renewal.
    pub(super) async fn record(&mut self) {
        let records = self.ledger.to_record();
        if records.is_empty() {
            return;
        }
        let keys = self.keys.clone();
        let Some(conn) = self.conn().await else { return };
        let mut saved = Vec::new();
        let mut failed = None;
        for r in records {
            match lease::record(conn, &keys, &r.id, &r.tags, r.finished).await {
                Ok(()) => saved.push(r),
                Err(err) => {
                    failed = Some(err);
                    break;
                }
            }
        }
        saved.iter().for_each(|r| self.ledger.recorded(r));
        if let Some(err) = failed {
            tracing::debug!(error = %err, "recording a claim's robots failed; trying again");
            self.conn = None;
        }
    }

    /// Renews the claims this process still owes robots; one another
    /// process took over meanwhile (this one could not renew it in time) is
    /// that one's now.
    pub(super) async fn renew(&mut self) {
        self.record().await;
        let ids = self.ledger.held();
        if ids.is_empty() {
            return;
        }
        let (keys, node) = (self.keys.clone(), self.node.clone());
        let Some(conn) = self.conn().await else { return };
        match lease::renew(conn, &keys, &node, &ids).await {
            Ok(mine) => {
                for (id, mine) in ids.iter().zip(mine) {
                    if !mine {
                        tracing::warn!(incident = %id, "another serve process took over this message, which this one could not renew its claim to in time");
                        self.ledger.lost(id);
                    }
                }
            }
            Err(err) => {
                tracing::debug!(error = %err, "renewing the claims failed");
                self.conn = None;
            }
        }
    }

    /// Which of the claims `ids` are still this process's, renewed: asked
    /// right before a robot is posted to. One another process took over
    /// (this one was frozen past the lease) is that one's to post. All of
    /// them when Redis does not answer: posting twice beats not at all.
    pub(super) async fn confirm(&mut self, ids: Vec<String>) -> Vec<String> {
        let held = self.ledger.held();
        let ids: Vec<String> = ids.into_iter().filter(|id| held.contains(id)).collect();
        if ids.is_empty() {
            return ids;
        }
        let (keys, node) = (self.keys.clone(), self.node.clone());
        let Some(conn) = self.conn().await else { return ids };
        match lease::renew(conn, &keys, &node, &ids).await {
            Ok(mine) => {
                let (kept, lost): (Vec<_>, Vec<_>) = ids.into_iter().zip(mine).partition(|(_, mine)| *mine);
                for (id, _) in lost {
                    tracing::warn!(incident = %id, "not posted here: another serve process took the message over while this one was held up past its claim");
                    self.ledger.lost(&id);
                }
                kept.into_iter().map(|(id, _)| id).collect()
            }
            Err(err) => {
                tracing::debug!(error = %err, "confirming the claims failed; posting");
                self.conn = None;
                ids
            }
        }
    }

    /// Looks at the claims of others that ran out, and takes over each that
    /// is unfinished: its process died (or lost Redis) before each robot
    /// had the message.
    pub(super) async fn take_over_due(&mut self) {
        let now = Instant::now();
        let (keys, node) = (self.keys.clone(), self.node.clone());
        for (id, story) in self.ledger.due(now) {
            let Some(conn) = self.conn().await else {
                self.ledger.watch(&id, story, now + Duration::from_secs(1));
                continue;
            };
            match lease::take_over(conn, &keys, &node, &id).await {
                Ok(Takeover::Finished) => {}
                Ok(Takeover::Held(left)) => self.ledger.watch(&id, story, Instant::now() + left + TAKEOVER_MARGIN),
                Ok(Takeover::Took { verdict, done }) => {
                    tracing::warn!(incident = %id, "took over a message that another serve process claimed and did not post to every robot");
                    let done: HashSet<String> = done.into_iter().collect();
                    self.tell(Some(&id), &story, verdict == Post::Post, &done);
                    self.record().await;
                }
                Err(err) => {
                    tracing::debug!(error = %err, "looking at another's claim failed");
                    self.conn = None;
                    self.ledger.watch(&id, story, now + Duration::from_secs(1));
                }
            }
        }
    }
}

/// Answers a sender right before it posts: the claims still this
/// process's (each asked of its job's loop) and, when the post still goes,
/// its place in the robot's rate limit among every serve process, kept
/// with the first job served (every job's robots are the same). A Redis
/// that does not answer asks no wait: the sender's own limit still holds.
pub(super) async fn ready(serves: &mut [Serve], ask: Confirm) {
    let mut still = Vec::new();
    for serve in serves.iter_mut() {
        let ids: Vec<String> = ask.claims.iter().filter(|c| c.job == serve.job).map(|c| c.id.clone()).collect();
        if !ids.is_empty() {
            let job = serve.job;
            still.extend(serve.confirm(ids).await.into_iter().map(|id| Claim { job, id }));
        }
    }
    let mut wait = Duration::ZERO;
    if let (Some((tag, windows)), Some(first)) =
        (ask.limit.filter(|_| ask.unclaimed || !still.is_empty()), serves.first_mut())
    {
        let (keys, node) = (first.keys.clone(), first.node.clone());
        if let Some(conn) = first.conn().await {
            match quota::reserve(conn, &keys, &node, &tag, &windows).await {
                Ok(w) => wait = w,
                Err(err) => {
                    tracing::debug!(error = %err, "reserving a post in the robot's shared rate limit failed; posting with this process's limit alone");
                    first.conn = None;
                }
            }
        }
    }
    let _ = ask.answer.send(Confirmed { still, wait });
}
