//! The library's errors: each says what failed, where, and what to do.
//!
//! What was being done is an [`Action`] and where is an [`Endpoint`], so a
//! message's wording and hint follow from types, never from the wording of
//! another message.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use redis::RedisError;

use crate::address::Endpoint;

/// Everything the library reports to its callers.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Redis URL could not be understood; `url` is shown with its
    /// password hidden (build it with `bad_url`).
    #[error("the Redis URL {url} is not valid ({reason}); use redis://[user:password@]host:port or rediss:// for TLS")]
    BadUrl { url: String, reason: String },

    /// The CA file given for TLS cannot be read or holds no usable certificate.
    #[error("cannot read the TLS CA file {}: {cause}; give a PEM file of the CA that signed the server's certificate", path.display())]
    TlsCa { path: PathBuf, cause: String },

    /// Redis could not be reached, or it failed or refused a command.
    #[error("{action} {} {host} failed: {cause}; {hint}", action.preposition())]
    Redis { action: Action, host: Endpoint, cause: String, hint: &'static str, kind: RedisFailure },

    /// Redis did not answer within the time lockwatch gives it: unreachable
    /// for now.
    #[error(
        "{action} {} {host} failed: no answer within {}; {}",
        action.preposition(),
        crate::duration::human_duration(u64::try_from(after.as_millis()).unwrap_or(u64::MAX)),
        timeout_hint(action, host)
    )]
    Timeout { action: Action, host: Endpoint, after: Duration },

    /// Something was read that has not the expected shape.
    #[error("the data of {key} cannot be read: {what}; check what else writes to these keys")]
    Unreadable { key: String, what: String },

    /// The job's command could not be started.
    #[error("cannot start the job {command}: {cause}; check the command after --")]
    JobStart { command: String, cause: String },

    /// The worker cannot listen for a stop signal, so it could not stop its job cleanly.
    #[error("cannot listen for {signal}: {cause}; the worker cannot stop its job cleanly without it")]
    Signal { signal: &'static str, cause: String },

    /// Another live worker process runs under this worker's node name.
    #[error(
        "another worker already runs as node {node} ({by}); two workers under one name could run the job at once, so this one stops: give each server its own --node (cloned hosts share a host name), or stop the other one"
    )]
    NodeTaken {
        node: String,
        /// The other process, as its heartbeat names it (pid, host, last beat).
        by: String,
    },

    /// An input that breaks its rule: which, as given, and why (the
    /// command line's flag in front).
    #[error("{}", .0.with_flag())]
    Input(Box<crate::refusal::Invalid>),

    /// A flip without a user name, none given and none known.
    #[error("no user name is known; pass --user NAME")]
    NoUser,

    /// A worker's lock key outside the job's Redis Cluster slot.
    #[error(
        "the lock key {lock} is in another Redis Cluster slot than the job's keys ({prefix}:…), and the worker's scripts need them in one; name the lock with the job's hash tag (such as {prefix}:lock) or leave --lock-key out"
    )]
    LockSlot { lock: String, prefix: String },

    /// A sentinel's address without a port.
    #[error("the sentinel address {address:?} has no port; give HOST:PORT[,HOST:PORT…]")]
    SentinelNoPort { address: String },

    /// A socket path given as a Redis Cluster's node.
    #[error("{}", crate::refusal::CLUSTER_NO_SOCKET)]
    ClusterSocket,

    /// A private CA file given for a Redis Cluster.
    #[error("{}", crate::refusal::CLUSTER_NO_CA)]
    ClusterCa,

    /// Sharded pub/sub asked of a Redis that is no cluster.
    #[error("sharded pub/sub is for a Redis Cluster")]
    NotCluster,
}

impl From<crate::refusal::Invalid> for Error {
    fn from(invalid: crate::refusal::Invalid) -> Error {
        Error::Input(Box::new(invalid))
    }
}

