//! The job's history from its stream entries, the current flags and the
//! heartbeats: who ran the job when (runs), failovers, restarts on the same
//! server, deaths (also those the victim could not write: a server killed
//! with `kill -9` whose heartbeat stopped with no release after it), stops
//! and supervisors' flag flips. Pure: no I/O, no clock; `now_ms` is Redis time.
//!
//! It judges by the status engine's notions: a new holding on the same
//! server is a restart ([`Holder::same_server`]), a holder change through a
//! gap within the failover window is one failover, a gap longer than that is
//! a death; a heartbeat older than the grace is silent.

use std::collections::HashSet;

use serde::{Serialize, Serializer};

use super::entry::{Cause, Entry, FlagFlip, Record};
use crate::schema::BeatState;
use crate::snapshot::Beat;
use crate::status::{Config, Holder, HolderRef};

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The worker released the lock (`cause` when it said why).
    Released(Option<Cause>),
    /// The worker lost the lock and killed the job.
    Lost(Option<Cause>),
    /// The server wrote nothing: killed, crashed or cut off. Known from a
    /// later holder or from its heartbeat having stopped.
    Silent,
}

impl End {
    /// Every way a run ends, each token once.
    pub fn all() -> Vec<End> {
        let causes = Cause::ALL.into_iter().map(|c| End::Released(Some(c)));
        causes.chain([End::Released(None), End::Lost(None), End::Silent]).collect()
    }

    /// The token JSON shows: the cause, or how it ended when no cause is known.
    pub fn token(self) -> &'static str {
        match self {
            End::Released(Some(c)) | End::Lost(Some(c)) => c.token(),
            End::Released(None) => "released",
            End::Lost(None) => "lost",
            End::Silent => "silent",
        }
    }

    /// The end in a sentence, for people.
    pub fn sentence(self) -> &'static str {
        match self {
            End::Released(Some(c)) | End::Lost(Some(c)) => c.sentence(),
            End::Released(None) => "released the lock",
            End::Lost(None) => "lost the lock",
            End::Silent => "the server stopped without a word (killed, crashed or cut off from Redis)",
        }
    }
}

impl Serialize for End {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.token())
    }
}

/// One line of the history: when, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// Redis time, ms.
    pub at_ms: u64,
    #[serde(flatten)]
    pub what: What,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum What {
    /// A server held the lock from `at_ms` until `until_ms` (`None`: still).
    Run { node: Option<String>, field: Option<String>, fence: Option<i64>, until_ms: Option<u64>, end: Option<End> },
    /// Another server took over after the holder went.
    Failover { from: HolderRef, to: HolderRef, cause: End, reason: String, down_ms: Option<u64> },
    /// The same server took the job again after its holding ended.
    Restart { node: Option<String>, from: HolderRef, to: HolderRef, cause: End, reason: String, down_ms: Option<u64> },
    /// The holder went and nobody took over within the failover window.
    /// `at_ms` is when it went, or its last sign of life when it said nothing.
    Death { node: Option<String>, fence: Option<i64>, cause: End, reason: String },
    /// Released because nobody had the job enabled.
    Stopped { node: Option<String>, fence: Option<i64> },
    /// A supervisor switched the job on or off; `at_ms` is the flag's own time.
    Flag { user: String, on: bool, host: Option<String>, reason: Option<String> },
    /// A supervisor said they are on it ("I'm on it") until `until_ms`;
    /// `at_ms` is when they said so. Only acknowledgements still in force
    /// are known: Redis drops them at their end.
    Ack { user: String, until_ms: u64, note: String },
}

/// The history, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct History {
    /// Redis time it was built at, ms.
    pub now_ms: u64,
    pub items: Vec<Item>,
}

impl History {
    /// Keeps what happened at or after `since_ms`, and the runs still going then.
    pub fn since(mut self, since_ms: u64) -> History {
        self.items.retain(|i| match &i.what {
            What::Run { until_ms, .. } => until_ms.is_none_or(|u| u >= since_ms),
            _ => i.at_ms >= since_ms,
        });
        self
    }
}

/// One holding of the lock, as the stream tells it.
struct Run {
    node: Option<String>,
    field: Option<String>,
    fence: Option<i64>,
    start: u64,
    /// How and when (when known) it ended; `None` while it may still run.
    end: Option<(End, Option<u64>)>,
    /// The last entry its server wrote about it: the latest it surely lived.
    last_sign: u64,
    /// Its server's last heartbeat, as the next holder found it: when a run
    /// that wrote no end last lived.
    last_beat: Option<u64>,
}

