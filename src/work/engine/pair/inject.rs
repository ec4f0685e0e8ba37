//! The faults played on the world as they fall due, the Redisson service's
//! turns, and `worker-gone`, as its unit's `ExecStopPost=` or run from the
//! wrong place.

use super::cluster::World;
use super::faults::{FOREIGN_FIELD, FOREIGN_LEASE, Fault, Place};
use super::guards::{Fix, Guard};
use super::process::{NAMES, short};
use crate::schema::BeatState;
use crate::work::unit::same_run;

/// Where `worker-gone` runs: its host, its PID namespace, its invocation,
/// and whether it runs as a unit's `ExecStopPost=` with nothing of that
/// unit left.
struct Runner {
    host: usize,
    pidns: u32,
    invocation: String,
    stop_post: bool,
}

impl World {
    /// The process running in `slot`, if one does.
    fn running_in(&self, slot: usize) -> Option<usize> {
        self.slots[slot].filter(|p| self.procs[*p].alive)
    }

    /// Injects `fault` now.
    pub fn apply(&mut self, fault: &Fault) {
        let now = self.now;
        match *fault {
            Fault::Freeze(slot, ms) => {
                if let Some(p) = self.running_in(slot) {
                    self.say(format!("p{p} ({}) is frozen for {} s", NAMES[slot], ms as f64 / 1e3));
                    let pr = &mut self.procs[p];
                    pr.frozen_until = pr.frozen_until.max(now + ms);
                }
            }
            Fault::Kill(slot) => {
                if let Some(p) = self.running_in(slot) {
                    self.say(format!("p{p} ({}) is killed (kill -9); its reaper kills the job", NAMES[slot]));
                    self.die(p, false);
                }
            }
            Fault::UnitKill(slot) => {
                if let Some(p) = self.running_in(slot) {
                    self.say(format!("p{p}'s unit is killed whole; its ExecStopPost= runs worker-gone"));
                    self.die(p, true);
                    let r = &self.procs[p];
                    let runner = Runner { host: r.host, pidns: 1, invocation: r.invocation.clone(), stop_post: true };
                    self.worker_gone(&runner, NAMES[slot]);
                    self.restarts.push((now + 500, slot));
                }
            }
            Fault::Start(slot) => self.spawn(slot),
            Fault::Cut(slot, ms) => {
                if let Some(p) = self.running_in(slot) {
                    self.say(format!("p{p} ({}) is cut off from Redis for {} s", NAMES[slot], ms as f64 / 1e3));
                    self.drop_calls(Some(p));
                    let pr = &mut self.procs[p];
                    pr.cut_until = pr.cut_until.max(now + ms);
                    pr.sub_run = None;
                    if !pr.frozen(now) {
                        pr.presence_on = None;
                    }
                }
            }
            Fault::JobExits(slot) => {
                if let Some(p) = self.running_in(slot)
                    && self.procs[p].live.as_mut().is_some_and(|l| l.kill_job("exit status 0"))
                {
                    self.say(format!("p{p}'s job exits"));
                    self.procs[p].next_turn = now;
                }
            }
            Fault::WorkerGone(slot, place) => {
                let (host, pidns, stop_post) = match place {
                    Place::ByHand => (slot, 1, false),
                    Place::Container => (slot, 2, false),
                    Place::ClonedHost => (2, 1, true),
                };
                let unit = if stop_post { "u-clone" } else { "-" };
                let invocation = format!("boot=b{host} pidns=pid:[{pidns}] unit={unit}");
                self.say(format!("worker-gone for {} runs {place:?}", NAMES[slot]));
                self.worker_gone(&Runner { host, pidns, invocation, stop_post }, NAMES[slot]);
            }
            Fault::Del => self.lose_keys(true, false, false, false, "the lock is deleted (forceUnlock)"),
            Fault::EvictHandover => self.lose_keys(false, true, false, false, "the handover record is evicted"),
            Fault::EvictBeat(slot) => {
                if self.redis.data.beats.remove(NAMES[slot]).is_some() {
                    self.redis.wrote();
                    self.say(format!("{}'s heartbeat is evicted", NAMES[slot]));
                }
            }
            Fault::Evict { lock, handover, beats, counter } => {
                self.lose_keys(lock, handover, beats, counter, "eviction");
            }
            Fault::Failover(lose) => {
                let before = self.holders();
                self.redis.promote(lose, self.fixes.has(Fix::RestartSurvivesFailover));
                self.redis_changed(before, &format!("a failover to the replica (up to {lose} writes lost)"));
            }
            Fault::Restart(from_save) => {
                let before = self.holders();
                self.redis.restart(now, from_save);
                let how = if from_save { "from its last save" } else { "empty" };
                self.redis_changed(before, &format!("Redis restarts {how}"));
            }
            Fault::RedisFreeze(ms) => {
                self.say(format!("Redis is frozen for {} s", ms as f64 / 1e3));
                self.redis.frozen_until = self.redis.frozen_until.max(now + ms);
            }
            Fault::Lag(lagging) => {
                self.say(if lagging { "the replica lags" } else { "the replica catches up" });
                self.redis.set_lag(lagging);
            }
            Fault::Latency(slot, ms) => {
                if let Some(p) = self.running_in(slot) {
                    self.say(format!("p{p}'s calls take {ms} ms each way"));
                    self.procs[p].latency = ms;
                }
            }
            Fault::Flags(on) => {
                self.say(if on { "the job is enabled" } else { "the job is disabled" });
                self.enabled = on;
                for p in &mut self.procs {
                    p.next_turn = p.next_turn.min(now);
                }
            }
            Fault::ForeignWants => {
                self.foreign.wants = true;
                self.foreign.wake(now);
            }
            Fault::ForeignUnlock => {
                if self.foreign.holds && !self.redis.frozen(now) {
                    let ok = self.redis.data.foreign_unlock(now, FOREIGN_FIELD);
                    self.wrote(ok);
                    if ok {
                        self.say("the Redisson service unlocks");
                    }
                }
                (self.foreign.holds, self.foreign.wants) = (false, false);
            }
            Fault::ForeignDies => (self.foreign.holds, self.foreign.wants) = (false, false),
        }
    }

