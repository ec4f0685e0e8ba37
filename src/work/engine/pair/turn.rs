//! One turn of a worker's supervision loop, step by step as
//! `work::worker::turn` takes it (the watchdog's word, a look, the name's
//! claim, the engine's decision and what it asks for, the job tended, the
//! heartbeat), with Redis modelled: each call waits for its answer, or
//! gives up after the shell's patience, while the rest of the cluster runs
//! on. The engine is shown what the guards taken out would have shown it
//! (`view`).

use std::collections::VecDeque;

use super::cluster::{Abort, Op, Reply, World, at};
use super::guards::Guard;
use super::hash::BeatHash;
use super::heartbeat::BeatCall;
use super::process::{Job, Live, field_of, short};
use super::redis::Caller;
use super::view::View;
use super::{LEASE, TICK};
use crate::cause::Cause;
use crate::clock::millis;
use crate::schema::BeatState;
use crate::snapshot::Snapshot;
use crate::work::engine::{Action, Renewal};
use crate::work::identity::{Claim, claim};
use crate::work::outcome::Acquire;

/// How long the loop waits on a look or a note (`REDIS_PATIENCE`).
const LOOK_PATIENCE: u64 = 2_000;
/// How long any other call waits (the connection's answer timeout).
const CALL_PATIENCE: u64 = 3_000;

impl World {
    /// One turn of process `p`'s loop; the next is due by the engine's
    /// deadline, a tick later at the latest.
    pub fn turn(&mut self, p: usize) {
        self.procs[p].busy = true;
        self.procs[p].next_turn = u64::MAX;
        let result = match self.step(p) {
            Err(Abort::Exit) => self.stop_worker(p).map(|()| None),
            other => other,
        };
        let now = self.now;
        let pr = &mut self.procs[p];
        pr.busy = false;
        if let Ok(hint) = result {
            let deadline = pr.engine.deadline().map(|d| d.as_millis().saturating_sub(now));
            let wait = [Some(TICK), hint, deadline].into_iter().flatten().min().unwrap_or(TICK);
            pr.next_turn = pr.next_turn.min(now + wait.max(1));
        }
    }

    fn step(&mut self, p: usize) -> Result<Option<u64>, Abort> {
        // Safety first: a lock the watchdog cannot vouch for stops the job now.
        if self.procs[p].live.is_some() {
            let word = self.word(p);
            let acts = self.procs[p].engine.lease_word(at(self.now), word);
            if self.perform(p, acts, None)? {
                return Ok(None);
            }
        }
        self.keep_presence(p);
        let Some(Reply::Snap(snap)) = self.call(p, Op::Probe, LOOK_PATIENCE)? else { return Ok(Some(500)) };
        if !self.procs[p].claimed {
            self.claim(p, &snap)?;
            if !self.procs[p].claimed {
                return Ok(Some(500));
            }
        }
        let field = self.procs[p].field.clone();
        let view = self.view(p, &snap, View::Look);
        let acts = self.procs[p].engine.look(at(self.now), &view, &field, Some(self.enabled));
        if self.perform(p, acts, Some(&snap))? {
            return Ok(None);
        }
        self.tend(p)?;
        let now = self.procs[p].engine.beat(at(self.now), None);
        let holding = now.fence.map(|f| (field, f));
        if self.beat(p, now.state, holding)? == Err(true) {
            return Err(Abort::Exit);
        }
        Ok(None)
    }

    /// The presence task: it subscribes again where it can, and says
    /// whether it holds the subscription.
    fn keep_presence(&mut self, p: usize) {
        let (run, now) = (self.redis.run, self.now);
        let reachable = !self.cut(p) && !self.redis.frozen(now);
        let pr = &mut self.procs[p];
        if pr.claimed && reachable {
            pr.sub_run = Some(run);
        }
        pr.presence_on = pr.sub_run;
    }

    /// Makes the node name this process's own (`worker::claim`); exits
    /// when another live process has it.
    fn claim(&mut self, p: usize, snap: &Snapshot) -> Result<(), Abort> {
        let view = self.view(p, snap, View::Claim);
        let (node, instance) = (self.procs[p].node.clone(), self.procs[p].instance.clone());
        let (alive, replaces) = match claim(&view, &node, &instance) {
            Claim::Taken(_) if self.guards.on(Guard::NameKept) => (true, String::new()),
            Claim::Replaces(dead) => (false, dead.to_owned()),
            _ => (false, String::new()),
        };
        self.procs[p].replaces = replaces;
        let beat = if alive { Err(true) } else { self.beat(p, BeatState::Idle, None)? };
        let now = self.now;
        let pr = &mut self.procs[p];
        match beat {
            Ok(()) => pr.claimed = true,
            Err(true) => {
                let since = *pr.refused_since.get_or_insert(now);
                if alive || now - since >= millis(LEASE.whole()) + 1_000 {
                    return Err(Abort::Exit);
                }
            }
            Err(false) => {}
        }
        Ok(())
    }

