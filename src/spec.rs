//! What a user asks to watch, checked once for the command line and the tray
//! app alike: the rules for every input (job and user names, lock keys,
//! durations and their ranges, the Redis URL and its password), the one
//! sentence each refusal gets, and what valid input becomes (keys, engine
//! config, watcher options).
//!
//! A rule's [`Problem`] says what is wrong and the forms a value takes; the
//! caller knows where the value came from, so [`Invalid`] adds the [`Field`]
//! (clap adds the flag itself on the command line).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::address::redact;
use crate::clock::millis;
use crate::connect::Target;
use crate::duration::{DurationError, format_duration, parse_duration};
use crate::error::Error;
use crate::keys::{DEFAULT_JOB, Keys};
use crate::{status, watcher};

/// An input the user gives, by the names it has on the command line and in
/// the settings form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Field {
    RedisUrl,
    TlsCa,
    /// The sentinels' addresses (`host:port`, comma separated).
    Sentinels,
    /// The name the sentinels know the primary by.
    SentinelMaster,
    /// The switch saying the URL names a node of a Redis Cluster.
    Cluster,
    User,
    /// The job's name (the settings form holds several, comma separated).
    Jobs,
    LockKey,
    HeartbeatGrace,
    FailoverWindow,
    StartGrace,
    Poll,
    Lease,
    Node,
    /// How long an acknowledgement ("I'm on it") lasts.
    AckFor,
    /// The note kept with an acknowledgement.
    AckNote,
}

impl Field {
    /// The command line's flag.
    pub fn flag(self) -> &'static str {
        match self {
            Field::RedisUrl => "--redis",
            Field::TlsCa => "--tls-ca",
            Field::Sentinels => "--sentinel",
            Field::SentinelMaster => "--sentinel-master",
            Field::Cluster => "--cluster",
            Field::User => "--user",
            Field::Jobs => "--job",
            Field::LockKey => "--lock-key",
            Field::HeartbeatGrace => "--heartbeat-grace",
            Field::FailoverWindow => "--failover-window",
            Field::StartGrace => "--start-grace",
            Field::Poll => "--interval",
            Field::Lease => "--lease",
            Field::Node => "--node",
            Field::AckFor => "--for",
            Field::AckNote => "--note",
        }
    }

    /// The settings form's label.
    pub fn label(self) -> &'static str {
        match self {
            Field::RedisUrl => "Redis URL",
            Field::TlsCa => "TLS CA file",
            Field::Sentinels => "Sentinels",
            Field::SentinelMaster => "Sentinel primary name",
            Field::Cluster => "Redis Cluster",
            Field::User => "Your name",
            Field::Jobs => "Job",
            Field::LockKey => "Lock key",
            Field::HeartbeatGrace => "Heartbeat grace",
            Field::FailoverWindow => "Failover window",
            Field::StartGrace => "Start grace",
            Field::Poll => "Poll interval",
            Field::Lease => "Lease",
            Field::Node => "Server name",
            Field::AckFor => "On it for",
            Field::AckNote => "Note",
        }
    }
}

