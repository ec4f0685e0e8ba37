//! Telling a flag Redis lost (evicted, deleted, expired: nobody switched it
//! off) from one its user switched off just before it went. A lost flag
//! counts as on, so a wrong "lost" would keep running a job she switched
//! off; a flag counts as lost only on proof, and the doubt goes her way.
//!
//! The proof is what this worker heard and read: it read the flag on, and
//! tracking heard exactly one write to it since (the one that took it away).
//! Two writes or more: something came between, maybe her switch-off, so not
//! lost. A flag found missing before and not written since takes the word
//! below: whatever took it came when this worker may not have heard. Where what came between was not heard (tracking cut or begun since,
//! a look that came late, the first look, and wherever nothing tracks: a
//! Cluster, tracking refused, a flood's calm), only the latest heartbeat's
//! word says a flag is lost: a worker that could not hear proves nothing,
//! so there a vanished flag counts as off. A flag that turned unreadable
//! (neither on nor off) after it was read on is still remembered on. The
//! shell then lets the history veto a new loss: a switch-off recorded after
//! the last switch-on. Pure: events in, a verdict out.

/// What tracking heard between the last look and this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heard {
    /// Every write was heard: how many reached each user's flag (users
    /// left out: none).
    Every(Vec<(String, u32)>),
    /// Tracking was cut or began since, nothing tracks, or the look came
    /// late (a pause): what came between is not known.
    Broken,
}

impl Heard {
    fn writes_to(writes: &[(String, u32)], user: &str) -> u32 {
        writes.iter().filter(|(u, _)| u == user).map(|(_, n)| n).sum()
    }
}

/// A flag as one look found it: on, off, neither (unreadable), or missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    On,
    Off,
    Unreadable,
    Missing,
}

/// What the worker remembers between looks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The users whose flags the last look read on, or unreadable after
    /// they were on.
    on: Vec<String>,
    /// Those whose flag was judged lost, and still counts as on.
    lost: Vec<String>,
    /// Those whose flag went missing with no write heard yet: the write
    /// that took it is on its way; judged at the next look.
    waiting: Vec<String>,
    /// Those whose flag the last look found missing.
    gone: Vec<String>,
}

/// One look's verdict: the flags lost (new ones before the history's veto)
/// and those waiting for what tracking heard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Lost before this look, and still.
    pub kept: Vec<String>,
    /// Lost at this look, if the history does not show her switch-off.
    pub new: Vec<String>,
    pub waiting: Vec<String>,
}

impl Memory {
    /// Judges each missing flag of `flags`, by what was `heard` since the
    /// last look and the latest heartbeat's `word` (the flags it says lost).
    pub fn judge(&self, flags: &[(String, Found)], heard: &Heard, word: &[String]) -> Verdict {
        let mut verdict = Verdict::default();
        for (user, found) in flags {
            if *found != Found::Missing {
                continue;
            }
            let said = word.contains(user);
            let was_lost = self.lost.contains(user);
            let was_on = self.on.contains(user) || self.waiting.contains(user);
            let lost = match heard {
                Heard::Broken => said,
                Heard::Every(writes) => match Heard::writes_to(writes, user) {
                    // Nothing written: as it was, or the write is on its way.
                    0 if was_lost => true,
                    0 if self.on.contains(user) => {
                        verdict.waiting.push(user.clone());
                        false
                    }
                    // Found missing before and written since by nobody:
                    // whatever took it came before, when this worker may
                    // not have heard it; the word decides.
                    0 => (self.waiting.contains(user) || self.gone.contains(user)) && said,
                    // The one write that took it.
                    1 => was_on,
                    _ => false,
                },
            };
            if lost && was_lost {
                verdict.kept.push(user.clone());
            } else if lost {
                verdict.new.push(user.clone());
            }
        }
        verdict
    }

