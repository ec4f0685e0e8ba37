//! The job's keys in the modelled Redis and the lock script that changes
//! them, step by step as `lock.lua` does (a guard taken out changes the
//! step it names, a fix modelled the step it mends); the heartbeats are
//! `heartbeat`'s. Hash fields are kept as the text Redis holds, so an
//! empty field and a missing one stay apart as they do there.

use std::collections::{BTreeMap, BTreeSet};

use super::LEASE;
use super::guards::{Fix, Fixes, Guard, Guards};
use super::hash::{BeatHash, some};
use crate::clock::millis;

/// The lock hash: its fields (each held once) and when it expires.
#[derive(Debug, Clone)]
pub(super) struct LockKey {
    pub fields: Vec<String>,
    pub expires_at: u64,
}

/// The handover record (`{job}:handover`), field by field.
#[derive(Debug, Clone, Default)]
pub(super) struct Handover {
    pub node: Option<String>,
    pub field: Option<String>,
    pub fence: Option<String>,
    pub instance: Option<String>,
    pub stopped: Option<String>,
    pub started: Option<String>,
    pub prev_node: Option<String>,
    pub prev_field: Option<String>,
    pub prev_fence: Option<String>,
    pub prev_instance: Option<String>,
}

/// Who calls a script: the `KEYS`/`ARGV` that differ between callers.
#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub node: String,
    pub field: String,
    pub instance: String,
    /// The highest fence the caller has seen (`ARGV[6]`).
    pub seen: i64,
}

/// What `lock.lua`'s `acquire` answered, before `call.rs` decodes it.
#[derive(Debug, Clone)]
pub(super) enum Acquired {
    Taken {
        fence: i64,
        wait_ms: u64,
        why: i64,
        before: i64,
        before_node: String,
        before_fence: i64,
        at_ms: u64,
        counter: i64,
        before_instance: String,
    },
    Held {
        pttl: i64,
        counter: i64,
        recorded: bool,
        at_ms: u64,
    },
}

/// The job's keys.
#[derive(Debug, Clone, Default)]
pub(super) struct Data {
    pub lock: Option<LockKey>,
    pub fence: Option<i64>,
    /// The earliest a new holder may start (`start_after`), and its expiry.
    pub start_after: Option<(u64, u64)>,
    /// The run id of the Redis process that issued the last fence.
    pub fence_run: Option<u32>,
    pub handover: Option<Handover>,
    pub beats: BTreeMap<String, BeatHash>,
    pub nodes: BTreeSet<String>,
}

/// [`Fix::CarryUnknown`]'s `prev_fence` for a holding before that nothing names.
const UNKNOWN: &str = "unknown";

impl Data {
    /// The lock as a read at `now` finds it (a key past its expiry is gone).
    pub fn lock_at(&mut self, now: u64) -> Option<&LockKey> {
        if self.lock.as_ref().is_some_and(|l| l.expires_at <= now) {
            self.lock = None;
        }
        self.lock.as_ref()
    }

    fn holds(&mut self, now: u64, field: &str) -> bool {
        self.lock_at(now).is_some_and(|l| l.fields.iter().any(|f| f == field))
    }

    /// Whether `field` holds a lock that has not expired (no change made).
    pub fn valid_holder(&self, now: u64, field: &str) -> bool {
        self.lock.as_ref().is_some_and(|l| l.expires_at > now && l.fields.iter().any(|f| f == field))
    }