/// Why a value was refused, and what to give instead. The messages leave
/// out the value and where it came from: [`Invalid`] (or clap) adds those.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    #[error("{0}")]
    Duration(#[from] DurationError),
    /// A duration outside what makes sense for its field.
    #[error("out of range; give {} to {}", format_duration(*min), format_duration(*max))]
    OutOfRange { min: Duration, max: Duration },
    /// A lease too short for three renewals and the clock's jitter.
    #[error("too short; give {} or more (default 30s)", format_duration(MIN_LEASE))]
    LeaseTooShort,
    #[error("a job name is 1 to 100 characters without spaces or braces")]
    JobName,
    #[error("no job is given; give one or more job names separated by commas")]
    NoJob,
    #[error("a name is 1 to 64 letters, digits, '.', '_', '@' or '-'")]
    Name,
    #[error("a lock key is 1 to 1000 characters without spaces or control characters")]
    LockKey,
    /// What the redis crate said about the URL.
    #[error(
        "not a Redis URL ({0}); use redis://[user:password@]host:port, rediss:// for TLS or unix:///path/to/socket"
    )]
    Url(String),
    #[error("no such file; give the path of the PEM file of the CA that signed the server's certificate")]
    CaFile,
    /// An acknowledgement's note longer than [`MAX_ACK_NOTE_CHARS`].
    #[error("{0} characters long; give at most {MAX_ACK_NOTE_CHARS}, one line")]
    NoteTooLong(usize),
    #[error("a note is one line without control characters")]
    NoteLines,
    #[error("give each sentinel as HOST:PORT, separated by commas (e.g. 10.0.0.1:26379,10.0.0.2:26379)")]
    Sentinels,
    #[error("a primary's name (as in `sentinel monitor NAME …`) is 1 to 100 characters without spaces")]
    MasterName,
    /// One of the two Sentinel inputs without the other.
    #[error("the sentinels and the primary's name go together; give both, or neither for a single Redis")]
    SentinelHalf,
    /// Sentinel inputs beside the cluster switch.
    #[error(
        "a Redis Cluster is found through any of its nodes, not through sentinels; give the cluster or the sentinels, not both"
    )]
    ClusterAndSentinel,
    /// A socket path as a cluster's node.
    #[error("{}", crate::connect::CLUSTER_NO_SOCKET)]
    ClusterUrl,
    /// A database other than 0 on a cluster.
    #[error("a Redis Cluster has only database 0; leave the /N out of the URL")]
    ClusterDb,
    /// A private CA file for a cluster.
    #[error("{}", crate::connect::CLUSTER_NO_CA)]
    ClusterCa,
}

/// A refused input: which field, the value as given (a URL with its password
/// hidden), and why. Displays as one sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} {value:?}: {problem}", field.label())]
pub struct Invalid {
    pub field: Field,
    pub value: String,
    pub problem: Problem,
}

impl Invalid {
    fn new(field: Field, value: &str, problem: Problem) -> Invalid {
        let value = if field == Field::RedisUrl { redact(value) } else { value.to_owned() };
        Invalid { field, value, problem }
    }

    /// The same sentence with the command line's flag in front.
    pub fn with_flag(&self) -> String {
        format!("{} {}: {}", self.field.flag(), self.value, self.problem)
    }
}

/// The shortest lease: renewals every third of it must still fit.
pub const MIN_LEASE: Duration = Duration::from_millis(300);
const HOUR: Duration = Duration::from_secs(3600);

/// The range each timing input may take, by its field.
pub fn range(field: Field) -> Option<(Duration, Duration)> {
    match field {
        Field::Poll => Some((Duration::from_millis(100), HOUR)),
        Field::HeartbeatGrace => Some((Duration::from_millis(500), HOUR)),
        Field::FailoverWindow | Field::StartGrace => Some((Duration::ZERO, HOUR)),
        Field::AckFor => Some(ACK_RANGE),
        _ => None,
    }
}

/// A duration for `field`, within its [`range`].
///
/// # Errors
/// The [`Problem`] with it.
pub fn duration_for(field: Field, s: &str) -> Result<Duration, Problem> {
    let d = parse_duration(s)?;
    check_range(field, d)?;
    Ok(d)
}

fn check_range(field: Field, d: Duration) -> Result<(), Problem> {
    match range(field) {
        Some((min, max)) if d < min || d > max => Err(Problem::OutOfRange { min, max }),
        _ => Ok(()),
    }
}

/// How long "I'm on it" lasts when no duration is given.
pub const DEFAULT_ACK_FOR: Duration = HOUR;
/// The durations an acknowledgement may have: long enough to look, short
/// enough that a forgotten one ends within the day.
pub const ACK_RANGE: (Duration, Duration) = (Duration::from_secs(60), Duration::from_secs(12 * 3600));
/// The longest note an acknowledgement carries, in characters: what one is
/// doing, not a report. The probe reads at most 1024 bytes of it, which
/// this many characters of any script fit in.
pub const MAX_ACK_NOTE_CHARS: usize = 200;

/// How long an acknowledgement lasts: `30m`, `2h`, within [`ACK_RANGE`].
///
/// # Errors
/// The [`Problem`] with it.
pub fn ack_for(s: &str) -> Result<Duration, Problem> {
    duration_for(Field::AckFor, s)
}

/// An acknowledgement's duration given as a value (the tray's menu item),
/// by the same rule as [`ack_for`].
///
/// # Errors
/// [`Problem::OutOfRange`].
pub fn ack_lasts(d: Duration) -> Result<Duration, Problem> {
    check_range(Field::AckFor, d)?;
    Ok(d)
}

