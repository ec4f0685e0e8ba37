//! The command line's shape (clap) and its conversion into typed options.
//!
//! The connection and status options are global, so scripts may give them
//! before the command (`lockwatch --heartbeat-grace 5s status`); each
//! command's help shows only the ones it reads ([`command`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory as _, Parser, Subcommand};

use crate::connect::{DEFAULT_URL, Target};
use crate::error::Error;
use crate::flags;
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

/// Options every command accepts, before or after its name; [`SHOWN`] says
/// which commands read (and list in their help) each of them.
#[derive(Debug, Args)]
pub struct Global {
    /// Redis URL: redis://[user:password@]host:port, rediss:// for TLS.
    #[arg(long, global = true, env = "LOCKWATCH_REDIS_URL", hide_env_values = true, default_value = DEFAULT_URL)]
    pub redis: String,
    /// PEM file of the CA that signed the server's TLS certificate.
    #[arg(long, global = true, env = "LOCKWATCH_TLS_CA", hide_env_values = true, value_name = "FILE")]
    pub tls_ca: Option<PathBuf>,
    /// The job's name; its keys are {JOB}:lock, {JOB}:fence, …
    #[arg(long, global = true, env = "LOCKWATCH_JOB", hide_env_values = true, default_value = DEFAULT_JOB, value_parser = parse_job)]
    pub job: String,
    /// Lock key, when it is not {JOB}:lock (an existing Redisson lock name).
    #[arg(long, global = true, env = "LOCKWATCH_LOCK_KEY", hide_env_values = true, value_name = "KEY")]
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
    /// Print the job's status once; exit 0 running/stopped, 1 stale/pending, 2 down/conflict, 3 unknown.
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
        #[arg(long, value_parser = parse_user)]
        user: Option<String>,
        /// Why, in a sentence (at most 200 characters): kept with the flag and in the history.
        #[arg(long, value_parser = parse_reason, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Turn your enable flag off.
    Disable {
        /// Whose flag (default: the Redis ACL user, else your login name).
        #[arg(long, value_parser = parse_user)]
        user: Option<String>,
        /// Why, in a sentence (at most 200 characters): kept with the flag and in the history.
        #[arg(long, value_parser = parse_reason, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Print the job's shared history, oldest first: runs, failovers, restarts, deaths, stops, flag flips.
    History {
        /// JSON lines instead of text.
        #[arg(long)]
        json: bool,
        /// Only the last DURATION (by Redis time), e.g. 24h.
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        since: Option<Duration>,
    },
    /// Run CMD on exactly one server of the cluster, while somebody has the job enabled.
    Worker {
        /// This server's name, as supervisors see it.
        #[arg(long, value_parser = parse_user)]
        node: String,
        /// Lock lease; the watchdog renews it every third of it.
        #[arg(long, default_value = "30s", value_parser = parse_lease, value_name = "DURATION")]
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
        #[arg(long, value_parser = parse_user)]
        user: String,
    },
}

/// Which shared options each command reads, by argument id (the field name
/// in [`Global`]); `""` is `lockwatch` itself, before any command. Every
/// command still accepts the others, because scripts give them before the
/// command whatever it is, but its help does not list them.
const SHOWN: &[(&str, &[&str])] = &[
    ("", &["redis", "tls_ca", "job", "lock_key", "no_heartbeat"]),
    (
        "status",
        &["redis", "tls_ca", "job", "lock_key", "no_heartbeat", "heartbeat_grace", "failover_window", "start_grace"],
    ),
    (
        "watch",
        &[
            "redis",
            "tls_ca",
            "job",
            "lock_key",
            "no_heartbeat",
            "heartbeat_grace",
            "failover_window",
            "start_grace",
            "interval",
        ],
    ),
    ("enable", &["redis", "tls_ca", "job", "lock_key"]),
    ("disable", &["redis", "tls_ca", "job", "lock_key"]),
    ("worker", &["redis", "tls_ca", "job", "lock_key"]),
    ("history", &["redis", "tls_ca", "job", "lock_key", "heartbeat_grace", "failover_window"]),
    ("acl", &["job", "lock_key"]),
    ("demo", &["job"]),
];

/// The command line's definition, each command's help trimmed to the shared
/// options it reads (see [`SHOWN`]).
pub fn command() -> clap::Command {
    let mut cmd = Cli::command();
    let ids: Vec<clap::Id> = cmd.get_arguments().filter(|a| a.is_global_set()).map(|a| a.get_id().clone()).collect();
    let shown =
        |name: &str, id: &clap::Id| SHOWN.iter().any(|(command, ids)| *command == name && ids.contains(&id.as_str()));
    // Shared options come after each command's own in its help.
    for (i, id) in ids.iter().enumerate() {
        cmd = cmd.mut_arg(id, |a| a.hide(!shown("", id)).display_order(100 + i));
    }
    let shared: Vec<clap::Arg> = cmd.get_arguments().filter(|a| a.is_global_set()).cloned().collect();
    // clap copies a global option into each subcommand unless the subcommand
    // has its own of that id; an own copy, shown or hidden unlike the top's,
    // changes only the help. The value still reaches both: clap hands a
    // global id's value up and down whichever level it was given at.
    for (name, _) in SHOWN.iter().filter(|(name, _)| !name.is_empty()) {
        for arg in &shared {
            let show = shown(name, arg.get_id());
            if show != shown("", arg.get_id()) {
                cmd = cmd.mut_subcommand(name, |sub| sub.arg(arg.clone().global(false).hide(!show)));
            }
        }
    }
    cmd
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
/// What a job name may contain; the caller names the flag and the value.
pub fn parse_job(s: &str) -> Result<String, &'static str> {
    if s.is_empty() || s.len() > 100 || s.contains(|c: char| c.is_whitespace() || c == '{' || c == '}') {
        Err("a job name is 1 to 100 characters without spaces or braces")
    } else {
        Ok(s.to_owned())
    }
}

/// A server's or supervisor's name, by [`flags::check_user`]'s rule.
///
/// # Errors
/// What the name may contain; the caller names the flag and the value.
fn parse_user(s: &str) -> Result<String, &'static str> {
    flags::check_user(s).map(str::to_owned).map_err(|_| "a name is 1 to 64 letters, digits, '.', '_', '@' or '-'")
}

