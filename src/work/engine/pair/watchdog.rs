//! A holding's other two actors beside the supervision loop: the
//! watchdog (the real [`Renewer`](crate::work::engine::renewer::Renewer),
//! renewing on its own connection, killing the job when it gives up) and
//! the reaper (the dead-man kill at the deadline the watchdog feeds, and
//! the let-go after its worker dies), as `work::worker::watchdog` and
//! `work::reaper` do it.

use super::cluster::{Op, Reply, World, at};
use super::guards::Guard;
use crate::work::engine::renewer::{Answer, Verdict};

impl World {
    /// The reaper's dead-man deadline passed: it kills the job's tree.
    pub fn reap(&mut self, p: usize) {
        let now = self.now;
        let Some(live) = self.procs[p].live.as_mut() else { return };
        if live.running().and_then(|j| j.reaper_deadline).is_some_and(|d| d <= now)
            && live.kill_job("killed by its reaper")
        {
            self.say(format!("p{p}'s reaper kills the job at its dead-man deadline"));
            self.wake(p);
        }
    }

    /// The watchdog sends a renewal.
    pub fn renew(&mut self, p: usize) {
        let (node, field, cut) = (self.procs[p].node.clone(), self.procs[p].field.clone(), self.cut(p));
        let now = self.now;
        let Some(live) = self.procs[p].live.as_mut() else { return };
        let Some(renewer) = live.renewer.as_ref() else {
            live.next_send = None;
            return;
        };
        let deadline = renewer.deadline().as_millis();
        live.next_send = None;
        if now >= deadline || cut {
            // No connection, or no time left: the answer is known at once.
            live.pending = Some((u64::MAX, now, deadline));
            return self.renewed(p);
        }
        let id = self.send(Some(p), Op::Renew { node, field });
        if let Some(live) = self.procs[p].live.as_mut() {
            live.pending = Some((id, now, deadline));
        }
    }

    /// The renewal's answer (or the watchdog's patience) is in.
    pub fn renewed(&mut self, p: usize) {
        let now = self.now;
        let Some((id, sent, deadline)) = self.procs[p].live.as_ref().and_then(|l| l.pending) else { return };
        let back = if id == u64::MAX { None } else { self.take_answer(id) };
        let answer = match back {
            None if id == u64::MAX && now < deadline => Answer::Failed,
            Some((t, reply)) if t <= deadline => match reply {
                Reply::Done(true, confirmed) if confirmed || !self.guards.on(Guard::ReplicaConfirm) => Answer::Renewed,
                Reply::Done(true, _) => Answer::Unconfirmed,
                Reply::Done(false, _) => Answer::NotOurs,
                _ => Answer::Failed,
            },
            _ => {
                if id != u64::MAX {
                    self.abandon(id);
                }
                Answer::TimedOut
            }
        };
        let kill_on_give_up = self.guards.on(Guard::WatchdogKill);
        let reaper = self.guards.on(Guard::ReaperDeadline);
        let Some(live) = self.procs[p].live.as_mut() else { return };
        live.pending = None;
        let Some(renewer) = live.renewer.as_mut() else { return };
        let verdict = renewer.answer(at(sent), at(now), answer);
        match verdict {
            Verdict::Renewed { kill_at, .. } => {
                live.killer_deadline = Some(kill_at.as_millis());
                if let Some(job) = live.job.as_mut().filter(|_| reaper) {
                    job.reaper_deadline = Some(kill_at.as_millis());
                }
                live.next_send = Some(renewer.next_renewal().as_millis());
            }
            Verdict::Retry { at, .. } => live.next_send = Some(at.as_millis()),
            Verdict::GiveUp(word) => {
                live.renewer = None;
                if kill_on_give_up {
                    live.fired = true;
                    if live.kill_job("killed by the watchdog") {
                        let say = format!("p{p}'s watchdog gives up ({word:?}) and kills the job");
                        self.say(say);
                    }
                }
            }
        }
        if let Some(live) = self.procs[p].live.as_mut() {
            live.word = verdict.report();
        }
        self.wake(p);
    }

    /// Process `p` dies (`kill -9`); `reaper_too`: its whole unit with it.
    pub fn die(&mut self, p: usize, reaper_too: bool) {
        let pr = &mut self.procs[p];
        if !pr.alive {
            return;
        }
        pr.alive = false;
        pr.sub_run = None;
        let node = pr.node.clone();
        let Some(mut live) = pr.live.take() else { return };
        if let Some((id, ..)) = live.pending.filter(|(id, ..)| *id != u64::MAX) {
            self.abandon(id);
        }
        let Some(job) = live.running().cloned() else { return };
        live.kill_job("killed with its worker");
        if reaper_too {
            return;
        }
        // Its reaper saw it die, killed the job's tree, and lets go.
        let id = self.send(None, Op::Orphaned { node, field: job.field });
        self.abandon(id);
    }
}
