//! Where Redis is and how to talk to it: the URL (TLS and ACL user included),
//! connections with timeouts, and a printable host that never shows a password.

use std::path::Path;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo};

use crate::error::{Error, describe};

/// Default when neither `--redis` nor `LOCKWATCH_REDIS_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// How long to wait for a connection or an answer before calling Redis unreachable.
const TIMEOUT: Duration = Duration::from_secs(3);

/// A Redis server to connect to.
#[derive(Clone)]
pub struct Target {
    client: Client,
    /// `host:port` for messages: never the password.
    host: String,
    /// The ACL user of the URL, if any: the default supervisor name.
    user: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("host", &self.host).field("user", &self.user).finish_non_exhaustive()
    }
}

impl Target {
    /// Parses a `redis://` or `rediss://` URL; `tls_ca` is a PEM file of the CA
    /// that signed the server's certificate, for servers with a private CA.
    ///
    /// # Errors
    /// [`Error::BadUrl`] when the URL cannot be used, [`Error::Invalid`] when the CA file cannot be read.
    pub fn new(url: &str, tls_ca: Option<&Path>) -> Result<Self, Error> {
        let bad = |reason: String| Error::BadUrl { url: redact(url), reason: crate::error::one_line(&reason) };
        let info = url.into_connection_info().map_err(|e| bad(e.to_string()))?;
        // CLIENT SETINFO is optional; servers before 7.2 do not know it, and
        // a supervisor's ACL user (`lockwatch acl`) is not granted it.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        let host = match info.addr() {
            ConnectionAddr::Tcp(host, port) => format!("{host}:{port}"),
            ConnectionAddr::TcpTls { host, port, .. } => format!("{host}:{port} (TLS)"),
            ConnectionAddr::Unix(path) => path.display().to_string(),
            _ => "redis".to_owned(),
        };
        let user = info.redis_settings().username().map(str::to_owned);
        let client = match tls_ca {
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    Error::Invalid(format!("cannot read the TLS CA file {}: {e}; give a PEM file", path.display()))
                })?;
                let certs = redis::TlsCertificates { client_tls: None, root_cert: Some(pem) };
                Client::build_with_tls(info, certs).map_err(|e| bad(e.to_string()))?
            }
            None => Client::open(info).map_err(|e| bad(e.to_string()))?,
        };
        Ok(Target { client, host, user })
    }

    /// `host:port` of the server, for messages.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The ACL user named in the URL.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// A connection that reconnects by itself; commands time out after a few seconds.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn manager(&self) -> Result<ConnectionManager, Error> {
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(100))
            .set_max_delay(Duration::from_secs(2));
        ConnectionManager::new_with_config(self.client.clone(), config)
            .await
            .map_err(|e| describe(e, "connecting", &self.host))
    }

    /// A connection of its own, for blocking reads (`XREAD BLOCK`), which
    /// would hold up every other command on a shared one. Answers may take
    /// up to `block` plus the usual timeout.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn dedicated(&self, block: Duration) -> Result<MultiplexedConnection, Error> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(block + TIMEOUT));
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| describe(e, "connecting", &self.host))
    }

    /// A pub/sub connection.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn pubsub(&self) -> Result<PubSub, Error> {
        match tokio::time::timeout(TIMEOUT, self.client.get_async_pubsub()).await {
            Ok(result) => result.map_err(|e| describe(e, "subscribing", &self.host)),
            Err(_) => Err(describe(
                redis::RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut)),
                "subscribing",
                &self.host,
            )),
        }
    }
}

/// The URL with its password replaced by `***`, safe to print and log.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let Some((creds, host)) = rest.rsplit_once('@') else { return url.to_owned() };
    match creds.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => format!("{scheme}://***@{host}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_only() {
        assert_eq!(redact("redis://alice:s3cret@db:6379"), "redis://alice:***@db:6379");
        assert_eq!(redact("rediss://:s3cret@db"), "rediss://:***@db");
        assert_eq!(redact("redis://s3cret@db"), "redis://***@db");
        assert_eq!(redact("redis://db:6379"), "redis://db:6379");
    }

    #[test]
    fn a_bad_url_is_one_sentence_without_the_password() {
        let err = Target::new("http://bob:hunter2@db", None).unwrap_err().to_string();
        assert!(err.contains("is not valid"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn target_knows_host_and_acl_user() {
        let t = Target::new("redis://alice:pw@db.example:6380", None).unwrap();
        assert_eq!(t.host(), "db.example:6380");
        assert_eq!(t.user(), Some("alice"));
    }
}
