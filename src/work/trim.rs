//! Cutting a supervisor's own hash back to size. Her ACL lets her write her
//! flag and her "on it" hash, and no ACL rule limits how much: the probe
//! notes a hash far bigger than lockwatch writes ([`Snapshot::oversized`]),
//! and a worker, at its next look, keeps only the fields lockwatch reads.
//!
//! [`Snapshot::oversized`]: crate::snapshot::Snapshot::oversized

use std::sync::LazyLock;

use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::keys::Keys;
use crate::schema;

static SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(include_str!("trim.lua")));

/// Trims `key`, a supervisor's flag or "on it" hash of `keys`' job, to the
/// fields lockwatch writes there; returns the bytes it took before (0 when
/// it is not such a hash).
///
/// # Errors
/// [`Error::Redis`] when Redis refuses or cannot be reached.
pub async fn trim<C: ConnectionLike>(conn: &mut C, keys: &Keys, key: &str, host: &Endpoint) -> Result<u64, Error> {
    let fields = if key.starts_with(&keys.enabled_prefix()) {
        schema::flag::ALL
    } else if key.starts_with(&keys.ack_prefix()) {
        schema::ack::ALL
    } else {
        return Ok(0);
    };
    SCRIPT
        .key(key)
        .arg(fields)
        .invoke_async(conn)
        .await
        .map_err(|e| describe(e, Action::Trimming { key: key.to_owned() }, host))
}
