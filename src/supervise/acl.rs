//! The Redis ACL rules for one supervisor: read everything of the job, write
//! only their own enable flag and their own "I'm on it", run no script of
//! their own, and nothing whose size or lifetime no rule bounds (another
//! database, a transaction, a message). The server enforces them; the app
//! hides nothing. Redis 6.2, which cannot keep a user's writes to some
//! keys, gets read-only rules. What no ACL rule bounds, the replies Redis
//! keeps for a client that does not read them, a server setting does
//! ([`SERVER_LIMITS`]).

use crate::keys::{Keys, glob_escape, keyspace_pattern};

/// Every command the tray and the CLI send as a supervisor to read the job,
/// and nothing else: no `CLIENT` (pause, kill, list), no `CONFIG`, no script
/// of her own (`EVAL*`, `FUNCTION`: an endless one blocks Redis). The redis
/// crate's handshake needs no grant for `AUTH` and `HELLO` (Redis lets anyone
/// log in), `SELECT` only for a database other than 0 (granted for the job's
/// own, [`rules`]), and `CLIENT SETINFO` is never sent
/// ([`crate::connect::Target`] skips it: it is optional, and a refused one
/// would fill the ACL log).
const READ: &[&str] = &[
    // Liveness checks.
    "+ping",
    // The commands the probe (`probe.lua`) calls.
    "+time",
    "+type",
    "+pttl",
    "+strlen",
    "+getrange",
    "+hlen",
    "+hgetall",
    "+hscan",
    "+hmget",
    "+hstrlen",
    "+scard",
    "+smembers",
    // The registry of jobs (`--job '*'`).
    "+zrange",
    // The size of her own flag and "on it" hashes: no rule limits what she
    // writes there, so the probe measures it (`trim.rs` cuts junk away).
    "+memory|usage",
    // Whether the holder's process lives: its presence channel's subscribers.
    "+pubsub|numsub",
    // Whether the server a probe reached is the process the holder's missing
    // subscription was made in (`INFO server`'s run id): after a failover the
    // promoted replica has the claim but not the subscription. Asked only then.
    "+info",
    // The registration check before a flip (`flags::set_flag`).
    "+sismember",
    // The event stream: wake-ups and the history.
    "+xread",
    "+xrange",
    "+xrevrange",
    // Wake-ups on the unlock channel and keyspace notifications.
    "+subscribe",
    "+psubscribe",
    "+unsubscribe",
    "+punsubscribe",
    // On a Redis Cluster: the map of which node serves which slot (the
    // cluster client's and the sharded subscriber's look-up).
    "+cluster|slots",
    // Whether the node a probe reached owns the job's slot, asked only when
    // a holder's sharded presence looks gone (a migrating slot's keys are
    // read on the importing node, its subscribers are on the owner).
    "+cluster|myid",
    "+cluster|keyslot",
];

/// What reading needs on Redis 7 and later: the probe as the read-only
/// function an admin loads, and sharded pub/sub on a Cluster (the channels
/// Redisson 3.22+ and lockwatch use there).
const READ_7: &[&str] = &["+fcall_ro", "+pubsub|shardnumsub", "+ssubscribe", "+sunsubscribe"];

/// Her own writes, each tied to its key by an ACL selector (Redis 7): a key
/// pattern alone grants every command of the user on every key it matches.
/// Her flag takes the flip (`flags::set_flag`) and nothing else, so she
/// cannot make it vanish (an `HDEL` of its fields, an end in the past);
/// "I'm on it" (`ack::set_ack`, `ack::clear_ack`) takes the hash, its end,
/// and its withdrawal field by field. No `MULTI`: a transaction's queued
/// replies, never read, would stay in Redis's memory as long as she kept
/// the connection.
const FLAG_WRITE: &[&str] = &["+hset"];
const ACK_WRITE: &[&str] = &["+hset", "+pexpireat", "+hdel"];

