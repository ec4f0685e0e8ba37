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
//! - `deliver`: one post (signed, sent, its answer read) and its retries.
//! - `agree`: exactly one message per incident, agreed in Redis; repeats counted.
//! - `metrics`: the job's metrics (`prometheus-client`), OpenMetrics text.
//! - `http`: the `/metrics` endpoint.
//! - `run`: the serve loop and `--check`.

pub mod agree;
pub mod deliver;
mod http;
pub mod limit;
pub mod message;
pub mod metrics;
pub mod robots;
mod run;
pub mod sign;
mod words;

pub use run::{Options, ServeError, check, run};
