//! Where Redis is and how to talk to it: the URL (TLS and ACL user included),
//! the topology (one node, a primary found through Sentinel, or a Redis
//! Cluster), connections with timeouts, and a printable host that never
//! shows a password.
//!
//! With Sentinel every new connection asks the sentinels where the primary
//! is and checks with `ROLE` that it is one; callers drop a connection that
//! failed (or answered `READONLY`, see [`crate::error::describe`]), so the
//! next one follows a failover. One node costs no look-up at all.
//!
//! On a Cluster the redis crate's cluster client routes each command by its
//! first key and follows `MOVED` and `ASK`; its retries and waits are cut
//! down so that a dead node fails a command within the same few seconds as
//! one Redis does. Sharded pub/sub goes to the slot's owner on a connection
//! of its own (`sharded`).
//!
//! Here: [`Target`] (where Redis is, and connections to it); `conn`, the one
//! [`Conn`] type for every topology; `sentinel`, the primary's look-up;
//! `cluster`, the cluster client and slot owners; `sharded`, sharded
//! pub/sub; [`Backoff`], the wait between tries.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection, PubSub};
use redis::cluster::ClusterClient;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo};

use crate::address::Endpoint;
use crate::error::{Action, Error, RedisFailure, describe};

mod backoff;
mod cluster;
mod conn;
mod sentinel;
pub(crate) mod sharded;

pub use backoff::Backoff;
pub use conn::Conn;
pub(crate) use conn::numsub_counts;

use cluster::{Nodes, cluster_client, node_addr, owner_in_slots};
use conn::Inner;
use sentinel::Sentinels;
pub use sentinel::Vouch;

/// Default when neither `--redis` nor `LOCKWATCH_REDIS_URL` is given.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// How long to wait for a connection or an answer before calling Redis unreachable.
const TIMEOUT: Duration = Duration::from_secs(3);

/// How the data node is found.
#[derive(Clone)]
enum Kind {
    /// The URL's host: connections go straight there.
    Single(Box<Client>),
    /// The primary the sentinels name, asked again for every new connection.
    Sentinel(Arc<Sentinels>),
    /// Any node of a Redis Cluster; commands go where their keys live.
    Cluster(Arc<Nodes>),
}

