//! One worker process as the model holds it: the real [`Engine`] and, while
//! it holds the lock, its watchdog (the real [`Renewer`]), the killer the
//! watchdog feeds and the job under its reaper. What the shell keeps
//! besides (its lock field, the name's claim, its presence subscription)
//! is kept here as `work::worker` keeps it.

use crate::work::engine::renewer::Renewer;
use crate::work::engine::{Engine, Renewal, Rules};

use super::LEASE;

/// The node names of the slots: the third is a cloned host of the first's
/// (same host name, another boot), started only by a fault.
pub(super) const NAMES: [&str; 3] = ["srv-a", "srv-b", "srv-a"];

/// The job under its reaper.
#[derive(Debug, Clone)]
pub(super) struct Job {
    pub fence: i64,
    /// The holding's field, which the reaper lets go of when the worker dies.
    pub field: String,
    pub alive: bool,
    /// How it ended, until the supervision loop is told.
    pub status: Option<String>,
    /// The reaper's dead-man deadline (none: a guard taken out).
    pub reaper_deadline: Option<u64>,
}

/// The lock while held: the watchdog, its word, the killer and the job.
#[derive(Debug)]
pub(super) struct Live {
    /// The watchdog; `None` once it gave up (its task ended).
    pub renewer: Option<Renewer>,
    pub next_send: Option<u64>,
    /// A renewal on its way: the call, when it was sent, the deadline.
    pub pending: Option<(u64, u64, u64)>,
    /// The watchdog's last report.
    pub word: Renewal,
    /// The last dead-man deadline the killer was fed, and whether it fired.
    pub killer_deadline: Option<u64>,
    pub fired: bool,
    pub job: Option<Job>,
}

impl Live {
    /// A holding whose lease a call sent at `since` (ms) confirmed.
    pub fn new(since: u64) -> Live {
        let at = crate::clock::Boot::from_millis(since);
        let renewer = Renewer::new(LEASE, at);
        Live {
            next_send: Some(renewer.next_renewal().as_millis()),
            renewer: Some(renewer),
            pending: None,
            word: Renewal::Renewed(at),
            killer_deadline: Some((at + LEASE.kill_after()).as_millis()),
            fired: false,
            job: None,
        }
    }

    /// The job, while it runs.
    pub fn running(&self) -> Option<&Job> {
        self.job.as_ref().filter(|j| j.alive)
    }

    /// Kills the job (if it runs), saying why.
    pub fn kill_job(&mut self, why: &str) -> bool {
        match self.job.as_mut().filter(|j| j.alive) {
            Some(job) => {
                job.alive = false;
                job.status = Some(why.to_owned());
                true
            }
            None => false,
        }
    }
}

/// One worker process.
#[derive(Debug)]
pub(super) struct Proc {
    /// Its number among every process the model started.
    pub index: usize,
    pub node: String,
    /// Its host (0 and 1 the two servers, 2 the clone of the first).
    pub host: usize,
    pub pid: u64,
    pub instance: String,
    /// Its boot, PID namespace and unit run, as `work::unit::invocation` says.
    pub invocation: String,
    pub alive: bool,
    pub engine: Engine,
    /// The current holding's field, and how many holdings it had.
    pub field: String,
    pub holdings: u32,
    /// The highest fence any of its attempts saw (`Lock::seen`).
    pub seen: i64,
    pub claimed: bool,
    pub refused_since: Option<u64>,
    /// A process known dead whose name may be taken at once.
    pub replaces: String,
    pub last_beat_ms: u64,
    pub next_turn: u64,
    /// Stopped (SIGSTOP) until then; its reaper and job run on.
    pub frozen_until: u64,
    /// Its connections cut off until then.
    pub cut_until: u64,
    /// How long each of its calls takes each way (ms).
    pub latency: u64,
    /// In a turn: its loop waits on Redis.
    pub busy: bool,
    /// The Redis process where Redis holds its presence subscription, and
    /// the one its presence task last said (which its heartbeat writes).
    pub sub_run: Option<u32>,
    pub presence_on: Option<u32>,
    pub live: Option<Live>,
    /// The holding before, as the last acquisition fed to the engine named
    /// it (node, process), for a view with [`super::Guard::InstanceMatch`] out.
    pub before_named: Option<(String, String)>,
}

/// A lockwatch holding's field: a version-8 UUID, as `lock::fresh_field` makes.
pub(super) fn field_of(process: usize, holding: u32) -> String {
    format!("{process:08x}-0000-8000-8000-{holding:012x}:1")
}

/// A field, shortened for the log.
pub(super) fn short(field: &str) -> String {
    if crate::work::outcome::is_lockwatch_field(field) {
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap_or_default();
        format!("p{}#{}", hex(&field[..8]), hex(&field[24..36]))
    } else {
        format!("foreign {}", &field[..8.min(field.len())])
    }
}

impl Proc {
    /// Process number `index` in `slot`, started at `now`.
    pub fn new(index: usize, slot: usize, now: u64) -> Proc {
        let node = NAMES[slot].to_owned();
        let instance = format!("{node}/p{index}");
        let rules =
            Rules { node: node.clone(), instance: instance.clone(), lease: LEASE, every: None, stall_after: None };
        Proc {
            index,
            host: slot,
            pid: 1_000 + index as u64,
            invocation: format!("boot=b{slot} pidns=pid:[1] unit=u{index}"),
            alive: true,
            engine: Engine::new(rules),
            field: field_of(index, 0),
            holdings: 0,
            seen: 0,
            claimed: false,
            refused_since: None,
            replaces: String::new(),
            last_beat_ms: 0,
            next_turn: now,
            frozen_until: 0,
            cut_until: 0,
            latency: 0,
            busy: false,
            sub_run: None,
            presence_on: None,
            live: None,
            before_named: None,
            node,
            instance,
        }
    }

    pub fn frozen(&self, now: u64) -> bool {
        now < self.frozen_until
    }

    /// The job, while it runs.
    pub fn job(&self) -> Option<&Job> {
        self.live.as_ref().and_then(Live::running)
    }
}
