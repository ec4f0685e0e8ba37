//! `lockwatch serve`: the job's incidents posted to chat robots (DingTalk,
//! WeCom, Feishu, any webhook), one message per incident however many
//! serve processes run, and the job's metrics for Prometheus.
//!
//! # Layout
//!
//! - `robots`: the robots file, read and checked; secrets kept out of sight.
//! - `words`: every sentence of a message, in English and Chinese.
//! - `message`: an incident told in a robot's language, and the JSON its API takes.
//! - `sign`: DingTalk's and Feishu's signatures.
//! - `limit`: each robot's rate limit.
//! - `quota`: each robot's rate limit kept in Redis, among every serve process.
//! - `deliver`: one post (signed, sent, its answer read) and its retries.
//! - `agree`: exactly one message per incident, agreed in Redis; repeats counted.
//! - `lease`: a claim is a lease, renewed while robots are owed the message,
//!   taken over when it runs out unfinished.
//! - `ledger`: what this process owes for its claims, and others' it watches.
//! - `peers`: which serve processes watch the job (who posts `unreachable`).
//! - `metrics`: the job's metrics (`prometheus-client`), OpenMetrics text.
//! - `http`: the `/metrics` endpoint.
//! - `sender`: one task per robot (a burst folded, the rate limit kept), and `--check`.
//! - `run`: the serve loop.

pub mod agree;
pub mod deliver;
mod http;
mod lease;
mod ledger;
pub mod limit;
pub mod message;
pub mod metrics;
mod peers;
mod quota;
pub mod robots;
mod run;
mod sender;
pub mod sign;
mod words;

pub use run::{Options, ServeError, run};
pub use sender::check;
