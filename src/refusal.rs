//! What a refused input is, for every rule of `input` and every error
//! that carries one: the [`Field`] it was given in, the value as given and
//! the [`Problem`], one sentence together ([`Invalid`]); and the limits the
//! rules name in their sentences. A leaf: the library's error carries an
//! [`Invalid`] without reaching up into the rules.

use std::time::Duration;

use serde::Serialize;

use crate::address::redact;
use crate::duration::{DurationError, format_duration};

/// The shortest lease: renewals every third of it must still fit.
pub const MIN_LEASE: Duration = Duration::from_millis(300);

/// The longest lease: a worker that froze keeps the job from every other
/// server for that long, and Redis takes no longer expiry.
pub const MAX_LEASE: Duration = Duration::from_secs(3600);

/// The longest note an acknowledgement carries, in characters: what one is
/// doing, not a report. The probe reads at most 1024 bytes of it, which
/// this many characters of any script fit in.
pub const MAX_ACK_NOTE_CHARS: usize = 200;

/// The longest reason a flip may carry, in characters: a sentence, not a report.
pub const MAX_REASON_CHARS: usize = 200;

/// Why a cluster cannot be reached at a socket path.
pub const CLUSTER_NO_SOCKET: &str =
    "a Redis Cluster node is given as redis://[user:password@]host:port (rediss:// for TLS), not a socket path";
/// Why a cluster cannot take a private CA file.
pub const CLUSTER_NO_CA: &str = "a private CA file cannot be used with a Redis Cluster; add the CA to the system's trust store (or point SSL_CERT_FILE at it) and leave this empty";

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
    /// The reason given with a flip.
    Reason,
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
            Field::Reason => "--reason",
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
            Field::Reason => "Reason",
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
    /// A lease so long that a frozen worker would keep the job for good.
    #[error(
        "too long; give {} or less: a worker that froze would keep the job from every other server that long (default 30s)",
        format_duration(MAX_LEASE)
    )]
    LeaseTooLong,
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
    /// A flip's reason longer than [`MAX_REASON_CHARS`].
    #[error("{0} characters long; give at most {MAX_REASON_CHARS}, one sentence")]
    ReasonTooLong(usize),
    #[error("a reason is one line without control characters")]
    ReasonLines,
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
    #[error("{}", CLUSTER_NO_SOCKET)]
    ClusterUrl,
    /// A database other than 0 on a cluster.
    #[error("a Redis Cluster has only database 0; leave the /N out of the URL")]
    ClusterDb,
    /// A private CA file for a cluster.
    #[error("{}", CLUSTER_NO_CA)]
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
    /// `value` of `field` refused for `problem` (a URL with its password hidden).
    pub fn new(field: Field, value: &str, problem: Problem) -> Invalid {
        let value = if field == Field::RedisUrl { redact(value) } else { value.to_owned() };
        Invalid { field, value, problem }
    }

    /// The same sentence with the command line's flag in front.
    pub fn with_flag(&self) -> String {
        format!("{} {}: {}", self.field.flag(), self.value, self.problem)
    }
}