/// A Redis server to connect to.
#[derive(Clone)]
pub struct Target {
    kind: Kind,
    endpoint: Endpoint,
    /// The endpoint as messages show it.
    host: String,
    /// The ACL user of the URL, if any: the default supervisor name.
    user: Option<String>,
    /// The database the URL names (0 on a Cluster, which has no other).
    database: i64,
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
        let info = url_info(url)?;
        let endpoint = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Endpoint::new(format!("{host}:{port}"), false),
            ConnectionAddr::TcpTls { host, port, .. } => Endpoint::new(format!("{host}:{port}"), true),
            ConnectionAddr::Unix(path) => Endpoint::new(path.display().to_string(), false),
            _ => Endpoint::new("redis", false),
        };
        let user = info.redis_settings().username().map(str::to_owned);
        let database = info.redis_settings().db();
        let ca = tls_ca.map(read_ca).transpose()?;
        let client = client_for(info, ca.as_deref()).map_err(|e| match (e, tls_ca) {
            (Fail::Ca(cause), Some(path)) => Error::TlsCa { path: path.to_owned(), cause },
            (Fail::Ca(cause) | Fail::Url(cause), _) => crate::error::bad_url(url, &cause),
        })?;
        let host = endpoint.to_string();
        Ok(Target { kind: Kind::Single(Box::new(client)), endpoint, host, user, database })
    }

    /// The primary that the sentinels at `sentinels` (`host:port` each) know
    /// as `master`; the URL gives only the user, password, database and TLS
    /// of the data nodes (its host is not used). The sentinels are spoken to
    /// the same way (TLS or not, the same CA), without the URL's login.
    ///
    /// # Errors
    /// As [`Target::new`], and [`Error::SentinelNoPort`] for a sentinel address
    /// without a port.
    pub fn sentinel(url: &str, tls_ca: Option<&Path>, sentinels: &[String], master: &str) -> Result<Self, Error> {
        let info = url_info(url)?;
        let tls = matches!(info.addr(), ConnectionAddr::TcpTls { .. });
        let addrs = sentinels
            .iter()
            .map(|a| {
                let (host, port) = a.rsplit_once(':').unwrap_or((a, ""));
                let port = port.parse().map_err(|_| Error::SentinelNoPort { address: a.clone() })?;
                Ok((host.trim_matches(['[', ']']).to_owned(), port))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        let ca = tls_ca.map(read_ca).transpose()?;
        let user = info.redis_settings().username().map(str::to_owned);
        let database = info.redis_settings().db();
        let endpoint = Endpoint::new(format!("{master} (Sentinel {})", sentinels.join(",")), tls);
        let host = endpoint.to_string();
        let sentinels = Sentinels { master: master.to_owned(), addrs, info, ca, ca_path: tls_ca.map(Path::to_owned) };
        Ok(Target { kind: Kind::Sentinel(Arc::new(sentinels)), endpoint, host, user, database })
    }

    /// The Redis Cluster that the node at the URL belongs to; the URL's
    /// user, password and TLS hold for every node.
    ///
    /// # Errors
    /// As [`Target::new`]; [`Error::ClusterSocket`] or [`Error::ClusterCa`] for a socket path or a private
    /// CA, which a cluster cannot use.
    pub fn cluster(url: &str, tls_ca: Option<&Path>) -> Result<Self, Error> {
        let info = url_info(url)?;
        let endpoint = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Endpoint::new(format!("{host}:{port} (Cluster)"), false),
            ConnectionAddr::TcpTls { host, port, .. } => Endpoint::new(format!("{host}:{port} (Cluster)"), true),
            _ => return Err(Error::ClusterSocket),
        };
        // The crate's cluster client takes a CA only when built with rustls,
        // a second TLS stack beside native-tls: refused rather than ignored.
        if tls_ca.is_some() {
            return Err(Error::ClusterCa);
        }
        let commands = cluster_client(&info, TIMEOUT).map_err(|e| crate::error::bad_url(url, &e.to_string()))?;
        let user = info.redis_settings().username().map(str::to_owned);
        let host = endpoint.to_string();
        Ok(Target { kind: Kind::Cluster(Arc::new(Nodes { commands, info })), endpoint, host, user, database: 0 })
    }

    /// Whether the server at the other end of `conn` is the primary as the
    /// sentinels have it: a majority of them name it, and none that answers
    /// names another ([`Sentinels::vouch_for`]; servers told apart by run
    /// id). A deposed primary stays writable until a sentinel converts it,
    /// and one cut off from the sentinels stays writable for good, each
    /// with whatever replicas still follow it and confirm its writes; a lock
    /// taken or renewed there is no holding. Always, but through Sentinel;
    /// with the server's run id, when it was read.
    pub async fn primary_vouched_for(&self, conn: &mut Conn) -> (Vouch, Option<String>) {
        let Kind::Sentinel(sentinels) = &self.kind else { return (Vouch::Yes, None) };
        let info = redis::cmd("INFO").arg("server").query_async::<String>(conn).await;
        let Some(ours) = info.ok().as_deref().and_then(parse_run_id) else { return (Vouch::TooFew, None) };
        (sentinels.vouch_for(&ours, &self.endpoint).await, Some(ours))
    }

    /// Whether this is a Redis Cluster: sharded pub/sub, and every script's
    /// keys in one slot.
    pub fn is_cluster(&self) -> bool {
        matches!(self.kind, Kind::Cluster(_))
    }

    /// A client of the data node: the URL's host, or the primary the
    /// sentinels name now.
    ///
    /// # Errors
    /// [`Error::Redis`] or [`Error::Timeout`] with [`Action::Resolving`]
    /// when no sentinel names a primary that answers as one.
    pub async fn client(&self) -> Result<Client, Error> {
        match &self.kind {
            Kind::Single(client) => Ok(Client::clone(client)),
            Kind::Sentinel(sentinels) => sentinels.primary(&self.endpoint).await,
            Kind::Cluster(nodes) => {
                client_for(nodes.info.clone(), None).map_err(|(Fail::Url(cause) | Fail::Ca(cause))| Error::Redis {
                    action: Action::Connecting,
                    host: self.endpoint.clone(),
                    cause,
                    hint: "check the Redis URL",
                    kind: RedisFailure::Server,
                })
            }
        }
    }

    /// A RESP3 connection to the server (the primary, with Sentinel) on
    /// which Redis names every key written under `prefixes` (broadcast
    /// tracking, `CLIENT TRACKING ON BCAST`), each given to `heard`: a
    /// message whose size the writer does not choose. `heard` also gets the
    /// redis crate's `Disconnection` when the connection closes. Not on a
    /// Cluster, where each node tracks its own keys.
    ///
    /// # Errors
    /// [`Error::Redis`] or [`Error::Timeout`] when no connection can be
    /// made, or Redis refuses tracking (an ACL without `CLIENT TRACKING`,
    /// a server before 6.0).
    pub async fn tracking(
        &self,
        prefixes: &[String],
        heard: impl Fn(redis::PushInfo) + Send + Sync + 'static,
    ) -> Result<MultiplexedConnection, Error> {
        let info = self.client().await?.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
        let client = Client::open(info.set_redis_settings(settings))
            .map_err(|e| describe(e, Action::Subscribing, &self.endpoint))?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_push_sender(move |push| {
                heard(push);
                Ok::<(), ()>(())
            });
        let connecting = async {
            let mut conn = client.get_multiplexed_async_connection_with_config(&config).await?;
            let mut tracking = redis::cmd("CLIENT");
            tracking.arg("TRACKING").arg("ON").arg("BCAST");
            for prefix in prefixes {
                tracking.arg("PREFIX").arg(prefix);
            }
            tracking.query_async::<()>(&mut conn).await?;
            Ok::<_, redis::RedisError>(conn)
        };
        match tokio::time::timeout(TIMEOUT, connecting).await {
            Ok(result) => result.map_err(|e| describe(e, Action::Subscribing, &self.endpoint)),
            Err(_) => Err(Error::Timeout { action: Action::Subscribing, host: self.endpoint.clone(), after: TIMEOUT }),
        }
    }

    /// The server as messages show it: `host:port`, with ` (TLS)` for `rediss://`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Where the server is, for errors.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The database the URL names.
    pub fn database(&self) -> i64 {
        self.database
    }

    /// The ACL user named in the URL.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// A connection that reconnects by itself; commands time out after a few seconds.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn manager(&self) -> Result<Conn, Error> {
        if let Kind::Cluster(nodes) = &self.kind {
            return self.cluster_connection(&nodes.commands).await;
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_number_of_retries(2)
            .set_min_delay(Duration::from_millis(100))
            .set_max_delay(Duration::from_secs(2));
        ConnectionManager::new_with_config(self.client().await?, config)
            .await
            .map(|c| Conn::new(Inner::Managed(c), &self.endpoint))
            .map_err(|e| describe(e, Action::Connecting, &self.endpoint))
    }

    /// A connection to the cluster, within [`TIMEOUT`].
    async fn cluster_connection(&self, client: &ClusterClient) -> Result<Conn, Error> {
        match tokio::time::timeout(TIMEOUT, client.get_async_connection()).await {
            Ok(Ok(conn)) => Ok(Conn::new(Inner::Cluster(conn), &self.endpoint)),
            Ok(Err(e)) => Err(describe(e, Action::Connecting, &self.endpoint)),
            Err(_) => Err(Error::Timeout { action: Action::Connecting, host: self.endpoint.clone(), after: TIMEOUT }),
        }
    }

    /// A connection of its own, for blocking reads (`XREAD BLOCK`), which
    /// would hold up every other command on a shared one. Answers may take
    /// up to `block` plus the usual timeout.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn dedicated(&self, block: Duration) -> Result<Conn, Error> {
        if let Kind::Cluster(nodes) = &self.kind {
            let client = cluster_client(&nodes.info, block + TIMEOUT)
                .map_err(|e| describe(e, Action::Connecting, &self.endpoint))?;
            return self.cluster_connection(&client).await;
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(block + TIMEOUT));
        self.client()
            .await?
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map(|c| Conn::new(Inner::Plain(c), &self.endpoint))
            .map_err(|e| describe(e, Action::Connecting, &self.endpoint))
    }

    /// Of a cluster: the node that owns the slot of `key` by the seed
    /// node's `CLUSTER SLOTS`, as `(host, port)`.
    ///
    /// # Errors
    /// [`Error::Redis`] or [`Error::Timeout`] when the seed cannot be asked,
    /// [`Error::Unreadable`] when no node owns the slot.
    pub(crate) async fn slot_owner(&self, key: &str) -> Result<(String, u16), Error> {
        let Kind::Cluster(nodes) = &self.kind else {
            return Err(Error::NotCluster);
        };
        let action = Action::Subscribing;
        let mut conn = tokio::time::timeout(TIMEOUT, self.dedicated_plain(&nodes.info, None))
            .await
            .map_err(|_| Error::Timeout { action: action.clone(), host: self.endpoint.clone(), after: TIMEOUT })??;
        let slots: Vec<redis::Value> =
            tokio::time::timeout(TIMEOUT, redis::cmd("CLUSTER").arg("SLOTS").query_async(&mut conn))
                .await
                .map_err(|_| Error::Timeout { action: action.clone(), host: self.endpoint.clone(), after: TIMEOUT })?
                .map_err(|e| describe(e, action.clone(), &self.endpoint))?;
        let slot = crate::keys::hash_slot(key.as_bytes());
        let seed_host = match nodes.info.addr() {
            ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => host.clone(),
            _ => String::new(),
        };
        owner_in_slots(&slots, slot, &seed_host).ok_or_else(|| Error::Unreadable {
            key: key.to_owned(),
            what: format!("no cluster node owns its slot {slot} (CLUSTER SLOTS on {})", self.endpoint),
        })
    }

    /// Of a cluster: a RESP3 connection to the node at `addr`, its pushes
    /// (messages, and the server's own `sunsubscribe` when a slot moves)
    /// sent to `pushes`.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub(crate) async fn node_subscriber(
        &self,
        addr: &(String, u16),
        pushes: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    ) -> Result<MultiplexedConnection, Error> {
        let Kind::Cluster(nodes) = &self.kind else {
            return Err(Error::NotCluster);
        };
        let info = nodes.info.clone().set_addr(node_addr(&nodes.info, addr.0.clone(), addr.1));
        let settings = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
        self.dedicated_plain(&info.set_redis_settings(settings), Some(pushes)).await
    }

    /// A plain connection to the node `info` names.
    async fn dedicated_plain(
        &self,
        info: &redis::ConnectionInfo,
        pushes: Option<tokio::sync::mpsc::UnboundedSender<redis::PushInfo>>,
    ) -> Result<MultiplexedConnection, Error> {
        let at = match info.addr() {
            ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                Endpoint::new(format!("{host}:{port}"), self.endpoint.tls())
            }
            _ => self.endpoint.clone(),
        };
        let client = client_for(info.clone(), None).map_err(|(Fail::Url(cause) | Fail::Ca(cause))| Error::Redis {
            action: Action::Subscribing,
            host: at.clone(),
            cause,
            hint: "check the Redis URL",
            kind: RedisFailure::Server,
        })?;
        let mut config =
            AsyncConnectionConfig::new().set_connection_timeout(Some(TIMEOUT)).set_response_timeout(Some(TIMEOUT));
        if let Some(pushes) = pushes {
            config = config.set_push_sender(pushes);
        }
        client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| describe(e, Action::Subscribing, &at))
    }

    /// Of a single server or a Sentinel primary: a RESP3 connection of its
    /// own to the data node (the URL's host, or the primary the sentinels
    /// name now), its pushes (messages, and the news that it closed) sent to
    /// `pushes`. Commands still run on it beside a subscription, so it can
    /// say which server process holds that ([`run_id`]).
    ///
    /// # Errors
    /// [`Error::Redis`] or [`Error::Timeout`] when no connection can be made.
    pub(crate) async fn subscriber(
        &self,
        pushes: tokio::sync::mpsc::UnboundedSender<redis::PushInfo>,
    ) -> Result<MultiplexedConnection, Error> {
        let info = self.client().await?.get_connection_info().clone();
        let settings = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
        // The TLS settings (a private CA included) live in the address and come along.
        let client = Client::open(info.set_redis_settings(settings)).map_err(|e| Error::Redis {
            action: Action::Subscribing,
            host: self.endpoint.clone(),
            cause: e.to_string(),
            hint: "check the Redis URL",
            kind: RedisFailure::Server,
        })?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(TIMEOUT))
            .set_response_timeout(Some(TIMEOUT))
            .set_push_sender(pushes);
        client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| describe(e, Action::Subscribing, &self.endpoint))
    }

    /// A pub/sub connection.
    ///
    /// # Errors
    /// [`Error::Redis`] when no connection can be made.
    pub async fn pubsub(&self) -> Result<PubSub, Error> {
        let client = self.client().await?;
        match tokio::time::timeout(TIMEOUT, client.get_async_pubsub()).await {
            Ok(result) => result.map_err(|e| describe(e, Action::Subscribing, &self.endpoint)),
            Err(_) => Err(Error::Timeout { action: Action::Subscribing, host: self.endpoint.clone(), after: TIMEOUT }),
        }
    }
}

