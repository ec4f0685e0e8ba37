//! The one-round-trip read of a job: a Lua script that returns the lock, the
//! fence, the flags and the heartbeats at one Redis `TIME`, and the pure
//! decoding of its reply into a [`Snapshot`].

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use redis::Value;
use redis::aio::ConnectionLike;

use crate::address::Endpoint;
use crate::error::{Action, Error, describe};
use crate::keys::{Keys, PRESENCE_PLAIN, PRESENCE_SHARDED};
use crate::snapshot::{Ack, Beat, Flag, Lock, LockKind, Snapshot, StreamEntry, StreamId, escape_bytes};

const PROBE_SOURCE: &str = include_str!("probe.lua");
static PROBE: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(PROBE_SOURCE));

/// A Redisson hold count is small; a value this large is a timestamp in ms,
/// which marks a task-alternation hash.
const TIMESTAMP_MS_FLOOR: i64 = 100_000_000_000;

/// Reads the job's whole state: one round trip when the lock key shares the
/// job's hash slot, two when it does not.
///
/// # Errors
/// [`Error::Redis`] when Redis cannot be reached or refuses the read,
/// [`Error::Unreadable`] when its reply is not what the script returns.
pub async fn probe<C: ConnectionLike>(conn: &mut C, keys: &Keys, host: &Endpoint) -> Result<Snapshot, Error> {
    let (reply, lock_reply) = send(conn, keys, host, None).await?;
    decode(keys, &reply, lock_reply.as_ref())
}

/// What a watcher keeps between looks: its last full read and that read's
/// fingerprint, so that a look at a job where nothing but the clock, the
/// lock and the heartbeats changed reads only those.
#[derive(Debug, Clone, Default)]
pub struct Known {
    last: Option<(String, Snapshot)>,
}

impl Known {
    /// Forgets the last full read: the next look reads everything (after a
    /// flag flip was announced, or now and then to see what no writer announced).
    pub fn forget(&mut self) {
        self.last = None;
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
        return probe(conn, keys, host).await;
    }
    let fingerprint = known.last.as_ref().map_or("", |(f, _)| f.as_str()).to_owned();
    let (reply, _) = send(conn, keys, host, Some(fingerprint)).await?;
    let (snap, fingerprint) = decode_look(keys, &reply, known.last.as_ref().map(|(_, s)| s))?;
    if !snap.problems.is_empty() {
        // Something odd: read it whole next time, with every sentence about it.
        known.forget();
    } else if let Some(f) = fingerprint.filter(|f| !f.is_empty()) {
        known.last = Some((f, snap.clone()));
    }
    Ok(snap)
}

/// Sends the probe script (and, when the lock lives in another slot, the
/// second call that reads it); `fingerprint` asks for a glance when it
/// matches, or for the full read's fingerprint.
async fn send<C: ConnectionLike>(
    conn: &mut C,
    keys: &Keys,
    host: &Endpoint,
    fingerprint: Option<String>,
) -> Result<(Value, Option<Value>), Error> {
    let together = keys.lock_shares_slot();
    // A lock read apart leaves its place to a key of the job's slot (its
    // reading is not used): a cluster routes by the first key and refuses
    // keys of two slots in one call.
    let fence = keys.fence();
    let lock_arg = if together { keys.lock.as_str() } else { fence.as_str() };
    let job_keys = [lock_arg, &fence, &keys.users(), &keys.nodes(), &keys.events()].map(str::to_owned);
    let mut args = vec![keys.enabled_prefix(), keys.node_prefix(), keys.ack_prefix(), keys.alive_prefix()];
    args.extend(fingerprint);
    let reply = run_read_only(conn, &job_keys, &args).await.map_err(|e| describe(e, Action::ReadingJob, host))?;
    let lock_reply = if together {
        None
    } else {
        // Only the lock part of this reply is used; naming the lock key in every
        // KEYS slot keeps the call within the lock's cluster slot.
        let lock_keys: [String; 5] = std::array::from_fn(|_| keys.lock.clone());
        let reply = run_read_only(conn, &lock_keys, &[String::new(), String::new(), String::new()])
            .await
            .map_err(|e| describe(e, Action::ReadingLock, host))?;
        Some(reply)
    };
    Ok((reply, lock_reply))
}

/// Decodes the reply of a [`look`]: a full read with its fingerprint, or a
/// glance laid over `base`, the full read it was measured against (then
/// without a fingerprint: `base` stays the one to compare with). Pure.
///
/// # Errors
/// [`Error::Unreadable`] when the reply has neither shape, or is a glance
/// with no `base`.
pub fn decode_look(keys: &Keys, reply: &Value, base: Option<&Snapshot>) -> Result<(Snapshot, Option<String>), Error> {
    let bad = |what: &str| Error::Unreadable { key: keys.job.clone(), what: what.to_owned() };
    let parts = array(reply).ok_or_else(|| bad("the probe reply is not an array"))?;
    if parts.first().and_then(text).as_deref() != Some("glance") {
        let snap = decode(keys, reply, None)?;
        let fingerprint =
            parts.iter().find(|part| tagged(part, "fingerprint")).and_then(array).and_then(|p| p.get(1)).and_then(text);
        return Ok((snap, fingerprint));
    }
    let [_, _, time, lock, names, beats, presence] = parts else {
        return Err(bad("the probe's glance has the wrong number of parts"));
    };
    let base = base.ok_or_else(|| bad("a glance came with no full read to lay it over"))?;
    let time_ms = decode_time(time).ok_or_else(|| bad("Redis TIME is unreadable"))?;
    let mut problems = Vec::new();
    let lock = decode_lock(&keys.lock, lock, &mut problems);
    let names: Vec<String> = array(names).unwrap_or_default().iter().filter_map(bytes).map(escape_bytes).collect();
    let beats = decode_beats(keys, &names, beats, std::slice::from_ref(presence), &mut problems);
    let acks = base.acks.iter().filter(|a| a.until_ms > time_ms).cloned().collect();
    Ok((Snapshot { time_ms, lock, beats, acks, problems, ..base.clone() }, None))
}

