//! Guards for the production Redis topologies, run for real: a Sentinel set
//! (a primary, its replica and three `redis-sentinel`s) and a Cluster of three
//! primaries. Every process is a [`RedisProcess`] (the tests' one Redis
//! guard) with its own loopback port and log in the topology's temp dir; all
//! are killed on drop, and a failing test prints their logs.
#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use super::free_port;
use super::server::{RedisProcess, connect, server_args};
use super::wait::until;

/// How long a topology may take to come up before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs `cmd` on the node at `port`.
pub fn query<T: redis::FromRedisValue>(port: u16, cmd: &redis::Cmd) -> redis::RedisResult<T> {
    cmd.query(&mut connect(port)?)
}

/// A field of an `INFO`-style reply (`name:value` lines).
fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(|v| v.trim().to_string())
}

/// True if the node at `port` answers `ROLE` as a primary.
pub fn is_primary(port: u16) -> bool {
    matches!(query::<redis::Role>(port, &redis::cmd("ROLE")), Ok(redis::Role::Primary { .. }))
}

/// A primary, one replica of it and three sentinels watching them
/// (quorum 2, down after 1 s), as a Sentinel deployment runs in production.
pub struct SentinelSet {
    /// The name the sentinels know the primary by (`--sentinel-master`).
    pub master_name: String,
    /// The primary first, then the replica; a failover swaps their roles.
    servers: Vec<RedisProcess>,
    sentinels: Vec<RedisProcess>,
    /// The port of the primary replaced last (killed, or failed over).
    replaced: Option<u16>,
    dir: tempfile::TempDir,
}

impl SentinelSet {
    /// Starts the set and waits until every sentinel knows the replica and
    /// the other two sentinels, so that a failover can be authorised.
    pub fn start() -> SentinelSet {
        SentinelSet::start_with(&[])
    }

    /// The same, with `extra` arguments for both data nodes (an ACL user,
    /// for instance).
    pub fn start_with(extra: &[&str]) -> SentinelSet {
        let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        let dir = tempfile::tempdir().unwrap();
        let master_name = "lockwatch-primary".to_string();
        // A primary waits 5 s for more replicas before a diskless full sync by default.
        let no_sync_delay = ["--repl-diskless-sync-delay".to_string(), "0".to_string()];
        let primary =
            RedisProcess::start("primary", "redis-server", dir.path(), free_port(), free_port, |port, log| {
                let mut args = server_args(port, log, &dir.path().join("primary"));
                args.extend(no_sync_delay.clone());
                args.extend(extra.clone());
                args
            });
        let primary_port = primary.port;
        let replica =
            RedisProcess::start("replica", "redis-server", dir.path(), free_port(), free_port, |port, log| {
                let mut args = server_args(port, log, &dir.path().join("replica"));
                args.extend(no_sync_delay.clone());
                args.extend(extra.clone());
                args.extend(["--replicaof".into(), "127.0.0.1".into(), primary_port.to_string()]);
                args
            });
        // A sentinel finds replicas in the primary's INFO, which it reads every
        // 10 s once started: start sentinels after the link is up to see it at once.
        until("the replica's link to the primary", START_TIMEOUT, || {
            let info: String = query(replica.port, redis::cmd("INFO").arg("replication")).ok()?;
            (info_field(&info, "master_link_status")? == "up").then_some(())
        });
        let sentinels = (1..=3)
            .map(|i| {
                RedisProcess::start(
                    &format!("sentinel {i}"),
                    "redis-sentinel",
                    dir.path(),
                    free_port(),
                    free_port,
                    |port, log| {
                        let conf = dir.path().join(format!("sentinel-{i}.conf"));
                        std::fs::write(&conf, sentinel_conf(port, log, dir.path(), &master_name, primary_port))
                            .unwrap();
                        vec![conf.display().to_string()]
                    },
                )
            })
            .collect();
        let set = SentinelSet { master_name, servers: vec![primary, replica], sentinels, replaced: None, dir };
        for sentinel in &set.sentinels {
            until(&format!("{} to see the replica and reach quorum", sentinel.name), START_TIMEOUT, || {
                let replicas: Vec<redis::Value> =
                    query(sentinel.port, redis::cmd("SENTINEL").arg("REPLICAS").arg(&set.master_name)).ok()?;
                let quorum: String =
                    query(sentinel.port, redis::cmd("SENTINEL").arg("CKQUORUM").arg(&set.master_name)).ok()?;
                (replicas.len() == 1 && quorum.contains("3 usable")).then_some(())
            });
        }
        set
    }

