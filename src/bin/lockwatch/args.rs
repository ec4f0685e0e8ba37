//! The command line's shape (clap) and its conversion into typed options.
//!
//! The connection and status options are global, so scripts may give them
//! before the command (`lockwatch --heartbeat-grace 5s status`); each
//! command's help shows only the ones it reads ([`command`]).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory as _, Parser, Subcommand};

use lockwatch::connect::{DEFAULT_URL, Target};
use lockwatch::duration::parse_duration;
use lockwatch::input::{self, ConnectionSpec, Field, JobSpec, Problem, Timing, Topology};
use lockwatch::keys::{DEFAULT_JOB, Keys};
use lockwatch::watcher;

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
    /// Find the primary through these sentinels (HOST:PORT,…); --redis then gives only user, password and TLS.
    #[arg(long, global = true, env = "LOCKWATCH_SENTINEL", hide_env_values = true, value_name = "HOST:PORT,…", value_parser = parse_sentinels, requires = "sentinel_master")]
    pub sentinel: Option<String>,
    /// The name the sentinels know the primary by (`sentinel monitor NAME …`).
    #[arg(long, global = true, env = "LOCKWATCH_SENTINEL_MASTER", hide_env_values = true, value_name = "NAME", value_parser = parse_master, requires = "sentinel")]
    pub sentinel_master: Option<String>,
    /// --redis names any node of a Redis Cluster (LOCKWATCH_CLUSTER=1).
    #[arg(long, global = true, env = "LOCKWATCH_CLUSTER", hide_env_values = true, action = clap::ArgAction::SetTrue, value_parser = clap::builder::BoolishValueParser::new(), conflicts_with = "sentinel")]
    pub cluster: bool,
    /// The job's name; its keys are {JOB}:lock, {JOB}:fence, … `status`,
    /// `watch`, `history`, `report`, `serve` and a supervisor's `acl` take several: JOB,JOB,…
    #[arg(long, global = true, env = "LOCKWATCH_JOB", hide_env_values = true, default_value = DEFAULT_JOB, value_parser = parse_jobs, value_name = "JOB")]
    pub job: String,
    /// Lock key, when it is not {JOB}:lock (an existing Redisson lock name).
    #[arg(long, global = true, env = "LOCKWATCH_LOCK_KEY", hide_env_values = true, value_name = "KEY", value_parser = parse_lock_key)]
    pub lock_key: Option<String>,
    /// Judge by the lock alone: for services that write no heartbeat.
    #[arg(long, global = true)]
    pub no_heartbeat: bool,
    /// A heartbeat older than this is stale.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_heartbeat_grace, value_name = "DURATION")]
    pub heartbeat_grace: Duration,
    /// A holder change through a gap shorter than this is a failover, not a death.
    #[arg(long, global = true, default_value = "5s", value_parser = parse_failover_window, value_name = "DURATION")]
    pub failover_window: Duration,
    /// How long a server may take to start the job after it is enabled.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_start_grace, value_name = "DURATION")]
    pub start_grace: Duration,
    /// How often `watch` reads Redis when nothing wakes it earlier.
    #[arg(long, global = true, default_value = "10s", value_parser = parse_interval, value_name = "DURATION")]
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
    /// Print each job's figures over the last DURATION: uptime, runs, failovers, restarts, deaths,
    /// outages, who switched it off and why.
    Report {
        /// The stretch reported, ending now (by Redis time), e.g. 24h or 7d.
        #[arg(long, value_parser = parse_duration, value_name = "DURATION", default_value = "24h")]
        since: Duration,
        /// One JSON object per job instead of text.
        #[arg(long, conflicts_with = "csv")]
        json: bool,
        /// CSV for a spreadsheet: a header, then one row per job.
        #[arg(long)]
        csv: bool,
    },
    /// Run CMD on exactly one server of the cluster, while somebody has the job enabled.
    Worker {
        /// This server's name, as supervisors see it [default: the host name, or HOST@ADDRESS
        /// where another live worker has it].
        #[arg(long, env = "LOCKWATCH_NODE", hide_env_values = true, value_parser = parse_user)]
        node: Option<String>,
        /// Lock lease; the watchdog renews it every third of it.
        #[arg(long, env = "LOCKWATCH_LEASE", hide_env_values = true, default_value = "30s", value_parser = parse_lease, value_name = "DURATION")]
        lease: Duration,
        /// Run CMD every DURATION instead of restarting it whenever it exits.
        #[arg(long, env = "LOCKWATCH_EVERY", hide_env_values = true, value_parser = parse_any_duration, value_name = "DURATION")]
        every: Option<Duration>,
        /// Report the job `stalled` when it printed nothing for DURATION.
        #[arg(long, env = "LOCKWATCH_STALL_AFTER", hide_env_values = true, value_parser = parse_any_duration, value_name = "DURATION")]
        stall_after: Option<Duration>,
        /// Time CMD gets to exit after SIGTERM before it is killed.
        #[arg(long, env = "LOCKWATCH_STOP_GRACE", hide_env_values = true, default_value = "10s", value_parser = parse_any_duration, value_name = "DURATION")]
        stop_grace: Duration,
        /// The command and its arguments, after `--`.
        #[arg(last = true, required = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// After a worker's systemd unit stopped (its `ExecStopPost=`): let go of the lock
    /// the worker died holding, nothing of its unit running any more.
    #[command(hide = true)]
    WorkerGone {
        /// The worker's name [default: the host name, and HOST@ADDRESS].
        #[arg(long, env = "LOCKWATCH_NODE", hide_env_values = true, value_parser = parse_user)]
        node: Option<String>,
        /// The worker's lease.
        #[arg(long, env = "LOCKWATCH_LEASE", hide_env_values = true, default_value = "30s", value_parser = parse_lease, value_name = "DURATION")]
        lease: Duration,
    },
    /// Tell every supervisor you are on it (the job's trouble), for a while, with a note.
    Ack {
        /// Whose (default: the Redis ACL user, else your login name).
        #[arg(long, value_parser = parse_user)]
        user: Option<String>,
        /// How long, 1m to 12h (Redis drops it then).
        #[arg(long = "for", default_value = "1h", value_parser = parse_ack_for, value_name = "DURATION")]
        lasts: Duration,
        /// What you are doing, in a line (at most 200 characters).
        #[arg(long, value_parser = parse_ack_note, value_name = "TEXT")]
        note: Option<String>,
    },
    /// Withdraw your "I'm on it".
    Unack {
        /// Whose (default: the Redis ACL user, else your login name).
        #[arg(long, value_parser = parse_user)]
        user: Option<String>,
    },
    /// Post the job's incidents to chat robots (DingTalk, WeCom, Feishu, webhook), one message per
    /// incident however many serve processes run, and serve its metrics for Prometheus.
    #[command(group(clap::ArgGroup::new("does").required(true).multiple(true).args(["robots", "metrics"])))]
    Serve {
        /// The robots file (TOML, one [[robot]] table each; see docs/serve.md).
        #[arg(long, env = "LOCKWATCH_ROBOTS", hide_env_values = true, value_name = "FILE")]
        robots: Option<PathBuf>,
        /// Serve /metrics (OpenMetrics) on this address, e.g. 127.0.0.1:9187.
        #[arg(long, env = "LOCKWATCH_METRICS", hide_env_values = true, value_name = "ADDR")]
        metrics: Option<std::net::SocketAddr>,
        /// Post a test message to each robot, print each robot's answer, and exit
        /// (0: every robot took it, 1: one did not).
        #[arg(long, requires = "robots")]
        check: bool,
        /// This server's name among the serve processes [default: the host name].
        #[arg(long, env = "LOCKWATCH_NODE", hide_env_values = true, value_parser = parse_user)]
        node: Option<String>,
        /// After an incident's message, repeats of it within this window are counted and
        /// posted once as a summary at its end (0s: every incident is posted).
        #[arg(long, env = "LOCKWATCH_REPEAT_WINDOW", hide_env_values = true, default_value = "10m", value_parser = parse_any_duration, value_name = "DURATION")]
        repeat_window: Duration,
    },
    /// Start a private Redis and two demo workers on this machine, and enable the job for you.
    Demo,
    /// Print the Redis ACL rules that let USER read the job and write only USER's flag
    /// (or, with --worker, the rules the job's workers need).
    #[command(group(clap::ArgGroup::new("whom").required(true).multiple(true).args(["user", "worker"])))]
    Acl {
        /// The supervisor's name (also their Redis user name).
        #[arg(long, value_parser = parse_user)]
        user: Option<String>,
        /// Rules for the job's workers instead, logging in as this Redis
        /// user (or the one --user names): what a worker sends, on the
        /// job's keys and channels only.
        #[arg(long, value_parser = parse_user, value_name = "USER", num_args = 0..=1)]
        worker: Option<Option<String>>,
        /// The Redis version the rules are for (6.2 gets read-only rules);
        /// by default asked of the Redis that --redis names, else 7.
        #[arg(long, value_name = "VERSION")]
        redis_version: Option<String>,
    },
}

