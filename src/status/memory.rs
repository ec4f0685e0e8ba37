//! Noticing that Redis forgot the job: what the tracker has seen Redis
//! remember (the fence counter, the event stream, each worker's heartbeat
//! sequence), and when a later read shows less.
//!
//! The fence counter and the stream never go back while Redis keeps its data
//! (the counter is only ever incremented, the stream is trimmed from its old
//! end), and a worker's `seq` only grows while the same process writes it.
//! So any of them vanishing or going back means Redis restarted without
//! persistence, was flushed, or failed over to a replica that lacks the
//! job's recent writes. Until something is written after the loss, the
//! flags and the lock as read say nothing about the job.

use std::collections::HashMap;

use crate::snapshot::kind;
use crate::snapshot::{Snapshot, StreamId};

/// What Redis has been seen to remember.
#[derive(Debug, Clone, Default)]
struct Memory {
    /// The highest fence counter seen.
    fence: Option<i64>,
    /// The newest stream entry seen.
    last_event: Option<StreamId>,
    /// Per node: the process that wrote its heartbeat (host, pid) and the
    /// highest `seq` it wrote.
    beats: HashMap<String, (String, u64, u64)>,
    /// Redis time of the last read that lost nothing.
    seen_at_ms: u64,
}

impl Memory {
    /// What `snap` no longer has that Redis was seen to remember, one
    /// phrase each; empty when nothing was lost.
    pub fn forgotten(&self, snap: &Snapshot) -> Vec<String> {
        let mut lost = Vec::new();
        if let Some(before) = self.fence
            && !snap.fence_unreadable
        {
            match snap.fence {
                None => lost.push(format!("the fence counter was at {before} and is gone")),
                Some(now) if now < before => lost.push(format!("the fence counter went back from {before} to {now}")),
                Some(_) => {}
            }
        }
        if let (Some(before), Some(entries)) = (self.last_event, &snap.recent_events) {
            match entries.first() {
                None => lost.push("the event stream is gone".to_owned()),
                Some(newest) if newest.id < before => {
                    lost.push(format!("the event stream went back from entry {before} to {}", newest.id))
                }
                Some(_) => {}
            }
        }
        for beat in &snap.beats {
            let (Some(host), Some(pid), Some(seq)) = (&beat.host, beat.pid, beat.seq) else { continue };
            if let Some((known_host, known_pid, known_seq)) = self.beats.get(&beat.node)
                && known_host == host
                && *known_pid == pid
                && seq < *known_seq
            {
                lost.push(format!("{}'s heartbeat went back from beat {known_seq} to {seq}", beat.node));
            }
        }
        lost
    }

    /// Remembers what `snap` shows (call only when it lost nothing).
    pub fn learn(&mut self, snap: &Snapshot) {
        if snap.fence.is_some() {
            self.fence = self.fence.max(snap.fence);
        }
        if let Some(newest) = snap.recent_events.as_ref().and_then(|e| e.first()) {
            self.last_event = self.last_event.max(Some(newest.id));
        }
        for beat in &snap.beats {
            if let (Some(host), Some(pid), Some(seq)) = (&beat.host, beat.pid, beat.seq) {
                self.beats.insert(beat.node.clone(), (host.clone(), pid, seq));
            }
        }
        self.seen_at_ms = snap.time_ms;
    }

    /// The loss `forgotten` found, with what is needed to see it end.
    pub fn loss(&self, forgotten: Vec<String>) -> Loss {
        Loss { forgotten, fence: self.fence, last_event: self.last_event, seen_at_ms: self.seen_at_ms }
    }
}

/// Whether Redis lost the job's data, judged read by read.
#[derive(Debug, Clone, Default)]
pub(super) struct LossWatch {
    memory: Memory,
    /// Redis lost the job's data, and nothing has been written since; and
    /// the Redis time the loss was noticed.
    loss: Option<(Loss, u64)>,
}

/// A loss of the job's data that lasts.
#[derive(Debug, Clone)]
pub(super) struct Lost {
    /// The status's reason while it lasts.
    pub reason: String,
    /// Redis time the loss was noticed.
    pub since_ms: u64,
    /// Whether this read is the one that found it.
    pub new: bool,
}

impl LossWatch {
    /// Judges one read: `None` when what it shows is the job's truth (then
    /// it is remembered), else the loss it shows or that still lasts.
    pub fn judge(&mut self, snap: &Snapshot) -> Option<Lost> {
        match &self.loss {
            Some((loss, _)) if loss.cleared_by(snap) => {
                // Start afresh: what Redis holds now is the job's truth again.
                self.loss = None;
                self.memory = Memory::default();
            }
            Some((loss, at)) => return Some(Lost { reason: loss.reason(), since_ms: *at, new: false }),
            None => {
                let forgotten = self.memory.forgotten(snap);
                if !forgotten.is_empty() {
                    let loss = self.memory.loss(forgotten);
                    let lost = Lost { reason: loss.reason(), since_ms: snap.time_ms, new: true };
                    self.loss = Some((loss, snap.time_ms));
                    return Some(lost);
                }
            }
        }
        self.memory.learn(snap);
        None
    }
}