impl Run {
    fn holder(&self) -> Holder {
        Holder {
            field: self.field.clone().unwrap_or_default(),
            node: self.node.clone(),
            heartbeat_age_ms: None,
            fence: self.fence,
        }
    }

    /// Ended without a word of its own, as an entry at `at` tells; its
    /// server's `last_beat` counts only when it falls within the run.
    fn ended_silently(&mut self, last_beat: Option<u64>, at: u64) {
        self.end = Some((End::Silent, None));
        self.last_beat = last_beat.filter(|t| (self.start..=at).contains(t));
    }

    fn is(&self, node: Option<&str>, fence: Option<i64>) -> bool {
        self.node.as_deref() == node && (self.fence.is_none() || fence.is_none() || self.fence == fence)
    }
}

/// Builds the history from the stream's `entries` (any order), the current
/// flags' latest flips (`flags`, to show flips no worker saw) and the
/// heartbeats, at Redis time `now_ms`, judged with the engine's `cfg`: the
/// runs the entries tell, what happened between them, and the flips.
pub fn build(entries: &[Entry], flags: &[FlagFlip], beats: &[Beat], now_ms: u64, cfg: &Config) -> History {
    let (mut runs, flips) = runs_and_flips(entries);
    if let Some(last) = runs.last_mut()
        && last.end.is_none()
    {
        last.end = silence(last, beats, now_ms, cfg);
    }
    let mut items = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        items.extend(run_items(run, runs.get(i + 1), now_ms, cfg));
    }
    items.extend(flip_items(flips, flags));
    items.sort_by_key(|i| i.at_ms);
    History { now_ms, items }
}

/// The runs the entries tell, oldest first, each ended as its own word or
/// a later holder's says, and the flips recorded (at their own time).
fn runs_and_flips(entries: &[Entry]) -> (Vec<Run>, Vec<(u64, FlagFlip)>) {
    let mut entries: Vec<&Entry> = entries.iter().collect();
    entries.sort_by_key(|e| e.id);
    let mut runs: Vec<Run> = Vec::new();
    let mut flips: Vec<(u64, FlagFlip)> = Vec::new();
    for e in entries {
        let at = e.id.ms;
        let node = e.node.as_deref();
        match &e.record {
            Record::Acquired { fence, field, prev_beat_ms, .. } => {
                if let Some(cur) = runs.last_mut()
                    && cur.end.is_none()
                {
                    cur.ended_silently(*prev_beat_ms, at);
                }
                let (node, field, fence) = (e.node.clone(), field.clone(), *fence);
                runs.push(Run { node, field, fence, start: at, end: None, last_sign: at, last_beat: None });
            }
            Record::Released { fence, cause } | Record::Lost { fence, cause } => {
                let end =
                    if matches!(e.record, Record::Released { .. }) { End::Released(*cause) } else { End::Lost(*cause) };
                // Its own word outranks a later holder's evidence (a late `lost`).
                if let Some(run) = runs
                    .iter_mut()
                    .rev()
                    .take(4)
                    .find(|r| r.is(node, *fence) && matches!(r.end, None | Some((End::Silent, _))))
                {
                    run.end = Some((end, Some(at)));
                    run.last_sign = run.last_sign.max(at);
                }
            }
            Record::RenewFailed { fence } | Record::JobStarted { fence, .. } | Record::JobExited { fence, .. } => {
                if let Some(run) = runs.iter_mut().rev().take(4).find(|r| r.is(node, *fence)) {
                    run.last_sign = run.last_sign.max(at);
                }
            }
            // A restart on the same server tells what the next holder can no
            // longer see: the dead holding's last heartbeat.
            Record::Died { fence, last_beat_ms } => {
                if let Some(run) = runs.iter_mut().rev().take(4).find(|r| r.is(node, *fence) && r.end.is_none()) {
                    run.ended_silently(*last_beat_ms, at);
                }
            }
            Record::FlagsChanged(flip) => flips.push((flip.at_ms.unwrap_or(at), flip.clone())),
            Record::Other { .. } => {}
        }
    }
    (runs, flips)
}

