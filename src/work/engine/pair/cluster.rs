//! The modelled cluster: one clock (ms), one Redis, the worker processes
//! and a Redisson service, and the loop that runs whatever is due next: a
//! fault, a call reaching Redis, a watchdog's renewal or its answer, a
//! reaper's dead-man kill (`watchdog`), a worker's turn. A turn waits on its calls
//! (`turn`); while it waits, the loop runs everything else, and the
//! process's own watchdog and reaper go on. Every call reaches Redis its
//! worker's `latency` after it is sent and is answered as long after it ran; a
//! frozen Redis runs what reached it when it thaws, also what its callers
//! gave up on, as the real one does with what is left in its sockets.

use std::collections::{BTreeMap, VecDeque};

use super::LEASE;
use super::check::{Checker, Running};
use super::faults::{FOREIGN_FIELD, Fault, Foreign};
use super::guards::{Fix, Fixes, Guard, Guards};
use super::heartbeat::BeatCall;
use super::process::{NAMES, Proc, short};
use super::redis::{Acquired, Caller, Data, Handover};
use super::server::Server;
use crate::clock::{Boot, millis};
use crate::snapshot::Snapshot;

/// When the model's clock starts (ms).
pub(super) const START: u64 = 100_000;
/// How often Redis saves (RDB), for a restart from the last save.
const SAVE_EVERY: u64 = 5_000;

/// A call to Redis.
#[derive(Debug, Clone)]
pub(super) enum Op {
    Probe,
    Acquire(Caller),
    Renew { node: String, field: String },
    Release(String),
    Stopped(String),
    Started(String),
    Orphaned { node: String, field: String },
    Beat(Box<BeatCall>),
}

/// Its answer.
#[derive(Debug, Clone)]
pub(super) enum Reply {
    /// The connection failed (cut off, Redis restarted): no answer.
    Failed,
    Snap(Box<Snapshot>),
    /// The lock script's answer, and whether `WAIT 1` saw a replica confirm it.
    Acquire(Acquired, bool),
    Done(bool, bool),
    Beat(Result<u64, ()>),
}

#[derive(Debug)]
struct Call {
    /// The worker process it came from (a cut-off worker's calls fail);
    /// none: a reaper's.
    from: Option<usize>,
    op: Option<Op>,
    arrive: u64,
    /// When the answer is back, and what it is.
    answer: Option<(u64, Reply)>,
    /// Nobody waits for the answer any more (it still runs).
    abandoned: bool,
}

/// Why a turn stops short.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Abort {
    /// The process died meanwhile.
    Dead,
    /// Its name is another's: it stops, letting go of what it holds.
    Exit,
}

/// The model.
#[derive(Debug)]
pub(super) struct World {
    pub now: u64,
    pub guards: Guards,
    /// Changes to the product modelled (none but in searches past a finding).
    pub fixes: Fixes,
    pub redis: Server,
    pub procs: Vec<Proc>,
    /// The process running in each slot.
    pub slots: [Option<usize>; 3],
    pub enabled: bool,
    pub foreign: Foreign,
    calls: BTreeMap<u64, Call>,
    next_call: u64,
    pub faults: VecDeque<(u64, Fault)>,
    /// Units systemd starts again then.
    pub restarts: Vec<(u64, usize)>,
    next_save: u64,
    pub check: Checker,
    pub log: Vec<String>,
}

/// What is due next.
#[derive(Debug, Clone, Copy)]
enum Due {
    Return,
    Fault,
    Exec(u64),
    Reap(usize),
    Answer(usize),
    Renew(usize),
    Turn(usize),
    Foreign,
    Restart(usize),
    Save,
}

pub(super) fn at(ms: u64) -> Boot {
    Boot::from_millis(ms)
}

impl World {
    /// A Redis that has run lockwatch holdings for long, the last one
    /// stopped (so the first holding here waits for nothing), the job
    /// enabled, and the two servers' workers starting `phase` ms in.
    pub fn new(guards: Guards, phase: [u64; 2]) -> World {
        let fence = START - 10_000;
        let done = |s: &str| Some(s.to_owned());
        let handover = Handover {
            node: done("srv-old"),
            field: done("0000ffff-0000-8000-8000-000000000000:1"),
            fence: Some(fence.to_string()),
            instance: done("srv-old/p"),
            stopped: done("1"),
            started: done("1"),
            ..Handover::default()
        };
        let data = Data { fence: Some(fence as i64), fence_run: Some(1), handover: Some(handover), ..Data::default() };
        let mut w = World {
            now: START,
            guards,
            fixes: Fixes::default(),
            redis: Server::new(data, START),
            procs: Vec::new(),
            slots: [None; 3],
            enabled: true,
            foreign: Foreign::default(),
            calls: BTreeMap::new(),
            next_call: 0,
            faults: VecDeque::new(),
            restarts: Vec::new(),
            next_save: START + SAVE_EVERY,
            check: Checker::default(),
            log: Vec::new(),
        };
        for (slot, phase) in phase.into_iter().enumerate() {
            w.spawn(slot);
            if let Some(p) = w.slots[slot] {
                w.procs[p].next_turn = START + phase;
            }
        }
        w
    }