    /// `lock.lua acquire`; `run` and `up_ms` are what `INFO server` says.
    pub fn acquire(&mut self, now: u64, c: &Caller, run: u32, up_ms: u64, g: Guards, fixes: Fixes) -> Acquired {
        let lease = millis(LEASE.whole());
        let free = self.lock_at(now).is_none();
        if !free && !self.holds(now, &c.field) {
            let pttl = self.lock.as_ref().map_or(-2, |l| i64::try_from(l.expires_at - now).unwrap_or(i64::MAX));
            let recorded = self.recorded_holder(now);
            return Acquired::Held { pttl, counter: self.fence.unwrap_or(-1), recorded, at_ms: now };
        }
        let lock = self.lock.get_or_insert_with(|| LockKey { fields: vec![c.field.clone()], expires_at: now });
        lock.expires_at = now + lease;
        // The lock already ours: the holding goes on, with the counter as its fence.
        let mut fence = if free { None } else { self.fence };
        let (mut wait, mut why, mut counter) = (0, 0, -1);
        let mut before = (0, String::new(), 0, String::new());
        if fence.is_none() {
            let issued_by = self.fence_run;
            let (next, found) = self.next_fence(now, run, c.seen, g);
            fence = Some(next);
            counter = found.unwrap_or(-1);
            (wait, why) = self.start_wait(found, issued_by, now, run, up_ms, g);
            before = self.hand_over(found, next, c, fixes.has(Fix::CarryUnknown));
        }
        let fence = fence.unwrap_or_default();
        let beat = self.beats.entry(c.node.clone()).or_default();
        beat.set(&BeatHash {
            lock_field: some(&c.field),
            fence: some(fence.to_string()),
            state: some(if wait > 0 { "starting" } else { "running" }),
            beat_ms: some(now.to_string()),
            instance: (!c.instance.is_empty()).then(|| c.instance.clone()),
            ..BeatHash::default()
        });
        self.nodes.insert(c.node.clone());
        let (before, before_node, before_fence, before_instance) = before;
        Acquired::Taken {
            fence,
            wait_ms: wait,
            why,
            before,
            before_node,
            before_fence,
            at_ms: now,
            counter,
            before_instance,
        }
    }

    /// `next_fence`: the fence and the counter found.
    fn next_fence(&mut self, now: u64, run: u32, seen: i64, g: Guards) -> (i64, Option<i64>) {
        let current = self.fence;
        if !g.on(Guard::FenceIncrement)
            && let Some(c) = current
        {
            return (c, current);
        }
        let floor = if g.on(Guard::FenceFloor) { seen.max(i64::try_from(now).unwrap_or(i64::MAX)) } else { 0 };
        let fence = floor.max(current.unwrap_or(0)) + 1;
        self.fence = Some(fence);
        self.fence_run = Some(run);
        (fence, current)
    }

    /// `start_wait`: how long a new holder waits for Redis's sake, and why.
    fn start_wait(
        &mut self,
        counter: Option<i64>,
        issued_by: Option<u32>,
        now: u64,
        run: u32,
        up: u64,
        g: Guards,
    ) -> (u64, i64) {
        if !g.on(Guard::RestartWait) {
            return (0, 0);
        }
        let lease = millis(LEASE.whole());
        let (mut wait, mut why) = match counter {
            None => (lease, 1),
            Some(c) if c != 0 && issued_by != Some(run) && up < lease => (lease - up, 2),
            Some(_) => (0, 0),
        };
        let pending = self.start_after.filter(|(_, exp)| *exp > now).map_or(0, |(at, _)| at.saturating_sub(now));
        if pending > wait {
            (wait, why) = (pending, 3);
        }
        if wait > 0 {
            self.start_after = Some((now + wait, now + wait));
        }
        (wait, why)
    }

    /// `hand_over`: the holding before (state, node, fence, instance), and
    /// the new holding recorded in its place; `carry`: [`Fix::CarryUnknown`].
    fn hand_over(&mut self, counter: Option<i64>, fence: i64, c: &Caller, carry: bool) -> (i64, String, i64, String) {
        let filled = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        let (mut state, mut wait) = (0, (String::new(), String::new(), String::new(), String::new()));
        match &self.handover {
            Some(h) if h.fence.is_some() => {
                // A record without `started` (an older lockwatch) counts as started.
                if h.started.as_deref() != Some("0") {
                    if h.stopped.as_deref() != Some("1") {
                        state = 2;
                        let v = |x: &Option<String>| x.clone().unwrap_or_default();
                        wait = (v(&h.node), v(&h.field), v(&h.fence), v(&h.instance));
                    }
                } else if carry && h.prev_fence.as_deref() == Some(UNKNOWN) {
                    state = 1;
                } else if let Some(prev_fence) = filled(&h.prev_fence) {
                    state = 2;
                    let v = |x: &Option<String>| x.clone().unwrap_or_default();
                    wait = (v(&h.prev_node), v(&h.prev_field), prev_fence, v(&h.prev_instance));
                }
            }
            _ if counter != Some(0) => state = 1,
            _ => {}
        }
        let h = self.handover.get_or_insert_with(Handover::default);
        h.node = some(&c.node);
        h.field = some(&c.field);
        h.fence = some(fence.to_string());
        h.instance = some(&c.instance);
        h.stopped = some("0");
        h.started = some("0");
        h.prev_node = some(&wait.0);
        h.prev_field = some(&wait.1);
        h.prev_fence = if carry && state == 1 { some(UNKNOWN) } else { some(&wait.2) };
        h.prev_instance = some(&wait.3);
        (state, wait.0, wait.2.parse().unwrap_or(0), wait.3)
    }