/// The run id of the server process at the other end of `conn` (`INFO
/// server`), which changes with every start of a server and differs between
/// a primary and its replicas; `None` when it cannot be read.
pub(crate) async fn run_id(conn: &mut MultiplexedConnection) -> Option<String> {
    let info: String = redis::cmd("INFO").arg("server").query_async(conn).await.ok()?;
    parse_run_id(&info)
}

/// The `run_id` of an `INFO server` reply.
fn parse_run_id(info: &str) -> Option<String> {
    let id = info.lines().find_map(|line| line.strip_prefix("run_id:"))?.trim();
    (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_owned())
}

/// What went wrong, without the where and the hint (said once for all sentinels).
fn error_cause(err: &Error) -> String {
    match err {
        Error::Redis { cause, .. } => cause.clone(),
        Error::Timeout { .. } => "no answer in time".to_owned(),
        other => other.to_string(),
    }
}

/// Why a client could not be built: the URL or the CA.
enum Fail {
    Url(String),
    Ca(String),
}

/// The URL's connection settings, without `CLIENT SETINFO`.
fn url_info(url: &str) -> Result<redis::ConnectionInfo, Error> {
    let info = url.into_connection_info().map_err(|e| crate::error::bad_url(url, &e.to_string()))?;
    // CLIENT SETINFO is optional; servers before 7.2 do not know it, and
    // a supervisor's ACL user (`lockwatch acl`) is not granted it.
    let mut settings = info.redis_settings().clone().set_skip_set_lib_name();
    // A user named without a password logs in as that user (one made with
    // `nopass` takes any), never as `default`, which the crate would
    // otherwise stay: with its rights, under her name.
    if settings.username().is_some() && settings.password().is_none() {
        settings = settings.set_password("");
    }
    Ok(info.set_redis_settings(settings))
}