/// Which shared options each command reads, by argument id (the field name
/// in [`Global`]); `""` is `lockwatch` itself, before any command. Every
/// command still accepts the others, because scripts give them before the
/// command whatever it is, but its help does not list them.
const SHOWN: &[(&str, &[&str])] = &[
    ("", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key", "no_heartbeat"]),
    (
        "status",
        &[
            "redis",
            "tls_ca",
            "sentinel",
            "sentinel_master",
            "cluster",
            "job",
            "lock_key",
            "no_heartbeat",
            "heartbeat_grace",
            "failover_window",
            "start_grace",
        ],
    ),
    ("watch", WATCHING),
    ("enable", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("disable", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("worker", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("worker-gone", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("ack", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("unack", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("history", HISTORY),
    ("report", HISTORY),
    ("acl", &["redis", "tls_ca", "sentinel", "sentinel_master", "cluster", "job", "lock_key"]),
    ("serve", WATCHING),
    ("demo", &["job"]),
];

/// What the commands that read the job's history (`history`, `report`) read.
const HISTORY: &[&str] = &[
    "redis",
    "tls_ca",
    "sentinel",
    "sentinel_master",
    "cluster",
    "job",
    "lock_key",
    "heartbeat_grace",
    "failover_window",
];

/// What the commands that watch the job (`watch`, `serve`) read.
const WATCHING: &[&str] = &[
    "redis",
    "tls_ca",
    "sentinel",
    "sentinel_master",
    "cluster",
    "job",
    "lock_key",
    "no_heartbeat",
    "heartbeat_grace",
    "failover_window",
    "start_grace",
    "interval",
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
    /// The Redis server and how to reach it.
    pub fn connection(&self) -> ConnectionSpec {
        ConnectionSpec {
            url: self.redis.clone(),
            tls_ca: self.tls_ca.clone(),
            topology: Topology::from_inputs(self.sentinel.as_deref(), self.sentinel_master.as_deref())
                .or_cluster(self.cluster),
        }
    }

    /// The Redis server to talk to.
    ///
    /// # Errors
    /// The library's sentence for a URL or CA file that cannot be used.
    pub fn target(&self) -> anyhow::Result<Target> {
        Ok(self.connection().target()?)
    }

    /// The jobs `--job` names, one or more.
    pub fn jobs(&self) -> Vec<String> {
        self.job.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
    }

    /// The job as the options describe it (the first, where `--job` names
    /// several); each option passed its rule in [`input`] already.
    pub fn job(&self) -> JobSpec {
        self.job_named(self.jobs().first().map_or(DEFAULT_JOB, String::as_str))
    }

    /// The job `name` with the options' settings.
    pub fn job_named(&self, name: &str) -> JobSpec {
        JobSpec {
            name: name.to_owned(),
            lock_key: self.lock_key.clone(),
            heartbeats: !self.no_heartbeat,
            timing: Timing {
                heartbeat_grace: self.heartbeat_grace,
                failover_window: self.failover_window,
                start_grace: self.start_grace,
                poll: self.interval,
            },
        }
    }

    /// The job's keys.
    pub fn keys(&self) -> Keys {
        self.job().keys()
    }

    /// The watcher's settings.
    pub fn watch_options(&self) -> watcher::Options {
        self.job().watch_options()
    }
}

// clap's value parsers: each option's rule from [`input`]. clap puts the flag
// and the value in front of the problem's sentence.

/// One job name, or several separated by commas (for `status`).
fn parse_jobs(s: &str) -> Result<String, Problem> {
    input::job_names(s).map(|names| names.join(",")).map_err(|invalid| match invalid.problem {
        Problem::NoJob => Problem::JobName,
        problem => problem,
    })
}

/// Kept as given (the spec reads it again): only checked here, so that
/// clap names the flag in the sentence.
fn parse_sentinels(s: &str) -> Result<String, Problem> {
    input::sentinels(s).map(|_| s.to_owned())
}

fn parse_master(s: &str) -> Result<String, Problem> {
    input::master_name(s)
}

fn parse_lock_key(s: &str) -> Result<String, Problem> {
    input::lock_key(s)
}

fn parse_user(s: &str) -> Result<String, Problem> {
    input::name(s)
}

fn parse_lease(s: &str) -> Result<Duration, Problem> {
    input::lease(s)
}

/// A flip's reason, by [`input::check_reason`]'s rule.
///
/// # Errors
/// What is wrong with it; the caller names the flag.
fn parse_reason(s: &str) -> Result<String, Problem> {
    input::check_reason(s).map(str::to_owned).map_err(|invalid| invalid.problem)
}

fn parse_ack_for(s: &str) -> Result<Duration, Problem> {
    input::ack_for(s)
}

fn parse_ack_note(s: &str) -> Result<String, Problem> {
    input::ack_note(s)
}

fn parse_any_duration(s: &str) -> Result<Duration, Problem> {
    Ok(parse_duration(s)?)
}

fn parse_heartbeat_grace(s: &str) -> Result<Duration, Problem> {
    input::duration_for(Field::HeartbeatGrace, s)
}

fn parse_failover_window(s: &str) -> Result<Duration, Problem> {
    input::duration_for(Field::FailoverWindow, s)
}

fn parse_start_grace(s: &str) -> Result<Duration, Problem> {
    input::duration_for(Field::StartGrace, s)
}

fn parse_interval(s: &str) -> Result<Duration, Problem> {
    input::duration_for(Field::Poll, s)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn options_are_checked_by_the_spec_rules() {
        use clap::FromArgMatches as _;
        let parse = |args: &[&str]| {
            let m = command().try_get_matches_from([&["lockwatch"], args].concat())?;
            Cli::from_arg_matches(&m)
        };
        let cli = parse(&["--job", "inbound", "--lock-key", "inLock", "--interval", "250ms", "status"]).unwrap();
        let job = cli.global.job();
        assert_eq!((job.keys().lock.as_str(), job.watch_options().poll), ("inLock", Duration::from_millis(250)));
        for bad in [
            &["--interval", "10ms", "watch"][..],
            &["--heartbeat-grace", "2h", "status"],
            &["--lock-key", "a b", "status"],
            &["--job", "{x}", "status"],
        ] {
            let err = parse(bad).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}");
        }
    }
}