    /// `127.0.0.1:PORT` of each sentinel, as `--sentinel` takes them.
    pub fn sentinel_addrs(&self) -> Vec<String> {
        self.sentinel_ports().iter().map(|p| format!("127.0.0.1:{p}")).collect()
    }

    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|s| s.port).collect()
    }

    /// The ports of the data nodes (primary and replica, in no lasting order).
    pub fn server_ports(&self) -> Vec<u16> {
        self.servers.iter().map(|s| s.port).collect()
    }

    /// The primary's port as the first sentinel that answers names it
    /// (`SENTINEL GET-MASTER-ADDR-BY-NAME`).
    pub fn primary_port(&self) -> u16 {
        self.sentinel_ports().into_iter().find_map(|p| self.primary_named_by(p)).expect("no sentinel named a primary")
    }

    fn primary_named_by(&self, sentinel_port: u16) -> Option<u16> {
        let addr: Option<(String, u16)> =
            query(sentinel_port, redis::cmd("SENTINEL").arg("GET-MASTER-ADDR-BY-NAME").arg(&self.master_name)).ok()?;
        addr.map(|(_, port)| port)
    }

    /// Kills the current primary with SIGKILL, as a crashed machine would
    /// vanish, and returns its port.
    pub fn kill_primary(&mut self) -> u16 {
        let port = self.primary_port();
        let server = self.servers.iter_mut().find(|s| s.port == port).expect("the primary is one of the set's servers");
        server.kill();
        self.replaced = Some(port);
        port
    }

    /// Asks a sentinel for a failover (`SENTINEL FAILOVER`), as an admin
    /// does before maintenance: the replica is promoted, then the sentinels
    /// turn the old primary into its replica, closing its clients'
    /// connections (`CLIENT KILL TYPE normal` and `pubsub`). Returns the old
    /// primary's port; [`SentinelSet::wait_for_new_primary`] waits for the new one.
    pub fn fail_over(&mut self) -> u16 {
        let port = self.primary_port();
        let sentinel = self.sentinel_ports()[0];
        // A sentinel refuses while it has not yet judged the replica fit (NOGOODSLAVE).
        until("a sentinel to start a failover", START_TIMEOUT, || {
            query::<()>(sentinel, redis::cmd("SENTINEL").arg("FAILOVER").arg(&self.master_name)).ok()
        });
        self.replaced = Some(port);
        port
    }

    /// Swaps the roles of primary and replica behind the clients' backs, as
    /// an admin's switchover does, without the sentinels' `CLIENT KILL`:
    /// the sentinels forget the primary, the replica is promoted, the old
    /// primary replicates from it, and the sentinels monitor the new one.
    /// Connections to the old primary stay open, and its writes now answer
    /// `READONLY`. Returns the new primary's port.
    pub fn demote_primary(&mut self) -> u16 {
        let old = self.primary_port();
        let new = self.leave_primary_behind();
        let _: () = query(old, redis::cmd("REPLICAOF").arg("127.0.0.1").arg(new)).unwrap();
        for sentinel in self.sentinel_ports() {
            let down = redis::cmd("SENTINEL")
                .arg("SET")
                .arg(&self.master_name)
                .arg("down-after-milliseconds")
                .arg(1000)
                .clone();
            let _: () = query(sentinel, &down).unwrap();
        }
        new
    }

    /// The sentinels move to the replica while the primary carries on: as
    /// when a partition cuts the primary off from the sentinels and the
    /// replica but not from a client (and from another replica of its
    /// own). The replica is promoted and monitored; the old primary is
    /// left as it is, still a writable primary. Returns the new primary's port.
    pub fn leave_primary_behind(&mut self) -> u16 {
        let old = self.primary_port();
        let new = self.server_ports().into_iter().find(|&p| p != old).expect("a replica");
        for sentinel in self.sentinel_ports() {
            let _: () = query(sentinel, redis::cmd("SENTINEL").arg("REMOVE").arg(&self.master_name)).unwrap();
        }
        let _: () = query(new, redis::cmd("REPLICAOF").arg("NO").arg("ONE")).unwrap();
        for sentinel in self.sentinel_ports() {
            let monitor =
                redis::cmd("SENTINEL").arg("MONITOR").arg(&self.master_name).arg("127.0.0.1").arg(new).arg(2).clone();
            let _: () = query(sentinel, &monitor).unwrap();
        }
        self.replaced = Some(old);
        new
    }

    /// Waits until a sentinel names a primary other than the one replaced
    /// last (or than the first one) and that node answers `ROLE` as a primary.
    pub fn wait_for_new_primary(&self, timeout: Duration) -> u16 {
        let old = self.replaced.unwrap_or(self.servers[0].port);
        until("the sentinels to promote a new primary", timeout, || {
            self.sentinel_ports()
                .into_iter()
                .filter_map(|s| self.primary_named_by(s))
                .find(|&port| port != old && is_primary(port))
        })
    }
}

