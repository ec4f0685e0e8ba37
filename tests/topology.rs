//! The Sentinel and Cluster guards in `tests/common/topology.rs` against real
//! servers: a failover promotes the replica with the data, a slot moves with
//! its keys, and sharded pub/sub reaches a subscriber on the slot's owner
//! until the slot moves away.

mod common;

use std::time::{Duration, Instant};

use common::next_push;
use common::server::connect;
use common::topology::{RedisCluster, SentinelSet, is_primary, query, query_following_redirects};

/// The job's lock key, and the channel Redisson publishes its unlock on (a
/// key that has a `{` is not wrapped again: see `Keys::unlock_channel`).
const LOCK_KEY: &str = "{outbound}:lock";
const UNLOCK_CHANNEL: &str = "redisson_lock__channel:{outbound}:lock";

fn took(what: &str, since: Instant) {
    eprintln!("{what}: {:.2} s", since.elapsed().as_secs_f64());
}

#[test]
fn sentinel_failover_promotes_the_replica_with_the_data_written_before() {
    let t = Instant::now();
    let mut set = SentinelSet::start();
    took("sentinel set ready", t);

    let old = set.primary_port();
    assert!(is_primary(old), "the sentinels name {old}, which is no primary");
    let mut conn = connect(old).unwrap();
    let _: () = redis::cmd("SET").arg(LOCK_KEY).arg("before-failover").query(&mut conn).unwrap();
    let acked: u32 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut conn).unwrap();
    assert_eq!(acked, 1, "the replica did not acknowledge the write");

    let t = Instant::now();
    assert_eq!(set.kill_primary(), old);
    let new = set.wait_for_new_primary(Duration::from_secs(30));
    took("failover after kill -9 of the primary", t);

    assert_ne!(new, old);
    assert!(set.server_ports().contains(&new), "the new primary {new} is not the set's replica");
    let value: Option<String> = query(new, redis::cmd("GET").arg(LOCK_KEY)).unwrap();
    assert_eq!(value.as_deref(), Some("before-failover"));
    let _: () = query(new, redis::cmd("SET").arg(LOCK_KEY).arg("after-failover")).unwrap();
}

#[test]
fn cluster_keys_written_through_a_seed_node_move_with_their_slot() {
    let t = Instant::now();
    let cluster = RedisCluster::start();
    took("cluster ready", t);

    let slot = cluster.slot_of(LOCK_KEY);
    assert_eq!(slot, cluster.slot_of("outbound"), "the hash tag must put the key in the job's slot");
    let owner = cluster.owner_of(LOCK_KEY);
    let seed = cluster.a_node_not_owning(LOCK_KEY);
    assert_ne!(seed, owner);

    let (answered, ()) = query_following_redirects(seed, redis::cmd("SET").arg(LOCK_KEY).arg("1"));
    assert_eq!(answered, owner, "MOVED from the seed must lead to the slot's owner");
    // More keys than one MIGRATE batch, so the migration has to loop.
    let mut conn = connect(owner).unwrap();
    for i in 0..250 {
        let _: () = redis::cmd("SET").arg(format!("{{outbound}}:extra:{i}")).arg(i).query(&mut conn).unwrap();
    }

    let target = cluster.ports().into_iter().find(|&p| p != owner).unwrap();
    let t = Instant::now();
    cluster.migrate_slot(slot, target);
    took("slot migration of 251 keys", t);

    assert_eq!(cluster.owner_of(LOCK_KEY), target);
    cluster.wait_ready(Duration::from_secs(10));
    let (answered, value): (u16, Option<String>) = query_following_redirects(owner, redis::cmd("GET").arg(LOCK_KEY));
    assert_eq!((answered, value.as_deref()), (target, Some("1")), "the key must be read on the new owner");
    let moved: u32 = query(target, redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot)).unwrap();
    let left: u32 = query(owner, redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot)).unwrap();
    assert_eq!((moved, left), (251, 0));
}

#[test]
fn sharded_subscriber_on_the_slot_owner_gets_spublish_until_the_slot_moves() {
    let t = Instant::now();
    let cluster = RedisCluster::start();
    took("cluster ready", t);

    // Redisson's unlock channel carries the lock key's hash tag: same slot as the job.
    let slot = cluster.slot_of(UNLOCK_CHANNEL);
    assert_eq!(slot, cluster.slot_of("outbound"));
    let owner = cluster.owner_of(UNLOCK_CHANNEL);

    let mut subscriber = connect(owner).unwrap();
    subscriber.send_packed_command(&redis::cmd("SSUBSCRIBE").arg(UNLOCK_CHANNEL).get_packed_command()).unwrap();
    assert_eq!(next_push(&mut subscriber), ["ssubscribe", UNLOCK_CHANNEL, "1"]);

    let elsewhere = cluster.a_node_not_owning(UNLOCK_CHANNEL);
    let refused: redis::RedisResult<u32> = query(elsewhere, redis::cmd("SPUBLISH").arg(UNLOCK_CHANNEL).arg("0"));
    assert_eq!(refused.unwrap_err().code(), Some("MOVED"), "SPUBLISH is routed by the channel's slot");
    let (answered, receivers): (u16, u32) =
        query_following_redirects(elsewhere, redis::cmd("SPUBLISH").arg(UNLOCK_CHANNEL).arg("0"));
    assert_eq!((answered, receivers), (owner, 1));
    assert_eq!(next_push(&mut subscriber), ["smessage", UNLOCK_CHANNEL, "0"]);

    // Moving the slot drops the subscription: the server says so with an
    // unrequested `sunsubscribe`, and a client has to subscribe again on the new owner.
    let target = elsewhere;
    cluster.migrate_slot(slot, target);
    assert_eq!(next_push(&mut subscriber), ["sunsubscribe", UNLOCK_CHANNEL, "0"]);
    let (answered, receivers): (u16, u32) =
        query_following_redirects(owner, redis::cmd("SPUBLISH").arg(UNLOCK_CHANNEL).arg("0"));
    assert_eq!((answered, receivers), (target, 0), "nobody listens on the new owner yet");
}
