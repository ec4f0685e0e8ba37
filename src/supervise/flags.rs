//! A supervisor's own enable flag: who may flip it, and the flip itself
//! (state, Redis time, host, reason), with the server's refusal as a clear error.

use redis::AsyncCommands;

use crate::connect::Conn;
use crate::error::{Action, Error, RedisFailure, describe};
use crate::input::{check_reason, check_user};
use crate::keys::Keys;
use crate::schema;

/// What a flip did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flipped {
    pub user: String,
    pub on: bool,
    /// Redis time written with the flag, ms.
    pub at_ms: u64,
    /// Set when the flag was written but does not count yet, saying why.
    pub warning: Option<String>,
}

/// One flip of a supervisor's flag, as asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flip<'a> {
    /// Whose flag.
    pub user: &'a str,
    /// On or off.
    pub on: bool,
    /// The machine it is flipped from, so others see where it came from.
    pub host: &'a str,
    /// Why, in the supervisor's words, kept with the flag and in the history.
    pub reason: Option<&'a str>,
}

/// The supervisor name to use when none is given: the Redis ACL user of the
/// URL (unless it is `default`), else the OS login name.
///
/// # Errors
/// [`Error::NoUser`] when neither is known.
pub fn default_user(acl_user: Option<&str>) -> Result<String, Error> {
    if let Some(user) = acl_user.filter(|u| !u.is_empty() && *u != "default") {
        return Ok(user.to_owned());
    }
    ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .or_else(login_from_passwd)
        .ok_or(Error::NoUser)
}

/// The login name of this process's user from `/etc/passwd`, for sessions
/// (services, containers) that set no `USER`.
#[cfg(unix)]
fn login_from_passwd() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self").ok()?.uid().to_string();
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&uid.as_str()))
        .map(|f| f[0].to_owned())
}

#[cfg(not(unix))]
fn login_from_passwd() -> Option<String> {
    None
}

/// This machine's name, written with each flip so others see where it came from.
pub fn this_host() -> String {
    gethostname::gethostname().to_string_lossy().into_owned()
}

/// Sets the flip's user's flag of the job on or off, stamped with Redis
/// time, its host and reason (an empty reason when none is given, so an
/// older one does not stick), and registers the user in `{job}:users` when
/// the server allows.
///
/// # Errors
/// [`Error::Input`] for a user name or reason that cannot be used;
/// [`Error::Redis`] when Redis cannot be reached or refuses the write (an ACL
/// `NOPERM` says whose flag it was and what to ask for).
pub async fn set_flag(conn: &mut Conn, keys: &Keys, flip: &Flip<'_>) -> Result<Flipped, Error> {
    let Flip { user, on, host, reason } = *flip;
    let user = check_user(user)?;
    let reason = check_reason(reason.unwrap_or_default())?;
    let key = keys.enabled(user);
    let server = &conn.endpoint().clone();
    let (secs, micros): (u64, u64) =
        redis::cmd("TIME").query_async(conn).await.map_err(|e| describe(e, Action::ReadingTime, server))?;
    let at_ms = secs * 1000 + micros / 1000;
    let () = redis::cmd("HSET")
        .arg(&key)
        .arg(schema::flag::ON)
        .arg(if on { "1" } else { "0" })
        .arg(schema::flag::TIME)
        .arg(at_ms)
        .arg(schema::flag::HOST)
        .arg(host)
        .arg(schema::flag::REASON)
        .arg(reason)
        .query_async(conn)
        .await
        .map_err(|e| refused(describe(e, Action::WritingFlag { key: key.clone() }, server), user, keys))?;
    let mut warning = None;
    let registered: bool =
        conn.sismember(keys.users(), user).await.map_err(|e| describe(e, Action::ReadingUsers, server))?;
    if !registered {
        let added: Result<i64, _> = conn.sadd(keys.users(), user).await;
        if let Err(e) = added {
            let what = if on { "does not count yet" } else { "is off" };
            warning = Some(format!(
                "{user}'s flag {what}: {user} is not in {} and may not add itself ({}); ask the Redis admin to run: SADD {} {user}",
                keys.users(),
                e.code().unwrap_or("refused"),
                keys.users(),
            ));
        }
    }
    Ok(Flipped { user: user.to_owned(), on, at_ms, warning })
}

/// A refused write said in the supervisor's words.
fn refused(err: Error, user: &str, keys: &Keys) -> Error {
    match err {
        Error::Redis { host, cause, kind: RedisFailure::Permission, .. } => Error::Redis {
            action: Action::SettingFlag { user: user.to_owned(), job: keys.job.clone() },
            host,
            cause,
            hint: "a Redis user may only flip its own flag; connect as that user, or ask the admin for the rules printed by `lockwatch acl --user <name>`",
            kind: RedisFailure::Permission,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_user_prefers_the_acl_user() {
        assert_eq!(default_user(Some("alice")).unwrap(), "alice");
        assert_ne!(default_user(Some("default")).ok().as_deref(), Some("default"));
    }
}
