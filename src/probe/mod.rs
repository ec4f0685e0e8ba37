//! The one-round-trip read of a job: a Lua script that returns the lock, the
//! fence, the flags and the heartbeats at one Redis `TIME` (`probe.lua`, its
//! field lists from [`crate::schema`]), run as the server allows ([`run`]),
//! and the pure decoding of its reply into a [`Snapshot`] ([`decode`],
//! [`fields`]).

mod decode;
mod fields;
mod run;
#[cfg(test)]
mod tests;

use redis::Value;
use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::keys::Keys;
use crate::snapshot::Snapshot;

pub use decode::{decode, decode_look};
use run::run_read_only;
pub use run::{Way, load_function};

/// Reads the job's whole state: one round trip when the lock key shares the
/// job's hash slot, two when it does not.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses the read,
/// [`Error::Unreadable`] when its reply is not what the script returns.
pub async fn probe<C: ConnectionLike>(conn: &mut C, keys: &Keys, host: &Endpoint) -> Result<Snapshot, Error> {
    read(conn, keys, host, &mut Way::default()).await
}

/// [`probe`] on a connection read before: `way` is the way that worked
/// there last, tried first, and afterwards the one that worked.
///
/// # Errors
/// As [`probe`].
pub async fn read<C: ConnectionLike>(
    conn: &mut C,
    keys: &Keys,
    host: &Endpoint,
    way: &mut Way,
) -> Result<Snapshot, Error> {
    let (reply, lock_reply) = send(conn, keys, host, way, None).await?;
    decode(keys, &reply, lock_reply.as_ref())
}

/// What a watcher keeps between looks on its connection: its last full
/// read and that read's fingerprint, so that a look at a job where nothing
/// but the clock, the lock and the heartbeats changed reads only those; and
/// the way the script ran there.
#[derive(Debug, Clone, Default)]
pub struct Known {
    last: Option<(String, Snapshot)>,
    way: Way,
}

impl Known {
    /// Forgets the last full read: the next look reads everything (after a
    /// flag flip was announced, or now and then to see what no writer announced).
    pub fn forget(&mut self) {
        self.last = None;
    }

    /// The last full read's fingerprint, or `""` (a full read) with none.
    fn fingerprint(&self) -> String {
        self.last.as_ref().map_or("", |(f, _)| f.as_str()).to_owned()
    }

    /// A look's reply decoded over the last full read, which a new full
    /// read replaces.
    fn take(&mut self, keys: &Keys, reply: &Value) -> Result<Snapshot, Error> {
        let (snap, fingerprint) = decode_look(keys, reply, self.last.as_ref().map(|(_, s)| s))?;
        if !snap.problems.is_empty() {
            // Something odd: read it whole next time, with every sentence about it.
            self.forget();
        } else if let Some(f) = fingerprint.filter(|f| !f.is_empty()) {
            self.last = Some((f, snap.clone()));
        }
        Ok(snap)
    }
}

/// One look in one round trip: a glance (Redis time, the lock, the
/// heartbeats and the workers' presence, the rest as `known` has it) when
/// nothing the last full read's fingerprint covers has changed, else a full
/// read, which `known` then keeps. A lock key in another slot is always read
/// in full, as [`probe`] does.
///
/// # Errors
/// As [`probe`].
pub async fn look<C: ConnectionLike>(
    conn: &mut C,
    keys: &Keys,
    host: &Endpoint,
    known: &mut Known,
) -> Result<Snapshot, Error> {
    if !keys.lock_shares_slot() {
        known.forget();
        return read(conn, keys, host, &mut known.way).await;
    }
    let fingerprint = known.fingerprint();
    let (reply, _) = send(conn, keys, host, &mut known.way, Some(fingerprint)).await?;
    known.take(keys, &reply)
}

/// The looks at several jobs of one server in one call, as [`look`] does
/// each: the jobs' replies in their order, each decoded apart (one job's
/// odd reply is that job's error). Every job's lock must share its slot
/// ([`Keys::lock_shares_slot`]), and all keys one node: not for a Cluster,
/// which refuses keys of different slots in one call. `way` is the way the
/// last such call worked, as for [`read`].
///
/// # Errors
/// As [`probe`], for the call as a whole: Redis could not be reached or
/// refused it (one job's key its user may not read refuses them all).
pub async fn look_many<C: ConnectionLike>(
    conn: &mut C,
    jobs: &mut [(&Keys, &mut Known)],
    host: &Endpoint,
    way: &mut Way,
) -> Result<Vec<Result<Snapshot, Error>>, Error> {
    let (mut all_keys, mut args) = (Vec::new(), vec![MANY.to_owned()]);
    for (keys, known) in jobs.iter() {
        let (job_keys, job_args) = call_of(keys, Some(known.fingerprint()));
        all_keys.extend(job_keys);
        args.extend(job_args);
    }
    let reply = run_read_only(conn, way, &all_keys, &args).await.map_err(|e| describe(e, Action::ReadingJob, host))?;
    let replies = match &reply {
        Value::Array(replies) if replies.len() == jobs.len() => replies,
        _ => {
            let what = "the probe's reply for several jobs is not one part per job".to_owned();
            return Err(Error::Unreadable { key: jobs.first().map(|(k, _)| k.job.clone()).unwrap_or_default(), what });
        }
    };
    Ok(jobs.iter_mut().zip(replies).map(|((keys, known), reply)| known.take(keys, reply)).collect())
}

/// What the probe script takes as its first argument for a call about
/// several jobs (`MANY` in `probe.lua`).
const MANY: &str = "lockwatch:many";

/// Sends the probe script (and, when the lock lives in another slot, the
/// second call that reads it); `fingerprint` asks for a glance when it
/// matches, or for the full read's fingerprint.
async fn send<C: ConnectionLike>(
    conn: &mut C,
    keys: &Keys,
    host: &Endpoint,
    way: &mut Way,
    fingerprint: Option<String>,
) -> Result<(Value, Option<Value>), Error> {
    let together = keys.lock_shares_slot();
    let (job_keys, args) = call_of(keys, fingerprint);
    let reply = run_read_only(conn, way, &job_keys, &args).await.map_err(|e| describe(e, Action::ReadingJob, host))?;
    let lock_reply = if together {
        None
    } else {
        // Only the lock part of this reply is used; naming the lock key in every
        // KEYS slot keeps the call within the lock's cluster slot.
        let lock_keys: [String; 5] = std::array::from_fn(|_| keys.lock.clone());
        let reply = run_read_only(conn, way, &lock_keys, &[String::new(), String::new(), String::new()])
            .await
            .map_err(|e| describe(e, Action::ReadingLock, host))?;
        Some(reply)
    };
    Ok((reply, lock_reply))
}

/// The keys and arguments of one job's part of a probe call.
fn call_of(keys: &Keys, fingerprint: Option<String>) -> ([String; 5], Vec<String>) {
    // A lock read apart leaves its place to a key of the job's slot (its
    // reading is not used): a cluster routes by the first key and refuses
    // keys of two slots in one call.
    let fence = keys.fence();
    let lock_arg = if keys.lock_shares_slot() { keys.lock.clone() } else { fence.clone() };
    let job_keys = [lock_arg, fence, keys.users(), keys.nodes(), keys.events()];
    let mut args = vec![keys.enabled_prefix(), keys.node_prefix(), keys.ack_prefix(), keys.alive_prefix()];
    args.extend(fingerprint);
    (job_keys, args)
}