    /// `recorded_holder`: the handover record names a field of the lock.
    fn recorded_holder(&mut self, now: u64) -> bool {
        let named: Vec<String> = self
            .handover
            .iter()
            .flat_map(|h| [h.field.clone(), h.prev_field.clone()])
            .flatten()
            .filter(|f| !f.is_empty())
            .collect();
        named.iter().any(|f| self.holds(now, f))
    }

    /// `renew`: extends the lease and stamps the heartbeat.
    pub fn renew(&mut self, now: u64, node: &str, field: &str) -> bool {
        if !self.holds(now, field) {
            return false;
        }
        if let Some(l) = self.lock.as_mut() {
            l.expires_at = now + millis(LEASE.whole());
        }
        self.beats.entry(node.to_owned()).or_default().renewed_ms = some(now.to_string());
        true
    }

    /// `release`; true when it was ours (the unlock message goes out).
    pub fn release(&mut self, now: u64, field: &str) -> bool {
        if !self.holds(now, field) {
            return false;
        }
        self.lock = None;
        self.note_stopped(field, true);
        true
    }

    /// `note_stopped`; `own_field` false: whatever the record names (a guard out).
    pub fn note_stopped(&mut self, field: &str, own_field: bool) {
        let Some(h) = self.handover.as_mut() else { return };
        if !own_field || h.field.as_deref() == Some(field) {
            h.stopped = some("1");
        } else if h.prev_field.as_deref() == Some(field) {
            (h.prev_node, h.prev_field, h.prev_fence, h.prev_instance) = (some(""), some(""), some(""), some(""));
        }
    }

    /// `started`: only while the lock is this holding's (unless `check` is out).
    pub fn started(&mut self, now: u64, field: &str, check: bool) -> bool {
        if check && !self.holds(now, field) {
            return false;
        }
        if let Some(h) = self.handover.as_mut().filter(|h| h.field.as_deref() == Some(field)) {
            h.started = some("1");
            (h.prev_node, h.prev_field, h.prev_fence, h.prev_instance) = (some(""), some(""), some(""), some(""));
        }
        true
    }

    /// `orphaned`: a dead worker's holding lets go; true when the lock was its own.
    pub fn orphaned(&mut self, now: u64, node: &str, field: &str, own_field: bool) -> bool {
        self.note_stopped(field, own_field);
        if let Some(b) = self.beats.get_mut(node)
            && (!own_field || b.lock_field.as_deref() == Some(field))
        {
            b.state = some("idle");
            b.lock_field = some("");
            b.instance = some("");
        }
        if own_field && !self.holds(now, field) || self.lock_at(now).is_none() {
            return false;
        }
        self.lock = None;
        true
    }

    /// A Redisson client's `tryLock`.
    pub fn foreign_lock(&mut self, now: u64, field: &str, lease: u64) -> bool {
        if self.lock_at(now).is_some() {
            return false;
        }
        self.lock = Some(LockKey { fields: vec![field.to_owned()], expires_at: now + lease });
        true
    }

    /// A Redisson watchdog's renewal.
    pub fn foreign_renew(&mut self, now: u64, field: &str, lease: u64) -> bool {
        if !self.holds(now, field) {
            return false;
        }
        if let Some(l) = self.lock.as_mut() {
            l.expires_at = now + lease;
        }
        true
    }

    /// A Redisson client's `unlock`; true when it was its own.
    pub fn foreign_unlock(&mut self, now: u64, field: &str) -> bool {
        if !self.holds(now, field) {
            return false;
        }
        self.lock = None;
        true
    }
}
