//! A primary found through Sentinel: the sentinels asked in turn where it
//! is, and `ROLE` asked whether it still is one, for every new connection.

use std::path::PathBuf;

use redis::{Client, ConnectionAddr, IntoConnectionInfo, RedisError};

use super::{Fail, TIMEOUT, client_for, error_cause, node_addr};
use crate::address::Endpoint;
use crate::error::{Action, Error, RedisFailure, describe};

/// What the sentinels say of a server as the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vouch {
    /// A majority of them name it, and none that answers names another.
    Yes,
    /// One that answers names another server (or one whose run id cannot
    /// be read): it is deposed, or being deposed.
    Another,
    /// Too few of them answer to tell.
    TooFew,
}

/// The sentinels of one primary, and how to log in to the data nodes.
pub(super) struct Sentinels {
    /// The name the sentinels know the primary by.
    pub(super) master: String,
    /// `host:port` of each sentinel, asked in this order.
    pub(super) addrs: Vec<(String, u16)>,
    /// The URL's settings (user, password, db, TLS); only its address is replaced.
    pub(super) info: redis::ConnectionInfo,
    /// The PEM of a private CA, for the data nodes and sentinels alike.
    pub(super) ca: Option<Vec<u8>>,
    /// The CA file's path, for messages.
    pub(super) ca_path: Option<PathBuf>,
}

impl Sentinels {
    /// Asks each sentinel in turn for the primary's address and returns a
    /// client of the first address that answers `ROLE` as a primary: a
    /// sentinel may not have seen a failover yet, or be cut off.
    pub(super) async fn primary(&self, shown: &Endpoint) -> Result<Client, Error> {
        let action = Action::Resolving { master: self.master.clone() };
        let mut last: Option<Error> = None;
        let (mut unknown, mut sentinels_down) = (0, 0);
        for (host, port) in &self.addrs {
            let sentinel = Endpoint::new(format!("{host}:{port}"), shown.tls());
            let asked = tokio::time::timeout(TIMEOUT, self.ask(host, *port, &sentinel, &action)).await;
            let addr = match asked {
                Ok(Ok(Some(addr))) => addr,
                Ok(Ok(None)) => {
                    unknown += 1;
                    continue;
                }
                Ok(Err(err)) => {
                    sentinels_down += 1;
                    last = Some(err);
                    continue;
                }
                Err(_) => {
                    sentinels_down += 1;
                    last = Some(Error::Timeout { action: action.clone(), host: sentinel, after: TIMEOUT });
                    continue;
                }
            };
            match tokio::time::timeout(TIMEOUT, self.check_primary(&addr, &action)).await {
                Ok(Ok(client)) => return Ok(client),
                Ok(Err(err)) => last = Some(err),
                Err(_) => {
                    let at = Endpoint::new(format!("{}:{}", addr.0, addr.1), shown.tls());
                    last = Some(Error::Timeout { action: action.clone(), host: at, after: TIMEOUT });
                }
            }
        }
        let all = self.addrs.len();
        Err(match last {
            _ if unknown == all => Error::Redis {
                action,
                host: shown.clone(),
                cause: format!("no sentinel knows a primary named {:?}", self.master),
                hint: "check --sentinel-master (LOCKWATCH_SENTINEL_MASTER) against `sentinel monitor` in the sentinels' configuration",
                kind: RedisFailure::Server,
            },
            // No sentinel answered at all: say so of them all, not of the last one.
            Some(err) if sentinels_down == all => Error::Redis {
                action,
                host: shown.clone(),
                cause: format!("no sentinel answered (the last: {})", error_cause(&err)),
                hint: "check --sentinel (LOCKWATCH_SENTINEL) and that redis-sentinel runs at those addresses",
                kind: RedisFailure::Unreachable,
            },
            Some(err) => err,
            None => Error::Redis {
                action,
                host: shown.clone(),
                cause: "no sentinel named a primary".to_owned(),
                hint: "check --sentinel and --sentinel-master",
                kind: RedisFailure::Unreachable,
            },
        })
    }

