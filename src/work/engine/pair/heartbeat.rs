//! The heartbeats in the modelled Redis: the heartbeat
//! script that writes it (`worker.lua`, with the name kept a lease past a
//! process's last beat), and the probe's read of the job as a [`Snapshot`]
//! (`probe.lua`'s presence count included).

use super::guards::{Guard, Guards};
use super::hash::{BeatHash, some};
use super::redis::Data;
use crate::snapshot::{Beat, Lock as LockSeen, LockKind, Snapshot};

/// A heartbeat script call (`worker.lua`).
#[derive(Debug, Clone)]
pub(super) struct BeatCall {
    pub node: String,
    pub instance: String,
    pub claimed: bool,
    /// A process known dead that may be replaced at once.
    pub dead: String,
    /// How long another process's last beat keeps the name its own (ms).
    pub keeps: u64,
    /// This process's last beat (Redis ms), 0 before the first.
    pub own_last: u64,
    pub fields: BeatHash,
}

impl Data {
    /// The probe's read at `now`: `subscribers` counts a node's presence
    /// subscriptions in this server process (`run`), as `PUBSUB NUMSUB` does.
    pub fn probe(&mut self, now: u64, run: u32, subscribers: &dyn Fn(&str) -> i64) -> Snapshot {
        let (holders, ttl_ms) = match self.lock_at(now) {
            Some(l) => (l.fields.clone(), Some(l.expires_at - now)),
            None => (Vec::new(), None),
        };
        let mut beats: Vec<Beat> = self.nodes.iter().filter_map(|n| self.beats.get(n).map(|h| h.decode(n))).collect();
        let mut counts: Vec<i64> =
            beats.iter().map(|b| if b.present.is_some() { subscribers(&b.node) } else { -1 }).collect();
        // As probe.lua: a holder's claim found without a subscriber counts
        // only in the server process that the heartbeat names (-2 elsewhere);
        // the last such holder decides, as there.
        let missing = beats
            .iter()
            .zip(&counts)
            .rev()
            .find(|(b, c)| **c == 0 && b.lock_field.as_ref().is_some_and(|f| holders.contains(f)));
        if missing.is_some_and(|(b, _)| b.presence_on.is_some()) {
            let here = run.to_string();
            for (b, c) in beats.iter().zip(counts.iter_mut()) {
                if b.presence_on.as_ref().is_some_and(|on| *on != here) {
                    *c = -2;
                }
            }
        }
        for (b, c) in beats.iter_mut().zip(counts) {
            b.presence_elsewhere = b.present.is_some() && c == -2;
            b.present = b.present.and((c >= 0).then_some(c > 0));
        }
        let kind = if holders.is_empty() { LockKind::None } else { LockKind::Redisson };
        Snapshot {
            time_ms: now,
            lock: LockSeen { kind, holders, ttl_ms, ..LockSeen::default() },
            fence: self.fence,
            beats,
            ..Snapshot::default()
        }
    }

    /// `worker.lua`: the heartbeat, unless another process has the name.
    pub fn beat(&mut self, now: u64, b: &BeatCall, g: Guards) -> Result<u64, ()> {
        if g.on(Guard::NameKept)
            && let Some(other) = self.beats.get(&b.node)
            && let Some(theirs) = other.instance.as_deref().filter(|i| !i.is_empty() && *i != b.instance)
        {
            let at = other.beat_ms.as_deref().and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
            let age = now.saturating_sub(at);
            if (b.claimed && at >= b.own_last) || (!b.claimed && theirs != b.dead && age < b.keeps) {
                return Err(());
            }
        }
        let beat = self.beats.entry(b.node.clone()).or_default();
        beat.set(&b.fields);
        beat.beat_ms = some(now.to_string());
        beat.instance = some(&b.instance);
        self.nodes.insert(b.node.clone());
        Ok(now)
    }
}