/// Redis lost the job's data: what, and what was known before.
#[derive(Debug, Clone)]
struct Loss {
    forgotten: Vec<String>,
    fence: Option<i64>,
    last_event: Option<StreamId>,
    seen_at_ms: u64,
}

impl Loss {
    /// The status's reason while the loss lasts.
    pub fn reason(&self) -> String {
        format!(
            "Redis lost the job's data ({}); flags, lock and history may be gone with it: this clears when a server takes the job again or a supervisor sets their flag",
            self.forgotten.join(", ")
        )
    }

    /// True when `snap` shows a write made after the loss that makes the job's
    /// keys meaningful again: a new holding (the lock held with the fence
    /// counter past the last known, or an `acquired` entry newer than any
    /// known), or a flag flipped after the last read that lost nothing.
    pub fn cleared_by(&self, snap: &Snapshot) -> bool {
        let new_holding = snap.lock.is_held() && snap.fence.is_some() && snap.fence > self.fence;
        let after = self.last_event.unwrap_or(StreamId { ms: self.seen_at_ms, seq: u64::MAX });
        let acquired = snap.recent_events.iter().flatten().any(|e| e.kind == kind::ACQUIRED && e.id > after);
        let flipped = snap.flags.iter().any(|f| f.at_ms.is_some_and(|t| t > self.seen_at_ms));
        new_holding || acquired || flipped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{Beat, Flag, Lock, LockKind, StreamEntry};

    fn entry(ms: u64, kind: &str) -> StreamEntry {
        StreamEntry { id: StreamId { ms, seq: 0 }, kind: kind.to_owned() }
    }

    fn job(time_ms: u64, fence: Option<i64>, events: Vec<StreamEntry>) -> Snapshot {
        Snapshot { time_ms, fence, recent_events: Some(events), ..Default::default() }
    }

    #[test]
    fn a_vanished_fence_or_stream_is_a_loss_a_first_look_is_not() {
        let mut m = Memory::default();
        let empty = job(2_000, None, vec![]);
        assert!(m.forgotten(&empty).is_empty(), "nothing known yet, nothing lost");
        m.learn(&job(1_000, Some(57), vec![entry(900, kind::ACQUIRED)]));
        let lost = m.forgotten(&empty);
        assert_eq!(lost.len(), 2, "{lost:?}");
        assert!(lost[0].contains("57"), "{lost:?}");
        assert!(
            m.forgotten(&job(2_000, Some(3), vec![entry(900, kind::ACQUIRED)]))[0].contains("went back from 57 to 3")
        );
        assert!(m.forgotten(&job(2_000, Some(58), vec![entry(1_500, kind::ACQUIRED)])).is_empty());
    }

    #[test]
    fn an_unreadable_fence_or_an_unread_stream_is_no_loss() {
        let mut m = Memory::default();
        m.learn(&job(1_000, Some(57), vec![entry(900, kind::ACQUIRED)]));
        let mut snap = job(2_000, None, vec![entry(900, kind::ACQUIRED)]);
        snap.fence_unreadable = true;
        assert!(m.forgotten(&snap).is_empty());
        let unread = Snapshot { time_ms: 2_000, fence: Some(57), ..Default::default() };
        assert!(m.forgotten(&unread).is_empty());
    }

    #[test]
    fn a_heartbeat_sequence_going_back_in_the_same_process_is_a_loss_a_new_process_is_not() {
        let beat = |pid, seq| Beat {
            node: "wh-east-1".into(),
            host: Some("h1".into()),
            pid: Some(pid),
            seq: Some(seq),
            ..Default::default()
        };
        let mut m = Memory::default();
        m.learn(&Snapshot { beats: vec![beat(10, 120)], ..Default::default() });
        assert_eq!(m.forgotten(&Snapshot { beats: vec![beat(10, 80)], ..Default::default() }).len(), 1);
        assert!(m.forgotten(&Snapshot { beats: vec![beat(11, 1)], ..Default::default() }).is_empty());
    }

    #[test]
    fn a_loss_clears_on_a_new_holding_or_a_flag_flip_not_on_a_lost_entry() {
        let mut m = Memory::default();
        m.learn(&job(1_000, Some(57), vec![entry(900, kind::ACQUIRED)]));
        let loss = m.loss(m.forgotten(&job(2_000, None, vec![])));
        // The worker that held the lock says it lost it: no new holding yet.
        assert!(!loss.cleared_by(&job(2_500, None, vec![entry(2_400, kind::LOST)])));
        assert!(loss.cleared_by(&job(3_000, Some(1), vec![entry(2_900, kind::ACQUIRED), entry(2_400, kind::LOST)])));
        let mut held = job(3_000, Some(58), vec![]);
        held.lock = Lock { kind: LockKind::Redisson, holders: vec!["u:1".into()], ..Default::default() };
        assert!(loss.cleared_by(&held));
        let mut flipped = job(3_000, None, vec![]);
        flipped.flags.push(Flag { user: "alice".into(), on: Some(true), at_ms: Some(2_800), host: None });
        assert!(loss.cleared_by(&flipped));
        flipped.flags[0].at_ms = Some(800);
        assert!(!loss.cleared_by(&flipped), "a flag from before the loss clears nothing");
        assert!(
            loss.reason().starts_with("Redis lost the job's data (the fence counter was at 57"),
            "{}",
            loss.reason()
        );
    }
}