/// Why a Redis command failed, in the terms the status and the UI need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedisFailure {
    /// Network: refused, reset, timed out, name not found, TLS.
    Unreachable,
    /// Wrong user or password.
    Auth,
    /// The ACL does not allow the command or key (`NOPERM`).
    Permission,
    /// Any other server error.
    Server,
}

/// What lockwatch was doing with Redis when something failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Opening a connection.
    Connecting,
    /// Opening a pub/sub connection.
    Subscribing,
    /// The one-round-trip read of the job's keys.
    ReadingJob,
    /// Reading a lock that lives in another cluster slot than the job.
    ReadingLock,
    /// Redis `TIME`, to date a flag flip.
    ReadingTime,
    /// The registry of supervisors.
    ReadingUsers,
    /// The registry of jobs (`--job '*'`).
    ReadingJobs,
    /// Adding the worker's job to the registry of jobs.
    RegisteringJob,
    /// `INFO memory`: whether Redis may evict the job's keys.
    ReadingMemoryPolicy,
    /// Writing a supervisor's flag key.
    WritingFlag { key: String },
    /// A supervisor's flag, when the ACL refused it: said in their words.
    SettingFlag { user: String, job: String },
    /// A worker's heartbeat.
    WritingHeartbeat,
    /// One operation of the lock script (`acquire`, `renew`, `release`…).
    Lock { op: String, key: String },
    /// Creating the fence counter of a Redis known to be new.
    SeedingFence { key: String },
    /// Appending an entry of this type to the job's event stream.
    Recording { kind: String },
    /// Reading the job's event stream.
    ReadingStream { key: String },
    /// Reading the reasons kept with the supervisors' flags.
    ReadingReasons,
    /// Writing or withdrawing a supervisor's "I'm on it" for a job.
    Acknowledging { user: String, job: String },
    /// Asking the sentinels which node is the primary named `master`.
    Resolving { master: String },
    /// Cutting a supervisor's hash that holds junk back to its fields.
    Trimming { key: String },
}

impl Action {
    /// "connecting *to* a host", "reading the job *on* a host".
    pub fn preposition(&self) -> &'static str {
        match self {
            Action::Connecting | Action::Subscribing => "to",
            Action::Resolving { .. } => "through",
            _ => "on",
        }
    }

    /// Whether a connection is being made, when a timeout may be a TLS
    /// handshake that never came.
    fn connects(&self) -> bool {
        matches!(self, Action::Connecting | Action::Subscribing | Action::Resolving { .. })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Connecting => f.write_str("connecting"),
            Action::Subscribing => f.write_str("subscribing"),
            Action::ReadingJob => f.write_str("reading the job"),
            Action::ReadingLock => f.write_str("reading the lock"),
            Action::ReadingTime => f.write_str("reading the time"),
            Action::ReadingUsers => f.write_str("reading the users"),
            Action::ReadingJobs => write!(f, "reading the registry of jobs {}", crate::keys::JOBS),
            Action::RegisteringJob => write!(f, "adding the job to {}", crate::keys::JOBS),
            Action::ReadingMemoryPolicy => f.write_str("reading the memory policy"),
            Action::WritingFlag { key } => write!(f, "writing {key}"),
            Action::SettingFlag { user, job } => write!(f, "setting {user}'s flag of job {job}"),
            Action::WritingHeartbeat => f.write_str("writing the heartbeat"),
            Action::Lock { op, key } => write!(f, "{op} of lock {key}"),
            Action::SeedingFence { key } => write!(f, "starting the fence counter {key}"),
            Action::Recording { kind } => write!(f, "recording {kind}"),
            Action::ReadingStream { key } => write!(f, "reading {key}"),
            Action::ReadingReasons => f.write_str("reading the flags' reasons"),
            Action::Acknowledging { user, job } => write!(f, "setting {user}'s \"on it\" for job {job}"),
            Action::Resolving { master } => write!(f, "finding the primary {master}"),
            Action::Trimming { key } => write!(f, "trimming {key}"),
        }
    }
}