/// The ways the probe can run, best first: as the function of [`LIBRARY`]
/// (Redis 7+), as a read-only script (`EVALSHA_RO`, Redis 7+, rules made by
/// lockwatch before the function), as a plain script (Redis 6.2, whose
/// supervisors' rules allow only reads within it).
const WAYS: [&str; 3] = ["FCALL_RO", "EVALSHA_RO", "EVALSHA"];

/// The way that last worked in this process, tried first: the others
/// cost a refused call each, which a server notes in its ACL log.
static WAY: AtomicUsize = AtomicUsize::new(0);

/// The probe as a Redis Functions library: supervisors call it with
/// `FCALL_RO` and need no right to run scripts of their own (an endless one
/// would keep Redis busy for every client). Named after the script's hash, so
/// desktops of two lockwatch versions each find their own.
static LIBRARY: LazyLock<(String, String)> = LazyLock::new(|| {
    let name = format!("lockwatch_probe_{}", &PROBE.get_hash()[..16]);
    let code = format!(
        "#!lua name={name}\nlocal function probe(KEYS, ARGV)\n{PROBE_SOURCE}\nend\n\
         redis.register_function{{function_name = '{name}', callback = probe, flags = {{'no-writes'}}}}\n"
    );
    (name, code)
});

/// Runs the probe read-only, the way that last worked first, then the
/// others (see [`WAYS`]); a server that does not know a way, or a user who
/// may not use it, moves on to the next. Every other error ends the read.
async fn run_read_only<C: ConnectionLike>(conn: &mut C, keys: &[String], args: &[String]) -> redis::RedisResult<Value> {
    let first = WAY.load(Ordering::Relaxed);
    let mut refused = None;
    for way in std::iter::once(first).chain((0..WAYS.len()).filter(|w| *w != first)) {
        let result = match WAYS[way] {
            "FCALL_RO" => run_function(conn, keys, args).await,
            command => run_script(conn, command, keys, args).await,
        };
        match result {
            Err(e) if e.code() == Some("NOPERM") || unknown_command(&e) => {
                refused.get_or_insert(e);
            }
            other => {
                if other.is_ok() {
                    WAY.store(way, Ordering::Relaxed);
                }
                return other;
            }
        }
    }
    Err(refused.unwrap_or_else(|| redis::RedisError::from(std::io::Error::other("no way to read the job"))))
}

/// Loads lockwatch's read function on the server behind `conn` (Redis 7+),
/// as an admin setting up supervisors does; a worker's probe loads it too.
///
/// # Errors
/// Redis's: no Functions (Redis 6), or a user who may not load them.
pub async fn load_function<C: ConnectionLike>(conn: &mut C) -> redis::RedisResult<()> {
    let loaded: redis::RedisResult<Value> = redis::cmd("FUNCTION").arg("LOAD").arg(&LIBRARY.1).query_async(conn).await;
    match loaded {
        // Already there: loaded by a worker, or another process meanwhile.
        Err(e) if !e.to_string().contains("already exists") => Err(e),
        _ => Ok(()),
    }
}

/// The probe as the function of [`LIBRARY`], loaded first when the server
/// does not have it (workers and admins may; a supervisor cannot, and is
/// told who loads it).
async fn run_function<C: ConnectionLike>(conn: &mut C, keys: &[String], args: &[String]) -> redis::RedisResult<Value> {
    let name = &LIBRARY.0;
    let fcall = || redis::cmd("FCALL_RO").arg(name).arg(keys.len()).arg(keys).arg(args).clone();
    match fcall().query_async::<Value>(conn).await {
        Err(e) if e.to_string().contains("Function not found") => match load_function(conn).await {
            Err(l) => {
                tracing::debug!("loading {name}: {l}");
                Err(e)
            }
            Ok(()) => fcall().query_async(conn).await,
        },
        other => other,
    }
}

fn unknown_command(e: &redis::RedisError) -> bool {
    e.code() == Some("ERR") && e.to_string().contains("unknown command")
}

/// The probe as a script, by its hash (`EVALSHA_RO` or `EVALSHA`), sent
/// whole when the server does not know it yet.
async fn run_script<C: ConnectionLike>(
    conn: &mut C,
    by_hash: &str,
    keys: &[String],
    args: &[String],
) -> redis::RedisResult<Value> {
    let run = |command: &str, script: &str| redis::cmd(command).arg(script).arg(keys.len()).arg(keys).arg(args).clone();
    match run(by_hash, PROBE.get_hash()).query_async::<Value>(conn).await {
        Err(e) if e.code() == Some("NOSCRIPT") => {
            let whole = if by_hash == "EVALSHA_RO" { "EVAL_RO" } else { "EVAL" };
            run(whole, PROBE_SOURCE).query_async(conn).await
        }
        other => other,
    }
}