    /// Whether the sentinels vouch for the server whose run id is `ours` as
    /// the primary: a majority of them name it, and none that answers names
    /// another (a server whose run id cannot be read counts as another).
    /// A primary cut off from most sentinels, or one they have moved away
    /// from, is not vouched for, whatever replicas still follow it.
    pub(super) async fn vouch_for(&self, ours: &str, shown: &Endpoint) -> Vouch {
        let action = Action::Resolving { master: self.master.clone() };
        let asking = self.addrs.iter().map(|(host, port)| {
            let sentinel = Endpoint::new(format!("{host}:{port}"), shown.tls());
            let action = action.clone();
            async move { tokio::time::timeout(TIMEOUT, self.ask(host, *port, &sentinel, &action)).await }
        });
        let named: Vec<(String, u16)> = futures_util::future::join_all(asking)
            .await
            .into_iter()
            .filter_map(|asked| asked.ok().and_then(Result::ok).flatten())
            .collect();
        let mut checked: Vec<&(String, u16)> = Vec::new();
        for addr in &named {
            if checked.contains(&addr) {
                continue;
            }
            let theirs = tokio::time::timeout(TIMEOUT, self.run_id_at(addr)).await.ok().flatten();
            if theirs.as_deref() != Some(ours) {
                return Vouch::Another;
            }
            checked.push(addr);
        }
        if named.len() > self.addrs.len() / 2 { Vouch::Yes } else { Vouch::TooFew }
    }

    /// The run id of the server at `addr`, when it answers.
    async fn run_id_at(&self, addr: &(String, u16)) -> Option<String> {
        let client = self.node_client(addr).ok()?;
        let mut conn = client.get_multiplexed_async_connection().await.ok()?;
        super::run_id(&mut conn).await
    }

    /// `SENTINEL GET-MASTER-ADDR-BY-NAME`: `None` when this sentinel knows no such primary.
    async fn ask(
        &self,
        host: &str,
        port: u16,
        sentinel: &Endpoint,
        action: &Action,
    ) -> Result<Option<(String, u16)>, Error> {
        let addr = self.addr(host.to_owned(), port);
        let info = addr.into_connection_info().map_err(|e| describe(e, action.clone(), sentinel))?;
        let info = info.set_redis_settings(redis::RedisConnectionInfo::default().set_skip_set_lib_name());
        let fail = |e: RedisError| describe(e, action.clone(), sentinel);
        let client = client_for(info, self.ca.as_deref()).map_err(|e| self.fail(e, sentinel, action))?;
        let mut conn = client.get_multiplexed_async_connection().await.map_err(fail)?;
        redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(&self.master)
            .query_async(&mut conn)
            .await
            .map_err(fail)
    }

    /// A client of `addr` once it answers `ROLE` as a primary.
    async fn check_primary(&self, addr: &(String, u16), action: &Action) -> Result<Client, Error> {
        let at =
            Endpoint::new(format!("{}:{}", addr.0, addr.1), matches!(self.info.addr(), ConnectionAddr::TcpTls { .. }));
        let client = self.node_client(addr).map_err(|e| self.fail(e, &at, action))?;
        let fail = |e: RedisError| describe(e, action.clone(), &at);
        let mut conn = client.get_multiplexed_async_connection().await.map_err(fail)?;
        let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await.map_err(fail)?;
        match role.first() {
            Some(redis::Value::BulkString(r)) if r.as_slice() == b"master" => Ok(client),
            _ => Err(Error::Redis {
                action: action.clone(),
                host: at.clone(),
                cause: "the node the sentinels name is not a primary (yet)".to_owned(),
                hint: "a failover is under way or the sentinels disagree; lockwatch asks again",
                kind: RedisFailure::Unreachable,
            }),
        }
    }

    /// A client of the data node at `addr`, logged in as the URL says.
    fn node_client(&self, addr: &(String, u16)) -> Result<Client, Fail> {
        client_for(self.info.clone().set_addr(self.addr(addr.0.clone(), addr.1)), self.ca.as_deref())
    }

    /// `host:port` with the URL's TLS settings.
    fn addr(&self, host: String, port: u16) -> ConnectionAddr {
        node_addr(&self.info, host, port)
    }

    fn fail(&self, fail: Fail, at: &Endpoint, action: &Action) -> Error {
        match (fail, &self.ca_path) {
            (Fail::Ca(cause), Some(path)) => Error::TlsCa { path: path.clone(), cause },
            (Fail::Ca(cause) | Fail::Url(cause), _) => Error::Redis {
                action: action.clone(),
                host: at.clone(),
                cause,
                hint: "check --sentinel and the Redis URL",
                kind: RedisFailure::Server,
            },
        }
    }
}