    /// The worker stops (its name is another's): lets go, says idle, exits.
    fn stop_worker(&mut self, p: usize) -> Result<(), Abort> {
        self.say(format!("p{p} stops: another process has its name {}", self.procs[p].node));
        if let Some(Action::LetGo { fence, cause }) = self.procs[p].engine.shutdown()
            && self.procs[p].live.is_some()
        {
            self.let_go(p, fence, cause)?;
        }
        if self.procs[p].claimed {
            let _ = self.beat(p, BeatState::Idle, None)?;
        }
        self.die(p, false);
        Ok(())
    }

    /// Does what the engine decided (`worker::turn::perform`); true when
    /// the holding was lost, which ends the turn.
    fn perform(&mut self, p: usize, acts: Vec<Action>, snap: Option<&Snapshot>) -> Result<bool, Abort> {
        let mut lost = false;
        let mut queue: VecDeque<Action> = acts.into();
        while let Some(act) = queue.pop_front() {
            match act {
                Action::Acquire => {
                    let Some(snap) = snap else { continue };
                    let sent = self.now;
                    let pr = &self.procs[p];
                    let caller = Caller {
                        node: pr.node.clone(),
                        field: pr.field.clone(),
                        instance: pr.instance.clone(),
                        seen: pr.seen,
                    };
                    let Some(Reply::Acquire(answer, confirmed)) = self.call(p, Op::Acquire(caller), CALL_PATIENCE)?
                    else {
                        continue;
                    };
                    let answer = self.decode(p, answer, confirmed);
                    let view = self.view(
                        p,
                        snap,
                        if matches!(answer, Acquire::Held { .. }) { View::Held } else { View::Look },
                    );
                    let field = self.procs[p].field.clone();
                    queue.extend(self.procs[p].engine.acquired(at(self.now), at(sent), answer, &view, &field));
                }
                Action::Guard { since, .. } => self.procs[p].live = Some(Live::new(since.as_millis())),
                Action::Acquired { fence, wait, .. } => {
                    let field = short(&self.procs[p].field);
                    let wait =
                        wait.map(|w| format!(", waits {} s ({:?})", w.left.as_secs_f64(), w.why)).unwrap_or_default();
                    self.say(format!("p{p} ({}) takes the lock as {field}, fence {fence}{wait}", self.procs[p].node));
                }
                Action::Waits(busy) => {
                    let who = if busy.node.is_empty() { "the holding before (unnamed)".to_owned() } else { busy.node };
                    self.say(format!("p{p} waits up to {} s for {who}", busy.left.as_secs_f64()));
                }
                Action::Unconfirmed { .. }
                | Action::RenewFailing { .. }
                | Action::Exited { .. }
                | Action::HeldBack { .. } => {}
                Action::NoteStarted => {
                    let field = self.procs[p].field.clone();
                    let noted = matches!(self.call(p, Op::Started(field), LOOK_PATIENCE)?, Some(Reply::Done(true, _)));
                    let word = self.word(p);
                    queue.extend(self.procs[p].engine.start_noted(at(self.now), noted, word));
                }
                Action::Start { fence } => self.start(p, fence),
                Action::Kill { fence, cause, say_idle } => {
                    self.lose(p, fence, cause)?;
                    if say_idle {
                        let _ = self.beat(p, BeatState::Idle, None)?;
                    }
                    lost = true;
                }
                Action::LetGo { fence, cause } => {
                    if self.procs[p].live.is_some() {
                        self.let_go(p, fence, cause)?;
                    }
                }
            }
        }
        Ok(lost)
    }

    /// Notes the job's exit, and starts it when due (`worker::turn::tend`).
    fn tend(&mut self, p: usize) -> Result<(), Abort> {
        let exited = self.procs[p].live.as_mut().and_then(|l| match &l.job {
            Some(job) if !job.alive => l.job.take().and_then(|j| j.status),
            _ => None,
        });
        if let Some(status) = exited {
            let acts = self.procs[p].engine.exited(at(self.now), status);
            self.perform(p, acts.into_iter().collect(), None)?;
        }
        let word = self.word(p);
        let acts = self.procs[p].engine.tend(at(self.now), word);
        self.perform(p, acts.into_iter().collect(), None)?;
        Ok(())
    }

    /// Starts the job under its reaper, which gets the killer's deadline.
    fn start(&mut self, p: usize, fence: i64) {
        let reaper = self.guards.on(Guard::ReaperDeadline);
        let field = self.procs[p].field.clone();
        let Some(live) = self.procs[p].live.as_mut() else { return };
        // A fired killer kills a job it is pointed at at once.
        let killed = live.fired;
        let status = killed.then(|| "killed by the fired killer".to_owned());
        let reaper_deadline = live.killer_deadline.filter(|_| reaper);
        live.job = Some(Job { fence, field: field.clone(), alive: !killed, status, reaper_deadline });
        self.procs[p].engine.job_started(at(self.now));
        if !killed {
            self.say(format!("p{p} ({}) starts its job, fence {fence} ({})", self.procs[p].node, short(&field)));
            self.check_start(p, fence);
        }
    }

