//! What this serve process owes for the incidents it claimed, and what it
//! keeps of those another process claimed: the bookkeeping behind
//! exactly one message per incident and robot, apart from Redis (`lease`)
//! and from the clock (every instant is an argument).
//!
//! A claim this process holds lists the robots (by [`Robot::tag`]) it has
//! yet to post to, and those it posted to that Redis has not yet recorded;
//! it is renewed until both are empty. A claim of another's is kept with
//! its story until the claim runs out: then this process looks whether the
//! other finished, and takes it over if not.
//!
//! [`Robot::tag`]: super::robots::Robot::tag

use std::collections::{HashMap, HashSet};

use tokio::time::Instant;

use super::message::Story;

/// The claims of one serve process.
#[derive(Debug, Default)]
pub struct Ledger {
    owned: HashMap<String, Owed>,
    /// Others' claims: when to look again, and what to post if taken over.
    watched: HashMap<String, (Instant, Story)>,
}

/// What a claim of this process still owes.
#[derive(Debug, Default)]
struct Owed {
    /// The robots not yet posted to.
    to_post: HashSet<String>,
    /// The robots posted to, not yet recorded in Redis.
    unsaved: HashSet<String>,
}

/// What to record in Redis of one claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub id: String,
    /// Robots posted to since the last record.
    pub tags: Vec<String>,
    /// Nothing is left to post: the claim is finished.
    pub finished: bool,
}

impl Ledger {
    /// This process holds the claim `id` and is to post to `tags`.
    pub fn own(&mut self, id: &str, tags: impl IntoIterator<Item = String>) {
        self.watched.remove(id);
        self.owned.insert(id.to_owned(), Owed { to_post: tags.into_iter().collect(), unsaved: HashSet::new() });
    }

    /// The robot `tag` is done with the claims `ids` (posted, or refused,
    /// or given up on after its tries).
    pub fn posted(&mut self, ids: &[String], tag: &str) {
        for id in ids {
            if let Some(owed) = self.owned.get_mut(id)
                && owed.to_post.remove(tag)
            {
                owed.unsaved.insert(tag.to_owned());
            }
        }
    }

    /// What to record in Redis: each claim with robots posted to and not
    /// yet recorded, or with nothing left to post.
    pub fn to_record(&self) -> Vec<Record> {
        let mut out: Vec<Record> = self
            .owned
            .iter()
            .filter(|(_, o)| !o.unsaved.is_empty() || o.to_post.is_empty())
            .map(|(id, o)| {
                let mut tags: Vec<String> = o.unsaved.iter().cloned().collect();
                tags.sort();
                Record { id: id.clone(), tags, finished: o.to_post.is_empty() }
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// `record` is in Redis: a finished claim is owed nothing more.
    pub fn recorded(&mut self, record: &Record) {
        let Some(owed) = self.owned.get_mut(&record.id) else { return };
        for tag in &record.tags {
            owed.unsaved.remove(tag);
        }
        if owed.to_post.is_empty() && owed.unsaved.is_empty() {
            self.owned.remove(&record.id);
        }
    }

    /// The claims to renew: every one still owed something.
    pub fn held(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.owned.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// The claim `id` is not this process's any more (another took it over
    /// while this one could not renew it): nothing more is owed.
    pub fn lost(&mut self, id: &str) {
        self.owned.remove(id);
    }

    /// Another process holds the claim `id`, until `at` as far as known.
    pub fn watch(&mut self, id: &str, story: Story, at: Instant) {
        if !self.owned.contains_key(id) {
            self.watched.insert(id.to_owned(), (at, story));
        }
    }

    /// The watched claims due at `now`, no longer watched.
    pub fn due(&mut self, now: Instant) -> Vec<(String, Story)> {
        let ids: Vec<String> =
            self.watched.iter().filter(|(_, (at, _))| *at <= now).map(|(id, _)| id.clone()).collect();
        let mut out: Vec<(String, Story)> =
            ids.into_iter().filter_map(|id| self.watched.remove(&id).map(|(_, story)| (id, story))).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// When the next watched claim is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.watched.values().map(|(at, _)| *at).min()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn story() -> Story {
        Story::Test { node: "s".into(), at_ms: 1 }
    }

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| (*t).to_owned()).collect()
    }

    #[test]
    fn a_claim_is_held_until_every_robot_is_posted_to_and_recorded() {
        let mut l = Ledger::default();
        l.own("holder:7:wh-b:1", tags(&["ding", "hook"]));
        assert_eq!(l.held(), ["holder:7:wh-b:1"]);
        assert!(l.to_record().is_empty(), "nothing posted yet");
        l.posted(&tags(&["holder:7:wh-b:1"]), "hook");
        let first = l.to_record();
        assert_eq!(first, [Record { id: "holder:7:wh-b:1".into(), tags: tags(&["hook"]), finished: false }]);
        l.recorded(&first[0]);
        assert_eq!(l.held(), ["holder:7:wh-b:1"], "still owes the other robot");
        l.posted(&tags(&["holder:7:wh-b:1"]), "ding");
        let last = l.to_record();
        assert_eq!(last, [Record { id: "holder:7:wh-b:1".into(), tags: tags(&["ding"]), finished: true }]);
        // Not recorded (Redis did not answer): still held, asked again.
        assert_eq!(l.to_record(), last);
        assert_eq!(l.held().len(), 1);
        l.recorded(&last[0]);
        assert!(l.held().is_empty() && l.to_record().is_empty());
    }

    #[test]
    fn a_claim_with_no_robot_to_post_to_is_finished_at_once() {
        let mut l = Ledger::default();
        l.own("died:3:wh-a:1", Vec::new());
        let records = l.to_record();
        assert_eq!(records, [Record { id: "died:3:wh-a:1".into(), tags: vec![], finished: true }]);
        l.recorded(&records[0]);
        assert!(l.held().is_empty());
    }

    #[test]
    fn one_post_that_folds_several_incidents_settles_each() {
        let mut l = Ledger::default();
        l.own("a", tags(&["ding"]));
        l.own("b", tags(&["ding"]));
        l.posted(&tags(&["a", "b", "not-ours"]), "ding");
        let records = l.to_record();
        assert_eq!(records.iter().filter(|r| r.finished).count(), 2);
        records.iter().for_each(|r| l.recorded(r));
        assert!(l.held().is_empty());
    }

    #[test]
    fn another_s_claim_is_due_when_it_runs_out_and_a_lost_claim_is_owed_nothing() {
        let mut l = Ledger::default();
        let now = Instant::now();
        l.watch("x", story(), now + Duration::from_secs(5));
        l.watch("y", story(), now + Duration::from_secs(2));
        assert_eq!(l.next_due(), Some(now + Duration::from_secs(2)));
        assert!(l.due(now).is_empty());
        let due = l.due(now + Duration::from_secs(2));
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].0, "y");
        assert_eq!(l.next_due(), Some(now + Duration::from_secs(5)));
        // Taken over: owned, no longer watched.
        l.own("x", tags(&["ding"]));
        assert_eq!(l.next_due(), None);
        l.lost("x");
        assert!(l.held().is_empty());
    }
}