fn sentinel_conf(port: u16, log: &Path, dir: &Path, name: &str, primary_port: u16) -> String {
    // failover-timeout bounds how long a failed election waits to retry (twice
    // this), so keep it short; it must still cover the replica's promotion.
    format!(
        "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {log}\n\
         sentinel monitor {name} 127.0.0.1 {primary_port} 2\n\
         sentinel down-after-milliseconds {name} 1000\n\
         sentinel failover-timeout {name} 4000\n\
         sentinel parallel-syncs {name} 1\n",
        dir = dir.display(),
        log = log.display(),
    )
}

/// The arguments of a cluster node on `port` with its data in `dir`.
fn cluster_node_args(port: u16, log: &Path, dir: &Path) -> Vec<String> {
    let mut args = server_args(port, log, dir);
    args.extend(
        ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"]
            .map(String::from),
    );
    args
}

/// A free port whose cluster bus port (port + 10000) is free as well.
pub fn free_cluster_port() -> u16 {
    loop {
        let port = free_port();
        if port <= 55535 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

/// Three primaries sharing the 16384 slots, without replicas unless a test
/// adds one.
pub struct RedisCluster {
    nodes: Vec<ClusterNode>,
    dir: tempfile::TempDir,
}

struct ClusterNode {
    process: RedisProcess,
    /// The node id `CLUSTER SETSLOT … NODE` and `IMPORTING` take.
    id: String,
}

impl RedisCluster {
    /// Starts three nodes, gives each a third of the slots and introduces
    /// them (`CLUSTER ADDSLOTSRANGE` + `MEET`: what `redis-cli --cluster
    /// create` does, without its fixed one-second waits), then waits until
    /// the cluster is ready.
    pub fn start() -> RedisCluster {
        let dir = tempfile::tempdir().unwrap();
        let ranges = [(0, 5460), (5461, 10922), (10923, 16383)];
        let mut nodes = Vec::new();
        for (i, (first, last)) in ranges.into_iter().enumerate() {
            let name = format!("node {}", i + 1);
            let node_dir = dir.path().join(format!("node-{}", i + 1));
            let process = RedisProcess::start(
                &name,
                "redis-server",
                dir.path(),
                free_cluster_port(),
                free_cluster_port,
                |port, log| cluster_node_args(port, log, &node_dir),
            );
            let port = process.port;
            let id: String = query(port, redis::cmd("CLUSTER").arg("MYID")).unwrap();
            // Distinct epochs up front spare the nodes resolving a collision later.
            let _: () = query(port, redis::cmd("CLUSTER").arg("SET-CONFIG-EPOCH").arg(i + 1)).unwrap();
            let _: () = query(port, redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(first).arg(last)).unwrap();
            nodes.push(ClusterNode { process, id });
        }
        let first = nodes[0].process.port;
        for node in &nodes[1..] {
            let _: () =
                query(first, redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(node.process.port)).unwrap();
        }
        let cluster = RedisCluster { nodes, dir };
        cluster.wait_ready(START_TIMEOUT);
        cluster
    }

    /// Starts another node as a replica of the primary at `of` (`CLUSTER
    /// MEET`, then `CLUSTER REPLICATE`), waits until it has synced and every
    /// node knows it, and returns its port.
    pub fn add_replica(&mut self, of: u16) -> u16 {
        let n = self.nodes.len() + 1;
        let node_dir = self.dir.path().join(format!("node-{n}"));
        let process = RedisProcess::start(
            &format!("node {n}"),
            "redis-server",
            self.dir.path(),
            free_cluster_port(),
            free_cluster_port,
            |port, log| cluster_node_args(port, log, &node_dir),
        );
        let port = process.port;
        let id: String = query(port, redis::cmd("CLUSTER").arg("MYID")).unwrap();
        let primary_id = self.id_of(of).to_string();
        self.nodes.push(ClusterNode { process, id });
        let _: () = query(of, redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(port)).unwrap();
        // It must know the primary before it can replicate it.
        until("the new node to know the primary", START_TIMEOUT, || {
            let nodes: String = query(port, redis::cmd("CLUSTER").arg("NODES")).ok()?;
            nodes.contains(&primary_id).then_some(())
        });
        let _: () = query(port, redis::cmd("CLUSTER").arg("REPLICATE").arg(&primary_id)).unwrap();
        until("the replica's link to its primary", START_TIMEOUT, || {
            let info: String = query(port, redis::cmd("INFO").arg("replication")).ok()?;
            (info_field(&info, "master_link_status")? == "up").then_some(())
        });
        self.wait_ready(START_TIMEOUT);
        port
    }

    /// Fails the primary of the replica at `replica` over to it, as an admin
    /// does before maintenance (`CLUSTER FAILOVER` on the replica: the
    /// primary stops writes until the replica has caught up), and waits until
    /// it serves the old primary's slots.
    pub fn fail_over_to(&self, replica: u16) {
        let _: () = query(replica, redis::cmd("CLUSTER").arg("FAILOVER")).unwrap();
        until("the replica to take over its primary's slots", START_TIMEOUT, || {
            (!own_slots(replica).is_empty()).then_some(())
        });
    }

    /// The nodes' ports, in the order of their slot ranges at start.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.process.port).collect()
    }

    /// A `redis://` URL naming the node at `port`.
    pub fn url(&self, port: u16) -> String {
        format!("redis://127.0.0.1:{port}")
    }

    /// Waits until every node reports `cluster_state:ok`, knows all the
    /// nodes and sees all slots assigned.
    pub fn wait_ready(&self, timeout: Duration) {
        until("cluster_state:ok on every node", timeout, || {
            self.ports()
                .into_iter()
                .all(|port| {
                    let Ok(info) = query::<String>(port, redis::cmd("CLUSTER").arg("INFO")) else {
                        return false;
                    };
                    info_field(&info, "cluster_state").as_deref() == Some("ok")
                        && info_field(&info, "cluster_known_nodes") == Some(self.nodes.len().to_string())
                        && info_field(&info, "cluster_slots_assigned").as_deref() == Some("16384")
                })
                .then_some(())
        })
    }

    /// The slot `key` hashes to (`CLUSTER KEYSLOT`).
    pub fn slot_of(&self, key: &str) -> u16 {
        query(self.ports()[0], redis::cmd("CLUSTER").arg("KEYSLOT").arg(key)).unwrap()
    }

    /// The port of the node that owns the slot of `key`.
    pub fn owner_of(&self, key: &str) -> u16 {
        self.owner_of_slot(self.slot_of(key))
    }

    /// The port of the node that claims `slot` in its own `CLUSTER NODES`
    /// line: during a migration the source, after it the target.
    pub fn owner_of_slot(&self, slot: u16) -> u16 {
        let owners: Vec<u16> = self.ports().into_iter().filter(|&port| own_slots(port).contains(&slot)).collect();
        assert_eq!(owners.len(), 1, "slot {slot} should have exactly one owner, not nodes {owners:?}");
        owners[0]
    }

    /// The port of a node that does not own the slot of `key` (a seed node
    /// that answers MOVED for it).
    pub fn a_node_not_owning(&self, key: &str) -> u16 {
        let owner = self.owner_of(key);
        self.ports().into_iter().find(|&p| p != owner).expect("three nodes")
    }

    /// Kills the node at `port` with SIGKILL, as a crashed machine vanishes.
    pub fn kill_node(&mut self, port: u16) {
        self.nodes.iter_mut().find(|n| n.process.port == port).expect("a port of this cluster").process.kill();
    }

    fn id_of(&self, port: u16) -> &str {
        &self.nodes.iter().find(|n| n.process.port == port).expect("a port of this cluster").id
    }

    /// Moves `slot` and its keys to the node at `to_port`, the way a
    /// resharding does while clients keep working: `IMPORTING` on the target,
    /// `MIGRATING` on the source, `MIGRATE` of the keys in batches, then
    /// `SETSLOT … NODE` on the target, the source and the other node.
    pub fn migrate_slot(&self, slot: u16, to_port: u16) {
        let from_port = self.begin_migration(slot, to_port);
        self.move_keys(slot, from_port, to_port, 100);
        self.finish_migration(slot, from_port, to_port);
    }

    /// Marks `slot` as moving from its owner to `to_port` (the window in
    /// which the source answers ASK for missing keys); returns the source port.
    pub fn begin_migration(&self, slot: u16, to_port: u16) -> u16 {
        let from_port = self.owner_of_slot(slot);
        assert_ne!(from_port, to_port, "slot {slot} is already on node {to_port}");
        let setslot = |port: u16, state: &str, id: &str| {
            let _: () = query(port, redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg(state).arg(id)).unwrap();
        };
        setslot(to_port, "IMPORTING", self.id_of(from_port));
        setslot(from_port, "MIGRATING", self.id_of(to_port));
        from_port
    }

    /// Moves every key of `slot` from `from_port` to `to_port`, `batch` keys
    /// per `MIGRATE`.
    pub fn move_keys(&self, slot: u16, from_port: u16, to_port: u16, batch: usize) {
        let mut conn = connect(from_port).unwrap();
        loop {
            let keys: Vec<String> =
                redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(batch).query(&mut conn).unwrap();
            if keys.is_empty() {
                return;
            }
            let _: () = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(to_port)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys)
                .query(&mut conn)
                .unwrap();
        }
    }

    /// Gives `slot` to `to_port` on every node, target first so that it
    /// serves the slot before the source starts sending MOVED there.
    pub fn finish_migration(&self, slot: u16, from_port: u16, to_port: u16) {
        // Once the target owns the slot the source drops what it still holds.
        let left: u32 = query(from_port, redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot)).unwrap();
        assert_eq!(left, 0, "node {from_port} still holds keys of slot {slot}: move them first");
        let to_id = self.id_of(to_port).to_string();
        let mut order = vec![to_port, from_port];
        order.extend(self.ports().into_iter().filter(|p| *p != to_port && *p != from_port));
        for port in order {
            let _: () = query(port, redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg("NODE").arg(&to_id)).unwrap();
        }
    }
}

