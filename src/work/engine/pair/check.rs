//! What the model checks at every moment: two lockwatch jobs never run at
//! once; no lockwatch job runs while the Redisson service holds a valid
//! lock, unless its own lock was taken from it (deleted, evicted, lost with
//! Redis's data: its job then runs until its next look, which the fault
//! model allows; Redisson waits for nothing); and every job starts with a
//! fence above those of the jobs started before it (equal only within one
//! holding). The world shows it the jobs that run; it answers with the first
//! promise broken, which it keeps.

use std::collections::BTreeSet;

use super::process::short;

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

/// A lockwatch job that runs: its process, node, fence and lock field.
pub(super) struct Running {
    pub process: usize,
    pub node: String,
    pub fence: i64,
    pub field: String,
}

impl Checker {
    /// The promises, now: `jobs` run, and `foreign` says whether the
    /// Redisson service holds a valid lock. What broke, the first time.
    pub fn now(&mut self, jobs: &[Running], foreign: bool) -> Option<String> {
        if self.broken.is_some() {
            return None;
        }
        if jobs.len() > 1 {
            let list: Vec<String> = jobs
                .iter()
                .map(|j| format!("p{} ({}) fence {} {}", j.process, j.node, j.fence, short(&j.field)))
                .collect();
            return Some(format!("two lockwatch jobs run at once: {}", list.join(" and ")));
        }
        let beside = jobs.iter().find(|j| foreign && !self.lost_early.contains(&j.field));
        beside
            .map(|j| format!("p{}'s job (fence {}) runs while the Redisson service holds the lock", j.process, j.fence))
    }

    /// Process `p` just started its job with `fence` under lock `field`,
    /// among `jobs` (its own included).
    pub fn start(&mut self, p: usize, fence: i64, field: &str, jobs: &[Running], foreign: bool) -> Option<String> {
        self.starts += 1;
        if let Some(what) = self.now(jobs, foreign) {
            return Some(what);
        }
        if self.broken.is_some() {
            return None;
        }
        if let Some((top, q, f)) = &self.top
            && (fence < *top || (fence == *top && (*q, f.as_str()) != (p, field)))
        {
            return Some(format!(
                "p{p} started its job with fence {fence}, after p{q}'s job had started with fence {top}"
            ));
        }
        if self.top.as_ref().is_none_or(|(top, ..)| fence > *top) {
            self.top = Some((fence, p, field.to_owned()));
        }
        None
    }
}