/// Turns the script's reply (and, when the lock was read apart, the second
/// reply) into a snapshot. Pure: unit-tested with hand-made replies.
///
/// # Errors
/// [`Error::Unreadable`] when the reply does not have the script's shape.
pub fn decode(keys: &Keys, reply: &Value, lock_reply: Option<&Value>) -> Result<Snapshot, Error> {
    let bad = |what: &str| Error::Unreadable { key: keys.job.clone(), what: what.to_owned() };
    let parts = array(reply).ok_or_else(|| bad("the probe reply is not an array"))?;
    let [time, lock, fence, users, flags, nodes, beats, later @ ..] = parts else {
        return Err(bad("the probe reply has the wrong number of parts"));
    };
    let mut snap =
        Snapshot { time_ms: decode_time(time).ok_or_else(|| bad("Redis TIME is unreadable"))?, ..Default::default() };
    let lock = match lock_reply {
        Some(other) => array(other).and_then(|p| p.get(1)).ok_or_else(|| bad("the lock reply is unreadable"))?,
        None => lock,
    };
    snap.lock = decode_lock(&keys.lock, lock, &mut snap.problems);
    let known_problems = snap.problems.len();
    snap.fence = decode_fence(&keys.fence(), fence, &mut snap.problems);
    snap.fence_unreadable = snap.problems.len() > known_problems;
    let user_names = decode_set(&keys.users(), users, &mut snap.problems);
    snap.flags = pair_up(user_names.as_deref().unwrap_or_default(), flags)
        .map(|(user, reply)| {
            note_oversized(&keys.enabled(user), reply, &mut snap.oversized);
            decode_flag(&keys.enabled(user), user, reply, snap.time_ms, &mut snap.problems)
        })
        .collect();
    snap.flags.sort_by(|a, b| a.user.cmp(&b.user));
    // A fence counter above 0 means a server took the job, which needs a
    // registered user's flag on: a missing registry was lost, not never made.
    let registry_lost = redis_type(users).as_deref() == Some("none") && snap.fence.is_some_and(|f| f > 0);
    if registry_lost {
        snap.problems.push(format!(
            "Redis lost the registry {} (the fence counter shows the job ran), so whose flags count cannot be told; provision the supervisors again (lockwatch acl prints the SADD) or have each switch their flag again",
            keys.users()
        ));
    }
    if user_names.is_none() || registry_lost {
        // Stands for the flags that could not be read, so that nobody (the
        // status, a worker) takes them for "nobody has it enabled".
        snap.flags.push(Flag { user: keys.users(), on: None, at_ms: None, host: None });
    }
    let node_names = decode_set(&keys.nodes(), nodes, &mut snap.problems).unwrap_or_default();
    snap.beats = decode_beats(keys, &node_names, beats, later, &mut snap.problems);
    snap.recent_events = later
        .iter()
        .find(|part| tagged(part, "events"))
        .and_then(|part| decode_tail(&keys.events(), part, &mut snap.problems));
    if let Some(part) = later.iter().find(|part| tagged(part, "acks")) {
        let replies = array(part).and_then(|p| p.get(2)).cloned().unwrap_or(Value::Nil);
        let names = user_names.as_deref().unwrap_or_default();
        snap.acks = pair_up(names, &replies)
            .filter_map(|(user, reply)| {
                note_oversized(&keys.ack(user), reply, &mut snap.oversized);
                decode_ack(&keys.ack(user), user, reply, snap.time_ms, &mut snap.problems)
            })
            .collect();
        snap.acks.sort_by(|a, b| a.user.cmp(&b.user));
    }
    let tail_type = later.iter().find(|part| tagged(part, "events")).and_then(|p| array(p)?.get(1)).and_then(text);
    let absent = [lock, fence, users, nodes].iter().all(|v| redis_type(v).as_deref() == Some("none"))
        && tail_type.as_deref() == Some("none");
    snap.job_absent = absent.then(|| {
        format!(
            "no job named {} on this Redis (no lock, supervisors, servers, fence or history under {}:*): check the job name (--job) and the Redis address",
            keys.job, keys.prefix
        )
    });
    Ok(snap)
}

/// The Redis type a part of the probe's reply starts with (`none` for a missing key).
fn redis_type(v: &Value) -> Option<String> {
    array(v)?.first().and_then(text)
}

