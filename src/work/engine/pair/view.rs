//! What the engine is shown: the lock script's answer as `lock::call`
//! decodes it, and the snapshot as read; or, with a guard taken out (or a
//! fix modelled), what the code without it (or with it) would have had
//! from the same data. The engine's own code then decides as it does.

use std::time::Duration;

use super::cluster::World;
use super::guards::{Fix, Guard};
use super::redis::Acquired;
use crate::cause::WaitCause;
use crate::schema::BeatState;
use crate::snapshot::Snapshot;
use crate::work::outcome::{Acquire, Before, HeldSeen, Wait, is_lockwatch_field};

/// What the engine is shown a snapshot for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum View {
    /// A look, or an acquisition's answer that took the lock.
    Look,
    /// A refused acquisition's answer.
    Held,
    /// The name's claim.
    Claim,
}

impl World {
    /// The lock script's answer as `lock::call` decodes it, and as the
    /// guards taken out would have had it.
    pub fn decode(&mut self, p: usize, answer: Acquired, confirmed: bool) -> Acquire {
        let (g, fixes) = (self.guards, self.fixes);
        let pr = &mut self.procs[p];
        let counted = |counter: i64| (counter >= 0 && g.on(Guard::ForeignCounter)).then_some(counter);
        match answer {
            Acquired::Taken {
                fence,
                wait_ms,
                why,
                before,
                before_node,
                before_fence,
                at_ms,
                counter,
                before_instance,
            } => {
                pr.seen = pr.seen.max(fence);
                let why = match why {
                    1 => WaitCause::CounterMissing,
                    2 => WaitCause::RedisRestarted,
                    _ => WaitCause::EarlierWait,
                };
                let wait = (wait_ms > 0).then(|| Wait { left: Duration::from_millis(wait_ms), why });
                let mut before = match before {
                    1 => Before::Unknown,
                    2 => Before::Running {
                        node: before_node,
                        fence: before_fence,
                        instance: before_instance,
                        lease_ms: Some(crate::clock::millis(super::LEASE.whole())),
                    },
                    _ => Before::Stopped,
                };
                if !g.on(Guard::HandoverWait) {
                    before = Before::Stopped;
                }
                if let Before::Running { node, instance, .. } = &mut before {
                    // The code before `instance` never waited for a holding under its own name.
                    if !g.on(Guard::InstanceMatch) && *node == pr.node {
                        instance.clone_from(&pr.instance);
                    }
                    pr.before_named = Some((node.clone(), instance.clone()));
                }
                let counter = counted(counter);
                if confirmed || !g.on(Guard::ReplicaConfirm) {
                    Acquire::Acquired { fence, wait, before, at_ms, counter }
                } else {
                    Acquire::Unconfirmed { fence, before, at_ms, counter }
                }
            }
            Acquired::Held { pttl, counter, recorded, at_ms } => {
                pr.seen = pr.seen.max(counter);
                // Shown as recorded, the holder is not taken for foreign.
                let uncounted = counter < 0 && fixes.has(Fix::ForeignNeedsCounter);
                let recorded = recorded && g.on(Guard::ForeignMark) || uncounted;
                let seen = HeldSeen { at_ms, counter: counted(counter), recorded };
                Acquire::Held { ttl: u64::try_from(pttl).ok().map(Duration::from_millis), seen }
            }
        }
    }

    /// The snapshot as the engine is shown it: as read, but for the guards
    /// taken out, each shown as the code without it read the same data.
    pub fn view(&self, p: usize, snap: &Snapshot, view: View) -> Snapshot {
        let (g, pr) = (self.guards, &self.procs[p]);
        let mut s = snap.clone();
        if view != View::Held && !g.on(Guard::NoProofFromAbsence) {
            // A missing subscription was taken for a stopped worker.
            for b in s.beats.iter_mut().filter(|b| b.present == Some(false)) {
                b.state = Some(BeatState::Idle);
            }
        }
        if view == View::Look {
            if !g.on(Guard::InstanceMatch)
                && let Some((node, instance)) = pr.before_named.as_ref().filter(|(_, i)| !i.is_empty())
            {
                // Any heartbeat under the name spoke for the holding.
                for b in s.beats.iter_mut().filter(|b| &b.node == node) {
                    b.instance = Some(instance.clone());
                }
            }
            if !g.on(Guard::BusyElsewhere) {
                for b in &mut s.beats {
                    b.lock_field = Some(pr.field.clone());
                }
            }
            if !g.on(Guard::LookLost) && pr.engine.holding().is_some() && !s.lock.holders.contains(&pr.field) {
                s.lock.holders.push(pr.field.clone());
            }
            if !g.on(Guard::ForeignMark) {
                // Without the mark another holding is not known for lockwatch's, so it is tried.
                for h in s.lock.holders.iter_mut().filter(|h| **h != pr.field && is_lockwatch_field(h)) {
                    *h = format!("unmarked-{h}");
                }
            }
        }
        if view == View::Held && !g.on(Guard::ForeignMark) {
            // Nothing marks a holder as lockwatch's: no field mark, no heartbeat naming it.
            let alias = |f: &str| if is_lockwatch_field(f) { format!("unmarked-{f}") } else { f.to_owned() };
            for h in &mut s.lock.holders {
                *h = alias(h);
            }
            for b in &mut s.beats {
                b.lock_field = b.lock_field.as_deref().map(|f| format!("beat-{}", alias(f)));
            }
        }
        s
    }
}
