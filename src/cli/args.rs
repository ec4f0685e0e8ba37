//! The command line's shape (clap) and its conversion into typed options.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::connect::{DEFAULT_URL, Target};
use crate::error::Error;
use crate::keys::{DEFAULT_JOB, Keys};
use crate::status;
use crate::watch;

/// See whether a job guarded by a Redis lock runs, where, and whether it hung.
#[derive(Debug, Parser)]
#[command(name = "lockwatch", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Redis URL: redis://[user:password@]host:port, rediss:// for TLS.
    #[arg(long, global = true, env = "LOCKWATCH_REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL)]
    pub redis: String,
    /// PEM file of the CA that signed the server's TLS certificate.
    #[arg(long, global = true, env = "LOCKWATCH_TLS_CA", value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// The job's name; its keys are {JOB}:lock, {JOB}:fence, …
    #[arg(long, global = true, env = "LOCKWATCH_JOB", default_value = DEFAULT_JOB, value_parser = parse_job)]
    pub job: String,
    /// Lock key, when it is not {JOB}:lock (an existing Redisson lock name).
    #[arg(long, global = true, env = "LOCKWATCH_LOCK_KEY", value_name = "KEY")]
    pub lock_key: Option<String>,
    /// Judge by the lock alone: for services that write no heartbeat.
    #[arg(long, global = true)]
    pub no_heartbeat: bool,
    /// A heartbeat older than this is stale.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub heartbeat_grace: Duration,
    /// A holder change through a gap shorter than this is a failover, not a death.
    #[arg(long, global = true, default_value = "5s", value_parser = parse_duration, value_name = "DURATION")]
    pub failover_window: Duration,
    /// How long a server may take to start the job after it is enabled.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub start_grace: Duration,
    /// How often `watch` reads Redis when nothing wakes it earlier.
    #[arg(long, global = true, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub interval: Duration,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the job's status once; exit 0 running/stopped, 1 stale, 2 down/conflict, 3 unknown.
    Status {
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the status, then one line per event until interrupted.
    Watch {
        /// JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Turn your enable flag on: the job runs while at least one flag is on.
    Enable {
        /// Whose flag (default: the Redis ACL user, else your login name).
        #[arg(long)]
        user: Option<String>,
    },
    /// Turn your enable flag off.
    Disable {
        /// Whose flag (default: the Redis ACL user, else your login name).
        #[arg(long)]
        user: Option<String>,
    },
    /// Run CMD on exactly one server of the cluster, while somebody has the job enabled.
    Worker {
        /// This server's name, as supervisors see it.
        #[arg(long)]
        node: String,
        /// Lock lease; the watchdog renews it every third of it.
        #[arg(long, default_value = "30s", value_parser = parse_duration, value_name = "DURATION")]
        lease: Duration,
        /// Run CMD every DURATION instead of restarting it whenever it exits.
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        every: Option<Duration>,
        /// Report the job `stalled` when it printed nothing for DURATION.
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        stall_after: Option<Duration>,
        /// Time CMD gets to exit after SIGTERM before it is killed.
        #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
        stop_grace: Duration,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Start a private Redis and two demo workers on this machine, and enable the job for you.
    Demo,
    /// Print the Redis ACL rules that let USER read the job and write only USER's flag.
    Acl {
        /// The supervisor's name (also their Redis user name).
        #[arg(long)]
        user: String,
    },
}

impl Global {
    /// The Redis server to talk to.
    ///
    /// # Errors
    /// [`Error::BadUrl`] or [`Error::Invalid`] for a URL or CA file that cannot be used.
    pub fn target(&self) -> Result<Target, Error> {
        Target::new(&self.redis, self.tls_ca.as_deref())
    }

    /// The job's keys.
    pub fn keys(&self) -> Keys {
        let keys = Keys::new(&self.job);
        match &self.lock_key {
            Some(lock) => keys.with_lock_key(lock),
            None => keys,
        }
    }

    /// The status engine's settings.
    pub fn engine(&self) -> status::Config {
        status::Config {
            heartbeats: !self.no_heartbeat,
            heartbeat_grace_ms: ms(self.heartbeat_grace),
            failover_window_ms: ms(self.failover_window),
            start_grace_ms: ms(self.start_grace),
            ..status::Config::default()
        }
    }

    /// The watcher's settings.
    pub fn watch_options(&self) -> watch::Options {
        watch::Options { poll: self.interval, engine: self.engine(), ..watch::Options::default() }
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A job name: not empty, no spaces or braces (it becomes the keys' hash tag).
///
/// # Errors
/// A sentence naming the bad value.
pub fn parse_job(s: &str) -> Result<String, String> {
    if s.is_empty() || s.len() > 100 || s.contains(|c: char| c.is_whitespace() || c == '{' || c == '}') {
        Err(format!("{s:?} cannot be a job name; use 1 to 100 characters without spaces or braces"))
    } else {
        Ok(s.to_owned())
    }
}

/// Parses `500ms`, `30s`, `5m`, `1h` (a bare number is seconds).
///
/// # Errors
/// A sentence naming the bad value.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("{s:?} is not a duration; write e.g. 500ms, 30s, 5m"))?;
    let factor = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("{other:?} is not a unit of time; use ms, s, m or h")),
    };
    Duration::try_from_secs_f64(value * factor).map_err(|_| format!("{s:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5y").is_err());
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