/// An acknowledgement's note: one line of at most [`MAX_ACK_NOTE_CHARS`] characters.
///
/// # Errors
/// [`Problem::NoteTooLong`] or [`Problem::NoteLines`].
pub fn ack_note(s: &str) -> Result<String, Problem> {
    let chars = s.chars().count();
    if chars > MAX_ACK_NOTE_CHARS {
        return Err(Problem::NoteTooLong(chars));
    }
    if s.chars().any(char::is_control) {
        return Err(Problem::NoteLines);
    }
    Ok(s.trim().to_owned())
}

/// A lock lease: long enough for three renewals to fit in it.
///
/// # Errors
/// The [`Problem`] with it.
pub fn lease(s: &str) -> Result<Duration, Problem> {
    let lease = parse_duration(s)?;
    if lease < MIN_LEASE {
        return Err(Problem::LeaseTooShort);
    }
    Ok(lease)
}

/// A job name: it becomes the keys' hash tag, so no braces, and no spaces.
///
/// # Errors
/// [`Problem::JobName`].
pub fn job_name(s: &str) -> Result<String, Problem> {
    if s.is_empty() || s.chars().count() > 100 || s.contains(|c: char| c.is_whitespace() || c == '{' || c == '}') {
        Err(Problem::JobName)
    } else {
        Ok(s.to_owned())
    }
}

/// Job names as the settings form lists them: separated by commas.
///
/// # Errors
/// The first name that cannot be used, or [`Problem::NoJob`].
pub fn job_names(list: &str) -> Result<Vec<String>, Invalid> {
    let names: Vec<&str> = list.split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
    if names.is_empty() {
        return Err(Invalid::new(Field::Jobs, list, Problem::NoJob));
    }
    names.into_iter().map(|n| job_name(n).map_err(|p| Invalid::new(Field::Jobs, n, p))).collect()
}

/// A supervisor's or server's name, by [`spec::check_user`]'s rule (the
/// one the flag keys and ACL rules are written with).
///
/// # Errors
/// [`Problem::Name`].
pub fn name(s: &str) -> Result<String, Problem> {
    check_user(s).map(str::to_owned).map_err(|_| Problem::Name)
}

/// The longest reason a flip may carry, in characters: a sentence, not a report.
pub const MAX_REASON_CHARS: usize = 200;

/// Checks a flip's reason: one line of at most [`MAX_REASON_CHARS`] characters.
///
/// # Errors
/// [`Error::Invalid`] saying what is wrong and what to do.
pub fn check_reason(reason: &str) -> Result<&str, Error> {
    let chars = reason.chars().count();
    if chars > MAX_REASON_CHARS {
        return Err(Error::Invalid(format!(
            "the reason is {chars} characters long; give at most {MAX_REASON_CHARS}, one sentence"
        )));
    }
    if reason.chars().any(char::is_control) {
        return Err(Error::Invalid("the reason must be one line without control characters".to_owned()));
    }
    Ok(reason)
}

/// Checks that `user` can name a flag key and an ACL rule safely: letters,
/// digits and `._@-`, 1 to 64 of them (no glob characters, no spaces).
///
/// # Errors
/// [`Error::Invalid`] naming the offending input.
pub fn check_user(user: &str) -> Result<&str, Error> {
    let ok = (1..=64).contains(&user.len()) && user.bytes().all(|b| b.is_ascii_alphanumeric() || b"._@-".contains(&b));
    if ok {
        Ok(user)
    } else {
        Err(Error::Invalid(format!(
            "the user name {user:?} cannot be used; use 1 to 64 letters, digits, '.', '_', '@' or '-'"
        )))
    }
}

/// A lock key given instead of `{job}:lock`: any Redis key a person would
/// type, which rules out spaces and control characters.
///
/// # Errors
/// [`Problem::LockKey`].
pub fn lock_key(s: &str) -> Result<String, Problem> {
    if s.is_empty() || s.len() > 1000 || s.contains(|c: char| c.is_whitespace() || c.is_control()) {
        Err(Problem::LockKey)
    } else {
        Ok(s.to_owned())
    }
}

