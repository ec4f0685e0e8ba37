//! A connection to Redis of any topology, one type for every caller.

use std::fmt;

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{RedisFuture, Value};

use crate::address::Endpoint;

/// A connection to Redis of any topology: one node's (reconnecting by
/// itself, or a dedicated one for blocking reads) or a cluster's, which
/// routes each command to the node owning its keys.
#[derive(Clone)]
pub struct Conn {
    inner: Inner,
    /// Where it goes, for the errors of the commands sent on it.
    endpoint: Endpoint,
}

impl fmt::Debug for Conn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.inner {
            Inner::Managed(_) => "node",
            Inner::Plain(_) => "node, dedicated",
            Inner::Cluster(_) => "cluster",
        };
        write!(f, "Conn({kind})")
    }
}

#[derive(Clone)]
pub(super) enum Inner {
    Managed(ConnectionManager),
    Plain(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl Conn {
    pub(super) fn new(inner: Inner, endpoint: &Endpoint) -> Conn {
        Conn { inner, endpoint: endpoint.clone() }
    }

    /// Where the connection goes: the server as errors name it.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Whether messages go out with `SPUBLISH`: on a cluster, where
    /// Redisson 3.22+ and lockwatch listen on sharded channels.
    pub fn sharded(&self) -> bool {
        matches!(self.inner, Inner::Cluster(_))
    }

    /// `PUBLISH`, or `SPUBLISH` on a cluster.
    pub fn publish_command(&self) -> &'static str {
        if self.sharded() { "SPUBLISH" } else { "PUBLISH" }
    }

    /// Asks the node that serves `key` whether it still answers, and how
    /// many subscribers `channel` has there: one cheap command (`PUBSUB
    /// NUMSUB`, or `SHARDNUMSUB` on a cluster, where it goes to the owner of
    /// `key`'s slot alone, as the crate would ask every primary), or a
    /// `PING` when there is no channel to count (the count is then 1).
    ///
    /// # Errors
    /// The connection's error when the node cannot be reached or refuses.
    pub async fn ask_owner(&mut self, key: &str, channel: Option<&str>) -> redis::RedisResult<i64> {
        let mut cmd = redis::cmd(if channel.is_some() { "PUBSUB" } else { "PING" });
        if let Some(channel) = channel {
            cmd.arg(if self.sharded() { "SHARDNUMSUB" } else { "NUMSUB" }).arg(channel);
        }
        let reply = match &mut self.inner {
            Inner::Cluster(cluster) => {
                let owner = SingleNodeRoutingInfo::SpecificNode(Route::with_key(key, SlotAddr::Master));
                cluster.route_command(cmd, RoutingInfo::SingleNode(owner)).await?
            }
            Inner::Managed(node) => cmd.query_async(node).await?,
            Inner::Plain(node) => cmd.query_async(node).await?,
        };
        // [channel, count] (a map in RESP3 on some servers); anything else
        // counts as present: the next look tells.
        let count = match &reply {
            Value::Array(pair) => pair.get(1),
            Value::Map(pairs) => pairs.first().map(|(_, count)| count),
            _ => None,
        };
        Ok(match count {
            Some(Value::Int(count)) => *count,
            _ => 1,
        })
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> RedisFuture<'a, redis::Value> {
        match &mut self.inner {
            Inner::Managed(c) => c.req_packed_command(cmd),
            Inner::Plain(c) => c.req_packed_command(cmd),
            Inner::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<redis::Value>> {
        match &mut self.inner {
            Inner::Managed(c) => c.req_packed_commands(pipeline, offset, count),
            Inner::Plain(c) => c.req_packed_commands(pipeline, offset, count),
            Inner::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.inner {
            Inner::Managed(c) => c.get_db(),
            Inner::Plain(c) => c.get_db(),
            Inner::Cluster(c) => c.get_db(),
        }
    }
}
