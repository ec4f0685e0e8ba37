//! A Redis Cluster, known by one of its nodes: the crate's cluster client
//! with retries cut down to the watcher's patience, and the owner of a
//! key's slot for the sharded subscriptions.

use std::time::Duration;

use redis::cluster::ClusterClient;
use redis::{ConnectionAddr, RedisError};

use super::TIMEOUT;

/// How often a cluster request is tried again (a redirection counts): the
/// crate's default of 16, with waits growing to minutes, would leave a
/// read of a dead node unanswered far past the watcher's patience.
pub(super) const CLUSTER_RETRIES: u32 = 3;
/// The shortest and longest wait between two tries of a cluster request, ms.
pub(super) const CLUSTER_RETRY_WAIT_MS: (u64, u64) = (20, 300);

/// A Redis Cluster, known by one node of it.
pub(super) struct Nodes {
    /// For commands: each answered (redirections and retries included) within [`TIMEOUT`].
    pub(super) commands: ClusterClient,
    /// The URL's settings (user, password, TLS): the seed node's address,
    /// replaced by a slot owner's for a sharded subscriber.
    pub(super) info: redis::ConnectionInfo,
}

/// A cluster client of the cluster `info`'s node belongs to, each request
/// answered within `timeout`, redirections and retries included.
pub(super) fn cluster_client(info: &redis::ConnectionInfo, timeout: Duration) -> Result<ClusterClient, RedisError> {
    ClusterClient::builder([info.clone()])
        .retries(CLUSTER_RETRIES)
        .min_retry_wait(CLUSTER_RETRY_WAIT_MS.0)
        .max_retry_wait(CLUSTER_RETRY_WAIT_MS.1)
        .connection_timeout(TIMEOUT)
        .response_timeout(timeout)
        .overall_response_timeout(Some(timeout))
        .build()
}

/// `host:port` with the TLS settings of `info`.
pub(super) fn node_addr(info: &redis::ConnectionInfo, host: String, port: u16) -> ConnectionAddr {
    match info.addr() {
        ConnectionAddr::TcpTls { insecure, .. } => {
            ConnectionAddr::TcpTls { host, port, insecure: *insecure, tls_params: None }
        }
        _ => ConnectionAddr::Tcp(host, port),
    }
}

/// The primary serving `slot` in a `CLUSTER SLOTS` reply (`[[first, last,
/// [host, port, id, …], replicas…], …]`); a node that announces no host is
/// reached at the seed's.
pub(super) fn owner_in_slots(reply: &[redis::Value], slot: u16, seed_host: &str) -> Option<(String, u16)> {
    use redis::Value;
    let int = |v: &Value| match v {
        Value::Int(i) => Some(*i),
        _ => None,
    };
    reply.iter().find_map(|range| {
        let Value::Array(parts) = range else { return None };
        let (first, last) = (int(parts.first()?)?, int(parts.get(1)?)?);
        if !(first..=last).contains(&i64::from(slot)) {
            return None;
        }
        let Value::Array(node) = parts.get(2)? else { return None };
        let host = match node.first()? {
            Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
            Value::SimpleString(s) => s.clone(),
            _ => String::new(),
        };
        let host = if host.is_empty() || host == "?" { seed_host.to_owned() } else { host };
        Some((host, u16::try_from(int(node.get(1)?)?).ok()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_owner_is_read_from_cluster_slots() {
        use redis::Value::{Array, BulkString, Int};
        let node = |host: &str, port| Array(vec![BulkString(host.into()), Int(port), BulkString(b"id".to_vec())]);
        let reply = [
            Array(vec![Int(0), Int(5460), node("10.0.0.1", 7000), node("10.0.0.4", 7003)]),
            Array(vec![Int(5461), Int(10922), node("", 7001)]),
        ];
        assert_eq!(owner_in_slots(&reply, 0, "seed"), Some(("10.0.0.1".into(), 7000)));
        assert_eq!(owner_in_slots(&reply, 10922, "seed"), Some(("seed".into(), 7001)));
        assert_eq!(owner_in_slots(&reply, 10923, "seed"), None);
    }
}