/// How to judge a job: the timing inputs, shared by every job of a tray.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timing {
    /// A heartbeat older than this is stale.
    pub heartbeat_grace: Duration,
    /// A holder change through a gap shorter than this is a failover.
    pub failover_window: Duration,
    /// How long a server may take to start the job after it is enabled.
    pub start_grace: Duration,
    /// How often the watcher reads when nothing wakes it earlier.
    pub poll: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        let engine = status::Config::default();
        Timing {
            heartbeat_grace: Duration::from_millis(engine.heartbeat_grace_ms),
            failover_window: Duration::from_millis(engine.failover_window_ms),
            start_grace: Duration::from_millis(engine.start_grace_ms),
            poll: watcher::Options::default().poll,
        }
    }
}

impl Timing {
    /// Every duration outside its range.
    pub fn check(&self) -> Vec<Invalid> {
        [
            (Field::HeartbeatGrace, self.heartbeat_grace),
            (Field::FailoverWindow, self.failover_window),
            (Field::StartGrace, self.start_grace),
            (Field::Poll, self.poll),
        ]
        .into_iter()
        .filter_map(|(field, d)| check_range(field, d).err().map(|p| Invalid::new(field, &format_duration(d), p)))
        .collect()
    }
}

/// One job to watch, as the user described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    pub name: String,
    /// The lock's key when it is not `{name}:lock` (an existing Redisson lock).
    pub lock_key: Option<String>,
    /// Off for services that write no heartbeat: the lock alone decides.
    pub heartbeats: bool,
    pub timing: Timing,
}

impl Default for JobSpec {
    fn default() -> Self {
        JobSpec { name: DEFAULT_JOB.to_owned(), lock_key: None, heartbeats: true, timing: Timing::default() }
    }
}

impl JobSpec {
    /// Every input that breaks its rule, one [`Invalid`] each.
    pub fn check(&self) -> Vec<Invalid> {
        let mut bad = Vec::new();
        if let Err(p) = job_name(&self.name) {
            bad.push(Invalid::new(Field::Jobs, &self.name, p));
        }
        if let Some(key) = &self.lock_key
            && let Err(p) = lock_key(key)
        {
            bad.push(Invalid::new(Field::LockKey, key, p));
        }
        bad.extend(self.timing.check());
        bad
    }

    /// The job's keys.
    pub fn keys(&self) -> Keys {
        let keys = Keys::new(&self.name);
        match &self.lock_key {
            Some(lock) => keys.with_lock_key(lock),
            None => keys,
        }
    }

    /// The status engine's settings.
    pub fn engine(&self) -> status::Config {
        status::Config {
            heartbeats: self.heartbeats,
            heartbeat_grace_ms: millis(self.timing.heartbeat_grace),
            failover_window_ms: millis(self.timing.failover_window),
            start_grace_ms: millis(self.timing.start_grace),
            ..status::Config::default()
        }
    }

    /// The watcher's settings.
    pub fn watch_options(&self) -> watcher::Options {
        watcher::Options { poll: self.timing.poll, engine: self.engine(), ..watcher::Options::default() }
    }
}

/// How the data nodes are found, each topology with its own inputs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Topology {
    /// One Redis, at the URL's host.
    #[default]
    Single,
    /// The primary that the sentinels name, followed through failovers;
    /// the URL then gives only user, password and TLS. Both as given:
    /// [`ConnectionSpec::check`] says what is wrong with them.
    Sentinel { sentinels: String, master: String },
    /// A Redis Cluster that the URL's node belongs to. `stray` holds
    /// Sentinel inputs given beside it, which [`ConnectionSpec::check`] refuses.
    Cluster { stray: Option<String> },
}

impl Topology {
    /// The topology from the two Sentinel inputs, either of which may be
    /// missing or blank: neither is one Redis, both is Sentinel.
    pub fn from_inputs(sentinels: Option<&str>, master: Option<&str>) -> Topology {
        let given = |s: Option<&str>| s.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        match (given(sentinels), given(master)) {
            (None, None) => Topology::Single,
            (sentinels, master) => {
                Topology::Sentinel { sentinels: sentinels.unwrap_or_default(), master: master.unwrap_or_default() }
            }
        }
    }

