//! lockwatch: see whether a job guarded by a Redisson-style Redis lock runs,
//! where, and whether it hung; and run any job on exactly one server.
//!
//! # Layout
//!
//! In the order they build on each other (a module uses only those above
//! it: `python3 scripts/module-cycles.py src` checks that no two use each
//! other, in either direction, through any chain):
//!
//! - Leaves, knowing no Redis: [`keys`] (the key names of a job), [`schema`]
//!   (the fields of its hashes and the heartbeat's states, for Rust and Lua), [`snapshot`]
//!   (what one read of a job found), [`address`] (where Redis is, as text: the
//!   endpoint, the URL's password hidden, split out, put back), [`duration`]
//!   (durations read, written and said), [`clock`] (the clock leases are
//!   measured on, which counts a suspended host), [`heard`] (what a watcher
//!   heard from Redis between looks: the workers' beats), [`cause`] (why a
//!   holding ended or a new holder waited), [`bucket`] (a burst, then one
//!   per refill), [`refusal`] (a refused input:
//!   its field, value and problem).
//! - [`error`]: the library's errors, one sentence each.
//! - [`connect`]: connecting to Redis: one node, Sentinel, Cluster, sharded
//!   pub/sub, the wait between tries.
//! - [`probe`]: the one-round-trip read of a job and the pure decoding of its reply.
//! - [`eviction`]: whether Redis may evict the job's keys, in one sentence.
//! - [`status`]: the pure status engine: snapshot in, state and events out
//!   (it and the worker's engine import nothing that does I/O:
//!   `python3 scripts/engine-imports.py` checks it).
//! - [`watcher`]: the async shell around the engine: reads, wakes, publishes.
//! - [`history`]: the job's shared history: typed stream entries, read back
//!   and built into runs, failovers, deaths, flips.
//! - [`input`]: every input rule and its one sentence, and what valid input
//!   becomes (keys, engine config, watcher options, a connection target).
//! - [`supervise`]: what a supervisor may do: flip her own flag, say she is on
//!   it, and the ACL rules that allow exactly that.
//! - [`work`]: running the job on exactly one server: the worker, its
//!   Redisson-compatible lock, the job and its reaper, presence, handover, and
//!   the trimming of a supervisor's oversized hash.
//! - `serve` (feature `serve`, on with the CLI): the job's incidents posted to
//!   chat robots, one message per incident agreed in Redis, and its metrics
//!   for Prometheus.

pub mod address;
pub mod bucket;
pub mod cause;
pub mod clock;
pub mod connect;
pub mod duration;
pub mod error;
pub mod eviction;
pub mod heard;
pub mod history;
pub mod input;
pub mod keys;
pub mod probe;
pub mod refusal;
pub mod registry;
pub mod schema;
#[cfg(feature = "serve")]
pub mod serve;
pub mod snapshot;
pub mod status;
pub mod supervise;
pub mod watcher;
pub mod work;

pub use error::Error;
pub use keys::Keys;
pub use status::{Event, EventKind, State, Status};
