//! The job's shared history, kept in its Redis event stream: what workers
//! write there, how it is read back, and what it means, once, for the CLI
//! and the tray alike.
//!
//! - [`entry`]: typed stream entries with structured causes; encoding and
//!   decoding (pure).
//! - [`read`]: the reads (stream by pages and bounds, flags, heartbeats).
//! - [`budget`]: how many of one person's flips are recorded (pure).
//! - [`build`](mod@build): entries, flags and heartbeats → runs, failovers, restarts,
//!   deaths, stops and flag flips (pure).
//! - [`outage`]: how long nobody ran the job around each incident (pure).
//! - [`report`]: a stretch of it in figures: uptime, incidents, outages,
//!   who switched it off (pure).

pub mod budget;
pub mod build;
pub mod entry;
pub mod outage;
pub mod read;
pub mod report;

use std::time::Duration;

use redis::aio::ConnectionLike;

pub use build::{End, History, Item, What, build};
pub use entry::{Cause, Entry, FlagFlip, Record, WaitCause};
pub use outage::Outage;
pub use report::{Report, SwitchedOff};

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::keys::Keys;
use crate::status::Config;

/// Entries kept on the stream (approximately).
pub const STREAM_CAP: u64 = 10_000;

/// Appends `record`, written by `node`, to the job's stream.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses the write.
pub async fn append<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &Keys,
    node: &str,
    record: &Record,
    server: &Endpoint,
) -> Result<(), Error> {
    let mut cmd = redis::cmd("XADD");
    cmd.arg(keys.events()).arg("MAXLEN").arg("~").arg(STREAM_CAP).arg("*");
    for (name, value) in record.encode(node) {
        cmd.arg(name).arg(value);
    }
    let _: redis::Value = cmd
        .query_async(conn)
        .await
        .map_err(|e| describe(e, Action::Recording { kind: record.kind().to_owned() }, server))?;
    Ok(())
}

/// Reads and builds the job's history, of the last `since` (Redis time)
/// when given, judged with the engine's `cfg` (heartbeat grace, failover
/// window).
///
/// # Errors
/// As [`read::read`].
pub async fn load<C: ConnectionLike + Send>(
    conn: &mut C,
    keys: &Keys,
    server: &Endpoint,
    since: Option<Duration>,
    cfg: &Config,
) -> Result<History, Error> {
    let r = read::read(conn, keys, server, since).await?;
    let mut history = build(&r.entries, &r.flags, &r.beats, r.now_ms, cfg);
    // Acknowledgements are read as they are now, not from the stream: a
    // supervisor may not write there, and one in force is what others need
    // (who is on it, since when); an ended one is gone with its key.
    // Each goes in by its time without reordering what the stream built.
    for a in &r.acks {
        let at = history.items.iter().position(|i| i.at_ms > a.at_ms).unwrap_or(history.items.len());
        let what = What::Ack { user: a.user.clone(), until_ms: a.until_ms, note: a.note.clone() };
        history.items.insert(at, Item { at_ms: a.at_ms, what });
    }
    Ok(match r.since_ms {
        Some(since) => history.since(since),
        None => history,
    })
}