impl Error {
    /// The class of a Redis failure, `None` for other errors. A timeout is
    /// [`RedisFailure::Unreachable`].
    pub fn redis_failure(&self) -> Option<RedisFailure> {
        match self {
            Error::Redis { kind, .. } => Some(*kind),
            Error::Timeout { .. } => Some(RedisFailure::Unreachable),
            _ => None,
        }
    }
}

/// A URL that cannot be used, said with its password hidden.
pub(crate) fn bad_url(url: &str, reason: &str) -> Error {
    Error::BadUrl { url: crate::address::redact(url), reason: one_line(reason) }
}

/// What to do about a server that did not answer in time: over TLS, a
/// connection that timed out may be a handshake the server never began.
fn timeout_hint(action: &Action, host: &Endpoint) -> &'static str {
    if host.tls() && action.connects() {
        "no TLS handshake in time; if the server does not use TLS, use redis:// instead of rediss://"
    } else {
        "check the network and the server's load"
    }
}

/// Wraps a Redis error into one sentence with a hint fitting its cause.
pub fn describe(err: RedisError, action: Action, host: &Endpoint) -> Error {
    let code = err.code().unwrap_or_default().to_owned();
    let (kind, hint) = if code == "NOPERM" {
        (RedisFailure::Permission, "ask the Redis admin to grant the rules printed by `lockwatch acl --user <you>`")
    } else if err.to_string().contains("Function not found") {
        // FCALL_RO of the probe on a Redis that has not loaded it, by a
        // supervisor, who may not load it (see `probe::run_read_only`).
        (
            RedisFailure::Permission,
            "lockwatch's read function is not loaded on this Redis, and only an admin may load it: `lockwatch acl` loads it when the admin runs it against this Redis, and so does a worker logging in as an admin",
        )
    } else if code == "WRONGPASS"
        || code == "NOAUTH"
        || err.kind() == redis::ErrorKind::AuthenticationFailed
        // A server that wants a login drops an unauthenticated client's
        // larger requests with "Protocol error: unauthenticated multibulk …".
        || err.to_string().contains("unauthenticated")
    {
        (
            RedisFailure::Auth,
            "check the user and password in the Redis URL (or LOCKWATCH_REDIS_URL); in a URL, a password's @ : / ? # % are written %40 %3A %2F %3F %23 %25",
        )
    } else if code == "READONLY" {
        // The node was demoted to a replica by a failover: for the caller
        // it is gone, so it drops the connection and finds the new primary.
        (
            RedisFailure::Unreachable,
            "this node is a replica now (a failover happened); lockwatch connects to the new primary",
        )
    } else if matches!(code.as_str(), "MOVED" | "ASK" | "TRYAGAIN" | "CLUSTERDOWN")
        || err.kind() == redis::ErrorKind::ClusterConnectionNotFound
    {
        // A slot on the move, or a cluster reshaping itself: a fresh
        // connection asks the cluster where the job's keys are now.
        (
            RedisFailure::Unreachable,
            "the job's cluster slot is moving or the cluster is not ready; lockwatch asks the cluster again",
        )
    } else if err.kind() == redis::ErrorKind::Parse {
        (
            RedisFailure::Unreachable,
            "something answers there but it does not speak Redis; check the port, and use rediss:// if the server expects TLS",
        )
    } else if err.is_connection_refusal() {
        (RedisFailure::Unreachable, "check that redis-server runs there and that host and port are right")
    } else if err.is_timeout() && host.tls() && action.connects() {
        (RedisFailure::Unreachable, timeout_hint(&action, host))
    } else if err.is_timeout() {
        (RedisFailure::Unreachable, "the server did not answer in time; check the network and the server's load")
    } else if err.is_io_error() || err.is_connection_dropped() || err.is_unrecoverable_error() {
        (RedisFailure::Unreachable, "check the host name, the port, TLS (rediss://) and the network")
    } else {
        (RedisFailure::Server, "check the server's log and that these keys are used only by lockwatch or Redisson")
    };
    Error::Redis { action, host: host.clone(), cause: one_line(&err.to_string()), hint, kind }
}

