//! Running the job on exactly one server: the worker and what it stands on.

pub mod beat;
pub mod engine;
pub mod flips;
pub mod handover;
pub mod identity;
pub mod job;
pub mod lease;
pub mod lock;
pub mod lost;
pub mod orphan;
pub mod outcome;
pub mod presence;
pub mod reaper;
pub mod trim;
pub mod unit;
pub mod worker;
