//! The Redis ACL rules for one supervisor: read everything of the job, write
//! only their own enable flag and their own "I'm on it". The server enforces them; the app hides nothing.

use crate::keys::Keys;

/// Every command the tray and the CLI send as a supervisor, and nothing
/// else: no `CLIENT` (pause, kill, list), no `CONFIG`, no plain `EVAL` (a
/// script that wrote cannot be killed), no key or channel writes but the
/// flag's `HSET`. The redis crate's handshake needs no grant for `AUTH` and
/// `HELLO` (Redis lets anyone log in), `SELECT` only for a database other
/// than 0, and `CLIENT SETINFO` is never sent ([`crate::connect::Target`]
/// skips it: it is optional, and a refused one would fill the ACL log).
const COMMANDS: &[&str] = &[
    // The connection: a database other than 0, liveness checks.
    "+select",
    "+ping",
    // The probe (`probe.lua`), run read-only, and the commands it calls.
    "+eval_ro",
    "+evalsha_ro",
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
    // Whether the holder's process lives: its presence channel's subscribers
    // (sharded ones on a Redis Cluster).
    "+pubsub|numsub",
    "+pubsub|shardnumsub",
    // Whether the server a probe reached is the process the holder's missing
    // subscription was made in (`INFO server`'s run id): after a failover the
    // promoted replica has the claim but not the subscription. Asked only then.
    "+info",
    // The flag flip (`flags::set_flag`): Redis time, the own flag, the registration check.
    "+sismember",
    "+hset",
    // "I'm on it" (`ack::set_ack`, `ack::clear_ack`): the hash and its end in
    // one transaction, withdrawn field by field.
    "+multi",
    "+exec",
    "+discard",
    "+pexpireat",
    "+hdel",
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
    // cluster client's and the sharded subscriber's look-up), and the
    // sharded channels Redisson 3.22+ and lockwatch use there.
    "+cluster|slots",
    // Whether the node a probe reached owns the job's slot, asked only when
    // a holder's sharded presence looks gone (a migrating slot's keys are
    // read on the importing node, its subscribers are on the owner).
    "+cluster|myid",
    "+cluster|keyslot",
    "+ssubscribe",
    "+sunsubscribe",
];

/// Redis commands (one per line) that give `user` read access to the job
/// and write access to `{job}:enabled:<user>` and `{job}:ack:<user>` only,
/// and register the user.
/// The password is left out: set it with `ACL SETUSER <user> ><password>`.
pub fn rules(keys: &Keys, user: &str) -> Vec<String> {
    let mut setuser = vec![format!("ACL SETUSER {user} on resetkeys resetchannels -@all")];
    setuser.extend(COMMANDS.iter().map(|c| (*c).to_owned()));
    setuser.push(format!("%R~{}:*", glob_escape(&keys.prefix)));
    if !keys.lock.starts_with(&keys.prefix) {
        setuser.push(format!("%R~{}", glob_escape(&keys.lock)));
    }
    setuser.push(format!("%RW~{}", glob_escape(&keys.enabled(user))));
    setuser.push(format!("%RW~{}", glob_escape(&keys.ack(user))));
    setuser.push(format!("&{}", glob_escape(&keys.unlock_channel())));
    setuser.push(format!("&{}", glob_escape(&keys.wake_channel())));
    // Patterns are granted as the exact pattern the watcher subscribes to.
    setuser.push(format!("&{}", keyspace_pattern(&keys.prefix, true)));
    if !keys.lock.starts_with(&keys.prefix) {
        setuser.push(format!("&{}", keyspace_pattern(&keys.lock, false)));
    }
    // Publishing, on the wake channel only: a selector of its own, since a
    // channel granted at the top would let her publish on the unlock channel too.
    setuser.push(format!("(+publish +spublish resetchannels &{})", glob_escape(&keys.wake_channel())));
    vec![setuser.join(" "), format!("SADD {} {user}", keys.users())]
}

/// The keyspace-notification channel pattern of a key (or of every key
/// under a prefix), with the key's glob characters escaped.
pub fn keyspace_pattern(key: &str, prefix: bool) -> String {
    let escaped = glob_escape(key);
    if prefix { format!("__keyspace@*__:{escaped}:*") } else { format!("__keyspace@*__:{escaped}") }
}

/// Escapes Redis glob characters so a name matches only itself.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_grant_read_on_the_job_and_write_on_the_own_flag_only() {
        let lines = rules(&Keys::new("outbound"), "alice");
        assert!(lines[0].starts_with("ACL SETUSER alice on resetkeys resetchannels -@all "));
        assert!(lines[0].contains(" %R~{outbound}:* "));
        assert!(lines[0].contains(" %RW~{outbound}:enabled:alice "));
        assert!(lines[0].contains(" %RW~{outbound}:ack:alice "));
        assert!(!lines[0].contains("~*"), "no key pattern may match everything");
        assert_eq!(lines[1], "SADD {outbound}:users alice");
        assert!(
            lines[0].ends_with(" (+publish +spublish resetchannels &{outbound}:wake)"),
            "publishing on the wake channel only"
        );
    }

    #[test]
    fn rules_grant_no_command_that_reaches_beyond_the_own_connection() {
        let line = &rules(&Keys::new("outbound"), "alice")[0];
        let granted: Vec<&str> = line.split(' ').filter(|w| w.starts_with('+')).collect();
        for wide in
            ["+@", "+client", "+eval", "+evalsha", "+config", "+publish", "+del", "+script", "+function", "+cluster"]
        {
            assert!(!granted.iter().any(|g| *g == wide || (wide == "+@" && g.starts_with(wide))), "{wide} in {line}");
        }
        assert!(!granted.iter().any(|g| g.starts_with("+client")), "{line}");
        assert!(granted.contains(&"+eval_ro") && granted.contains(&"+hset"), "{line}");
        assert!(granted.contains(&"+pubsub|numsub") && granted.contains(&"+pubsub|shardnumsub"), "{line}");
    }

    #[test]
    fn a_lock_outside_the_job_prefix_gets_its_own_read_rule() {
        let lines = rules(&Keys::new("outbound").with_lock_key("outbound*Lock"), "bob");
        assert!(lines[0].contains(" %R~outbound\\*Lock "), "{}", lines[0]);
        assert!(lines[0].contains("&redisson_lock__channel:{outbound\\*Lock}"), "{}", lines[0]);
        assert!(lines[0].contains(" &__keyspace@*__:outbound\\*Lock"), "{}", lines[0]);
    }
}