    /// Remembers this look: the flags read on, and those found lost (after
    /// the history's veto) and waiting.
    pub fn settle(&mut self, flags: &[(String, Found)], lost: Vec<String>, waiting: Vec<String>) {
        let was_on = |u: &String| self.on.contains(u) || self.lost.contains(u);
        self.on = flags
            .iter()
            .filter(|(u, f)| *f == Found::On || (*f == Found::Unreadable && was_on(u)))
            .map(|(u, _)| u.clone())
            .collect();
        self.gone = flags.iter().filter(|(_, f)| *f == Found::Missing).map(|(u, _)| u.clone()).collect();
        self.lost = lost;
        self.waiting = waiting;
    }

    /// The flags counted lost now.
    pub fn lost(&self) -> &[String] {
        &self.lost
    }

    /// Whether a flag's loss waits for what tracking heard.
    pub fn waiting(&self) -> bool {
        !self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn flags(list: &[(&str, Found)]) -> Vec<(String, Found)> {
        list.iter().map(|(u, f)| ((*u).to_owned(), *f)).collect()
    }

    fn heard(list: &[(&str, u32)]) -> Heard {
        Heard::Every(list.iter().map(|(u, n)| ((*u).to_owned(), *n)).collect())
    }

    fn on(users: &[&str]) -> Memory {
        let mut m = Memory::default();
        m.settle(&flags(&users.iter().map(|u| (*u, Found::On)).collect::<Vec<_>>()), Vec::new(), Vec::new());
        m
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn one_write_heard_took_a_flag_read_on_it_is_lost() {
        let v = on(&["alice"]).judge(&flags(&[("alice", Found::Missing)]), &heard(&[("alice", 1)]), &[]);
        assert_eq!(v.new, names(&["alice"]));
    }

    #[test]
    fn two_writes_heard_may_have_been_her_switch_off_so_it_is_not_lost() {
        let v = on(&["alice"]).judge(&flags(&[("alice", Found::Missing)]), &heard(&[("alice", 2)]), &["alice".into()]);
        assert_eq!(v, Verdict::default());
    }

    #[test]
    fn no_write_heard_yet_waits_one_look_then_counts_what_came() {
        let m = on(&["alice"]);
        let missing = flags(&[("alice", Found::Missing)]);
        let v = m.judge(&missing, &heard(&[]), &[]);
        assert_eq!((v.new.len(), v.waiting.clone()), (0, names(&["alice"])));
        let mut m = m;
        m.settle(&missing, Vec::new(), v.waiting);
        assert_eq!(m.judge(&missing, &heard(&[("alice", 1)]), &[]).new, names(&["alice"]));
        assert_eq!(m.judge(&missing, &heard(&[("alice", 2)]), &[]), Verdict::default());
        // Still nothing heard: the word decides.
        assert_eq!(m.judge(&missing, &heard(&[]), &[]), Verdict::default());
        assert_eq!(m.judge(&missing, &heard(&[]), &["alice".into()]).new, names(&["alice"]));
    }

    #[test]
    fn a_flag_missing_and_not_written_since_takes_the_word() {
        let mut m = on(&["alice"]);
        let missing = flags(&[("alice", Found::Missing)]);
        // Tracking began as it went: nothing proved, nothing said yet.
        assert_eq!(m.judge(&missing, &Heard::Broken, &[]), Verdict::default());
        m.settle(&missing, Vec::new(), Vec::new());
        assert_eq!(m.judge(&missing, &heard(&[]), &[]), Verdict::default());
        // Another worker proved it: nothing written since, its word holds.
        assert_eq!(m.judge(&missing, &heard(&[]), &["alice".into()]).new, names(&["alice"]));
        assert_eq!(m.judge(&missing, &heard(&[("alice", 1)]), &["alice".into()]), Verdict::default());
    }

    #[test]
    fn a_flag_read_off_is_never_lost_while_tracking_heard_everything() {
        let mut m = Memory::default();
        m.settle(&flags(&[("alice", Found::Off)]), Vec::new(), Vec::new());
        let v = m.judge(&flags(&[("alice", Found::Missing)]), &heard(&[("alice", 1)]), &["alice".into()]);
        assert_eq!(v, Verdict::default());
    }

    #[test]
    fn what_was_not_heard_takes_the_latest_word() {
        let m = on(&["alice", "bob"]);
        let missing = flags(&[("alice", Found::Missing), ("bob", Found::Missing)]);
        assert_eq!(m.judge(&missing, &Heard::Broken, &["bob".into()]).new, names(&["bob"]));
    }

    #[test]
    fn a_flag_unreadable_after_it_was_on_is_remembered_on() {
        let mut m = on(&["alice", "bob"]);
        m.settle(
            &flags(&[("alice", Found::Unreadable), ("bob", Found::Off), ("carol", Found::Unreadable)]),
            vec![],
            vec![],
        );
        let gone = flags(&[("alice", Found::Missing), ("bob", Found::Missing), ("carol", Found::Missing)]);
        let v = m.judge(&gone, &heard(&[("alice", 1), ("bob", 1), ("carol", 1)]), &[]);
        assert_eq!(v.new, names(&["alice"]), "carol was never read on, bob was switched off");
    }

    #[test]
    fn a_lost_flag_stays_lost_until_written_or_the_word_says_otherwise() {
        let mut m = Memory::default();
        let missing = flags(&[("alice", Found::Missing)]);
        m.settle(&missing, names(&["alice"]), Vec::new());
        assert_eq!(m.judge(&missing, &heard(&[]), &[]).kept, names(&["alice"]));
        assert_eq!(m.judge(&missing, &Heard::Broken, &[]), Verdict::default());
        assert_eq!(m.judge(&missing, &heard(&[("alice", 2)]), &[]), Verdict::default());
        assert_eq!(m.judge(&flags(&[("alice", Found::On)]), &heard(&[("alice", 1)]), &[]), Verdict::default());
    }

    fn found() -> impl Strategy<Value = Found> {
        prop_oneof![Just(Found::On), Just(Found::Off), Just(Found::Unreadable), Just(Found::Missing)]
    }

    proptest! {
        /// Whatever was heard, a flag written twice or more since the last
        /// look (her switch-off may be one of the writes) is never newly
        /// lost, a flag present is never lost, and a flag nobody read on,
        /// nor any word named, never is.
        #[test]
        fn no_loss_without_proof(
            before in proptest::collection::vec(found(), 3),
            now in proptest::collection::vec(found(), 3),
            writes in proptest::collection::vec(0u32..4, 3),
            tracked in any::<bool>(),
            word_mask in proptest::collection::vec(any::<bool>(), 3),
        ) {
            let users = ["a", "b", "c"];
            let mut m = Memory::default();
            let first: Vec<(String, Found)> = users.iter().zip(&before).map(|(u, f)| ((*u).to_owned(), *f)).collect();
            m.settle(&first, Vec::new(), Vec::new());
            let flags: Vec<(String, Found)> = users.iter().zip(&now).map(|(u, f)| ((*u).to_owned(), *f)).collect();
            let word: Vec<String> = users.iter().zip(&word_mask).filter(|(_, w)| **w).map(|(u, _)| (*u).to_owned()).collect();
            let heard = if tracked {
                Heard::Every(users.iter().zip(&writes).map(|(u, n)| ((*u).to_owned(), *n)).collect())
            } else {
                Heard::Broken
            };
            let v = m.judge(&flags, &heard, &word);
            for user in v.new.iter().chain(&v.kept) {
                let i = users.iter().position(|u| u == user).unwrap();
                prop_assert_eq!(now[i], Found::Missing);
                if tracked && before[i] == Found::Missing {
                    prop_assert!(writes[i] == 0 && word.contains(user), "{user}: {:?}", (&writes, &word));
                } else if tracked {
                    prop_assert!(writes[i] == 1 && before[i] == Found::On, "{user}: {:?}", (&before, &writes));
                } else {
                    prop_assert!(word.contains(user));
                }
            }
        }
    }
}