    /// Notes what happened, for the counterexample.
    pub fn say(&mut self, what: impl AsRef<str>) {
        let t = self.now - START;
        self.log.push(format!("{:>3}.{:03} s  {}", t / 1_000, t % 1_000, what.as_ref()));
    }

    /// The promises, now.
    pub fn check_now(&mut self) {
        let (jobs, foreign) = self.running();
        if let Some(what) = self.check.now(&jobs, foreign) {
            self.broke(what);
        }
    }

    /// Process `p` just started its job with `fence`.
    pub fn check_start(&mut self, p: usize, fence: i64) {
        let (jobs, foreign) = self.running();
        let field = self.procs[p].field.clone();
        if let Some(what) = self.check.start(p, fence, &field, &jobs, foreign) {
            self.broke(what);
        }
    }

    /// The lockwatch jobs that run, and whether the Redisson service holds a valid lock.
    fn running(&self) -> (Vec<Running>, bool) {
        let jobs = self
            .procs
            .iter()
            .filter_map(|p| {
                let j = p.job()?;
                Some(Running { process: p.index, node: p.node.clone(), fence: j.fence, field: j.field.clone() })
            })
            .collect();
        (jobs, self.redis.data.valid_holder(self.now, FOREIGN_FIELD))
    }

    fn broke(&mut self, what: String) {
        self.say(format!("BROKEN: {what}"));
        let t = self.now - START;
        self.check.broken = Some(format!("at {}.{:03} s: {what}", t / 1_000, t % 1_000));
    }

    /// Whether process `p`'s connections are cut off now.
    pub fn cut(&self, p: usize) -> bool {
        self.now < self.procs[p].cut_until
    }

    /// Starts a worker process in `slot`, unless one runs there.
    pub fn spawn(&mut self, slot: usize) {
        if self.slots[slot].is_some_and(|p| self.procs[p].alive) {
            return;
        }
        let index = self.procs.len();
        self.procs.push(Proc::new(index, slot, self.now));
        self.slots[slot] = Some(index);
        if self.now > START {
            self.say(format!("p{index} starts as {} on host {slot}", NAMES[slot]));
        }
    }

    /// Runs whatever is due until `end`, or until the answer to call
    /// `waiting` is back.
    pub fn run_until(&mut self, end: u64, waiting: Option<u64>) {
        for _ in 0..1_000_000 {
            if self.check.broken.is_some() {
                self.now = self.now.max(end);
                return;
            }
            let Some((t, due)) = self.next_due(waiting).filter(|(t, _)| *t <= end) else {
                self.now = self.now.max(end);
                return;
            };
            self.now = self.now.max(t);
            match due {
                Due::Return => return,
                Due::Fault => {
                    if let Some((_, fault)) = self.faults.pop_front() {
                        if fault.waits_for_redis() && self.redis.frozen(self.now) {
                            // A command to a frozen Redis runs when it thaws, after what came before it.
                            let at = self.redis.frozen_until;
                            let i = self.faults.iter().position(|(t, _)| *t > at).unwrap_or(self.faults.len());
                            self.faults.insert(i, (at, fault));
                        } else {
                            self.apply(&fault);
                        }
                    }
                }
                Due::Exec(id) => self.exec(id),
                Due::Reap(p) => self.reap(p),
                Due::Answer(p) => self.renewed(p),
                Due::Renew(p) => self.renew(p),
                Due::Turn(p) => self.turn(p),
                Due::Foreign => self.foreign_step(),
                Due::Restart(slot) => {
                    self.restarts.retain(|(_, s)| *s != slot);
                    self.spawn(slot);
                }
                Due::Save => {
                    if !self.redis.frozen(self.now) {
                        self.redis.save();
                    }
                    self.next_save = self.now + SAVE_EVERY;
                }
            }
            self.check_now();
        }
        panic!("the model stands still at {}", self.now);
    }