/// The server setting that bounds what no ACL rule can: the replies Redis
/// keeps for one ordinary client that sends and never reads (her `HGETALL`
/// of her own 10 MB flag, twenty times): past 64 MB, or 16 MB for a minute,
/// Redis closes that connection. Replicas and subscribers keep their own
/// limits. Printed by `lockwatch acl` for the admin to apply once.
pub const SERVER_LIMITS: &str = "CONFIG SET client-output-buffer-limit \"normal 64mb 16mb 60\"";

/// The Redis a supervisor's rules are for, as far as they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// Redis 7+ (Valkey too): ACL selectors and Functions.
    Modern,
    /// Redis 6.2: no selectors (a key pattern grants reading and writing
    /// alike), no Functions, no `EVAL_RO`, no sharded pub/sub.
    Redis6,
}

impl Server {
    /// The server a `redis_version` (`INFO server`) names; `None` for one
    /// lockwatch does not support (before 6.2: no channel rules).
    pub fn from_version(version: &str) -> Option<Server> {
        let mut parts = version.trim().split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next().flatten(), parts.next().flatten()) {
            (Some(major), _) if major >= 7 => Some(Server::Modern),
            (Some(6), Some(minor)) if minor >= 2 => Some(Server::Redis6),
            _ => None,
        }
    }

    /// What these rules cannot confine on this server, in one sentence.
    pub fn left_open(self, user: &str) -> Option<String> {
        match self {
            Server::Modern => None,
            Server::Redis6 => Some(format!(
                "Redis 6 has neither ACL selectors nor Functions (both came in 7.0), so these rules let {user} watch the job but not switch her flag or say she is on it (a write right would reach every key of the job, the lock too), and they let her run scripts, one of which could keep Redis busy for every client until an admin's SCRIPT KILL; Redis 7 or Valkey closes both"
            )),
        }
    }
}

/// Every command a worker sends, itself or from its scripts (`lock.lua`,
/// `worker.lua`, `trim.lua`, the probe): the lock, the fence, the
/// heartbeats and hand-over record, the stream, trimming the supervisors'
/// hashes, the announcements and subscriptions, and the checks it makes of
/// the server (its time, role, replicas, memory policy, tracking).
const WORKER: &[&str] = &[
    "+ping",
    "+time",
    "+info",
    "+role",
    "+wait",
    "+type",
    "+exists",
    "+pttl",
    "+strlen",
    "+getrange",
    "+get",
    "+set",
    "+del",
    "+unlink",
    "+hget",
    "+hmget",
    "+hset",
    "+hdel",
    "+hexists",
    "+hincrby",
    "+hlen",
    "+hgetall",
    "+hscan",
    "+hstrlen",
    "+sadd",
    "+srem",
    "+scard",
    "+smembers",
    "+sismember",
    "+srandmember",
    "+pexpire",
    "+pexpireat",
    "+memory|usage",
    "+xadd",
    "+xread",
    "+xrange",
    "+xrevrange",
    "+publish",
    "+subscribe",
    "+psubscribe",
    "+unsubscribe",
    "+punsubscribe",
    "+pubsub|numsub",
    // Flips heard the moment they are written (RESP3 tracking of the flags).
    "+client|tracking",
    "+client|trackinginfo",
    // Its scripts, loaded once and called by their digest.
    "+eval",
    "+evalsha",
    "+script|load",
    "+cluster|slots",
    "+cluster|myid",
    "+cluster|keyslot",
    // `lockwatch serve`, which may log in as the workers do: each robot's
    // rate limit kept among the serve processes (`serve::quota`).
    "+zadd",
    "+zrange",
    "+zcount",
    "+zrangebyscore",
    "+zremrangebyscore",
];