    /// This topology, or a Redis Cluster when `cluster` is on (keeping any
    /// Sentinel inputs for [`ConnectionSpec::check`] to refuse).
    pub fn or_cluster(self, cluster: bool) -> Topology {
        match (cluster, self) {
            (false, topology) => topology,
            (true, Topology::Sentinel { sentinels, master }) => {
                Topology::Cluster { stray: Some(if sentinels.is_empty() { master } else { sentinels }) }
            }
            (true, _) => Topology::Cluster { stray: None },
        }
    }
}

/// Where Redis is: the URL as given (credentials included), the CA of a
/// private TLS server, and how the data nodes are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionSpec {
    pub url: String,
    pub tls_ca: Option<PathBuf>,
    pub topology: Topology,
}

impl ConnectionSpec {
    /// One Redis at `url`.
    pub fn single(url: impl Into<String>, tls_ca: Option<PathBuf>) -> ConnectionSpec {
        ConnectionSpec { url: url.into(), tls_ca, topology: Topology::Single }
    }

    /// Every input that breaks its rule: a URL the redis crate cannot use, a
    /// CA file that is not there, sentinels or a primary's name that cannot
    /// be used, or one of them without the other.
    pub fn check(&self) -> Vec<Invalid> {
        let mut bad = Vec::new();
        if let Err(e) = url_problem(&self.url) {
            bad.push(Invalid::new(Field::RedisUrl, &self.url, e));
        }
        if let Some(ca) = &self.tls_ca
            && !ca.is_file()
        {
            bad.push(Invalid::new(Field::TlsCa, &ca.display().to_string(), Problem::CaFile));
        }
        if let Topology::Sentinel { sentinels: list, master } = &self.topology {
            match (list.is_empty(), master.is_empty()) {
                (true, _) => bad.push(Invalid::new(Field::Sentinels, list, Problem::SentinelHalf)),
                (false, true) => bad.push(Invalid::new(Field::SentinelMaster, master, Problem::SentinelHalf)),
                (false, false) => {
                    if let Err(p) = sentinels(list) {
                        bad.push(Invalid::new(Field::Sentinels, list, p));
                    }
                    if let Err(p) = master_name(master) {
                        bad.push(Invalid::new(Field::SentinelMaster, master, p));
                    }
                }
            }
        }
        if let Topology::Cluster { stray } = &self.topology {
            if let Some(stray) = stray {
                bad.push(Invalid::new(Field::Cluster, stray, Problem::ClusterAndSentinel));
            }
            bad.extend(self.cluster_problem().map(|(field, value, p)| Invalid::new(field, &value, p)));
        }
        bad
    }

    /// What a cluster cannot use of the URL and the CA file.
    fn cluster_problem(&self) -> Option<(Field, String, Problem)> {
        use redis::IntoConnectionInfo as _;
        if let Some(ca) = &self.tls_ca {
            return Some((Field::TlsCa, ca.display().to_string(), Problem::ClusterCa));
        }
        let info = self.url.as_str().into_connection_info().ok()?;
        if matches!(info.addr(), redis::ConnectionAddr::Unix(_)) {
            return Some((Field::RedisUrl, self.url.clone(), Problem::ClusterUrl));
        }
        (info.redis_settings().db() != 0).then(|| (Field::RedisUrl, self.url.clone(), Problem::ClusterDb))
    }

    /// The server to connect to.
    ///
    /// # Errors
    /// [`Error::BadUrl`], [`Error::TlsCa`] or [`Error::Invalid`] for input
    /// that cannot be used.
    pub fn target(&self) -> Result<Target, Error> {
        match &self.topology {
            Topology::Single => Target::new(&self.url, self.tls_ca.as_deref()),
            Topology::Sentinel { sentinels: list, master } => {
                let bad = self.check();
                let refused = bad.iter().find(|i| matches!(i.field, Field::Sentinels | Field::SentinelMaster));
                if let Some(invalid) = refused {
                    return Err(Error::Invalid(invalid.to_string()));
                }
                let addrs = sentinels(list).map_err(|p| Error::Invalid(p.to_string()))?;
                Target::sentinel(&self.url, self.tls_ca.as_deref(), &addrs, master)
            }
            Topology::Cluster { .. } => {
                let refused = self.check().into_iter().find(|i| matches!(i.field, Field::Cluster | Field::TlsCa));
                if let Some(invalid) = refused {
                    return Err(Error::Invalid(invalid.to_string()));
                }
                if let Some((field, value, problem)) = self.cluster_problem() {
                    return Err(Error::Invalid(Invalid::new(field, &value, problem).to_string()));
                }
                Target::cluster(&self.url, self.tls_ca.as_deref())
            }
        }
    }
}

