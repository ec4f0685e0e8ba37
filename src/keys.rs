//! The Redis key schema of one job: every key name derived from the job name,
//! all of them overridable, sharing the hash tag `{job}` so one script reads
//! them in one round trip, also on Redis Cluster.

use serde::Serialize;

/// The registry of the jobs a Redis knows (`registry`): outside every
/// job's keys.
pub const JOBS: &str = "lockwatch:jobs";

/// Default job name when none is given.
pub const DEFAULT_JOB: &str = "outbound";

/// The names of every key and channel of one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Keys {
    /// The job's name as supervisors know it.
    pub job: String,
    /// Prefix shared by all job keys: `{job}` (the hash tag) by default.
    pub prefix: String,
    /// The lock: a Redisson RLock hash, a plain string or a task-alternation hash.
    pub lock: String,
}

impl Keys {
    /// Keys of `job` in the default layout: `{job}:lock`, `{job}:fence`, …
    pub fn new(job: &str) -> Self {
        let prefix = format!("{{{job}}}");
        Keys { job: job.to_owned(), lock: format!("{prefix}:lock"), prefix }
    }

    /// Same keys, but the lock lives under an existing name (a Redisson lock's
    /// `getLock("…")` name, for instance).
    pub fn with_lock_key(mut self, lock: &str) -> Self {
        lock.clone_into(&mut self.lock);
        self
    }

    /// Counter INCRed on every acquisition: the fencing token.
    pub fn fence(&self) -> String {
        format!("{}:fence", self.prefix)
    }

    /// The earliest Redis time (ms) a new holder may start the job, while a
    /// wait for an earlier holder that may still run it is not over; it
    /// expires with the wait.
    pub fn start_after(&self) -> String {
        format!("{}:start_after", self.prefix)
    }

    /// The run id of the Redis process that issued the last fence: a
    /// counter another process issued came back with a restart.
    pub fn fence_run(&self) -> String {
        format!("{}:fence_run", self.prefix)
    }

    /// Hash naming the last holding (`node`, `field`, `fence`) and whether
    /// it is known to have stopped its job (`stopped`): a new holder waits
    /// for one that is not, whatever heartbeats Redis still has. No expiry,
    /// so `volatile-*` eviction leaves it.
    pub fn handover(&self) -> String {
        format!("{}:handover", self.prefix)
    }

    /// Set of supervisor names whose flags count.
    pub fn users(&self) -> String {
        format!("{}:users", self.prefix)
    }

    /// Set of worker node names, to find heartbeats without SCAN.
    pub fn nodes(&self) -> String {
        format!("{}:nodes", self.prefix)
    }

    /// Capped stream of lifecycle events.
    pub fn events(&self) -> String {
        format!("{}:events", self.prefix)
    }

    /// Prefix of the heartbeat hashes; the node name follows.
    pub fn node_prefix(&self) -> String {
        format!("{}:node:", self.prefix)
    }

    /// Heartbeat hash of one worker node.
    pub fn node(&self, node: &str) -> String {
        format!("{}{node}", self.node_prefix())
    }

    /// Prefix of the enable flags; the user name follows.
    pub fn enabled_prefix(&self) -> String {
        format!("{}:enabled:", self.prefix)
    }

    /// Enable flag hash of one supervisor.
    pub fn enabled(&self, user: &str) -> String {
        format!("{}{user}", self.enabled_prefix())
    }

    /// Prefix of the acknowledgements ("I'm on it"); the user name follows.
    pub fn ack_prefix(&self) -> String {
        format!("{}:ack:", self.prefix)
    }

    /// One supervisor's acknowledgement hash, expiring when it ends.
    pub fn ack(&self, user: &str) -> String {
        format!("{}{user}", self.ack_prefix())
    }

    /// Prefix of the presence channels; the node name follows.
    pub fn alive_prefix(&self) -> String {
        format!("{}:alive:", self.prefix)
    }

    /// Channel a worker stays subscribed to while its process lives: Redis
    /// drops the subscription the moment the process dies (its connection
    /// closes), so `PUBSUB NUMSUB` of it tells a crash within one look.
    pub fn alive_channel(&self, node: &str) -> String {
        format!("{}{node}", self.alive_prefix())
    }

    /// Channel a supervisor's flip is announced on, so workers and watchers
    /// read the flags at once instead of at their next look.
    pub fn wake_channel(&self) -> String {
        format!("{}:wake", self.prefix)
    }

    /// Channel every worker publishes its node name on with each heartbeat
    /// (about once a second): while it arrives, a watcher knows Redis
    /// answers and the holder lives without asking either.
    pub fn beat_channel(&self) -> String {
        format!("{}:beat", self.prefix)
    }

