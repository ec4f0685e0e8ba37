//! A world the engine's tests run it in: one worker (its engine, its
//! watchdog's [`Renewer`], its job and the reaper's dead-man kill) against a
//! model of the lock in Redis, on a clock in milliseconds, with the faults
//! the worker meets: Redis unreachable or hung, no replica confirming, the
//! lock deleted or taken, flags flipped or unreadable, the job exiting, the
//! worker frozen, and a server before it whose job may still run. It checks
//! the engine's promises at every moment and collects what broke them.

use std::time::Duration;

use super::renewer::{Answer, Renewer, Verdict};
use super::*;
use crate::snapshot::{Beat, Lock as LockSeen, Snapshot};

pub(super) const NODE: &str = "srv-a";
pub(super) const OTHER: &str = "srv-b";
pub(super) const LEASE: Lease = Lease::new(Duration::from_secs(30));
pub(super) const TICK: u64 = 1_000;

/// The server that held the lock before this one.
#[derive(Debug, Clone)]
pub(super) struct Predecessor {
    /// Its job runs until then (its reaper kills it, or it stops).
    pub ends_at: u64,
    /// Its heartbeat's last sign; `None`: its heartbeat is gone (evicted).
    pub last_sign: Option<u64>,
    /// Whether it beats `idle` once its job ended (a live server does).
    pub says_idle: bool,
    /// Whether the handover record still names it (else: evicted).
    pub recorded: bool,
}

#[derive(Debug)]
pub(super) struct World {
    pub now: u64,
    pub engine: Engine,
    pub renewer: Option<Renewer>,
    next_attempt: Option<u64>,
    /// The watchdog's last report, as the supervision loop reads it.
    word: Renewal,
    /// The reaper's dead-man deadline, for this holding's every job.
    killer_at: Option<u64>,
    pub job: bool,
    /// The job's exit status, until the engine is told.
    exit: Option<String>,
    next_turn: u64,
    pub paused_until: u64,
    // Redis, as a model.
    pub reachable: bool,
    pub hung: bool,
    /// How long each answer of Redis takes to come back.
    pub latency: u64,
    /// A renewal sent, its answer due then.
    pending: Option<(u64, u64, Answer)>,
    pub replica: bool,
    /// The lock: the field holding it and when it expires.
    pub lock: Option<(String, u64)>,
    fence: i64,
    holding: u32,
    pub enabled: Option<bool>,
    pub before: Option<Predecessor>,
    first_holding: bool,
    /// What is true: when the lease was last confirmed (the call's send time).
    confirmed_at: Option<u64>,
    /// The last moment this worker was frozen.
    paused_last: u64,
    pub starts: Vec<u64>,
    pub kills: Vec<(u64, Cause)>,
    pub broken: Vec<String>,
}

fn at(ms: u64) -> Boot {
    Boot::from_millis(ms)
}

impl World {
    pub fn new(enabled: Option<bool>, before: Option<Predecessor>) -> World {
        let rules = Rules {
            node: NODE.to_owned(),
            instance: format!("{NODE}-1"),
            lease: LEASE,
            every: None,
            stall_after: None,
        };
        World {
            now: 100_000,
            engine: Engine::new(rules),
            renewer: None,
            next_attempt: None,
            word: Renewal::Failing,
            killer_at: None,
            job: false,
            exit: None,
            next_turn: 100_000,
            paused_until: 0,
            reachable: true,
            hung: false,
            latency: 0,
            pending: None,
            replica: true,
            lock: None,
            fence: 1,
            holding: 0,
            enabled,
            before,
            first_holding: true,
            confirmed_at: None,
            paused_last: 0,
            starts: Vec::new(),
            kills: Vec::new(),
            broken: Vec::new(),
        }
    }

    pub fn field(&self) -> String {
        format!("{NODE}:{}", self.holding)
    }

    fn ours(&self) -> bool {
        self.lock.as_ref().is_some_and(|(f, exp)| *f == self.field() && self.now < *exp)
    }

    /// Lets `ms` pass, acting at every moment something is due.
    pub fn wait(&mut self, ms: u64) {
        self.pass(ms, true);
    }

    /// Lets `ms` pass; `turns`: the supervision loop takes its turns (else
    /// it is busy in one, waiting on Redis, while the watchdog and the
    /// reaper act).
    fn pass(&mut self, ms: u64, turns: bool) {
        let end = self.now + ms;
        for round in 0.. {
            assert!(round < 1_000_000, "the world stands still at {}: {self:?}", self.now);
            let awake = self.paused_until.max(self.now);
            let killer = self.killer_at.filter(|_| self.job);
            let answer = self.pending.map(|(_, due, _)| due.max(awake));
            let turn = turns.then(|| self.next_turn.max(awake));
            let due = [turn, self.next_attempt.map(|a| a.max(awake)), answer, killer].into_iter().flatten().min();
            let Some(due) = due.filter(|d| *d <= end) else {
                self.now = end;
                self.check();
                return;
            };
            self.now = due;
            self.check();
            if killer.is_some_and(|k| k <= self.now) {
                // The reaper's dead-man kill; the deadline stays for a job started later.
                self.job = false;
                self.exit = Some("killed by its reaper".to_owned());
            } else if self.now >= self.paused_until && answer.is_some_and(|a| a <= self.now) {
                self.renewed();
            } else if self.now >= self.paused_until && self.next_attempt.is_some_and(|a| a <= self.now) {
                self.renew();
            } else if turns && self.now >= self.paused_until && self.next_turn <= self.now {
                self.turn();
            }
        }
    }