    fn next_due(&self, waiting: Option<u64>) -> Option<(u64, Due)> {
        let now = self.now;
        let mut best: Option<(u64, Due)> = None;
        // Ties go to what is offered first.
        let mut offer = |t: u64, due: Due| {
            let t = t.max(now);
            if best.is_none_or(|(b, _)| t < b) {
                best = Some((t, due));
            }
        };
        let alive = || self.procs.iter().enumerate().filter(|(_, p)| p.alive);
        // A reaper's kill lands before anything else due at the same moment.
        for (i, p) in alive() {
            if let Some(at) = p.job().and_then(|j| j.reaper_deadline) {
                offer(at, Due::Reap(i));
            }
        }
        if let Some((t, _)) = waiting.and_then(|id| self.calls.get(&id)).and_then(|c| c.answer.as_ref()) {
            offer(*t, Due::Return);
        }
        if let Some((t, _)) = self.faults.front() {
            offer(*t, Due::Fault);
        }
        if let Some((id, c)) = self.calls.iter().filter(|(_, c)| c.op.is_some()).min_by_key(|(id, c)| (c.arrive, **id))
        {
            offer(c.arrive.max(self.redis.frozen_until), Due::Exec(*id));
        }
        for (i, p) in alive() {
            let awake = p.frozen_until.max(now);
            if let Some(live) = &p.live {
                if let Some((id, _, deadline)) = live.pending {
                    let answer = self.calls.get(&id).and_then(|c| c.answer.as_ref());
                    let back = answer.map_or(deadline, |(t, _)| (*t).min(deadline));
                    offer(back.max(awake), Due::Answer(i));
                } else if let Some(send) = live.next_send {
                    offer(send.max(awake), Due::Renew(i));
                }
            }
            if !p.busy {
                offer(p.next_turn.max(awake), Due::Turn(i));
            }
        }
        if let Some(t) = self.foreign.due() {
            offer(t.max(self.redis.frozen_until), Due::Foreign);
        }
        for (t, slot) in &self.restarts {
            offer(*t, Due::Restart(*slot));
        }
        offer(self.next_save, Due::Save);
        best
    }

    /// Sends `op` from process `from` (none: a reaper); its id.
    pub fn send(&mut self, from: Option<usize>, op: Op) -> u64 {
        let id = self.next_call;
        self.next_call += 1;
        let latency = from.map_or(0, |p| self.procs[p].latency);
        let call = Call { from, op: Some(op), arrive: self.now + latency, answer: None, abandoned: false };
        self.calls.insert(id, call);
        id
    }

    /// The answer to call `id`, once it is back; the call is forgotten then.
    pub fn take_answer(&mut self, id: u64) -> Option<(u64, Reply)> {
        let back = self.calls.get(&id)?.answer.as_ref().is_some_and(|(t, _)| *t <= self.now);
        if !back {
            return None;
        }
        self.calls.remove(&id).and_then(|c| c.answer)
    }

    /// Nobody waits for call `id` any more; it still runs if it has not.
    pub fn abandon(&mut self, id: u64) {
        match self.calls.get_mut(&id) {
            Some(c) if c.op.is_some() => c.abandoned = true,
            _ => {
                self.calls.remove(&id);
            }
        }
    }

    /// Every call of process `from` (every call, if `None`) not answered
    /// yet fails now: its connection is gone; those that have not reached
    /// Redis never do.
    pub fn drop_calls(&mut self, from: Option<usize>) {
        let now = self.now;
        for c in self.calls.values_mut().filter(|c| from.is_none_or(|p| Some(p) == c.from)) {
            if c.answer.as_ref().is_none_or(|(t, _)| *t > now) {
                c.op = None;
                c.answer = Some((now, Reply::Failed));
            }
        }
        self.calls.retain(|_, c| !c.abandoned || c.op.is_some());
    }

    /// Call `id` runs in Redis now.
    fn exec(&mut self, id: u64) {
        let Some(op) = self.calls.get_mut(&id).and_then(|c| c.op.take()) else { return };
        let (reply, confirming) = self.run_op(op);
        let wait = if confirming && self.redis.lagging() { millis(LEASE.confirm_within()) } else { 0 };
        let latency = self.calls.get(&id).and_then(|c| c.from).map_or(0, |p| self.procs[p].latency);
        let back = self.now + latency + wait;
        match self.calls.get_mut(&id) {
            Some(c) if c.abandoned => {
                self.calls.remove(&id);
            }
            Some(c) => c.answer = Some((back, reply)),
            None => {}
        }
    }

