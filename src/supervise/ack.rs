//! "I'm on it": a supervisor's acknowledgement of the job's trouble, kept in
//! Redis under `{job}:ack:<user>` so every tray, dashboard and script sees
//! it. A hash (`at_ms`, `until_ms`, `note`) that Redis expires at its end;
//! each user may write only their own (the ACL says so, the server enforces it).

use std::time::Duration;

use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::connect::Conn;
use crate::error::{Action, Error, RedisFailure, describe};
use crate::input;
use crate::keys::Keys;
use crate::schema;

/// What an acknowledgement written said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    pub user: String,
    /// Redis time it was written, ms.
    pub at_ms: u64,
    /// Redis time it ends (and Redis drops it), ms.
    pub until_ms: u64,
    /// Set when it was written but others will not see it, saying why.
    pub warning: Option<String>,
}

/// One acknowledgement, as asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack<'a> {
    /// Whose.
    pub user: &'a str,
    /// How long it lasts, within [`input::ACK_RANGE`].
    pub lasts: Duration,
    /// What they are doing, in a line (empty for none).
    pub note: &'a str,
}

/// Writes `ack` for the job, stamped with Redis time and expiring (by the
/// Redis clock) when it ends; it replaces the user's earlier one. The
/// workers announce it to every watcher at their next look.
///
/// # Errors
/// [`Error::Input`] for a user name, duration or note that breaks its
/// rule in [`input`]; [`Error::Redis`] when Redis cannot be reached or
/// refuses the write (an ACL `NOPERM` says it was someone else's).
pub async fn set_ack(conn: &mut Conn, keys: &Keys, ack: &Ack<'_>) -> Result<Acked, Error> {
    let user = checked_user(ack.user)?;
    let note = input::ack_note(ack.note).map_err(|p| invalid(input::Field::AckNote, ack.note, p))?;
    let lasts = input::ack_lasts(ack.lasts)
        .map_err(|p| invalid(input::Field::AckFor, &crate::duration::format_duration(ack.lasts), p))?;
    let server = &conn.endpoint().clone();
    let (secs, micros): (u64, u64) =
        redis::cmd("TIME").query_async(conn).await.map_err(|e| describe(e, Action::ReadingTime, server))?;
    let at_ms = secs * 1000 + micros / 1000;
    let until_ms = at_ms + u64::try_from(lasts.as_millis()).unwrap_or(u64::MAX);
    let key = keys.ack(user);
    // A pipeline, not a transaction: she is granted no MULTI, whose queued
    // replies she could leave unread in Redis's memory. Were the expiry lost
    // with the connection, the hash still says when it ends, and no reader
    // shows it past then.
    let () = redis::pipe()
        .cmd("HSET")
        .arg(&key)
        .arg(schema::ack::AT_MS)
        .arg(at_ms)
        .arg(schema::ack::UNTIL_MS)
        .arg(until_ms)
        .arg(schema::ack::NOTE)
        .arg(&note)
        .ignore()
        .cmd("PEXPIREAT")
        .arg(&key)
        .arg(until_ms)
        .ignore()
        .query_async(conn)
        .await
        .map_err(|e| refused(describe(e, action(user, keys), server)))?;
    let warning = unregistered(conn, keys, user, server).await?;
    Ok(Acked { user: user.to_owned(), at_ms, until_ms, warning })
}

/// Withdraws the user's acknowledgement; true when there was one.
///
/// # Errors
/// As [`set_ack`].
pub async fn clear_ack(conn: &mut Conn, keys: &Keys, user: &str) -> Result<bool, Error> {
    let user = checked_user(user)?;
    let server = &conn.endpoint().clone();
    // HDEL of every field we write: the key goes with its last field, and a
    // supervisor's ACL needs no DEL, which would be one more command to grant.
    let removed: i64 = redis::cmd("HDEL")
        .arg(keys.ack(user))
        .arg(schema::ack::ALL)
        .query_async(conn)
        .await
        .map_err(|e| refused(describe(e, action(user, keys), server)))?;
    Ok(removed > 0)
}

fn checked_user(user: &str) -> Result<&str, Error> {
    input::name(user).map(|_| user).map_err(|p| invalid(input::Field::User, user, p))
}

fn invalid(field: input::Field, value: &str, problem: input::Problem) -> Error {
    input::Invalid::new(field, value, problem).into()
}

fn action(user: &str, keys: &Keys) -> Action {
    Action::Acknowledging { user: user.to_owned(), job: keys.job.clone() }
}

/// Others find acknowledgements through the users registry: one outside it
/// is written but seen by nobody, which the user must be told.
async fn unregistered<C: ConnectionLike + Send + Sync>(
    conn: &mut C,
    keys: &Keys,
    user: &str,
    server: &Endpoint,
) -> Result<Option<String>, Error> {
    let registered: bool = redis::cmd("SISMEMBER")
        .arg(keys.users())
        .arg(user)
        .query_async(conn)
        .await
        .map_err(|e| describe(e, Action::ReadingUsers, server))?;
    Ok((!registered).then(|| {
        format!(
            "nobody sees {user}'s \"on it\": {user} is not in {}; ask the Redis admin to run: SADD {} {user}",
            keys.users(),
            keys.users()
        )
    }))
}

/// A refused write said in the supervisor's words.
fn refused(err: Error) -> Error {
    match err {
        Error::Redis { action, host, cause, kind: RedisFailure::Permission, .. } => Error::Redis {
            action,
            host,
            cause,
            hint: "a Redis user may only say they are on it for themselves; connect as that user, or ask the admin for the rules printed by `lockwatch acl --user <name>`",
            kind: RedisFailure::Permission,
        },
        other => other,
    }
}