fn read_ca(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path)
        .map_err(|e| Error::TlsCa { path: path.to_owned(), cause: crate::error::one_line(&e.to_string()) })
}

/// A client for `info`, trusting the CA in `ca` (PEM) when given.
fn client_for(info: redis::ConnectionInfo, ca: Option<&[u8]>) -> Result<Client, Fail> {
    match ca {
        Some(pem) => {
            let certs = redis::TlsCertificates { client_tls: None, root_cert: Some(pem.to_vec()) };
            // The URL was understood already: what fails here is the certificate.
            Client::build_with_tls(info, certs).map_err(|e| Fail::Ca(crate::error::one_line(&e.to_string())))
        }
        None => Client::open(info).map_err(|e| Fail::Url(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::redact;

    #[test]
    fn the_run_id_is_read_from_info_server() {
        let info =
            "# Server\r\nredis_version:7.0.15\r\nrun_id:592028868d9641a85afd365a7b836baf63e65f53\r\ntcp_port:6379\r\n";
        assert_eq!(parse_run_id(info).as_deref(), Some("592028868d9641a85afd365a7b836baf63e65f53"));
        assert_eq!(parse_run_id("# Server\r\nredis_version:7.0.15\r\n"), None);
        assert_eq!(parse_run_id("run_id:\r\n"), None);
        assert_eq!(parse_run_id("run_id:not hex\r\n"), None);
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
