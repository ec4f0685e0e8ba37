//! What a user asks to watch, checked once for the command line and the tray
//! app alike: the rules for every input (job and user names, lock keys,
//! durations and their ranges, the Redis URL and its password), the one
//! sentence each refusal gets, and what valid input becomes (keys, engine
//! config, watcher options).
//!
//! A rule's [`Problem`] says what is wrong and the forms a value takes; the
//! caller knows where the value came from, so [`Invalid`] adds the [`Field`]
//! (clap adds the flag itself on the command line). Those three live in
//! [`crate::refusal`], which the library's error carries.

mod connection;
mod job;
mod names;
mod timing;

pub use crate::refusal::{
    CLUSTER_NO_CA, CLUSTER_NO_SOCKET, Field, Invalid, MAX_ACK_NOTE_CHARS, MAX_LEASE, MAX_REASON_CHARS, MIN_LEASE,
    Problem,
};
pub use connection::{ConnectionSpec, Topology};
pub use job::JobSpec;
pub use names::{check_reason, check_user, job_name, job_names, lock_key, master_name, name, sentinels};
pub use timing::{ACK_RANGE, DEFAULT_ACK_FOR, Timing, ack_for, ack_lasts, ack_note, duration_for, lease, range};
