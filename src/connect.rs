//! Where Redis is and how to talk to it: the URL (TLS and ACL user included),
//! connections with timeouts, and a printable host that never shows a password.

use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection, PubSub};
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo};

use crate::error::{Action, Error, describe};

/// Default when neither `--redis` nor `LOCKWATCH_REDIS_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// How long to wait for a connection or an answer before calling Redis unreachable.
const TIMEOUT: Duration = Duration::from_secs(3);

/// Where a Redis server is, as messages name it: never with a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `host:port`, or a socket path.
    addr: Arc<str>,
    /// Whether the connection is TLS (`rediss://`): a timeout while
    /// connecting may then be a handshake that never came.
    tls: bool,
}

impl Endpoint {
    /// An endpoint at `addr` (`host:port` or a socket path).
    pub fn new(addr: impl Into<Arc<str>>, tls: bool) -> Endpoint {
        Endpoint { addr: addr.into(), tls }
    }

    /// `host:port`, or a socket path.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// Whether the connection is TLS.
    pub fn tls(&self) -> bool {
        self.tls
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.addr)?;
        if self.tls {
            f.write_str(" (TLS)")?;
        }
        Ok(())
    }
}

/// A Redis server to connect to.
#[derive(Clone)]
pub struct Target {
    client: Client,
    endpoint: Endpoint,
    /// The endpoint as messages show it.
    host: String,
    /// The ACL user of the URL, if any: the default supervisor name.
    user: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("endpoint", &self.endpoint).field("user", &self.user).finish_non_exhaustive()
    }
}

impl Target {
    /// Parses a `redis://` or `rediss://` URL; `tls_ca` is a PEM file of the CA
    /// that signed the server's certificate, for servers with a private CA.
    ///
    /// # Errors
    /// [`Error::BadUrl`] when the URL cannot be used, [`Error::TlsCa`] when the
    /// CA file cannot be read or holds no certificate.
    pub fn new(url: &str, tls_ca: Option<&Path>) -> Result<Self, Error> {
        let bad = |reason: String| crate::error::bad_url(url, &reason);
        let info = url.into_connection_info().map_err(|e| bad(e.to_string()))?;
        // CLIENT SETINFO is optional; servers before 7.2 do not know it, and
        // a supervisor's ACL user (`lockwatch acl`) is not granted it.
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        let info = info.set_redis_settings(settings);
        let endpoint = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Endpoint::new(format!("{host}:{port}"), false),
            ConnectionAddr::TcpTls { host, port, .. } => Endpoint::new(format!("{host}:{port}"), true),
            ConnectionAddr::Unix(path) => Endpoint::new(path.display().to_string(), false),
            _ => Endpoint::new("redis", false),
        };
        let user = info.redis_settings().username().map(str::to_owned);
        let client = match tls_ca {
            Some(path) => {
                let ca = |cause: String| Error::TlsCa { path: path.to_owned(), cause: crate::error::one_line(&cause) };
                let pem = std::fs::read(path).map_err(|e| ca(e.to_string()))?;
                let certs = redis::TlsCertificates { client_tls: None, root_cert: Some(pem) };
                // The URL was understood above: what fails here is the certificate.
                Client::build_with_tls(info, certs).map_err(|e| ca(e.to_string()))?
            }
            None => Client::open(info).map_err(|e| bad(e.to_string()))?,
        };
        let host = endpoint.to_string();
        Ok(Target { client, endpoint, host, user })
    }

    /// The server as messages show it: `host:port`, with ` (TLS)` for `rediss://`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Where the server is, for errors.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
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
            .map_err(|e| describe(e, Action::Connecting, &self.endpoint))
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
            .map_err(|e| describe(e, Action::Connecting, &self.endpoint))
    }

    /// A pub/sub connection.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn pubsub(&self) -> Result<PubSub, Error> {
        match tokio::time::timeout(TIMEOUT, self.client.get_async_pubsub()).await {
            Ok(result) => result.map_err(|e| describe(e, Action::Subscribing, &self.endpoint)),
            Err(_) => Err(Error::Timeout { action: Action::Subscribing, host: self.endpoint.clone(), after: TIMEOUT }),
        }
    }
}