/// The slots the node at `port` serves by its own account (the `myself`
/// line of `CLUSTER NODES`; `[…]` entries are migrations, not ownership).
fn own_slots(port: u16) -> Vec<u16> {
    let nodes: String = query(port, redis::cmd("CLUSTER").arg("NODES")).unwrap();
    let line = nodes.lines().find(|l| l.split(' ').nth(2).is_some_and(|f| f.contains("myself"))).unwrap_or("");
    let mut slots = Vec::new();
    for range in line.split(' ').skip(8).filter(|r| !r.starts_with('[')) {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        slots.extend(first.parse::<u16>().unwrap()..=last.parse::<u16>().unwrap());
    }
    slots
}

/// Runs `cmd` starting at the node at `port` and follows MOVED and ASK
/// redirections (sending `ASKING` before an asked retry) as a cluster client
/// does. Returns the port that answered and the reply.
pub fn query_following_redirects<T: redis::FromRedisValue>(port: u16, cmd: &redis::Cmd) -> (u16, T) {
    let mut port = port;
    let mut asking = false;
    for _ in 0..5 {
        let mut conn = connect(port).unwrap();
        if asking {
            let _: () = redis::cmd("ASKING").query(&mut conn).unwrap();
        }
        match cmd.query::<T>(&mut conn) {
            Ok(reply) => return (port, reply),
            Err(e) if e.redirect_node().is_some() => {
                let (addr, _slot) = e.redirect_node().unwrap();
                asking = e.code() == Some("ASK");
                port = addr.rsplit_once(':').and_then(|(_, p)| p.parse().ok()).expect("host:port in a redirection");
            }
            Err(e) => panic!("{e} (node {port})"),
        }
    }
    panic!("more than 5 redirections starting at node {port}");
}
