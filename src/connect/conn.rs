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
        Ok(numsub_counts(&reply, 1)[0])
    }
}

/// The subscriber counts of a `PUBSUB NUMSUB` (or `SHARDNUMSUB`) reply
/// naming `asked` channels, in their order: `[channel, count, …]`, or a map
/// in RESP3 on some servers. A count that cannot be read counts as present
/// (1): the next look tells.
pub(crate) fn numsub_counts(reply: &Value, asked: usize) -> Vec<i64> {
    let count = |value: Option<&Value>| match value {
        Some(Value::Int(n)) => *n,
        _ => 1,
    };
    let numbers: Vec<i64> = match reply {
        Value::Array(flat) => flat.chunks(2).map(|pair| count(pair.get(1))).collect(),
        Value::Map(pairs) => pairs.iter().map(|(_, n)| count(Some(n))).collect(),
        _ => Vec::new(),
    };
    (0..asked).map(|i| numbers.get(i).copied().unwrap_or(1)).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn each_channel_gets_its_own_count_and_an_unreadable_one_counts_as_present() {
        let flat = Value::Array(vec![bulk("{a}:alive:srv-a"), Value::Int(1), bulk("{b}:alive:srv-b"), Value::Int(0)]);
        assert_eq!(numsub_counts(&flat, 2), vec![1, 0]);
        let map = Value::Map(vec![(bulk("{a}:alive:srv-a"), Value::Int(0))]);
        assert_eq!(numsub_counts(&map, 1), vec![0]);
        assert_eq!(numsub_counts(&Value::Nil, 2), vec![1, 1], "a reply that names nothing counts all as present");
        assert_eq!(numsub_counts(&Value::Array(vec![]), 0), Vec::<i64>::new());
    }
}