    /// Keys go: deleted or evicted.
    fn lose_keys(&mut self, lock: bool, handover: bool, beats: bool, counter: bool, why: &str) {
        let before = self.holders();
        let data = &mut self.redis.data;
        if lock {
            data.lock = None;
        }
        if handover {
            data.handover = None;
        }
        if beats {
            data.beats.clear();
        }
        if counter {
            data.fence = None;
        }
        self.say(format!(
            "{why}: lock {lock}, handover record {handover}, heartbeats {beats}, fence counter {counter}"
        ));
        self.wrote(lock && before.is_some());
        self.lock_taken_away(before);
    }

    /// Redis is another process now, with other data: every connection
    /// and subscription is gone.
    fn redis_changed(&mut self, before: Option<(Vec<String>, u64)>, what: &str) {
        self.say(what);
        self.drop_calls(None);
        let now = self.now;
        for p in &mut self.procs {
            p.sub_run = None;
            if !p.frozen(now) {
                p.presence_on = None;
            }
        }
        self.foreign.holds &= self.redis.data.valid_holder(now, FOREIGN_FIELD);
        self.lock_taken_away(before);
    }

    /// `worker-gone` for `node`, run by `r`: `orphan::after_unit_stopped`,
    /// with the probe and the let-go in one step. Its `holding` is private
    /// to `orphan.rs`, so it is restated here, and the code before
    /// [`Guard::WorkerGoneOwnUnit`] with it.
    fn worker_gone(&mut self, r: &Runner, node: &str) {
        let now = self.now;
        if self.redis.frozen(now) {
            return;
        }
        let own_unit = self.guards.on(Guard::WorkerGoneOwnUnit);
        // `unit::stop_post_refusal`: only as a unit's ExecStopPost= with nothing of the unit left.
        if own_unit && !r.stop_post {
            return;
        }
        let run = self.redis.run;
        let subs: Vec<String> = self
            .procs
            .iter()
            .filter(|p| p.alive && now >= p.cut_until && p.sub_run == Some(run))
            .map(|p| p.node.clone())
            .collect();
        let snap = self.redis.data.probe(now, run, &|n| subs.iter().filter(|s| s.as_str() == n).count() as i64);
        let hostname = NAMES[r.host];
        let held = snap.beats.iter().find(|b| {
            b.node == node
                && (own_unit || b.host.as_deref() == Some(hostname))
                && b.state.as_ref().is_some_and(BeatState::holds_lock)
                && b.lock_field.as_deref().is_some_and(|f| !f.is_empty())
        });
        let Some(b) = held else { return };
        if own_unit && !b.invocation.as_deref().is_some_and(|i| same_run(i, &r.invocation)) {
            return;
        }
        // Only processes of its own PID namespace are seen in its /proc.
        let runs = b
            .pid
            .is_some_and(|pid| self.procs.iter().any(|p| p.alive && p.pid == pid && p.host == r.host && r.pidns == 1));
        if b.present == Some(true) || runs {
            return;
        }
        let field = b.lock_field.clone().unwrap_or_default();
        let ok = self.redis.data.orphaned(now, node, &field, self.guards.on(Guard::OrphanOwnField));
        self.wrote(ok);
        self.say(format!("worker-gone lets go of {node}'s holding {} (lock released: {ok})", short(&field)));
    }

    /// Everything mends: no process or Redis frozen, no host cut off, the
    /// replica caught up, calls fast, the job enabled, the Redisson service
    /// gone (its lock let go), a worker running in each server's slot.
    pub fn mend(&mut self) {
        let now = self.now;
        self.say("everything mends");
        self.faults.clear();
        for p in &mut self.procs {
            p.frozen_until = p.frozen_until.min(now);
            p.cut_until = p.cut_until.min(now);
            p.latency = 0;
        }
        self.redis.frozen_until = self.redis.frozen_until.min(now);
        self.redis.set_lag(false);
        self.apply(&Fault::Flags(true));
        self.apply(&Fault::ForeignUnlock);
        self.spawn(0);
        self.spawn(1);
    }

    /// The Redisson service's next step: a renewal, or a try for the lock.
    pub fn foreign_step(&mut self) {
        let now = self.now;
        if self.foreign.holds {
            if self.redis.data.foreign_renew(now, FOREIGN_FIELD, FOREIGN_LEASE) {
                self.redis.wrote();
                self.foreign.next_renew = now + FOREIGN_LEASE / 3;
            } else {
                self.say("the Redisson service finds its lock gone");
                self.foreign.holds = false;
                self.foreign.next_try = now + 1_000;
            }
        } else if self.redis.data.foreign_lock(now, FOREIGN_FIELD, FOREIGN_LEASE) {
            self.redis.wrote();
            self.say("the Redisson service takes the lock");
            self.foreign.holds = true;
            self.foreign.next_renew = now + FOREIGN_LEASE / 3;
        } else {
            self.foreign.next_try = now + 1_000;
        }
    }
}