    /// Lost the lock: kills the job at once, notes it stopped (`worker::turn::lose`).
    fn lose(&mut self, p: usize, fence: i64, cause: Cause) -> Result<(), Abort> {
        if let Some(mut live) = self.procs[p].live.take() {
            if let Some((id, ..)) = live.pending.filter(|(id, ..)| *id != u64::MAX) {
                self.abandon(id);
            }
            if live.kill_job("killed: the lease cannot be vouched for") {
                self.say(format!("p{p} kills its job (fence {fence}): {cause:?}"));
            }
        }
        let field = self.procs[p].field.clone();
        let _ = self.call(p, Op::Stopped(field), LOOK_PATIENCE)?;
        self.next_holding(p);
        Ok(())
    }

    /// Gives the lock up cleanly: stops the job, says idle, releases (`worker::turn::let_go`).
    fn let_go(&mut self, p: usize, fence: i64, cause: Cause) -> Result<(), Abort> {
        let field = self.procs[p].field.clone();
        if self.procs[p].job().is_some() {
            let _ = self.beat(p, BeatState::Stopping, Some((field.clone(), fence)))?;
            if let Some(live) = self.procs[p].live.as_mut() {
                live.kill_job("stopped");
            }
            self.say(format!("p{p} stops its job (fence {fence}): {cause:?}"));
        }
        if let Some(live) = self.procs[p].live.take()
            && let Some((id, ..)) = live.pending.filter(|(id, ..)| *id != u64::MAX)
        {
            self.abandon(id);
        }
        let _ = self.beat(p, BeatState::Idle, None)?;
        let _ = self.call(p, Op::Release(field), CALL_PATIENCE)?;
        self.next_holding(p);
        Ok(())
    }

    /// The next holding takes the lock under a field of its own.
    fn next_holding(&mut self, p: usize) {
        if self.guards.on(Guard::FreshField) {
            let pr = &mut self.procs[p];
            pr.holdings += 1;
            pr.field = field_of(pr.index, pr.holdings);
        }
    }

    /// Writes the heartbeat (`worker.lua`); `Err(true)`: another process has the name.
    fn beat(&mut self, p: usize, state: BeatState, holding: Option<(String, i64)>) -> Result<Result<(), bool>, Abort> {
        let pr = &self.procs[p];
        let (field, fence) = holding.map(|(f, n)| (f, n.to_string())).unwrap_or_default();
        let fields = BeatHash {
            host: Some(super::process::NAMES[pr.host].to_owned()),
            pid: Some(pr.pid.to_string()),
            invocation: Some(pr.invocation.clone()),
            lock_field: Some(field),
            fence: Some(fence),
            state: Some(state.as_str().to_owned()),
            presence: Some(if pr.presence_on.is_some() { "1" } else { "" }.to_owned()),
            presence_on: Some(pr.presence_on.map(|r| r.to_string()).unwrap_or_default()),
            lease_ms: Some(millis(super::LEASE.whole()).to_string()),
            ..BeatHash::default()
        };
        let call = BeatCall {
            node: pr.node.clone(),
            instance: pr.instance.clone(),
            claimed: pr.claimed,
            dead: pr.replaces.clone(),
            keeps: millis(LEASE.whole()) + 1_000,
            own_last: pr.last_beat_ms,
            fields,
        };
        Ok(match self.call(p, Op::Beat(Box::new(call)), CALL_PATIENCE)? {
            Some(Reply::Beat(Ok(at))) => {
                self.procs[p].last_beat_ms = at;
                Ok(())
            }
            Some(Reply::Beat(Err(()))) => Err(true),
            _ => Err(false),
        })
    }

    /// One call from process `p`'s loop: sent when the process runs, its
    /// answer taken when the process runs again; `None` when it failed or
    /// did not come within `patience`.
    fn call(&mut self, p: usize, op: Op, patience: u64) -> Result<Option<Reply>, Abort> {
        self.awake(p)?;
        if self.cut(p) {
            return Ok(None);
        }
        let give_up = self.now + patience;
        let id = self.send(Some(p), op);
        loop {
            if let Some((back, reply)) = self.take_answer(id) {
                self.awake(p)?;
                return Ok(Some(reply).filter(|r| back <= give_up && !matches!(r, Reply::Failed)));
            }
            if self.now >= give_up {
                self.abandon(id);
                self.awake(p)?;
                return Ok(None);
            }
            self.run_until(give_up, Some(id));
            if !self.procs[p].alive {
                self.abandon(id);
                return Err(Abort::Dead);
            }
        }
    }

    /// Waits while process `p` is frozen.
    fn awake(&mut self, p: usize) -> Result<(), Abort> {
        while self.procs[p].alive && self.procs[p].frozen(self.now) {
            self.run_until(self.procs[p].frozen_until, None);
        }
        if self.procs[p].alive { Ok(()) } else { Err(Abort::Dead) }
    }

    /// The watchdog's word as the loop reads it (`worker::turn::word_of`).
    fn word(&self, p: usize) -> Renewal {
        if !self.guards.on(Guard::EngineStop) {
            return Renewal::Renewed(at(self.now));
        }
        let Some(l) = &self.procs[p].live else { return Renewal::Lost };
        if l.fired && l.word.stop_reason().is_none() { Renewal::Expiring { unconfirmed: false } } else { l.word }
    }
}
