//! The Redis ACL rules for one supervisor: read everything of the job, write
//! only their own enable flag. The server enforces them; the app hides nothing.

use crate::keys::Keys;

/// Commands the tray and the CLI send: the probe script and what it calls,
/// the stream and pub/sub wake-ups, the flag write.
const COMMANDS: &[&str] = &[
    "+@connection",
    "+ping",
    "+time",
    "+eval",
    "+evalsha",
    "+eval_ro",
    "+evalsha_ro",
    "+type",
    "+exists",
    "+get",
    "+getrange",
    "+strlen",
    "+pttl",
    "+hget",
    "+hgetall",
    "+hlen",
    "+hscan",
    "+smembers",
    "+sismember",
    "+scard",
    "+sscan",
    "+xread",
    "+xrange",
    "+xrevrange",
    "+subscribe",
    "+psubscribe",
    "+unsubscribe",
    "+punsubscribe",
    "+hset",
];

/// Redis commands (one per line) that give `user` read access to the job
/// and write access to `{job}:enabled:<user>` only, and register the user.
/// The password is left out: set it with `ACL SETUSER <user> ><password>`.
pub fn rules(keys: &Keys, user: &str) -> Vec<String> {
    let mut setuser = vec![format!("ACL SETUSER {user} on resetkeys resetchannels -@all")];
    setuser.extend(COMMANDS.iter().map(|c| (*c).to_owned()));
    setuser.push(format!("%R~{}:*", glob_escape(&keys.prefix)));
    if !keys.lock.starts_with(&keys.prefix) {
        setuser.push(format!("%R~{}", glob_escape(&keys.lock)));
    }
    setuser.push(format!("%RW~{}", glob_escape(&keys.enabled(user))));
    setuser.push(format!("&{}", glob_escape(&keys.unlock_channel())));
    // Patterns are granted as the exact pattern the watcher subscribes to.
    setuser.push(format!("&{}", keyspace_pattern(&keys.prefix, true)));
    if !keys.lock.starts_with(&keys.prefix) {
        setuser.push(format!("&{}", keyspace_pattern(&keys.lock, false)));
    }
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
        assert!(!lines[0].contains("~*"), "no key pattern may match everything");
        assert_eq!(lines[1], "SADD {outbound}:users alice");
    }

    #[test]
    fn a_lock_outside_the_job_prefix_gets_its_own_read_rule() {
        let lines = rules(&Keys::new("outbound").with_lock_key("outbound*Lock"), "bob");
        assert!(lines[0].contains(" %R~outbound\\*Lock "), "{}", lines[0]);
        assert!(lines[0].contains("&redisson_lock__channel:{outbound\\*Lock}"), "{}", lines[0]);
        assert!(lines[0].contains(" &__keyspace@*__:outbound\\*Lock"), "{}", lines[0]);
    }
}
