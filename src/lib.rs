//! lockwatch: see whether a job guarded by a Redisson-style Redis lock runs,
//! where, and whether it hung; and run any job on exactly one server.
//!
//! # Layout
//!
//! - [`keys`]: the Redis key schema of a job, from its name.
//! - [`snapshot`]: what one read of a job found (plain data).
//! - [`probe`]: the one-round-trip read and the pure decoding of its reply.
//! - [`status`]: the pure status engine: snapshot in, state and events out.
//! - [`watch`]: the async shell around the engine: reads, wakes, publishes.
//! - `sharded`: sharded pub/sub on a Redis Cluster, on the slot owner, resubscribed when the slot moves.
//! - [`lock`]: a Redisson-compatible lock client with fencing tokens.
//! - [`handover`]: when a new holder may start: not while another server's heartbeat still runs the job.
//! - [`worker`], [`job`]: run a command on exactly one server, with heartbeat and events.
//! - [`presence`]: the worker's presence subscription, which Redis drops the moment the process dies.
//! - [`reaper`]: the process between worker and job that takes the job's whole tree down,
//!   and kills it by itself when the lease the worker last vouched for runs out.
//! - [`clock`]: the clock leases are measured on, which counts a suspended host.
//! - [`flags`]: flipping a supervisor's own enable flag.
//! - [`ack`]: "I'm on it": a supervisor's own acknowledgement, with a note and an end.
//! - [`trim`]: a supervisor's hash filled with junk, cut back to its fields by a worker.
//! - [`history`]: the job's shared history: typed stream entries, read back and built into runs, failovers, deaths, flips.
//! - [`acl`]: the Redis ACL rules for a supervisor.
//! - [`connect`]: Redis URLs, connections and their timeouts.
//! - [`spec`]: the rules for user input (names, durations, URL and password) and what it becomes.
//! - [`error`]: the library's errors, one sentence each.

pub mod address;
pub mod clock;
pub mod connect;
pub mod duration;
pub mod error;
pub mod history;
pub mod keys;
pub mod probe;
pub mod snapshot;
pub mod spec;
pub mod status;
pub mod supervise;
pub mod watcher;
pub mod work;

pub use error::Error;
pub use keys::Keys;
pub use status::{Event, EventKind, State, Status};