    /// The worker freezes (SIGSTOP, swapping) for `ms`; the reaper does not.
    pub fn pause(&mut self, ms: u64) {
        self.paused_until = self.now + ms;
        self.paused_last = self.paused_until;
    }

    /// The job exits by itself.
    pub fn job_exits(&mut self) {
        if self.job {
            self.job = false;
            self.exit = Some("exit status 0".to_owned());
            self.next_turn = self.next_turn.min(self.now);
        }
    }

    /// Another worker takes the lock once it is free.
    pub fn taken(&mut self) {
        if self.lock.as_ref().is_none_or(|(_, exp)| self.now >= *exp) {
            self.fence += 1;
            self.lock = Some(("srv-x:1".to_owned(), self.now + millis(LEASE.whole())));
        }
    }

    /// What must hold at every moment.
    fn check(&mut self) {
        if !self.job {
            return;
        }
        let Some(ok) = self.confirmed_at else {
            return self.broken.push(format!("{}: the job runs with no lease ever confirmed", self.now));
        };
        if self.now > ok + millis(LEASE.kill_after()) {
            self.broken.push(format!("{}: the job outlived its reaper's kill (lease confirmed at {ok})", self.now));
        }
        // Stopped at three quarters, or at the first turn after a freeze that outlasted them.
        let stop_by = (ok + millis(LEASE.stop_after())).max(self.paused_last + TICK);
        if self.now > stop_by {
            self.broken.push(format!("{}: the job runs past three quarters of the lease confirmed at {ok}", self.now));
        }
        if self.before.as_ref().is_some_and(|b| self.now < b.ends_at) {
            self.broken.push(format!("{}: the job runs while the server before still runs it", self.now));
        }
    }

    /// The watchdog sends a renewal; its answer comes back `latency` later,
    /// or not before its deadline, when it gives up waiting.
    fn renew(&mut self) {
        let Some(deadline) = self.renewer.as_ref().map(|r| r.deadline().as_millis()) else {
            return self.next_attempt = None;
        };
        let sent = self.now;
        let answer = if self.hung {
            Answer::TimedOut
        } else if !self.reachable {
            Answer::Failed
        } else if self.ours() {
            self.lock = Some((self.field(), sent + millis(LEASE.whole())));
            if self.replica { Answer::Renewed } else { Answer::Unconfirmed }
        } else {
            Answer::NotOurs
        };
        let back = if answer == Answer::TimedOut { deadline } else { sent + self.latency };
        let (answer, back) = if back >= deadline { (Answer::TimedOut, deadline.max(sent)) } else { (answer, back) };
        self.pending = Some((sent, back, answer));
        self.next_attempt = None;
    }

    /// The renewal's answer arrives.
    fn renewed(&mut self) {
        let Some((sent, answered, answer)) = self.pending.take() else { return };
        let Some(r) = self.renewer.as_mut() else { return };
        let verdict = r.answer(at(sent), at(answered), answer);
        match verdict {
            Verdict::Renewed { since, kill_at } => {
                self.confirmed_at = Some(since.as_millis());
                self.killer_at = Some(kill_at.as_millis());
                self.next_attempt = Some(r.next_renewal().as_millis());
            }
            Verdict::Retry { at, .. } => self.next_attempt = Some(at.as_millis()),
            Verdict::GiveUp(_) => {
                if self.job {
                    self.job = false;
                    self.exit = Some("killed by the watchdog".to_owned());
                }
                self.killer_at = None;
                self.renewer = None;
                self.next_attempt = None;
            }
        }
        self.word = verdict.report();
        self.next_turn = self.next_turn.min(self.now);
    }

    /// One turn of the supervision loop, as `work::worker` runs it.
    fn turn(&mut self) {
        let now = at(self.now);
        self.next_turn = self.now + TICK;
        let acts = self.engine.lease_word(now, self.word);
        let stopped = acts.iter().any(|a| matches!(a, Action::Kill { .. }));
        self.act(acts, &Snapshot::default());
        // A look that takes 2 s or more fails, as the shell gives up waiting.
        if stopped || !self.reachable || self.hung || self.latency >= 2_000 {
            return self.schedule();
        }
        let snap = self.snapshot();
        self.pass(self.latency, false);
        let field = self.field();
        let acts = self.engine.look(at(self.now), &snap, &field, self.enabled);
        if acts.iter().any(|a| matches!(a, Action::Kill { .. })) {
            self.act(acts, &snap);
            return self.schedule();
        }
        self.act(acts, &snap);
        if let Some(status) = self.exit.take() {
            let acts = self.engine.exited(at(self.now), status);
            self.act(acts.into_iter().collect(), &snap);
        }
        let acts = self.engine.tend(at(self.now), self.word);
        self.act(acts.into_iter().collect(), &snap);
        self.schedule();
    }