    /// A chat message about one incident was claimed (`lockwatch serve`):
    /// `SET … NX PX` by the serve process that posts it, so no other does.
    pub fn posted(&self, incident: &str) -> String {
        format!("{}:posted:{incident}", self.prefix)
    }

    /// The repeats of one kind of incident since its message, counted for
    /// the summary at the window's end (`lockwatch serve`).
    pub fn repeats(&self, family: &str) -> String {
        format!("{}:repeats:{family}", self.prefix)
    }

    /// The posts to one robot (by its [`tag`]) within its longest rate
    /// limit window, from every serve process of the job: a sorted set,
    /// Redis time (ms) as the score (`lockwatch serve`).
    ///
    /// [`tag`]: crate::serve::robots::Robot::tag
    pub fn robot_sent(&self, tag: &str) -> String {
        format!("{}:robot:{tag}:sent", self.prefix)
    }

    /// Hash of the `lockwatch serve` processes watching the job: node →
    /// Redis time (ms) of its last beat.
    pub fn serves(&self) -> String {
        format!("{}:serves", self.prefix)
    }

    /// Redisson's unlock channel: the lock key wrapped in `{}` unless it
    /// already contains a `{`.
    pub fn unlock_channel(&self) -> String {
        if self.lock.contains('{') {
            format!("redisson_lock__channel:{}", self.lock)
        } else {
            format!("redisson_lock__channel:{{{}}}", self.lock)
        }
    }

    /// True when the lock key hashes to the same cluster slot as the job keys,
    /// so a single script may read all of them.
    pub fn lock_shares_slot(&self) -> bool {
        hash_slot(self.lock.as_bytes()) == hash_slot(self.fence().as_bytes())
    }
}

/// Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag, mod 16384).
pub fn hash_slot(key: &[u8]) -> u16 {
    crc16(hash_tag(key)) % 16384
}

/// The part of a key that Redis Cluster hashes: the text between the first
/// `{` and the next `}` when that is not empty, else the whole key.
fn hash_tag(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&b| b == b'{')
        && let Some(len) = key[open + 1..].iter().position(|&b| b == b'}')
        && len > 0
    {
        return &key[open + 1..open + 1 + len];
    }
    key
}

fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in data {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
        }
    }
    crc
}

/// The keyspace-notification channel pattern of a key (or of every key
/// under a prefix), with the key's glob characters escaped.
pub fn keyspace_pattern(key: &str, prefix: bool) -> String {
    let escaped = glob_escape(key);
    if prefix { format!("__keyspace@*__:{escaped}:*") } else { format!("__keyspace@*__:{escaped}") }
}

/// Escapes Redis glob characters so a name matches only itself.
pub fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A heartbeat's `presence` while its worker holds a plain subscription to
/// its presence channel: the probe counts it with `PUBSUB NUMSUB`.
pub const PRESENCE_PLAIN: &str = "1";
/// A heartbeat's `presence` while its worker holds a sharded subscription on
/// the slot's owner (a Redis Cluster): counted with `PUBSUB SHARDNUMSUB`.
pub const PRESENCE_SHARDED: &str = "sharded";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_keys_share_the_job_hash_tag() {
        let k = Keys::new("outbound");
        assert_eq!(k.lock, "{outbound}:lock");
        assert_eq!(k.fence(), "{outbound}:fence");
        assert_eq!(k.users(), "{outbound}:users");
        assert_eq!(k.nodes(), "{outbound}:nodes");
        assert_eq!(k.events(), "{outbound}:events");
        assert_eq!(k.node("srv-a"), "{outbound}:node:srv-a");
        assert_eq!(k.enabled("alice"), "{outbound}:enabled:alice");
        assert_eq!(k.ack("alice"), "{outbound}:ack:alice");
        assert_eq!(k.alive_channel("srv-a"), "{outbound}:alive:srv-a");
        assert!(k.lock_shares_slot());
    }

    #[test]
    fn unlock_channel_follows_redissons_naming_rule() {
        assert_eq!(Keys::new("outbound").unlock_channel(), "redisson_lock__channel:{outbound}:lock");
        let plain = Keys::new("outbound").with_lock_key("outboundLock");
        assert_eq!(plain.unlock_channel(), "redisson_lock__channel:{outboundLock}");
        assert!(!plain.lock_shares_slot());
    }

    #[test]
    fn hash_slot_matches_redis_cluster_reference_values() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(hash_slot(b"123456789"), 12739);
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"{user1000}.following"), hash_slot(b"{user1000}.followers"));
        assert_eq!(hash_slot(b"foo{}{bar}"), hash_slot(b"foo{}{bar}"));
        assert_ne!(hash_slot(b"foo{}{bar}"), hash_slot(b"bar"));
    }
}