/// The URL with its password replaced by `***`, safe to print and log: in
/// the user info (`redis://user:pw@host`, `rediss://`, `valkey://`…), in
/// the query (`unix:///sock?user=u&pass=pw`, also without `//`), and in
/// strings that are no valid URL at all, where everything up to the last
/// `@` counts as secret.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        // A path or fragment holding `@` is most likely a password with a
        // `/`, `?` or `#` in it that the parser split apart.
        Ok(parsed)
            if !parsed.cannot_be_a_base()
                && !parsed.path().contains('@')
                && !parsed.fragment().is_some_and(|f| f.contains('@')) =>
        {
            redact_parsed(parsed)
        }
        _ => redact_text(url),
    }
}

/// Query keys whose values are shown as they are; every other value is hidden.
const SHOWN_QUERY_KEYS: &[&str] = &["db", "protocol", "user", "username"];

fn redact_parsed(mut url: url::Url) -> String {
    // Setting the user info fails only for URLs without a host, which have none.
    if url.password().is_some() {
        let _ = url.set_password(Some("***"));
    } else if !url.username().is_empty() {
        // A lone `secret@host` may be a password written without its colon.
        let _ = url.set_username("***");
    }
    if let Some(query) = url.query().map(redact_query) {
        url.set_query(Some(&query));
    }
    if url.fragment().is_some_and(|f| f != "insecure") {
        url.set_fragment(Some("***"));
    }
    url.to_string()
}

fn shown_query_value(key: &str, value: &str) -> String {
    if !SHOWN_QUERY_KEYS.contains(&key) {
        return "***".to_owned();
    }
    // `user:password` in one value, the colon maybe percent-encoded.
    let colon = value.find(':').or_else(|| value.to_ascii_lowercase().find("%3a"));
    match colon {
        Some(at) => format!("{}:***", &value[..at]),
        None => value.to_owned(),
    }
}

/// For strings the URL parser rejects: keeps the scheme, a plain user name
/// and what follows the last `@`, with the query's values hidden.
fn redact_text(url: &str) -> String {
    let scheme_len = url
        .split_once(':')
        .filter(|(scheme, _)| {
            scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        })
        .map_or(0, |(scheme, _)| scheme.len() + 1);
    let (scheme, rest) = url.split_at(scheme_len);
    let (slashes, rest) = match rest.strip_prefix("//") {
        Some(after) => ("//", after),
        None => ("", rest),
    };
    let (creds, tail) = match rest.rsplit_once('@') {
        Some((creds, tail)) => {
            let user = creds.split_once(':').map(|(user, _)| user).filter(|u| !u.contains(['/', '?', '#']));
            (user.map_or_else(|| "***@".to_owned(), |u| format!("{u}:***@")), tail)
        }
        None => (String::new(), rest),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => format!("{path}?{}", redact_query(query)),
        None => tail.to_owned(),
    };
    format!("{scheme}{slashes}{creds}{tail}")
}

