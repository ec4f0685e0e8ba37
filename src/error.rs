//! The library's errors: each says what failed, where, and what to do.

use redis::RedisError;

/// Everything the library reports to its callers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Redis URL could not be understood; `url` is shown with its
    /// password hidden (build it with `bad_url`).
    #[error("the Redis URL {url} is not valid ({reason}); use redis://[user:password@]host:port or rediss:// for TLS")]
    BadUrl { url: String, reason: String },

    /// Redis could not be reached, or it failed or refused a command.
    #[error("{action} {prep} {host} failed: {cause}; {hint}")]
    Redis { action: String, prep: &'static str, host: String, cause: String, hint: &'static str, kind: RedisFailure },

    /// Something was read that has not the expected shape.
    #[error("the data of {key} cannot be read: {what}; check what else writes to these keys")]
    Unreadable { key: String, what: String },

    /// A user name or other input that cannot be used as given.
    #[error("{0}")]
    Invalid(String),
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

impl Error {
    /// The class of a Redis failure, `None` for other errors.
    pub fn redis_failure(&self) -> Option<RedisFailure> {
        match self {
            Error::Redis { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// A URL that cannot be used, said with its password hidden.
pub(crate) fn bad_url(url: &str, reason: &str) -> Error {
    Error::BadUrl { url: crate::connect::redact(url), reason: one_line(reason) }
}

/// Wraps a Redis error into one sentence with a hint fitting its cause.
pub fn describe(err: RedisError, action: &str, host: &str) -> Error {
    let code = err.code().unwrap_or_default().to_owned();
    let tls = host.ends_with("(TLS)");
    let (kind, hint) = if code == "NOPERM" {
        (RedisFailure::Permission, "ask the Redis admin to grant the rules printed by `lockwatch acl --user <you>`")
    } else if code == "WRONGPASS" || code == "NOAUTH" || err.kind() == redis::ErrorKind::AuthenticationFailed {
        (RedisFailure::Auth, "check the user and password in the Redis URL (or LOCKWATCH_REDIS_URL)")
    } else if err.kind() == redis::ErrorKind::Parse {
        (
            RedisFailure::Unreachable,
            "something answers there but it does not speak Redis; check the port, and use rediss:// if the server expects TLS",
        )
    } else if err.is_connection_refusal() {
        (RedisFailure::Unreachable, "check that redis-server runs there and that host and port are right")
    } else if err.is_timeout() && tls {
        (
            RedisFailure::Unreachable,
            "no TLS handshake in time; if the server does not use TLS, use redis:// instead of rediss://",
        )
    } else if err.is_timeout() {
        (RedisFailure::Unreachable, "the server did not answer in time; check the network and the server's load")
    } else if err.is_io_error() || err.is_connection_dropped() || err.is_unrecoverable_error() {
        (RedisFailure::Unreachable, "check the host name, the port, TLS (rediss://) and the network")
    } else {
        (RedisFailure::Server, "check the server's log and that these keys are used only by lockwatch or Redisson")
    };
    let prep = if action.starts_with("connecting") || action.starts_with("subscribing") { "to" } else { "on" };
    Error::Redis {
        action: action.to_owned(),
        prep,
        host: host.to_owned(),
        cause: one_line(&err.to_string()),
        hint,
        kind,
    }
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

    #[test]
    fn driver_messages_become_one_line_without_kind_tags() {
        assert_eq!(one_line("Password authentication failed - AuthenticationFailed"), "Password authentication failed");
        assert_eq!(
            one_line("Incompatible type - Parse error at 1\nUnexpected `33`"),
            "Incompatible type - Parse error at 1"
        );
        assert_eq!(one_line("Connection refused (os error 111)"), "Connection refused (os error 111)");
    }
}