    fn schedule(&mut self) {
        if let Some(d) = self.engine.deadline() {
            self.next_turn = self.next_turn.min(d.as_millis().max(self.now + 1));
        }
    }

    fn snapshot(&self) -> Snapshot {
        let mut snap = Snapshot { time_ms: self.now, ..Snapshot::default() };
        if let Some((field, exp)) = &self.lock
            && self.now < *exp
        {
            snap.lock = LockSeen { holders: vec![field.clone()], ..LockSeen::default() };
        }
        if let Some(b) = &self.before
            && let Some(last) = b.last_sign
        {
            let done = self.now >= b.ends_at && b.says_idle;
            snap.beats.push(Beat {
                node: OTHER.to_owned(),
                state: Some(if done { BeatState::Idle } else { BeatState::Running }),
                lock_field: Some(format!("{OTHER}:1")),
                fence: Some(1),
                instance: Some(format!("{OTHER}-1")),
                beat_ms: Some(if done {
                    self.now
                } else if b.says_idle {
                    self.now.min(b.ends_at)
                } else {
                    last
                }),
                ..Beat::default()
            });
        }
        snap
    }

    fn act(&mut self, acts: Vec<Action>, snap: &Snapshot) {
        let mut queue: std::collections::VecDeque<Action> = acts.into();
        while let Some(act) = queue.pop_front() {
            match act {
                Action::Acquire => {
                    if !self.reachable || self.hung {
                        continue;
                    }
                    let sent = at(self.now);
                    let answer = self.acquire();
                    self.pass(self.latency, false);
                    let field = self.field();
                    queue.extend(self.engine.acquired(at(self.now), sent, answer, snap, &field));
                }
                Action::Guard { since, .. } => {
                    self.confirmed_at = Some(since.as_millis());
                    let r = Renewer::new(LEASE, since);
                    self.next_attempt = Some(r.next_renewal().as_millis());
                    self.pending = None;
                    self.renewer = Some(r);
                    self.killer_at = Some((since + LEASE.kill_after()).as_millis());
                    self.word = Renewal::Renewed(since);
                }
                Action::NoteStarted => {
                    // The shell waits 2 s at most for Redis.
                    let noted = self.reachable && !self.hung && self.ours() && self.latency < 2_000;
                    self.pass(self.latency.min(2_000), false);
                    // From its first start, the handover record names this holding.
                    self.first_holding &= !noted;
                    queue.extend(self.engine.start_noted(at(self.now), noted, self.word));
                }
                Action::Start { .. } => {
                    let lease_ok = self.confirmed_at.is_some_and(|ok| self.now < ok + millis(LEASE.stop_after()));
                    if !self.ours() || !lease_ok {
                        self.broken.push(format!("{}: started the job without a confirmed lease", self.now));
                    }
                    self.job = true;
                    self.starts.push(self.now);
                    self.engine.job_started(at(self.now));
                    self.check();
                }
                Action::Kill { cause, .. } | Action::LetGo { cause, .. } => {
                    self.job = false;
                    self.exit = None;
                    self.killer_at = None;
                    self.renewer = None;
                    self.next_attempt = None;
                    self.pending = None;
                    self.kills.push((self.now, cause));
                    let mine = self.lock.as_ref().is_some_and(|(f, _)| *f == self.field());
                    if matches!(act, Action::LetGo { .. }) && mine && self.reachable && !self.hung {
                        self.lock = None;
                    }
                    self.holding += 1;
                }
                Action::Acquired { .. }
                | Action::Unconfirmed { .. }
                | Action::Waits(_)
                | Action::RenewFailing { .. }
                | Action::Exited { .. }
                | Action::HeldBack { .. } => {}
            }
        }
    }

    fn acquire(&mut self) -> Acquire {
        let free = self.lock.as_ref().is_none_or(|(_, exp)| self.now >= *exp);
        if !free && !self.ours() {
            let exp = self.lock.as_ref().map_or(self.now, |(_, e)| *e);
            let seen = HeldSeen { at_ms: self.now, counter: Some(self.fence), recorded: true };
            return Acquire::Held { ttl: Some(Duration::from_millis(exp - self.now)), seen };
        }
        if free {
            self.fence += 1;
        }
        self.lock = Some((self.field(), self.now + millis(LEASE.whole())));
        let before = match &self.before {
            Some(b) if self.first_holding && b.recorded => {
                Before::Running { node: OTHER.to_owned(), fence: 1, instance: format!("{OTHER}-1"), lease_ms: None }
            }
            Some(_) if self.first_holding => Before::Unknown,
            _ => Before::Stopped,
        };
        if !self.replica {
            return Acquire::Unconfirmed { fence: self.fence, before, at_ms: self.now, counter: Some(self.fence - 1) };
        }
        Acquire::Acquired { fence: self.fence, wait: None, before, at_ms: self.now, counter: Some(self.fence - 1) }
    }
}