/// A run, and what its end was: stopped by a switch-off, a failover or a
/// restart (when `next` began within the failover window), or a death.
fn run_items(run: &Run, next: Option<&Run>, now_ms: u64, cfg: &Config) -> Vec<Item> {
    let until = match run.end {
        None => None,
        Some((_, Some(at))) => Some(at),
        // Silent: until its last heartbeat when the next holder saw it, else until the next one.
        Some((_, None)) => Some(run.last_beat.or(next.map(|n| n.start)).unwrap_or(run.last_sign)),
    };
    let mut items = vec![Item {
        at_ms: run.start,
        what: What::Run {
            node: run.node.clone(),
            field: run.field.clone(),
            fence: run.fence,
            until_ms: until,
            end: run.end.map(|(end, _)| end),
        },
    }];
    let Some((end, ended_at)) = run.end else { return items };
    if end == End::Released(Some(Cause::Disabled)) {
        let what = What::Stopped { node: run.node.clone(), fence: run.fence };
        items.push(Item { at_ms: ended_at.unwrap_or(run.last_sign), what });
        return items;
    }
    let within_window = |later: u64| ended_at.is_none_or(|t| later.saturating_sub(t) <= cfg.failover_window_ms);
    match next {
        Some(n) if within_window(n.start) => {
            let (from, to) = (run.holder(), n.holder());
            // The outage: from its end, or its last heartbeat, to the new start.
            let down_ms = ended_at.or(run.last_beat).map(|t| n.start.saturating_sub(t));
            let reason = end.sentence().to_owned();
            let what = if from.same_server(&to) {
                What::Restart {
                    node: n.node.clone(),
                    from: from.as_ref(),
                    to: to.as_ref(),
                    cause: end,
                    reason,
                    down_ms,
                }
            } else {
                What::Failover { from: from.as_ref(), to: to.as_ref(), cause: end, reason, down_ms }
            };
            items.push(Item { at_ms: n.start, what });
        }
        // The holder just went: a takeover may still come.
        None if now_ms.saturating_sub(ended_at.unwrap_or(run.last_sign)) <= cfg.failover_window_ms => {}
        _ => {
            let what =
                What::Death { node: run.node.clone(), fence: run.fence, cause: end, reason: end.sentence().to_owned() };
            // When it was last known alive: as its run's end says.
            items.push(Item { at_ms: until.unwrap_or(run.last_sign), what });
        }
    }
    items
}

/// The flips, each once: every worker records the flips it sees, and the
/// current flags repeat the last ones.
fn flip_items(recorded: Vec<(u64, FlagFlip)>, flags: &[FlagFlip]) -> Vec<Item> {
    let mut seen = HashSet::new();
    let latest = flags.iter().map(|f| (f.at_ms.unwrap_or(0), f.clone()));
    let mut items = Vec::new();
    for (at, flip) in recorded.into_iter().chain(latest) {
        if !seen.insert((flip.user.clone(), at, flip.on)) || at == 0 {
            continue;
        }
        let FlagFlip { user, on, host, reason, .. } = flip;
        items.push(Item { at_ms: at, what: What::Flag { user, on, host, reason } });
    }
    items
}