/// The heartbeats of `names`, with each worker's presence from the part
/// of `later` tagged `alive`, sorted by node.
fn decode_beats(
    keys: &Keys,
    names: &[String],
    beats: &Value,
    later: &[Value],
    problems: &mut Vec<String>,
) -> Vec<Beat> {
    let subscribers = presence_counts(later);
    let mut out: Vec<Beat> = pair_up(names, beats)
        .enumerate()
        .map(|(i, (node, reply))| {
            let mut beat = decode_beat(&keys.node(node), node, reply, problems);
            let count = beat.present.and(subscribers.get(i).copied().flatten());
            beat.presence_elsewhere = count == Some(CLAIMED_ELSEWHERE);
            beat.present = count.filter(|n| *n >= 0).map(|n| n > 0);
            beat
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// The presence count of a claim made in another server process than the
/// one the probe read (`probe.lua`'s -2).
const CLAIMED_ELSEWHERE: i64 = -2;

/// Subscribers of each node's presence channel, in the order of the nodes
/// read (`None`: not asked; negative: not known, or [`CLAIMED_ELSEWHERE`]).
fn presence_counts(later: &[Value]) -> Vec<Option<i64>> {
    let Some(part) = later.iter().find(|part| tagged(part, "alive")).and_then(array) else { return Vec::new() };
    if part.get(1).and_then(text).as_deref() != Some("read") {
        return Vec::new();
    }
    let counts = part.get(2).and_then(array).unwrap_or_default();
    counts.iter().map(int).collect()
}

/// True when a later part of the reply is the one named `tag`.
fn tagged(part: &Value, tag: &str) -> bool {
    array(part).and_then(|p| p.first()).and_then(text).is_some_and(|t| t == tag)
}

/// The stream's newest entries (`{'events', type, {id, type, …}}`), newest
/// first; `None` when the stream was not read or is not a stream.
fn decode_tail(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<Vec<StreamEntry>> {
    let parts = array(v).unwrap_or_default();
    match parts.get(1).and_then(text).as_deref() {
        Some("stream") => {}
        Some("none") => return Some(Vec::new()),
        Some("unread") | None => return None,
        Some(other) => {
            problems.push(format!("the event stream {key} is a {other}, not a stream"));
            return None;
        }
    }
    let items = parts.get(2).and_then(array).unwrap_or_default();
    let entries = items
        .chunks(2)
        .filter_map(|c| {
            let id = StreamId::parse(&text(c.first()?)?)?;
            Some(StreamEntry { id, kind: c.get(1).and_then(text).unwrap_or_default() })
        })
        .collect();
    Some(entries)
}

fn pair_up<'a>(names: &'a [String], replies: &'a Value) -> impl Iterator<Item = (&'a String, &'a Value)> {
    names.iter().zip(array(replies).unwrap_or_default())
}

fn decode_time(v: &Value) -> Option<u64> {
    let [secs, micros] = array(v)? else { return None };
    let secs = u64::try_from(int(secs)?).ok()?;
    let micros = u64::try_from(int(micros)?).ok()?;
    Some(secs * 1000 + micros / 1000)
}

fn decode_lock(key: &str, v: &Value, problems: &mut Vec<String>) -> Lock {
    let parts = array(v).unwrap_or_default();
    let redis_type = parts.first().and_then(text).unwrap_or_default();
    let ttl_ms = parts.get(1).and_then(int).and_then(|t| u64::try_from(t).ok());
    let mut lock = Lock { ttl_ms, redis_type: redis_type.clone(), ..Default::default() };
    match redis_type.as_str() {
        "none" | "" => {}
        "string" => {
            lock.kind = LockKind::String;
            let token = parts.get(3).and_then(bytes).unwrap_or_default();
            let len = parts.get(2).and_then(int).unwrap_or(0);
            let mut shown = escape_bytes(token);
            if len > token.len() as i64 {
                shown.push_str(&format!("… ({len} bytes)"));
            }
            lock.holders.push(shown);
        }
        "hash" => {
            let fields = pairs(parts.get(3));
            let total = parts.get(2).and_then(int).unwrap_or(fields.len() as i64);
            let values: Vec<Option<i64>> = fields.iter().map(|(_, v)| v.as_deref().and_then(parse_int)).collect();
            lock.kind = if fields.len() == 1 && values[0].is_some_and(|v| v >= TIMESTAMP_MS_FLOOR) {
                lock.next_run_ms = values[0];
                LockKind::Alternation
            } else if fields.iter().all(|(f, _)| looks_like_redisson_field(f)) && values.iter().all(Option::is_some) {
                LockKind::Redisson
            } else {
                LockKind::Hash
            };
            lock.holders = fields.into_iter().map(|(f, _)| f).collect();
            if total > lock.holders.len() as i64 {
                problems.push(format!("the lock hash {key} has {total} fields; only {} are shown", lock.holders.len()));
            }
        }
        other => {
            lock.kind = LockKind::Unreadable;
            problems.push(format!("the lock key {key} is a {other}, not a hash or string lock"));
        }
    }
    lock
}

/// Redisson writes `<client uuid>:<thread id>`.
fn looks_like_redisson_field(field: &str) -> bool {
    field
        .rsplit_once(':')
        .is_some_and(|(id, thread)| !id.is_empty() && !thread.is_empty() && thread.bytes().all(|b| b.is_ascii_digit()))
}

fn decode_fence(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<i64> {
    let parts = array(v).unwrap_or_default();
    match parts.first().and_then(text).as_deref() {
        Some("string") => {
            let value = parts.get(1).and_then(bytes).unwrap_or_default();
            let fence = parse_int(&escape_bytes(value));
            if fence.is_none() {
                problems.push(format!("the fence counter {key} holds {:?}, not a number", escape_bytes(value)));
            }
            fence
        }
        Some("none") => None,
        other => {
            problems.push(format!("the fence counter {key} is a {}, not a string", other.unwrap_or("?")));
            None
        }
    }
}

/// Every name of a registry, or `None` when it cannot be read whole (not a
/// set, or more names than the probe reads), with the problem noted.
fn decode_set(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<Vec<String>> {
    let parts = array(v).unwrap_or_default();
    let redis_type = parts.first().and_then(text).unwrap_or_default();
    if redis_type != "set" && redis_type != "none" {
        problems.push(format!("the registry {key} is a {redis_type}, not a set"));
        return None;
    }
    let total = parts.get(1).and_then(int).unwrap_or(0);
    // Names are used to build keys again, so they must stay exactly as stored;
    // escaping only changes names that are not valid UTF-8.
    let names: Vec<String> =
        parts.get(2).and_then(array).unwrap_or_default().iter().filter_map(bytes).map(escape_bytes).collect();
    if total > names.len() as i64 {
        problems.push(format!(
            "the registry {key} has {total} members, too many to read in one look; remove the names no longer in use"
        ));
        return None;
    }
    Some(names)
}

/// Fields of a hash reply as `(name, value)`, or `None` with a problem noted
/// when the key is not a hash.
fn decode_hash(key: &str, v: &Value, problems: &mut Vec<String>) -> Option<Vec<(String, Option<String>)>> {
    let parts = array(v).unwrap_or_default();
    match parts.first().and_then(text).as_deref() {
        Some("hash") => match too_big(v) {
            Some(odd) => {
                problems.push(format!("{key} {odd}, more than lockwatch ever writes there"));
                None
            }
            None => Some(pairs(parts.get(2))),
        },
        Some("none") => Some(Vec::new()),
        other => {
            problems.push(format!("{key} is a {}, not a hash", other.unwrap_or("?")));
            None
        }
    }
}

/// How a hash the probe found too big to be what lockwatch writes is too
/// big (its reply's fourth part; its fields were not fetched), if it is.
fn too_big(v: &Value) -> Option<String> {
    let parts = array(v)?;
    (parts.first().and_then(text).as_deref() == Some("hash")).then(|| parts.get(3).and_then(text)).flatten()
}

/// Notes `key` when the probe found its hash too big to read.
fn note_oversized(key: &str, v: &Value, oversized: &mut Vec<String>) {
    if too_big(v).is_some() {
        oversized.push(key.to_owned());
    }
}

/// A user's flag. Its time, which she writes herself, counts only up to
/// `now_ms` (Redis time): a flip dated ahead of it has no known time.
fn decode_flag(key: &str, user: &str, v: &Value, now_ms: u64, problems: &mut Vec<String>) -> Flag {
    let mut flag = Flag { user: user.to_owned(), on: None, at_ms: None, host: None };
    if let Some(fields) = decode_hash(key, v, problems) {
        flag.on = Some(field(&fields, "on").is_some_and(|on| on == "1" || on.eq_ignore_ascii_case("true")));
        flag.at_ms =
            field(&fields, "time").and_then(parse_int).and_then(|t| u64::try_from(t).ok()).filter(|&t| t <= now_ms);
        flag.host = field(&fields, "host").map(str::to_owned);
    }
    flag
}

/// A user's acknowledgement in force at `now_ms`; `None` when there is none,
/// it has ended (Redis may not have dropped it yet), or it cannot be read
/// (then with a problem noted).
fn decode_ack(key: &str, user: &str, v: &Value, now_ms: u64, problems: &mut Vec<String>) -> Option<Ack> {
    let fields = decode_hash(key, v, problems)?;
    if fields.is_empty() {
        return None;
    }
    let time = |name: &str| field(&fields, name).and_then(parse_int).and_then(|t| u64::try_from(t).ok());
    let (Some(at_ms), Some(until_ms)) = (time("at_ms"), time("until_ms")) else {
        problems.push(format!("{key} has no readable at_ms and until_ms; lockwatch ack writes both"));
        return None;
    };
    let note = field(&fields, "note").unwrap_or_default().to_owned();
    // She writes the times herself: said no later than now.
    (until_ms > now_ms).then(|| Ack { user: user.to_owned(), at_ms: at_ms.min(now_ms), until_ms, note })
}

fn decode_beat(key: &str, node: &str, v: &Value, problems: &mut Vec<String>) -> Beat {
    let fields = decode_hash(key, v, problems).unwrap_or_default();
    let text = |name: &str| field(&fields, name).map(str::to_owned);
    let num = |name: &str| field(&fields, name).and_then(parse_int);
    let unsigned = |name: &str| num(name).and_then(|n| u64::try_from(n).ok());
    Beat {
        node: node.to_owned(),
        host: text("host"),
        pid: unsigned("pid"),
        lock_field: text("lock_field"),
        fence: num("fence"),
        seq: unsigned("seq"),
        beat_ms: unsigned("beat_ms"),
        state: text("state"),
        version: text("version"),
        started_ms: unsigned("started_ms"),
        child_pid: unsigned("child_pid"),
        last_exit: text("last_exit"),
        wait_until_ms: unsigned("wait_until_ms"),
        waits_for: text("waits_for").filter(|n| !n.is_empty()),
        renewed_ms: unsigned("renewed_ms"),
        instance: text("instance").filter(|i| !i.is_empty()),
        // Known once the subscriber count is read; `Some(_)` here only marks
        // that the worker says it holds the subscription.
        present: matches!(text("presence").as_deref(), Some(PRESENCE_PLAIN | PRESENCE_SHARDED)).then_some(true),
        presence_on: text("presence_on").filter(|id| !id.is_empty()),
        // Known with the count, as `present` is.
        presence_elsewhere: false,
    }
}

fn field<'a>(fields: &'a [(String, Option<String>)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(f, _)| f == name).and_then(|(_, v)| v.as_deref())
}

/// A flat `[field, value, field, value, …]` reply as pairs of escaped text.
fn pairs(v: Option<&Value>) -> Vec<(String, Option<String>)> {
    let items = v.and_then(array).unwrap_or_default();
    items
        .chunks(2)
        .map(|c| {
            (
                c.first().and_then(bytes).map(escape_bytes).unwrap_or_default(),
                c.get(1).and_then(bytes).map(escape_bytes),
            )
        })
        .collect()
}

fn parse_int(s: &str) -> Option<i64> {
    s.trim().parse().ok()
}

fn array(v: &Value) -> Option<&[Value]> {
    match v {
        Value::Array(items) | Value::Set(items) => Some(items),
        _ => None,
    }
}

fn bytes(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn text(v: &Value) -> Option<String> {
    bytes(v).map(escape_bytes)
}

fn int(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        other => bytes(other).and_then(|b| std::str::from_utf8(b).ok()).and_then(parse_int),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: &[u8]) -> Value {
        Value::BulkString(x.to_vec())
    }
    fn arr(items: Vec<Value>) -> Value {
        Value::Array(items)
    }
    fn empty_set() -> Value {
        arr(vec![s(b"none"), Value::Int(0), arr(vec![])])
    }
    fn reply(lock: Value, fence: Value) -> Value {
        arr(vec![
            arr(vec![s(b"1700000000"), s(b"250000")]),
            lock,
            fence,
            empty_set(),
            arr(vec![]),
            empty_set(),
            arr(vec![]),
        ])
    }

    #[test]
    fn redisson_hash_is_decoded_with_holder_and_ttl() {
        let lock = arr(vec![s(b"hash"), Value::Int(29_500), Value::Int(1), arr(vec![s(b"8d3c-uuid:57"), s(b"1")])]);
        let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"string"), s(b"42")])), None).unwrap();
        assert_eq!(snap.time_ms, 1_700_000_000_250);
        assert_eq!(snap.lock.kind, LockKind::Redisson);
        assert_eq!(snap.lock.holders, vec!["8d3c-uuid:57"]);
        assert_eq!(snap.lock.ttl_ms, Some(29_500));
        assert_eq!(snap.fence, Some(42));
        // A fence above 0 says a server ran the job, which needs registered
        // users: a missing registry was lost, and no flag can be trusted.
        assert_eq!(snap.problems.len(), 1, "{:?}", snap.problems);
        assert!(snap.problems[0].starts_with("Redis lost the registry {outbound}:users"));
        assert!(matches!(snap.enabled(), crate::snapshot::Enabled::Unknown { .. }));
        assert_eq!(snap.job_absent, None);
        // A counter at 0 (seeded, never taken) or none: nothing was lost.
        for fence in [arr(vec![s(b"string"), s(b"0")]), arr(vec![s(b"none")])] {
            let lock = arr(vec![s(b"none"), Value::Int(-2)]);
            let snap = decode(&Keys::new("outbound"), &reply(lock, fence), None).unwrap();
            assert!(snap.problems.is_empty(), "{:?}", snap.problems);
            assert_eq!(snap.enabled(), crate::snapshot::Enabled::No);
        }
    }

    #[test]
    fn alternation_hash_shows_next_run() {
        let lock =
            arr(vec![s(b"hash"), Value::Int(-1), Value::Int(1), arr(vec![s(b"invoice-export"), s(b"1700000100000")])]);
        let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"none")])), None).unwrap();
        assert_eq!(snap.lock.kind, LockKind::Alternation);
        assert_eq!(snap.lock.next_run_ms, Some(1_700_000_100_000));
        assert_eq!(snap.lock.ttl_ms, None);
    }

    #[test]
    fn non_utf8_string_token_is_escaped() {
        let lock = arr(vec![s(b"string"), Value::Int(5000), Value::Int(3), s(b"\xffa\x00")]);
        let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"none")])), None).unwrap();
        assert_eq!(snap.lock.kind, LockKind::String);
        assert_eq!(snap.lock.holders, vec!["\\xffa\\u{0}"]);
    }

    #[test]
    fn wrong_types_become_problems_not_errors() {
        let lock = arr(vec![s(b"list"), Value::Int(-1)]);
        let snap = decode(&Keys::new("outbound"), &reply(lock, arr(vec![s(b"hash")])), None).unwrap();
        assert_eq!(snap.lock.kind, LockKind::Unreadable);
        assert_eq!(snap.problems.len(), 2, "{:?}", snap.problems);
    }

    #[test]
    fn the_event_stream_tail_is_found_by_its_tag_wherever_it_is() {
        let tail = arr(vec![
            s(b"events"),
            s(b"stream"),
            arr(vec![s(b"1700000000200-0"), s(b"acquired"), s(b"1700000000100-1"), s(b"released")]),
        ]);
        for extra in [vec![tail.clone()], vec![arr(vec![s(b"something"), s(b"else")]), tail.clone()]] {
            let mut r = reply(arr(vec![s(b"none"), Value::Int(-2)]), arr(vec![s(b"none")]));
            let Value::Array(items) = &mut r else { unreachable!() };
            items.extend(extra);
            let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
            let events = snap.recent_events.unwrap();
            assert_eq!(events.len(), 2);
            assert_eq!(events[0].id, StreamId { ms: 1_700_000_000_200, seq: 0 });
            assert_eq!(events[0].kind, "acquired");
            assert_eq!(events[1].kind, "released");
        }
    }

    #[test]
    fn a_missing_stream_is_empty_an_unread_one_is_not_known() {
        let with = |t: &[u8]| {
            let mut r = reply(arr(vec![s(b"none"), Value::Int(-2)]), arr(vec![s(b"none")]));
            let Value::Array(items) = &mut r else { unreachable!() };
            items.push(arr(vec![s(b"events"), s(t), arr(vec![])]));
            decode(&Keys::new("outbound"), &r, None).unwrap()
        };
        assert_eq!(with(b"none").recent_events, Some(vec![]));
        assert_eq!(with(b"unread").recent_events, None);
        let wrong = with(b"hash");
        assert_eq!(wrong.recent_events, None);
        assert_eq!(wrong.problems.len(), 1, "{:?}", wrong.problems);
        let old = decode(&Keys::new("outbound"), &reply(arr(vec![s(b"none")]), arr(vec![s(b"none")])), None).unwrap();
        assert_eq!(old.recent_events, None, "a reply without the tail says nothing about the stream");
    }

    #[test]
    fn an_unreadable_fence_is_told_apart_from_a_missing_one() {
        let lock = || arr(vec![s(b"none"), Value::Int(-2)]);
        let missing = decode(&Keys::new("outbound"), &reply(lock(), arr(vec![s(b"none")])), None).unwrap();
        assert_eq!((missing.fence, missing.fence_unreadable), (None, false));
        let wrong = decode(&Keys::new("outbound"), &reply(lock(), arr(vec![s(b"hash")])), None).unwrap();
        assert_eq!((wrong.fence, wrong.fence_unreadable), (None, true));
    }

    #[test]
    fn a_reply_of_the_wrong_shape_is_an_error() {
        assert!(decode(&Keys::new("outbound"), &Value::Int(3), None).is_err());
        assert!(decode(&Keys::new("outbound"), &arr(vec![Value::Nil]), None).is_err());
    }

    fn with_users(users: Value, flags: Value) -> Value {
        arr(vec![
            arr(vec![s(b"1"), s(b"0")]),
            arr(vec![s(b"none"), Value::Int(-2)]),
            arr(vec![s(b"none")]),
            users,
            flags,
            empty_set(),
            arr(vec![]),
        ])
    }

    #[test]
    fn an_oversized_flag_is_unreadable_and_says_why() {
        let users = arr(vec![s(b"set"), Value::Int(2), arr(vec![s(b"alice"), s(b"mallory")])]);
        let flags = arr(vec![
            arr(vec![s(b"hash"), Value::Int(1), arr(vec![s(b"on"), s(b"0")])]),
            arr(vec![s(b"hash"), Value::Int(3), arr(vec![]), s(b"has a host of 10485760 bytes")]),
        ]);
        let snap = decode(&Keys::new("outbound"), &with_users(users, flags), None).unwrap();
        assert_eq!(snap.flags[0].on, Some(false));
        assert_eq!(snap.flags[1].on, None);
        assert_eq!(
            snap.problems,
            vec!["{outbound}:enabled:mallory has a host of 10485760 bytes, more than lockwatch ever writes there"]
        );
        assert!(matches!(snap.enabled(), crate::snapshot::Enabled::Unknown { .. }));
    }

    #[test]
    fn a_registry_that_cannot_be_read_whole_leaves_the_flags_unknown() {
        for users in
            [arr(vec![s(b"set"), Value::Int(12_000), arr(vec![])]), arr(vec![s(b"string"), Value::Int(0), arr(vec![])])]
        {
            let snap = decode(&Keys::new("outbound"), &with_users(users, arr(vec![])), None).unwrap();
            assert_eq!(snap.flags.len(), 1);
            assert_eq!(snap.flags[0].user, "{outbound}:users");
            assert_eq!(snap.flags[0].on, None);
            assert!(snap.problems[0].starts_with("the registry {outbound}:users "), "{:?}", snap.problems);
        }
        let empty = decode(&Keys::new("outbound"), &with_users(empty_set(), arr(vec![])), None).unwrap();
        assert!(empty.flags.is_empty() && empty.problems.is_empty());
    }

    #[test]
    fn flags_and_beats_pair_with_their_names() {
        let users = arr(vec![s(b"set"), Value::Int(2), arr(vec![s(b"bob"), s(b"alice")])]);
        let flags = arr(vec![
            arr(vec![s(b"hash"), Value::Int(3), arr(vec![s(b"on"), s(b"0")])]),
            arr(vec![
                s(b"hash"),
                Value::Int(3),
                arr(vec![s(b"on"), s(b"1"), s(b"time"), s(b"17"), s(b"host"), s(b"pc1")]),
            ]),
        ]);
        let nodes = arr(vec![s(b"set"), Value::Int(1), arr(vec![s(b"srv-a")])]);
        let beats = arr(vec![arr(vec![
            s(b"hash"),
            Value::Int(2),
            arr(vec![s(b"beat_ms"), s(b"99"), s(b"state"), s(b"running")]),
        ])]);
        let r = arr(vec![
            arr(vec![s(b"1"), s(b"0")]),
            arr(vec![s(b"none"), Value::Int(-2)]),
            arr(vec![s(b"none")]),
            users,
            flags,
            nodes,
            beats,
        ]);
        let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
        assert_eq!(snap.flags[0].user, "alice");
        assert_eq!(snap.flags[0].on, Some(true));
        assert_eq!(snap.flags[0].host.as_deref(), Some("pc1"));
        assert_eq!(snap.flags[1].on, Some(false));
        assert_eq!(snap.beats[0].beat_ms, Some(99));
        assert!(snap.beats[0].claims_job());
        assert_eq!(snap.lock.kind, LockKind::None);
    }

    #[test]
    fn presence_is_known_only_for_workers_that_say_they_hold_a_plain_or_sharded_one() {
        let nodes = arr(vec![s(b"set"), Value::Int(3), arr(vec![s(b"srv-a"), s(b"srv-b"), s(b"java")])]);
        let beat = |presence: &[u8]| {
            let mut fields = vec![s(b"beat_ms"), s(b"99")];
            if !presence.is_empty() {
                fields.extend([s(b"presence"), s(presence)]);
            }
            arr(vec![s(b"hash"), Value::Int(2), arr(fields)])
        };
        let with = |alive: Value| {
            let r = arr(vec![
                arr(vec![s(b"1"), s(b"0")]),
                arr(vec![s(b"none"), Value::Int(-2)]),
                arr(vec![s(b"none")]),
                empty_set(),
                arr(vec![]),
                nodes.clone(),
                // A plain subscription, a sharded one, and a claim of no known kind.
                arr(vec![beat(b"1"), beat(b"sharded"), beat(b"yes")]),
                alive,
            ]);
            let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
            snap.beats.iter().map(|b| (b.node.clone(), b.present)).collect::<Vec<_>>()
        };
        let read = arr(vec![s(b"alive"), s(b"read"), arr(vec![Value::Int(1), Value::Int(0), Value::Int(-1)])]);
        assert_eq!(
            with(read),
            vec![("java".into(), None), ("srv-a".into(), Some(true)), ("srv-b".into(), Some(false))]
        );
        // Claims made in another server process (Redis failed over since) blame nobody.
        let elsewhere = arr(vec![s(b"alive"), s(b"read"), arr(vec![Value::Int(-2), Value::Int(-2), Value::Int(-1)])]);
        assert!(with(elsewhere).iter().all(|(_, p)| p.is_none()), "a claim made elsewhere blames nobody");
        let refused = arr(vec![s(b"alive"), s(b"refused"), arr(vec![])]);
        assert!(with(refused).iter().all(|(_, p)| p.is_none()), "a refused count blames nobody");
    }

    #[test]
    fn a_glance_lays_time_lock_and_heartbeats_over_the_last_full_read() {
        let keys = Keys::new("outbound");
        let users = arr(vec![s(b"set"), Value::Int(1), arr(vec![s(b"alice")])]);
        let flags = arr(vec![arr(vec![s(b"hash"), Value::Int(1), arr(vec![s(b"on"), s(b"1")])])]);
        let mut full = with_users(users, flags);
        let Value::Array(items) = &mut full else { unreachable!() };
        items.push(arr(vec![
            s(b"acks"),
            s(b"read"),
            arr(vec![arr(vec![
                s(b"hash"),
                Value::Int(2),
                arr(vec![s(b"at_ms"), s(b"500"), s(b"until_ms"), s(b"1500")]),
            ])]),
        ]));
        items.push(arr(vec![s(b"fingerprint"), s(b"7|1-0|1|1")]));
        let (base, fingerprint) = decode_look(&keys, &full, None).unwrap();
        assert_eq!(fingerprint.as_deref(), Some("7|1-0|1|1"));
        assert_eq!(base.acks.len(), 1);

        let glance = arr(vec![
            s(b"glance"),
            s(b"7|1-0|1|1"),
            arr(vec![s(b"2"), s(b"0")]),
            arr(vec![s(b"hash"), Value::Int(29_000), Value::Int(1), arr(vec![s(b"uuid-a:1"), s(b"1")])]),
            arr(vec![s(b"srv-a")]),
            arr(vec![arr(vec![
                s(b"hash"),
                Value::Int(3),
                arr(vec![s(b"beat_ms"), s(b"1990"), s(b"lock_field"), s(b"uuid-a:1"), s(b"presence"), s(b"1")]),
            ])]),
            arr(vec![s(b"alive"), s(b"read"), arr(vec![Value::Int(0)])]),
        ]);
        let (snap, fingerprint) = decode_look(&keys, &glance, Some(&base)).unwrap();
        assert_eq!(fingerprint, None, "the full read stays the one to compare with");
        assert_eq!(snap.time_ms, 2_000);
        assert_eq!(snap.lock.holders, vec!["uuid-a:1"]);
        assert_eq!(snap.beats[0].beat_ms, Some(1_990));
        assert_eq!(snap.beats[0].present, Some(false));
        assert_eq!(snap.flags, base.flags, "flags as the full read found them");
        assert!(snap.acks.is_empty(), "an acknowledgement that ended since is gone");
        assert!(decode_look(&keys, &glance, None).is_err(), "a glance needs a full read under it");
    }

    #[test]
    fn acks_pair_with_the_registry_and_only_those_in_force_count() {
        let users = arr(vec![s(b"set"), Value::Int(3), arr(vec![s(b"alice"), s(b"bob"), s(b"mallory")])]);
        let flags = arr(vec![arr(vec![s(b"none")]), arr(vec![s(b"none")]), arr(vec![s(b"none")])]);
        let mut r = with_users(users, flags);
        let ack = |at: &[u8], until: &[u8]| {
            arr(vec![
                s(b"hash"),
                Value::Int(3),
                arr(vec![s(b"at_ms"), s(at), s(b"until_ms"), s(until), s(b"note"), s(b"wh-a")]),
            ])
        };
        let Value::Array(items) = &mut r else { unreachable!() };
        items.push(arr(vec![
            s(b"acks"),
            s(b"read"),
            arr(vec![
                ack(b"500", b"2000"),
                ack(b"100", b"900"),
                arr(vec![s(b"hash"), Value::Int(3), arr(vec![]), s(b"has a note of 10485760 bytes")]),
            ]),
        ]));
        // Redis time 1 s: bob's ended at 0.9 s.
        let snap = decode(&Keys::new("outbound"), &r, None).unwrap();
        assert_eq!(snap.acks, vec![Ack { user: "alice".into(), at_ms: 500, until_ms: 2000, note: "wh-a".into() }]);
        assert_eq!(
            snap.problems,
            vec!["{outbound}:ack:mallory has a note of 10485760 bytes, more than lockwatch ever writes there"]
        );
    }
}
