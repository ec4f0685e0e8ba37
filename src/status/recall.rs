//! What a verdict needs from earlier reads besides the snapshot: the gap a
//! free, enabled lock is in (to tell a takeover from a first start and to
//! date a death), whether the current lock was seen renewed (to tell a
//! hung holder from a dying one), and which server was seen holding it (to
//! name it when no heartbeat names it any more).

use crate::snapshot::Snapshot;

use super::State;
use super::evaluate::{Context, Raw};

/// A renewal shows as a TTL longer than the last one minus the time passed,
/// by more than this.
const RENEWAL_TOLERANCE_MS: u64 = 300;

/// The engine's recollection of earlier reads, for [`evaluate`](super::evaluate).
#[derive(Debug, Clone, Default)]
pub(super) struct Recall {
    ctx: Context,
    /// Lock field, TTL and Redis time of the last read, to see renewals.
    last_lock: Option<(String, u64, u64)>,
    /// The last lock field a heartbeat named, and the server whose it was:
    /// a lock field is one holding's own, so it stays that server's.
    held_by: Option<(String, String)>,
}

impl Recall {
    /// Takes in what `snap` shows before it is judged, and returns what the
    /// verdict may use.
    pub fn before(&mut self, snap: &Snapshot) -> Context {
        let current = snap.lock.holders.first().cloned().zip(snap.lock.ttl_ms);
        match (&self.last_lock, &current) {
            (Some((field, ttl, at)), Some((now_field, now_ttl))) if field == now_field => {
                let expected = ttl.saturating_sub(snap.time_ms.saturating_sub(*at));
                if *now_ttl > expected + RENEWAL_TOLERANCE_MS {
                    self.ctx.renewed_at_ms = Some(snap.time_ms);
                }
            }
            _ => self.ctx.renewed_at_ms = None,
        }
        self.last_lock = current.map(|(field, ttl)| (field, ttl, snap.time_ms));
        if let (Some(field), Some(beat)) = (snap.lock.holders.first(), snap.holder_beat()) {
            self.held_by = Some((field.clone(), beat.node.clone()));
        }
        let field = snap.lock.holders.first();
        self.ctx.held_by = self.held_by.as_ref().filter(|(f, _)| Some(f) == field).map(|(_, node)| node.clone());
        self.ctx.clone()
    }

    /// Keeps the gap a free, enabled lock is in, as the verdict on `snap` saw it.
    pub fn after(&mut self, snap: &Snapshot, raw: &Raw) {
        if snap.lock.is_held() {
            self.ctx.gap = None;
            self.ctx.was_held = true;
            return;
        }
        match raw.state {
            State::Pending | State::Down => self.ctx.gap = raw.gap,
            State::Stopped => {
                // A later holder is a start, not a takeover.
                self.ctx.gap = None;
                self.ctx.was_held = false;
            }
            _ => {}
        }
    }

    /// Forgets everything: it went with Redis's data.
    pub fn forget(&mut self) {
        *self = Recall::default();
    }
}
