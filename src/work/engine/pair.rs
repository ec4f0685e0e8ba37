//! A model of two or three workers, each the real [`Engine`](super::Engine)
//! with its watchdog's [`Renewer`](super::renewer::Renewer), its job and its
//! reaper, and a Redisson service, all on one modelled Redis and one clock,
//! with the faults the worker promises to survive injected at any moment:
//! a worker frozen, killed alone or with its unit, cut off; the lock
//! deleted; the handover record, a heartbeat or more evicted; a failover to
//! a replica that lacks the last writes; Redis restarted or frozen; a
//! second process under a name; `worker-gone` run from the wrong place; a
//! foreign holder. Its checker finds two lockwatch jobs at once, a job
//! beside a foreign holder's valid lock, or a fence going back; and with
//! each of the product's [`Guard`](guards::Guard)s taken out in turn it
//! shows what that guard is there for.
//!
//! The shells' I/O is what is modelled: Redis's scripts step by step as
//! `lock.lua` and `worker.lua` take them, the probe, the supervision loop's
//! calls as `work::worker::turn` makes them, the watchdog's as
//! `work::worker::watchdog` does, the reaper's kill and let-go. The
//! decisions are the product's own code.
//!
//! Left out, or made simpler: a job stops the moment it is told to (it
//! obeys SIGTERM); a reaper is never frozen or killed alone and a host is
//! never suspended whole (the cases docs/worker.md leaves open); the flags
//! are one switch; the event stream is not written; Redis has one replica,
//! which confirms every write before a `WAIT` unless it lags; `worker-gone`
//! reads and lets go in one step. With every guard on, the model found four
//! ways to run two jobs at once (`findings`); the searches with a guard
//! taken out model the fixes for them, or they would find those again.
//!
//! # Layout
//!
//! - `guards`: the guards, one flag each.
//! - `redis`: the job's keys and the lock script.
//! - `hash`: a node's heartbeat hash.
//! - `heartbeat`: the heartbeat script, the probe.
//! - `server`: the Redis server around them: freeze, replica, failover, restart.
//! - `process`: one worker process: engine, watchdog, killer, job.
//! - `cluster`: the clock, the calls to Redis, the loop of what is due.
//! - `watchdog`: a holding's watchdog and its job's reaper.
//! - `turn`: one turn of a worker's supervision loop.
//! - `view`: what the engine is shown, with a guard out or a fix in.
//! - `faults`: the faults, the Redisson service's state.
//! - `inject`: the faults played, the Redisson service's turns, `worker-gone`.
//! - `check`: the promises checked at every moment.
//! - `props`: the property tests, and a search for each guard taken out.
//! - `findings`: what the model found with every guard on, and the
//!   changes that close it in the model ([`Fix`](guards::Fix)).

mod check;
mod cluster;
mod faults;
mod findings;
mod guards;
mod hash;
mod heartbeat;
mod inject;
mod process;
mod props;
mod redis;
mod server;
mod turn;
mod view;
mod watchdog;

use std::time::Duration;

use crate::work::lease::Lease;

/// The lease of every worker here: short, so a scenario covers many.
const LEASE: Lease = Lease::new(Duration::from_millis(12_000));
/// The supervision loop's tick.
const TICK: u64 = 1_000;
