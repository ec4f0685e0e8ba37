//! The serve loop's part in the claims as leases: record which robots are
//! done with the claims this process holds, renew those still owed, and
//! take over others' claims that ran out unfinished.

use std::collections::HashSet;
use std::time::Duration;

use tokio::time::Instant;

use super::super::agree::Post;
use super::super::lease::{self, Takeover};
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