/// Whether the last run, with no end written, still goes on: its server's
/// heartbeat names it, is fresh and says it holds. Else it ended silently,
/// when its heartbeat stopped (or, when the heartbeat no longer names it,
/// at its last sign of life).
fn silence(run: &Run, beats: &[Beat], now_ms: u64, cfg: &Config) -> Option<(End, Option<u64>)> {
    let node = run.node.as_deref()?;
    let Some(beat) = beats.iter().find(|b| b.node == node) else {
        // No heartbeat: without heartbeats (or before the first) nothing is known.
        return (cfg.heartbeats && now_ms.saturating_sub(run.last_sign) > cfg.heartbeat_grace_ms)
            .then_some((End::Silent, None));
    };
    let names_run = match (beat.fence, run.fence) {
        (Some(a), Some(b)) => a == b,
        _ => beat.lock_field.is_some() && beat.lock_field == run.field,
    };
    if !names_run {
        return Some((End::Silent, None));
    }
    let holds = beat.state.as_ref().is_some_and(BeatState::holds_lock);
    let beat_ms = beat.beat_ms.unwrap_or(run.last_sign);
    if holds && now_ms.saturating_sub(beat_ms) <= cfg.heartbeat_grace_ms {
        None
    } else {
        Some((End::Silent, Some(beat_ms.max(run.start))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::entry::WaitCause;
    use crate::snapshot::StreamId;

    fn at(ms: u64, node: &str, record: Record) -> Entry {
        Entry { id: StreamId { ms, seq: 0 }, node: Some(node.to_owned()), record }
    }

    fn acquired(ms: u64, node: &str, fence: i64) -> Entry {
        let field = Some(format!("{node}-uuid:1"));
        at(ms, node, Record::Acquired { fence: Some(fence), field, wait: None, prev_beat_ms: None })
    }

    fn released(ms: u64, node: &str, fence: i64, cause: Cause) -> Entry {
        at(ms, node, Record::Released { fence: Some(fence), cause: Some(cause) })
    }

    fn lost(ms: u64, node: &str, fence: i64, cause: Cause) -> Entry {
        at(ms, node, Record::Lost { fence: Some(fence), cause: Some(cause) })
    }

    fn beat(node: &str, fence: Option<i64>, state: &str, beat_ms: u64) -> Beat {
        Beat {
            node: node.into(),
            fence,
            state: Some(BeatState::parse(state)),
            beat_ms: Some(beat_ms),
            lock_field: fence.map(|_| format!("{node}-uuid:1")),
            ..Default::default()
        }
    }

    fn kinds(h: &History) -> Vec<&'static str> {
        h.items
            .iter()
            .map(|i| match i.what {
                What::Run { .. } => "run",
                What::Failover { .. } => "failover",
                What::Restart { .. } => "restart",
                What::Death { .. } => "death",
                What::Stopped { .. } => "stopped",
                What::Flag { .. } => "flag",
                What::Ack { .. } => "ack",
            })
            .collect()
    }

    fn cfg() -> Config {
        Config::default()
    }

    #[test]
    fn a_kill_9_holder_taken_over_is_one_failover_and_its_run_ends_at_the_takeover() {
        let h = build(
            &[acquired(1_000, "a", 1), acquired(9_000, "b", 2)],
            &[],
            &[beat("b", Some(2), "running", 59_500)],
            60_000,
            &cfg(),
        );
        assert_eq!(kinds(&h), ["run", "failover", "run"]);
        let What::Failover { from, to, cause, down_ms, .. } = &h.items[1].what else { panic!() };
        assert_eq!((from.node.as_deref(), to.node.as_deref()), (Some("a"), Some("b")));
        assert_eq!((*cause, *down_ms), (End::Silent, None));
        assert_eq!(h.items[1].at_ms, 9_000);
        let What::Run { until_ms, .. } = &h.items[0].what else { panic!() };
        assert_eq!(*until_ms, Some(9_000));
        let What::Run { until_ms, end, .. } = &h.items[2].what else { panic!() };
        assert_eq!((*until_ms, *end), (None, None), "b still runs: its heartbeat is fresh");
    }

    #[test]
    fn a_kill_9_holder_s_run_ends_at_its_last_heartbeat_and_the_gap_to_the_takeover_is_the_outage() {
        // b found a's last heartbeat at 31 s when it took the lock at 40 s (a 30 s lease ran out).
        let taken = at(
            40_000,
            "b",
            Record::Acquired { fence: Some(2), field: Some("b-uuid:1".into()), wait: None, prev_beat_ms: Some(31_000) },
        );
        let h = build(&[acquired(1_000, "a", 1), taken], &[], &[beat("b", Some(2), "running", 59_500)], 60_000, &cfg());
        assert_eq!(kinds(&h), ["run", "failover", "run"]);
        let What::Run { until_ms, end, .. } = &h.items[0].what else { panic!() };
        assert_eq!((*until_ms, *end), (Some(31_000), Some(End::Silent)), "a ran until its last heartbeat");
        let What::Failover { down_ms, .. } = &h.items[1].what else { panic!() };
        assert_eq!(*down_ms, Some(9_000), "nobody ran the job from 31 s to 40 s");
        // A heartbeat from before the run (a stale record) is no evidence.
        let odd = at(
            40_000,
            "b",
            Record::Acquired { fence: Some(2), field: Some("b-uuid:1".into()), wait: None, prev_beat_ms: Some(500) },
        );
        let h = build(&[acquired(1_000, "a", 1), odd], &[], &[], 60_000, &cfg());
        let What::Failover { down_ms, .. } = &h.items[1].what else { panic!() };
        assert_eq!(*down_ms, None);
    }

    #[test]
    fn a_holder_killed_and_restarted_on_its_server_shows_the_outage_to_the_takeover() {
        // vm's worker was killed at its last beat (10 s); systemd restarted it
        // on vm, whose first beat replaced the dead one's (and told it), and
        // vm-b took the job when the lease ran out at 35 s, finding no beat of
        // the dead holding to name.
        let died = at(11_000, "vm", Record::Died { fence: Some(1), last_beat_ms: Some(10_000) });
        let h = build(
            &[acquired(1_000, "vm", 1), died, acquired(35_000, "vm-b", 2)],
            &[],
            &[beat("vm-b", Some(2), "running", 59_500), beat("vm", None, "idle", 59_000)],
            60_000,
            &cfg(),
        );
        assert_eq!(kinds(&h), ["run", "failover", "run"]);
        let What::Run { until_ms, end, .. } = &h.items[0].what else { panic!() };
        assert_eq!((*until_ms, *end), (Some(10_000), Some(End::Silent)), "vm ran until its last heartbeat");
        let What::Failover { down_ms, .. } = &h.items[1].what else { panic!() };
        assert_eq!(*down_ms, Some(25_000), "nobody ran the job from 10 s to 35 s");
        // Without the restart's word, the outage is not known.
        let h = build(&[acquired(1_000, "vm", 1), acquired(35_000, "vm-b", 2)], &[], &[], 60_000, &cfg());
        let What::Failover { down_ms, .. } = &h.items[1].what else { panic!() };
        assert_eq!(*down_ms, None);
    }

    #[test]
    fn the_same_server_again_is_a_restart_whatever_its_fence() {
        let h = build(
            &[acquired(1_000, "a", 1), lost(4_000, "a", 1, Cause::Expired), acquired(4_500, "a", 2)],
            &[],
            &[beat("a", Some(2), "running", 9_900)],
            10_000,
            &cfg(),
        );
        assert_eq!(kinds(&h), ["run", "restart", "run"]);
        let What::Restart { node, cause, down_ms, reason, .. } = &h.items[1].what else { panic!() };
        assert_eq!((node.as_deref(), *cause, *down_ms), (Some("a"), End::Lost(Some(Cause::Expired)), Some(500)));
        assert_eq!(reason, Cause::Expired.sentence());
    }

    #[test]
    fn a_stop_by_the_supervisors_is_a_stop_and_the_next_start_no_failover() {
        let h = build(
            &[
                acquired(1_000, "a", 1),
                released(2_000, "a", 1, Cause::Disabled),
                acquired(3_000, "b", 2),
                released(4_000, "b", 2, Cause::Shutdown),
                acquired(4_021, "a", 3),
            ],
            &[],
            &[beat("a", Some(3), "running", 4_900)],
            5_000,
            &cfg(),
        );
        assert_eq!(kinds(&h), ["run", "stopped", "run", "failover", "run"]);
        let What::Failover { cause, down_ms, .. } = &h.items[3].what else { panic!() };
        assert_eq!((*cause, *down_ms), (End::Released(Some(Cause::Shutdown)), Some(21)));
    }

    #[test]
    fn a_death_its_reaper_told_is_dated_when_the_job_was_last_alive() {
        // The worker was killed; its reaper saw the job's tree gone at 20 s
        // and wrote so at 20.1 s, after the worker's last entry at 1 s.
        let died = at(20_100, "a", Record::Died { fence: Some(1), last_beat_ms: Some(20_000) });
        let h = build(&[acquired(1_000, "a", 1), died], &[], &[beat("a", None, "idle", 20_050)], 40_000, &cfg());
        assert_eq!(kinds(&h), ["run", "death"]);
        assert_eq!(h.items[1].at_ms, 20_000, "the death is when the run ends, not the worker's last entry");
        let What::Run { until_ms, .. } = &h.items[0].what else { panic!() };
        assert_eq!(*until_ms, Some(20_000));
    }

    #[test]
    fn kill_9_of_the_last_server_is_a_death_at_its_last_heartbeat() {
        let entries = [acquired(1_000, "a", 1), at(1_010, "a", Record::JobStarted { fence: Some(1), pid: Some(9) })];
        // The heartbeat still names the holding, but stopped at 20 s.
        let beats = [beat("a", Some(1), "running", 20_000)];
        let fresh = build(&entries, &[], &beats, 25_000, &cfg());
        assert_eq!(kinds(&fresh), ["run"], "within the grace it still runs");
        let h = build(&entries, &[], &beats, 40_000, &cfg());
        assert_eq!(kinds(&h), ["run", "death"]);
        assert_eq!(h.items[1].at_ms, 20_000);
        let What::Death { node, cause, .. } = &h.items[1].what else { panic!() };
        assert_eq!((node.as_deref(), *cause), (Some("a"), End::Silent));
        let What::Run { until_ms, end, .. } = &h.items[0].what else { panic!() };
        assert_eq!((*until_ms, *end), (Some(20_000), Some(End::Silent)));
    }

    #[test]
    fn a_holder_gone_longer_than_the_failover_window_died_and_the_next_one_started() {
        let h = build(
            &[acquired(1_000, "a", 1), lost(2_000, "a", 1, Cause::Lost), acquired(60_000, "b", 2)],
            &[],
            &[],
            61_000,
            &cfg(),
        );
        assert_eq!(kinds(&h), ["run", "death", "run"]);
        assert_eq!(h.items[1].at_ms, 2_000);
        let just_lost = build(&[acquired(1_000, "a", 1), lost(2_000, "a", 1, Cause::Lost)], &[], &[], 3_000, &cfg());
        assert_eq!(kinds(&just_lost), ["run"], "within the window a takeover may still come");
    }

    #[test]
    fn a_server_that_came_back_idle_no_longer_runs_its_old_holding() {
        let h = build(&[acquired(1_000, "a", 1)], &[], &[beat("a", None, "idle", 29_900)], 30_000, &cfg());
        assert_eq!(kinds(&h), ["run", "death"]);
        assert_eq!(h.items[1].at_ms, 1_000, "its last sign of life");
    }

    #[test]
    fn a_late_loss_report_names_the_cause_of_an_already_superseded_run() {
        let h = build(
            &[acquired(1_000, "a", 1), acquired(3_000, "b", 2), lost(3_100, "a", 1, Cause::Expired)],
            &[],
            &[beat("b", Some(2), "running", 3_900)],
            4_000,
            &cfg(),
        );
        assert_eq!(kinds(&h), ["run", "failover", "run"]);
        let What::Failover { cause, .. } = &h.items[1].what else { panic!() };
        assert_eq!(*cause, End::Lost(Some(Cause::Expired)));
    }

    #[test]
    fn flips_seen_by_several_workers_and_the_current_flags_are_one_flip_each() {
        let flip = |on, at| FlagFlip {
            user: "alice".into(),
            on,
            at_ms: Some(at),
            host: Some("pc-7".into()),
            reason: Some("stock count".into()),
        };
        let entries = [
            at(5_010, "a", Record::FlagsChanged(flip(false, 5_000))),
            at(5_020, "b", Record::FlagsChanged(flip(false, 5_000))),
        ];
        let h = build(&entries, &[flip(false, 5_000), flip(true, 1_000)], &[], 6_000, &cfg());
        assert_eq!(kinds(&h), ["flag", "flag"]);
        assert_eq!(h.items[0].at_ms, 1_000);
        let What::Flag { user, on, host, reason } = &h.items[1].what else { panic!() };
        assert_eq!(
            (user.as_str(), *on, host.as_deref(), reason.as_deref()),
            ("alice", false, Some("pc-7"), Some("stock count"))
        );
    }

    #[test]
    fn json_lines_have_kind_at_ms_and_their_fields() {
        let h = build(
            &[
                at(
                    1_000,
                    "a",
                    Record::Acquired {
                        fence: Some(1),
                        field: Some("u:1".into()),
                        wait: Some((2_000, Some(WaitCause::CounterMissing))),
                        prev_beat_ms: None,
                    },
                ),
                acquired(9_000, "b", 2),
            ],
            &[],
            &[beat("b", Some(2), "running", 9_900)],
            10_000,
            &cfg(),
        );
        let failover = serde_json::to_value(&h.items[1]).unwrap();
        assert_eq!(failover["kind"], "failover");
        assert_eq!(failover["at_ms"], 9_000);
        assert_eq!(failover["from"]["node"], "a");
        assert_eq!(failover["to"]["node"], "b");
        assert_eq!(failover["cause"], "silent");
        let run = serde_json::to_value(&h.items[0]).unwrap();
        assert_eq!(
            (run["kind"].as_str(), run["node"].as_str(), run["until_ms"].as_u64()),
            (Some("run"), Some("a"), Some(9_000))
        );
    }

    #[test]
    fn since_keeps_later_items_and_the_runs_going_on_then() {
        let h = build(
            &[acquired(1_000, "a", 1), released(2_000, "a", 1, Cause::Disabled), acquired(3_000, "b", 2)],
            &[],
            &[beat("b", Some(2), "running", 9_900)],
            10_000,
            &cfg(),
        )
        .since(2_500);
        assert_eq!(kinds(&h), ["run"]);
        let h2 = build(&[acquired(1_000, "a", 1)], &[], &[beat("a", Some(1), "running", 9_900)], 10_000, &cfg())
            .since(5_000);
        assert_eq!(kinds(&h2), ["run"], "a run that started before is still shown");
    }
}