/// A flip's reason, by [`flags::check_reason`]'s rule.
///
/// # Errors
/// What is wrong with it; the caller names the flag.
fn parse_reason(s: &str) -> Result<String, String> {
    flags::check_reason(s).map(str::to_owned).map_err(|e| e.to_string())
}

/// A lock lease: a duration long enough for three renewals to fit in it.
///
/// # Errors
/// What is wrong with it; the caller names the flag and the value.
fn parse_lease(s: &str) -> Result<Duration, String> {
    let lease = parse_duration(s).map_err(|e| e.to_string())?;
    if lease < Duration::from_millis(300) {
        return Err("too short; give 300ms or more (default 30s)".to_owned());
    }
    Ok(lease)
}

/// Why a duration was refused. The messages leave out the value: the caller
/// names the flag or setting and the value it got.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// A number alone: seconds or milliseconds would be a guess.
    #[error("give a unit: 500ms, 10s, 5m or 1h")]
    NoUnit,
    /// No number in front of the unit.
    #[error("not a duration; write a number and a unit: 500ms, 10s, 5m or 1h")]
    NotANumber,
    /// A unit other than ms, s, m (min) or h.
    #[error("{0:?} is not a unit of time; use ms, s, m or h")]
    UnknownUnit(String),
    /// More than a `Duration` holds.
    #[error("too long; give at most a few years")]
    OutOfRange,
}

/// Parses `500ms`, `30s`, `1.5m`, `5min`, `1h`. A number needs its unit.
///
/// # Errors
/// [`DurationError`] saying what is missing or wrong.
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number.parse().map_err(|_| DurationError::NotANumber)?;
    let factor = match unit.trim() {
        "" => return Err(DurationError::NoUnit),
        "ms" => 0.001,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(DurationError::UnknownUnit(other.to_owned())),
    };
    Duration::try_from_secs_f64(value * factor).map_err(|_| DurationError::OutOfRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1.5m"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5min"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
    }

    #[test]
    fn a_duration_needs_a_number_and_a_known_unit() {
        assert_eq!(parse_duration("2"), Err(DurationError::NoUnit));
        assert_eq!(parse_duration("0"), Err(DurationError::NoUnit));
        assert_eq!(parse_duration("ten"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("-5s"), Err(DurationError::NotANumber));
        assert_eq!(parse_duration("5y"), Err(DurationError::UnknownUnit("y".to_owned())));
        assert_eq!(parse_duration("1e3s"), Err(DurationError::UnknownUnit("e3s".to_owned())));
        assert_eq!(parse_duration("99999999999999999999999h"), Err(DurationError::OutOfRange));
    }

    #[test]
    fn every_shown_option_and_command_exists() {
        let cmd = Cli::command();
        for (name, shown) in SHOWN {
            assert!(name.is_empty() || cmd.find_subcommand(name).is_some(), "{name}");
            for id in *shown {
                assert!(cmd.get_arguments().any(|a| a.get_id() == id && a.is_global_set()), "{id}");
            }
        }
        let listed: Vec<&str> = SHOWN.iter().map(|(name, _)| *name).collect();
        for sub in cmd.get_subcommands() {
            assert!(listed.contains(&sub.get_name()), "{} is missing from SHOWN", sub.get_name());
        }
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
        command().debug_assert();
    }
}
