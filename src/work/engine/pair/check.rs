//! What the model checks at every moment: two lockwatch jobs never run at
//! once; no lockwatch job runs while the Redisson service holds a valid
//! lock, unless its own lock was taken from it (deleted, evicted, lost with
//! Redis's data: its job then runs until its next look, which the fault
//! model allows; Redisson waits for nothing); and every job starts with a
//! fence above those of the jobs started before it (equal only within one
//! holding). The first broken promise is kept, with the log to explain it.

use std::collections::BTreeSet;

use super::cluster::{START, World, short};
use super::faults::FOREIGN_FIELD;

#[derive(Debug, Default)]
pub(super) struct Checker {
    /// The first promise broken, when and how.
    pub broken: Option<String>,
    /// The highest fence a job started with, and its holding (process, field).
    top: Option<(i64, usize, String)>,
    /// Lock fields taken from their holder by a fault (not let go by lockwatch).
    pub lost_early: BTreeSet<String>,
    /// How many jobs started.
    pub starts: u32,
}

impl World {
    /// The promises, now.
    pub fn check_now(&mut self) {
        if self.check.broken.is_some() {
            return;
        }
        let jobs: Vec<(usize, i64, String)> =
            self.procs.iter().filter_map(|p| p.job().map(|j| (p.index, j.fence, j.field.clone()))).collect();
        if jobs.len() > 1 {
            let list: Vec<String> = jobs
                .iter()
                .map(|(p, fence, f)| format!("p{p} ({}) fence {fence} {}", self.procs[*p].node, short(f)))
                .collect();
            return self.broke(format!("two lockwatch jobs run at once: {}", list.join(" and ")));
        }
        let foreign = self.redis.data.valid_holder(self.now, FOREIGN_FIELD);
        if let Some((p, fence, _)) = jobs.iter().find(|(_, _, f)| foreign && !self.check.lost_early.contains(f)) {
            let what = format!("p{p}'s job (fence {fence}) runs while the Redisson service holds the lock");
            self.broke(what);
        }
    }

    /// Process `p` just started its job with `fence`.
    pub fn check_start(&mut self, p: usize, fence: i64) {
        self.check.starts += 1;
        self.check_now();
        if self.check.broken.is_some() {
            return;
        }
        let field = self.procs[p].field.clone();
        if let Some((top, q, f)) = &self.check.top
            && (fence < *top || (fence == *top && (*q, f) != (p, &field)))
        {
            let what =
                format!("p{p} started its job with fence {fence}, after p{q}'s job had started with fence {top}");
            return self.broke(what);
        }
        if self.check.top.as_ref().is_none_or(|(top, ..)| fence > *top) {
            self.check.top = Some((fence, p, field));
        }
    }

    fn broke(&mut self, what: String) {
        self.say(format!("BROKEN: {what}"));
        let t = self.now - START;
        self.check.broken = Some(format!("at {}.{:03} s: {what}", t / 1_000, t % 1_000));
    }
}