/// Sentinel addresses: `HOST:PORT`, separated by commas (an IPv6 host in
/// brackets: `[::1]:26379`).
///
/// # Errors
/// [`Problem::Sentinels`].
pub fn sentinels(list: &str) -> Result<Vec<String>, Problem> {
    let addrs: Vec<String> = list.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_owned).collect();
    let good = |a: &String| {
        a.rsplit_once(':').is_some_and(|(host, port)| {
            !host.is_empty()
                && !host.contains(|c: char| c.is_whitespace() || "/@?#".contains(c))
                && port.parse::<u16>().is_ok_and(|p| p > 0)
        })
    };
    if addrs.is_empty() || !addrs.iter().all(good) { Err(Problem::Sentinels) } else { Ok(addrs) }
}

/// The name the sentinels know the primary by.
///
/// # Errors
/// [`Problem::MasterName`].
pub fn master_name(s: &str) -> Result<String, Problem> {
    if s.is_empty() || s.chars().count() > 100 || s.contains(|c: char| c.is_whitespace() || c.is_control()) {
        Err(Problem::MasterName)
    } else {
        Ok(s.to_owned())
    }
}

fn url_problem(url: &str) -> Result<(), Problem> {
    match Target::new(url, None) {
        Ok(_) => Ok(()),
        Err(Error::BadUrl { reason, .. }) => Err(Problem::Url(reason)),
        Err(other) => Err(Problem::Url(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_lasts_a_minute_to_half_a_day_and_its_note_is_a_line() {
        assert_eq!(ack_for("90m"), Ok(Duration::from_secs(5400)));
        assert_eq!(ack_for("1h"), Ok(DEFAULT_ACK_FOR));
        assert!(matches!(ack_for("30s"), Err(Problem::OutOfRange { .. })));
        assert!(matches!(ack_for("13h"), Err(Problem::OutOfRange { .. })));
        assert!(matches!(ack_for("90"), Err(Problem::Duration(DurationError::NoUnit))));
        assert!(ack_lasts(Duration::from_secs(3600)).is_ok());
        assert_eq!(ack_note(" looking at wh-a "), Ok("looking at wh-a".to_owned()));
        assert!(ack_note(&"好".repeat(MAX_ACK_NOTE_CHARS)).is_ok(), "counted in characters");
        const { assert!(MAX_ACK_NOTE_CHARS * 4 <= 1024, "the probe reads every note the rule lets through") };
        assert_eq!(ack_note(&"x".repeat(201)), Err(Problem::NoteTooLong(201)));
        assert_eq!(ack_note("two\nlines"), Err(Problem::NoteLines));
    }

    #[test]
    fn each_timing_field_has_its_range() {
        assert_eq!(duration_for(Field::Poll, "100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(
            duration_for(Field::Poll, "50ms"),
            Err(Problem::OutOfRange { min: Duration::from_millis(100), max: HOUR })
        );
        assert!(duration_for(Field::HeartbeatGrace, "400ms").is_err());
        assert!(duration_for(Field::HeartbeatGrace, "500ms").is_ok());
        assert!(duration_for(Field::FailoverWindow, "0s").is_ok());
        assert!(duration_for(Field::StartGrace, "61m").is_err());
        assert_eq!(duration_for(Field::StartGrace, "2h").unwrap_err().to_string(), "out of range; give 0s to 1h");
        assert_eq!(duration_for(Field::Poll, "5").unwrap_err().to_string(), "give a unit: 500ms, 10s, 5m or 1h");
        assert_eq!(range(Field::Lease), None, "a lease has a minimum only");
    }

    #[test]
    fn a_lease_fits_three_renewals() {
        assert_eq!(lease("300ms"), Ok(MIN_LEASE));
        assert_eq!(lease("299ms"), Err(Problem::LeaseTooShort));
        assert_eq!(lease("299ms").unwrap_err().to_string(), "too short; give 300ms or more (default 30s)");
        assert_eq!(lease("30"), Err(Problem::Duration(DurationError::NoUnit)));
    }

    #[test]
    fn user_names_that_could_widen_an_acl_pattern_are_refused() {
        assert!(check_user("alice").is_ok());
        assert!(check_user("a.b-c_d@site").is_ok());
        for bad in ["", "ali*", "a b", "x?", "[a]", "a\n", &"x".repeat(65)] {
            assert!(check_user(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_reason_is_one_line_of_bounded_length() {
        assert_eq!(check_reason("stock count tonight").unwrap(), "stock count tonight");
        assert!(check_reason(&"ü".repeat(MAX_REASON_CHARS)).is_ok(), "counted in characters, not bytes");
        let long = check_reason(&"x".repeat(MAX_REASON_CHARS + 1)).unwrap_err().to_string();
        assert_eq!(long, "the reason is 201 characters long; give at most 200, one sentence");
        assert!(check_reason("two\nlines").is_err());
    }

    #[test]
    fn job_names_become_hash_tags() {
        for good in ["outbound", "in-bound.2", "商品", &"x".repeat(100)] {
            assert_eq!(job_name(good).as_deref(), Ok(good), "{good}");
        }
        for bad in ["", "out bound", "out\tbound", "{outbound}", "a}b", &"x".repeat(101)] {
            assert_eq!(job_name(bad), Err(Problem::JobName), "{bad:?}");
        }
        assert_eq!(job_names(" outbound, inbound ,"), Ok(vec!["outbound".to_owned(), "inbound".to_owned()]));
        assert_eq!(job_names(" , ").unwrap_err().problem, Problem::NoJob);
        let bad = job_names("outbound, in{bound").unwrap_err();
        assert_eq!(bad.to_string(), "Job \"in{bound\": a job name is 1 to 100 characters without spaces or braces");
    }

    #[test]
    fn names_and_lock_keys_follow_their_rules() {
        assert_eq!(name("a.b-c_d@site").as_deref(), Ok("a.b-c_d@site"));
        for bad in ["", "a b", "ali*", &"x".repeat(65)] {
            assert_eq!(name(bad), Err(Problem::Name), "{bad:?}");
        }
        assert_eq!(lock_key("outboundLock").as_deref(), Ok("outboundLock"));
        assert_eq!(lock_key("{outbound}:lock").as_deref(), Ok("{outbound}:lock"));
        for bad in ["", "a lock", "a\nb"] {
            assert_eq!(lock_key(bad), Err(Problem::LockKey), "{bad:?}");
        }
    }

    #[test]
    fn a_job_spec_becomes_keys_engine_config_and_watch_options() {
        let spec = JobSpec {
            name: "inbound".into(),
            lock_key: Some("inLock".into()),
            heartbeats: false,
            timing: Timing {
                heartbeat_grace: Duration::from_secs(7),
                failover_window: Duration::from_secs(3),
                start_grace: Duration::from_secs(20),
                poll: Duration::from_millis(250),
            },
        };
        assert!(spec.check().is_empty());
        let keys = spec.keys();
        assert_eq!(
            (keys.job.as_str(), keys.lock.as_str(), keys.fence()),
            ("inbound", "inLock", "{inbound}:fence".into())
        );
        let engine = spec.engine();
        assert!(!engine.heartbeats);
        assert_eq!((engine.heartbeat_grace_ms, engine.failover_window_ms, engine.start_grace_ms), (7000, 3000, 20_000));
        assert_eq!(spec.watch_options().poll, Duration::from_millis(250));
        assert_eq!(JobSpec::default().keys().lock, "{outbound}:lock");
        assert_eq!(JobSpec::default().engine(), status::Config::default());
    }

    #[test]
    fn a_job_spec_names_every_bad_input() {
        let spec = JobSpec {
            name: "out bound".into(),
            lock_key: Some("".into()),
            timing: Timing { poll: Duration::from_millis(10), heartbeat_grace: HOUR * 2, ..Timing::default() },
            ..JobSpec::default()
        };
        let bad = spec.check();
        let fields: Vec<Field> = bad.iter().map(|i| i.field).collect();
        assert_eq!(fields, [Field::Jobs, Field::LockKey, Field::HeartbeatGrace, Field::Poll]);
        assert_eq!(bad[3].to_string(), "Poll interval \"10ms\": out of range; give 100ms to 1h");
        assert_eq!(bad[3].with_flag(), "--interval 10ms: out of range; give 100ms to 1h");
    }

    #[test]
    fn a_connection_spec_checks_url_and_ca_file_without_showing_the_password() {
        assert!(ConnectionSpec::single("redis://alice:pw@db:6379", None).check().is_empty());
        let bad = ConnectionSpec::single("http://bob:hunter2@db", Some("/no/such/ca.pem".into())).check();
        assert_eq!(bad.len(), 2);
        assert_eq!(bad[0].field, Field::RedisUrl);
        let sentence = bad[0].to_string();
        assert!(sentence.starts_with("Redis URL \"http://bob:***@db"), "{sentence}");
        assert!(sentence.contains("use redis://"), "{sentence}");
        assert!(!sentence.contains("hunter2") && !format!("{:?}", bad[0]).contains("hunter2"));
        assert_eq!((bad[1].field, &bad[1].problem), (Field::TlsCa, &Problem::CaFile));
    }

    #[test]
    fn sentinel_inputs_come_in_pairs_and_follow_their_rules() {
        assert_eq!(Topology::from_inputs(None, Some(" ")), Topology::Single);
        let spec = |s: Option<&str>, m: Option<&str>| ConnectionSpec {
            topology: Topology::from_inputs(s, m),
            ..ConnectionSpec::single("redis://alice:pw@ignored:1", None)
        };
        let good = spec(Some("10.0.0.1:26379, [::1]:26380"), Some("mymaster"));
        assert!(good.check().is_empty());
        assert!(good.target().unwrap().host().starts_with("mymaster (Sentinel 10.0.0.1:26379,[::1]:26380)"));
        assert_eq!(sentinels("a:1,b:2"), Ok(vec!["a:1".to_owned(), "b:2".to_owned()]));
        for bad in ["", "host", "host:", "host:0", "host:99999", "a b:1", ":26379", "redis://h:1"] {
            assert_eq!(sentinels(bad), Err(Problem::Sentinels), "{bad:?}");
        }
        let half = spec(Some("a:1"), None).check();
        assert_eq!((half[0].field, &half[0].problem), (Field::SentinelMaster, &Problem::SentinelHalf));
        let half = spec(None, Some("mymaster")).check();
        assert_eq!(half[0].with_flag(), format!("--sentinel : {}", Problem::SentinelHalf));
        let both = spec(Some("a"), Some("my master")).check();
        let fields: Vec<Field> = both.iter().map(|i| i.field).collect();
        assert_eq!(fields, [Field::Sentinels, Field::SentinelMaster]);
        let err = spec(Some("a"), Some("m")).target().unwrap_err().to_string();
        assert_eq!(err, format!("Sentinels \"a\": {}", Problem::Sentinels));
    }

    #[test]
    fn a_cluster_refuses_sentinels_a_socket_a_database_and_a_private_ca_one_sentence_each() {
        let spec = |url: &str, ca: Option<&str>, t: Topology| ConnectionSpec {
            topology: t.or_cluster(true),
            ..ConnectionSpec::single(url, ca.map(PathBuf::from))
        };
        let good = spec("redis://alice:pw@10.0.0.1:7000", None, Topology::Single);
        assert!(good.check().is_empty());
        assert_eq!(good.target().unwrap().host(), "10.0.0.1:7000 (Cluster)");
        assert!(good.target().unwrap().is_cluster());
        let both = spec("redis://db:7000", None, Topology::from_inputs(Some("a:1"), Some("m"))).check();
        assert_eq!((both[0].field, &both[0].problem), (Field::Cluster, &Problem::ClusterAndSentinel));
        let socket = spec("unix:///run/redis.sock", None, Topology::Single);
        assert_eq!(socket.check()[0].problem, Problem::ClusterUrl);
        assert!(socket.target().unwrap_err().to_string().contains("not a socket path"));
        assert_eq!(spec("redis://db:7000/2", None, Topology::Single).check()[0].problem, Problem::ClusterDb);
        let ca = spec("rediss://db:7000", Some("/etc/hostname"), Topology::Single);
        assert_eq!(ca.check().iter().map(|i| &i.problem).collect::<Vec<_>>(), [&Problem::ClusterCa]);
        let err = ca.target().unwrap_err().to_string();
        assert!(
            err.starts_with("TLS CA file \"/etc/hostname\": a private CA file cannot be used with a Redis Cluster"),
            "{err}"
        );
        assert_eq!(Topology::Single.or_cluster(false), Topology::Single);
    }
}