/// What a worker needs on Redis 7 and later besides: the probe as a
/// function it calls, as supervisors do, and sharded pub/sub on a Cluster.
/// Not `FUNCTION LOAD`: the read function is one for every job on the
/// server, so a job's worker that could load it could replace what every
/// supervisor of every job reads (the admin's `lockwatch acl` loads it; a
/// worker finding it missing reads with a script).
const WORKER_7: &[&str] = &["+fcall", "+fcall_ro", "+spublish", "+ssubscribe", "+sunsubscribe", "+pubsub|shardnumsub"];

/// Redis commands (one per line) that give a job's workers, logging in as
/// `user`, what they need and no more: every key and channel of the job
/// (and Redisson's lock key and unlock channel where they lie outside it),
/// the job's own database, and the commands they send. Nothing of another
/// job, no `CONFIG`, `FLUSH*`, `KEYS`, `CLIENT KILL`, `DEBUG` or `SHUTDOWN`.
pub fn worker_rules(keys: &Keys, user: &str, server: Server, database: i64) -> Vec<String> {
    let mut setuser = vec![format!("ACL SETUSER {user} on resetkeys resetchannels -@all")];
    setuser.extend(WORKER.iter().map(|c| (*c).to_owned()));
    if server == Server::Modern {
        setuser.extend(WORKER_7.iter().map(|c| (*c).to_owned()));
    }
    if database != 0 {
        setuser.push(format!("+select|{database}"));
    }
    setuser.extend(job_keys(keys, "~"));
    // The registry of jobs, where each worker adds its own.
    setuser.push(format!("~{}", crate::keys::JOBS));
    setuser.push(format!("&{}:*", glob_escape(&keys.prefix)));
    setuser.push(format!("&{}", glob_escape(&keys.unlock_channel())));
    setuser.extend(keyspace_channels(keys));
    vec![setuser.join(" ")]
}

/// The job's keys granted as `grant` (`~`, or `%R~` to read only): its
/// prefix, and the lock where it lies outside it (a Redisson service's).
fn job_keys(keys: &Keys, grant: &str) -> Vec<String> {
    let mut patterns = vec![format!("{grant}{}:*", glob_escape(&keys.prefix))];
    if !keys.lock.starts_with(&keys.prefix) {
        patterns.push(format!("{grant}{}", glob_escape(&keys.lock)));
    }
    patterns
}

/// The keyspace notifications of the job's keys, granted as the exact
/// patterns the watcher subscribes to.
fn keyspace_channels(keys: &Keys) -> Vec<String> {
    let mut patterns = vec![format!("&{}", keyspace_pattern(&keys.prefix, true))];
    if !keys.lock.starts_with(&keys.prefix) {
        patterns.push(format!("&{}", keyspace_pattern(&keys.lock, false)));
    }
    patterns
}

/// Redis commands (one per line) that give `user` read access to each of
/// `jobs`, kept in `database`, and, on `server`s with selectors, write access
/// to each one's `{job}:enabled:<user>` and `{job}:ack:<user>` only, and
/// register the user with each. The rules replace the user's earlier ones:
/// a supervisor of several jobs gets them in one call. The password is left
/// out: set it with `ACL SETUSER <user> ><password>`.
pub fn rules(jobs: &[Keys], user: &str, server: Server, database: i64) -> Vec<String> {
    let mut setuser = vec![format!("ACL SETUSER {user} on resetkeys resetchannels -@all")];
    setuser.extend(READ.iter().map(|c| (*c).to_owned()));
    // The job's database only: in any other she could keep keys no worker trims.
    if database != 0 {
        setuser.push(format!("+select|{database}"));
    }
    let modern = server == Server::Modern;
    if modern {
        setuser.extend(READ_7.iter().map(|c| (*c).to_owned()));
    } else {
        // The probe as a script: it may call only what she is granted, all reads.
        setuser.extend(["+eval".to_owned(), "+evalsha".to_owned()]);
    }
    // Every job's name, to read them all with `--job '*'`.
    setuser.push(format!("{}{}", if modern { "%R~" } else { "~" }, crate::keys::JOBS));
    for keys in jobs {
        // Without selectors a key pattern grants reading and writing alike: she
        // is granted no write command there.
        setuser.extend(job_keys(keys, if modern { "%R~" } else { "~" }));
        if modern {
            setuser.push(selector(FLAG_WRITE, &keys.enabled(user)));
            setuser.push(selector(ACK_WRITE, &keys.ack(user)));
        }
        setuser.push(format!("&{}", glob_escape(&keys.unlock_channel())));
        setuser.push(format!("&{}", glob_escape(&keys.wake_channel())));
        setuser.push(format!("&{}", glob_escape(&keys.beat_channel())));
        setuser.extend(keyspace_channels(keys));
    }
    let mut lines = vec![setuser.join(" ")];
    lines.extend(jobs.iter().map(|keys| format!("SADD {} {user}", keys.users())));
    lines
}