/// The first line of a driver message, without its trailing error-kind tag
/// (`… - InvalidClientConfig`): one sentence, never a dump.
pub(crate) fn one_line(message: &str) -> String {
    let first = message.lines().next().unwrap_or_default().trim();
    match first.rsplit_once(" - ") {
        Some((text, tag))
            if !tag.is_empty()
                && tag.chars().all(|c| c.is_ascii_alphanumeric())
                && tag.starts_with(|c: char| c.is_ascii_uppercase()) =>
        {
            text.to_owned()
        }
        _ => first.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain() -> Endpoint {
        Endpoint::new("db:6379", false)
    }

    #[test]
    fn a_timeout_is_unreachable_and_says_what_waited_where() {
        let err = Error::Timeout { action: Action::ReadingJob, host: plain(), after: Duration::from_secs(2) };
        assert_eq!(err.redis_failure(), Some(RedisFailure::Unreachable));
        assert_eq!(
            err.to_string(),
            "reading the job on db:6379 failed: no answer within 2 s; check the network and the server's load"
        );
    }

    #[test]
    fn the_preposition_follows_the_action() {
        let refused = || RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        let connecting = describe(refused(), Action::Connecting, &plain()).to_string();
        assert!(connecting.starts_with("connecting to db:6379 failed: "), "{connecting}");
        let writing = describe(refused(), Action::WritingFlag { key: "{j}:enabled:alice".into() }, &plain());
        assert!(writing.to_string().starts_with("writing {j}:enabled:alice on db:6379 failed: "), "{writing}");
    }

    #[test]
    fn a_tls_hint_only_for_a_tls_connection_that_timed_out() {
        let timeout = || RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut));
        let tls = Endpoint::new("db:6380", true);
        let handshake = describe(timeout(), Action::Connecting, &tls).to_string();
        assert!(handshake.starts_with("connecting to db:6380 (TLS) failed: "), "{handshake}");
        assert!(handshake.contains("no TLS handshake in time"), "{handshake}");
        let command = describe(timeout(), Action::ReadingJob, &tls).to_string();
        assert!(command.contains("did not answer in time") && !command.contains("handshake"), "{command}");
        // A socket path that happens to end in "(TLS)" is no TLS connection.
        let socket = Endpoint::new("/run/redis(TLS)", false);
        assert!(!describe(timeout(), Action::Connecting, &socket).to_string().contains("handshake"));
    }

    #[test]
    fn driver_messages_become_one_line_without_kind_tags() {
        assert_eq!(one_line("Password authentication failed - AuthenticationFailed"), "Password authentication failed");
        assert_eq!(
            one_line("Incompatible type - Parse error at 1\nUnexpected `33`"),
            "Incompatible type - Parse error at 1"
        );
        assert_eq!(one_line("Connection refused (os error 111)"), "Connection refused (os error 111)");
    }

    #[test]
    fn a_request_before_a_login_is_a_missing_login() {
        // (The driver's kind for it is a server error; the words decide.)
        let err = redis::RedisError::from((
            redis::ErrorKind::Client,
            "Protocol error",
            "unauthenticated multibulk length".to_owned(),
        ));
        let said = describe(err, Action::ReadingJob, &plain());
        assert_eq!(said.redis_failure(), Some(RedisFailure::Auth), "{said}");
        assert!(said.to_string().contains("check the user and password"), "{said}");
    }

    #[test]
    fn a_refused_login_says_how_a_password_is_written_in_a_url() {
        let err = redis::RedisError::from((redis::ErrorKind::AuthenticationFailed, "Password authentication failed"));
        let said = describe(err, Action::Connecting, &plain()).to_string();
        assert!(said.contains("check the user and password") && said.contains("%40"), "{said}");
    }
}