    /// Runs one call's script; whether it waited for a replica (`WAIT 1`).
    fn run_op(&mut self, op: Op) -> (Reply, bool) {
        let (now, g) = (self.now, self.guards);
        let (run, up) = (self.redis.run, self.redis.uptime(now));
        match op {
            Op::Probe => {
                let subs = self.subscribers();
                let snap =
                    self.redis.data.probe(now, run, &|node| subs.iter().filter(|n| n.as_str() == node).count() as i64);
                (Reply::Snap(Box::new(snap)), false)
            }
            Op::Acquire(caller) => {
                let answer = self.redis.data.acquire(now, &caller, run, up, g, self.fixes);
                if matches!(answer, Acquired::Taken { .. }) {
                    self.redis.wrote();
                }
                let confirmed = self.redis.confirm();
                (Reply::Acquire(answer, confirmed), true)
            }
            Op::Renew { node, field } => {
                let ok = self.redis.data.renew(now, &node, &field);
                if ok {
                    self.redis.wrote();
                }
                let confirmed = self.redis.confirm();
                (Reply::Done(ok, confirmed), true)
            }
            Op::Release(field) => {
                let ok = self.redis.data.release(now, &field);
                self.wrote(ok);
                (Reply::Done(ok, true), false)
            }
            Op::Stopped(field) => {
                self.redis.data.note_stopped(&field, true);
                self.redis.wrote();
                (Reply::Done(true, true), false)
            }
            Op::Started(field) => {
                let ok = self.redis.data.started(now, &field, g.on(Guard::StartedCheck));
                self.redis.wrote();
                let confirming = self.fixes.has(Fix::ConfirmStarted);
                let confirmed = !confirming || self.redis.confirm();
                (Reply::Done(ok && confirmed, true), confirming)
            }
            Op::Orphaned { node, field } => {
                let ok = self.redis.data.orphaned(now, &node, &field, g.on(Guard::OrphanOwnField));
                self.wrote(ok);
                if ok {
                    self.say(format!("Redis: {node}'s holding {} let go by its reaper or worker-gone", short(&field)));
                }
                (Reply::Done(ok, true), false)
            }
            Op::Beat(call) => {
                let answer = self.redis.data.beat(now, &call, g);
                if answer.is_ok() {
                    self.redis.wrote();
                }
                (Reply::Beat(answer), false)
            }
        }
    }

    /// After a write; `unlocked`: the lock was let go, and the unlock
    /// message wakes every worker and Redisson waiter that listens.
    pub fn wrote(&mut self, unlocked: bool) {
        self.redis.wrote();
        if !unlocked {
            return;
        }
        let now = self.now;
        for p in self.procs.iter_mut().filter(|p| p.alive && now >= p.cut_until) {
            p.next_turn = p.next_turn.min(now);
        }
        self.foreign.wake(now);
    }

    /// The node name of every presence subscription Redis holds now.
    fn subscribers(&self) -> Vec<String> {
        let run = self.redis.run;
        self.procs
            .iter()
            .filter(|p| p.alive && self.now >= p.cut_until && p.sub_run == Some(run))
            .map(|p| p.node.clone())
            .collect()
    }

    /// Wakes process `p`'s loop (a job's exit, the watchdog's news).
    pub fn wake(&mut self, p: usize) {
        let now = self.now;
        let pr = &mut self.procs[p];
        pr.next_turn = pr.next_turn.min(now);
    }

    /// Notes the holders that lost the lock between `before` and now, or
    /// now hold it for less long, by a deletion, an eviction or lost data:
    /// such a holder's job may run on until its look (or its lease), as the
    /// fault model allows.
    pub fn lock_taken_away(&mut self, before: Option<(Vec<String>, u64)>) {
        let now = self.now;
        let after = self.redis.data.lock_at(now).map(|l| (l.fields.clone(), l.expires_at));
        let Some((fields, expired)) = before else { return };
        for f in fields {
            if after.as_ref().is_none_or(|(a, until)| !a.contains(&f) || *until < expired) {
                self.check.lost_early.insert(f);
            }
        }
    }

    /// The lock's holders now, and its expiry.
    pub fn holders(&mut self) -> Option<(Vec<String>, u64)> {
        let now = self.now;
        self.redis.data.lock_at(now).map(|l| (l.fields.clone(), l.expires_at))
    }
}