/// An ACL selector granting `commands` on the one key `key` and nothing
/// else, quoted as one word as `redis-cli` reads a line:
/// `"(~key +hset)"`.
fn selector(commands: &[&str], key: &str) -> String {
    let quoted = glob_escape(key).replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"(~{quoted} {})\"", commands.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_rules_reach_the_job_and_nothing_that_harms_the_server() {
        let line = &worker_rules(&Keys::new("outbound"), "worker", Server::Modern, 0)[0];
        assert!(line.starts_with("ACL SETUSER worker on resetkeys resetchannels -@all "), "{line}");
        assert!(line.contains(" ~{outbound}:* ") && line.contains(" &{outbound}:* "), "{line}");
        assert!(line.contains(" &redisson_lock__channel:{outbound}:lock"), "{line}");
        assert!(!line.contains("~*") && !line.contains("&*"), "no pattern may match everything: {line}");
        let granted: Vec<&str> = line.split(' ').filter(|w| w.starts_with('+')).collect();
        for harmful in
            ["+@", "+config", "+flushall", "+flushdb", "+keys", "+client|kill", "+debug", "+shutdown", "+select"]
        {
            assert!(!granted.iter().any(|g| g.starts_with(harmful)), "{harmful} in {line}");
        }
        let old = &worker_rules(&Keys::new("outbound").with_lock_key("outboundLock"), "worker", Server::Redis6, 2)[0];
        assert!(!old.contains("fcall") && !old.contains("spublish"), "Redis 6.2 has neither: {old}");
        assert!(old.contains(" ~outboundLock ") && old.contains(" +select|2 "), "{old}");
    }

    #[test]
    fn rules_grant_read_on_the_job_and_write_on_the_own_flag_only() {
        let lines = rules(&[Keys::new("outbound")], "alice", Server::Modern, 0);
        assert!(lines[0].starts_with("ACL SETUSER alice on resetkeys resetchannels -@all "));
        assert!(lines[0].contains(" %R~{outbound}:* "));
        // Each write tied to its key: a key pattern alone would grant every
        // write of hers on both (an `HDEL` or `PEXPIREAT` of her flag).
        assert!(lines[0].contains(r#" "(~{outbound}:enabled:alice +hset)" "#), "{}", lines[0]);
        assert!(lines[0].contains(r#" "(~{outbound}:ack:alice +hset +pexpireat +hdel)" "#), "{}", lines[0]);
        assert!(!lines[0].contains("%RW~") && !lines[0].contains(" +hdel "), "{}", lines[0]);
        assert!(!lines[0].contains("~*"), "no key pattern may match everything");
        assert_eq!(lines[1], "SADD {outbound}:users alice");
    }

    #[test]
    fn a_supervisor_of_several_jobs_gets_each_ones_rules_in_one_line() {
        let lines = rules(&[Keys::new("outbound"), Keys::new("inbound")], "alice", Server::Modern, 0);
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0].matches("ACL SETUSER").count(), 1, "one line replaces her rules once");
        for job in ["outbound", "inbound"] {
            assert!(lines[0].contains(&format!(" %R~{{{job}}}:* ")), "{}", lines[0]);
            assert!(lines[0].contains(&format!(r#" "(~{{{job}}}:enabled:alice +hset)" "#)), "{}", lines[0]);
            assert!(lines[0].contains(&format!(" &{{{job}}}:wake ")), "{}", lines[0]);
        }
        assert_eq!(lines[1..], ["SADD {outbound}:users alice", "SADD {inbound}:users alice"]);
    }

    #[test]
    fn rules_grant_no_other_database_transaction_or_message() {
        let line = &rules(&[Keys::new("outbound")], "alice", Server::Modern, 0)[0];
        for unbounded in ["+select", "+multi", "+exec", "+publish", "+spublish"] {
            assert!(!line.contains(unbounded), "{unbounded} in {line}");
        }
        let line = &rules(&[Keys::new("outbound")], "alice", Server::Modern, 3)[0];
        assert!(line.contains(" +select|3 "), "the job's own database only: {line}");
    }

    #[test]
    fn rules_grant_no_command_that_reaches_beyond_the_own_connection() {
        let line = &rules(&[Keys::new("outbound")], "alice", Server::Modern, 0)[0];
        let granted: Vec<&str> = line.split(' ').filter(|w| w.starts_with('+')).collect();
        for wide in [
            "+@",
            "+client",
            "+eval",
            "+evalsha",
            "+eval_ro",
            "+evalsha_ro",
            "+config",
            "+publish",
            "+del",
            "+script",
            "+function",
            "+fcall",
            "+cluster",
        ] {
            assert!(!granted.iter().any(|g| *g == wide || (wide == "+@" && g.starts_with(wide))), "{wide} in {line}");
        }
        assert!(!granted.iter().any(|g| g.starts_with("+client")), "{line}");
        assert!(granted.contains(&"+fcall_ro") && granted.contains(&"+hset"), "{line}");
        assert!(granted.contains(&"+pubsub|numsub") && granted.contains(&"+pubsub|shardnumsub"), "{line}");
    }

    #[test]
    fn a_lock_outside_the_job_prefix_gets_its_own_read_rule() {
        let lines = rules(&[Keys::new("outbound").with_lock_key("outbound*Lock")], "bob", Server::Modern, 0);
        assert!(lines[0].contains(" %R~outbound\\*Lock "), "{}", lines[0]);
        assert!(lines[0].contains("&redisson_lock__channel:{outbound\\*Lock}"), "{}", lines[0]);
        assert!(lines[0].contains(" &__keyspace@*__:outbound\\*Lock"), "{}", lines[0]);
    }

    #[test]
    fn redis_6_gets_read_only_rules_it_accepts_and_a_sentence_on_what_stays_open() {
        let line = &rules(&[Keys::new("outbound")], "alice", Server::Redis6, 0)[0];
        assert!(line.contains(" ~{outbound}:* "), "{line}");
        for seven in ["%R~", "%RW~", "(", "+fcall_ro", "+eval_ro", "+ssubscribe", "+pubsub|shardnumsub", "+hset"] {
            assert!(!line.contains(seven), "{seven} in {line}");
        }
        assert!(line.contains(" +eval +evalsha "), "{line}");
        let open = Server::Redis6.left_open("alice").unwrap();
        assert!(open.contains("not switch her flag") && open.contains("SCRIPT KILL"), "{open}");
        assert_eq!(Server::Modern.left_open("alice"), None);
    }

    #[test]
    fn the_server_is_told_by_its_version() {
        assert_eq!(Server::from_version("7.0.15"), Some(Server::Modern));
        assert_eq!(Server::from_version("7.2.4"), Some(Server::Modern), "Valkey says 7.2.4");
        assert_eq!(Server::from_version("8.0.1"), Some(Server::Modern));
        assert_eq!(Server::from_version("6.2.14"), Some(Server::Redis6));
        assert_eq!(Server::from_version("6.0.20"), None);
        assert_eq!(Server::from_version("junk"), None);
    }
}