/// A query string as written, with every value hidden but those of
/// [`SHOWN_QUERY_KEYS`] (a key spelled with `%` escapes is not one of them).
fn redact_query(query: &str) -> String {
    let items: Vec<String> = query
        .split('&')
        .map(|item| match item.split_once('=') {
            Some((key, value)) => format!("{key}={}", shown_query_value(key, value)),
            None if item.is_empty() => String::new(),
            None => "***".to_owned(),
        })
        .collect();
    items.join("&")
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
        assert_eq!(redact("valkeys://alice:s3cret@db:6380/2"), "valkeys://alice:***@db:6380/2");
        assert_eq!(redact("rediss://alice:s3cret@db/#insecure"), "rediss://alice:***@db/#insecure");
        assert_eq!(redact("redis+unix:///run/redis.sock?pass=s3cret"), "redis+unix:///run/redis.sock?pass=***");
        assert_eq!(
            redact("unix:///run/redis.sock?user=alice&pass=s3cret&db=2"),
            "unix:///run/redis.sock?user=alice&pass=***&db=2"
        );
        assert_eq!(redact("unix:/run/redis.sock?pass=s3cret"), "unix:/run/redis.sock?pass=***");
        assert_eq!(redact("redis://db:6379/?password=s3cret"), "redis://db:6379/?password=***");
        assert_eq!(redact("redis://db?user=alice:s3cret"), "redis://db?user=alice:***");
        assert_eq!(redact("redis://alice:p@s3cret@db"), "redis://alice:***@db");
    }

    /// Every form the redis crate accepts (`parse_redis_url` and the unix
    /// socket forms, also without `//`), and typos around them.
    const WITH_PASSWORD: &[&str] = &[
        "redis://alice:s3cret@db:6379",
        "redis://:s3cret@db",
        "rediss://alice:s3cret@db:6380",
        "rediss://alice:s3cret@db/#insecure",
        "valkey://alice:s3cret@db",
        "valkeys://alice:s3cret@db",
        "redis://alice:s3%63ret@db",
        "redis://alice:s3cret@db/0?protocol=resp3",
        "redis://db/?password=s3cret",
        "redis://db/?user=alice&password=s3cret",
        "redis://db?user=alice:s3cret",
        "redis://db?user=alice%3As3cret",
        "redis+unix:///run/redis.sock?pass=s3cret",
        "redis+unix:///run/redis.sock?user=alice&pass=s3cret",
        "valkey+unix:///run/redis.sock?pass=s3cret",
        "unix:///run/redis.sock?user=alice&pass=s3cret&db=2",
        "unix:/run/redis.sock?pass=s3cret",
        "redis+unix:/run/redis.sock?user=alice&pass=s3cret",
        "unix:///run/redis.sock?pass=s3cret#x",
        "redis:alice:s3cret@db",
        "redis:/alice:s3cret@db",
        "redis//alice:s3cret@db",
        "alice:s3cret@db:6379",
        "redis://alice:s3/cret@db",
        "redis://alice:12/s3cret@db",
        "redis://alice:pa?s3cret@db",
        "redis://alice:pa#s3cret@db",
        "redis://alice:s3cret@db:notaport",
        "redis://alice:s3cret@db/notadb",
        "unix:///run/redis.sock?pass=s3cret&db=x",
        "http://alice:s3cret@db",
    ];

    #[test]
    fn no_form_of_url_shows_its_password() {
        for url in WITH_PASSWORD {
            let shown = redact(url);
            assert!(!shown.contains("s3cret") && !shown.contains("s3%63ret"), "{url} -> {shown}");
            match Target::new(url, None) {
                Ok(target) => {
                    let debug = format!("{target:?}");
                    assert!(!debug.contains("s3cret"), "{url}: {debug}");
                }
                Err(err) => {
                    let (text, debug) = (err.to_string(), format!("{err:?}"));
                    assert!(!text.contains("s3cret") && !debug.contains("s3cret"), "{url}: {text} / {debug}");
                }
            }
        }
    }

    #[test]
    fn a_bad_url_is_one_sentence_without_the_password() {
        let err = Target::new("http://bob:hunter2@db", None).unwrap_err().to_string();
        assert!(err.contains("is not valid"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn a_ca_file_without_certificates_is_blamed_on_the_file_not_the_url() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "not a certificate\n").unwrap();
        let err = Target::new("rediss://alice:s3cret@db:6380", Some(&ca)).unwrap_err().to_string();
        assert!(err.contains(&format!("TLS CA file {}", ca.display())), "{err}");
        assert!(!err.contains("URL") && !err.contains("s3cret"), "{err}");
        let missing = dir.path().join("gone.pem");
        let err = Target::new("rediss://db:6380", Some(&missing)).unwrap_err().to_string();
        assert!(err.starts_with(&format!("cannot read the TLS CA file {}", missing.display())), "{err}");
    }

    #[test]
    fn target_knows_host_and_acl_user() {
        let t = Target::new("redis://alice:pw@db.example:6380", None).unwrap();
        assert_eq!(t.host(), "db.example:6380");
        assert!(!t.endpoint().tls());
        let tls = Target::new("rediss://db.example:6380", None).unwrap();
        assert_eq!((tls.endpoint().addr(), tls.endpoint().tls()), ("db.example:6380", true));
        assert_eq!(tls.host(), "db.example:6380 (TLS)");
        assert_eq!(t.user(), Some("alice"));
    }
}
