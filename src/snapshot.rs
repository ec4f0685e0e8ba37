//! What one probe read from Redis: the job's lock, fence, flags, heartbeats
//! and acknowledgements at one Redis `TIME`. Plain data, decoded by `probe`, judged by `status`.

use serde::Serialize;

use crate::schema::BeatState;
pub use crate::schema::kind;

/// The whole state of one job as read at one instant of the Redis clock.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// Redis `TIME` in milliseconds: the only clock ages are measured against.
    pub time_ms: u64,
    /// The lock key as found.
    pub lock: Lock,
    /// The fencing counter, when present and numeric.
    pub fence: Option<i64>,
    /// True when the fencing counter exists but cannot be read, so a missing
    /// `fence` does not mean the counter is gone.
    pub fence_unreadable: bool,
    /// One entry per name in `{job}:users`.
    pub flags: Vec<Flag>,
    /// One entry per name in `{job}:nodes`.
    pub beats: Vec<Beat>,
    /// The newest entries of the job's event stream, newest first: empty when
    /// the stream is missing or empty, `None` when it was not read.
    pub recent_events: Option<Vec<StreamEntry>>,
    /// The registered users' acknowledgements ("I'm on it") still in force
    /// at `time_ms`, by user name.
    pub acks: Vec<Ack>,
    /// Things found that could not be read (wrong types, bad numbers), or
    /// data Redis lost, one sentence each, so the status can say why it is unsure.
    pub problems: Vec<String>,
    /// Supervisors' flag and "on it" hashes that hold far more than lockwatch
    /// writes there (junk no ACL rule can keep out): a worker trims them.
    pub oversized: Vec<String>,
    /// Why nothing of the job is on this Redis (no lock, users, servers,
    /// fence or history: a job name mistyped, or the wrong Redis), when nothing is.
    pub job_absent: Option<String>,
}

impl Snapshot {
    /// The heartbeat of the lock's (first) holder: the one that names its field.
    pub fn holder_beat(&self) -> Option<&Beat> {
        let field = self.lock.holders.first()?;
        self.beats.iter().find(|b| b.lock_field.as_deref() == Some(field.as_str()))
    }

    /// Whether anybody has the job enabled, or why that cannot be told. The
    /// status and the worker both decide by this: a flag that cannot be read
    /// (or a registry of flags that cannot) may be the one that is on.
    pub fn enabled(&self) -> Enabled {
        if self.flags.iter().any(|f| f.on == Some(true)) {
            return Enabled::Yes;
        }
        let unreadable: Vec<&str> = self.flags.iter().filter(|f| f.on.is_none()).map(|f| f.user.as_str()).collect();
        if unreadable.is_empty() {
            return Enabled::No;
        }
        let reason = if self.problems.is_empty() {
            format!("the flags of {} cannot be read", unreadable.join(", "))
        } else {
            self.problems.join("; ")
        };
        Enabled::Unknown { reason }
    }

    /// The flags Redis lost as the latest word says: the `flags_lost` of the
    /// heartbeat that beat last among those `counted`. An older heartbeat
    /// (a worker dead since) may name a flag its user wrote again since.
    pub fn flags_lost_said(&self, counted: impl Fn(&Beat) -> bool) -> &[String] {
        let latest = self.beats.iter().filter(|b| counted(b)).max_by_key(|b| b.beat_ms.unwrap_or(0));
        latest.map_or(&[], |b| b.flags_lost.as_slice())
    }
}

/// The answer of [`Snapshot::enabled`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enabled {
    /// At least one registered user's flag is on.
    Yes,
    /// Every registered user's flag was read, and none is on.
    No,
    /// None of the flags read is on, but some could not be read.
    Unknown {
        /// The problems found, one sentence each.
        reason: String,
    },
}

/// How the lock key is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LockKind {
    /// No such key: nobody holds the lock.
    #[default]
    None,
    /// Redisson RLock: hash field `<uuid>:<thread>` → hold count.
    Redisson,
    /// A plain string token (`SET key token NX PX`).
    String,
    /// A task-alternation hash: the field names the task holding the turn,
    /// its value is the next run time in ms.
    Alternation,
    /// A hash of another shape: its fields are shown as holders.
    Hash,
    /// A type no lock uses (list, set, …): unreadable as a lock.
    Unreadable,
}

/// The lock key's content.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Lock {
    pub kind: LockKind,
    /// Holder fields (hash) or the token (string), non-UTF-8 bytes escaped.
    pub holders: Vec<String>,
    /// Remaining lease in ms; `None` when the key has no expiry or does not exist.
    pub ttl_ms: Option<u64>,
    /// For an alternation hash: when the holding task runs next (ms).
    pub next_run_ms: Option<i64>,
    /// The Redis type found, for messages about unreadable locks.
    pub redis_type: String,
}

impl Lock {
    /// True when somebody holds the lock.
    pub fn is_held(&self) -> bool {
        !self.holders.is_empty()
    }
}

/// One supervisor's enable flag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Flag {
    pub user: String,
    /// `None` when the flag key exists but cannot be read.
    pub on: Option<bool>,
    /// Redis time of the last flip, ms.
    pub at_ms: Option<u64>,
    /// Host the flag was flipped from.
    pub host: Option<String>,
}

impl Flag {
    /// True when the flag's hash does not exist: it reads as off, with no
    /// time and no host, which no flip ever writes.
    pub fn is_missing(&self) -> bool {
        self.on == Some(false) && self.at_ms.is_none() && self.host.is_none()
    }
}

/// A supervisor's "I'm on it": since when, until when (Redis time, ms),
/// and what they are doing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ack {
    pub user: String,
    pub at_ms: u64,
    pub until_ms: u64,
    /// Empty when none was given.
    pub note: String,
}

/// One worker's heartbeat hash.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Beat {
    pub node: String,
    pub host: Option<String>,
    pub pid: Option<u64>,
    /// The lock field this node holds the lock under, so the monitor can map
    /// Redisson's `<uuid>:<thread>` to a server name.
    pub lock_field: Option<String>,
    pub fence: Option<i64>,
    pub seq: Option<u64>,
    /// Redis time of the beat, ms; `None` when missing or unreadable.
    pub beat_ms: Option<u64>,
    /// What the worker says it does.
    pub state: Option<BeatState>,
    pub version: Option<String>,
    pub started_ms: Option<u64>,
    pub child_pid: Option<u64>,
    pub last_exit: Option<String>,
    /// While `starting`: Redis time the job is to start, ms.
    pub wait_until_ms: Option<u64>,
    /// While idle: Redis time until which it holds back from starting the
    /// job again (switches stopped and started it too often), ms.
    pub held_until_ms: Option<u64>,
    /// While `starting`: the server whose heartbeat still says it runs the
    /// job, which this one waits for (`None`: it waits for Redis's sake).
    pub waits_for: Option<String>,
    /// Redis time of the holder's last lease renewal, ms.
    pub renewed_ms: Option<u64>,
    /// The id of the worker process that beats under this name: a second
    /// process started under the same name is told apart by it.
    #[serde(skip)]
    pub instance: Option<String>,
    /// Where that process runs: boot, PID namespace and unit invocation
    /// ([`crate::work::unit::invocation`]).
    #[serde(skip)]
    pub invocation: Option<String>,
    /// Whether the worker's presence subscription is there: `Some(false)`
    /// when the heartbeat says the worker holds one but Redis counts none
    /// (its process died, or its connection broke); `None` when it holds
    /// none (another program writes this heartbeat) or the count was not read.
    #[serde(skip)]
    pub present: Option<bool>,
    /// The run id of the server process the worker says holds its presence
    /// subscription, when it says one.
    #[serde(skip)]
    pub presence_on: Option<String>,
    /// The presence subscription was not counted because the heartbeat names
    /// another server process than the one read (Redis failed over since):
    /// `present` is then `None`.
    #[serde(skip)]
    pub presence_elsewhere: bool,
    /// The users whose flag the worker saw vanish while it was on.
    #[serde(skip)]
    pub flags_lost: Vec<String>,
    /// The worker's lease (ms): its reaper kills its job by it.
    #[serde(skip)]
    pub lease_ms: Option<u64>,
}

impl Beat {
    /// True when the node says it runs (or tries to run) the job.
    pub fn claims_job(&self) -> bool {
        self.state.as_ref().is_some_and(BeatState::runs_job)
    }

    /// Its worker lives, as far as Redis shows at `now_ms`: it beat within
    /// `grace_ms` and its presence subscription is not gone.
    pub fn alive(&self, now_ms: u64, grace_ms: u64) -> bool {
        self.present != Some(false) && self.beat_ms.is_some_and(|t| now_ms.saturating_sub(t) <= grace_ms)
    }
}

/// One entry of the job's event stream, as far as the status needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamEntry {
    pub id: StreamId,
    /// The entry's `type` field: `acquired`, `released`, `lost`, …
    pub kind: String,
}

/// A stream entry id: the Redis ms time it was added at, and a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    /// Parses `1700000000000-3`.
    pub fn parse(id: &str) -> Option<StreamId> {
        let (ms, seq) = id.split_once('-')?;
        Some(StreamId { ms: ms.parse().ok()?, seq: seq.parse().ok()? })
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Bytes as text: valid UTF-8 as is, other bytes as `\xNN`, control
/// characters escaped, so any key content prints safely on one line.
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flag(user: &str, on: Option<bool>) -> Flag {
        Flag { user: user.to_owned(), on, at_ms: None, host: None }
    }

    #[test]
    fn a_worker_lives_while_it_beats_within_the_grace_and_its_presence_is_not_gone() {
        let beat = |beat_ms, present| Beat { beat_ms, present, ..Beat::default() };
        assert!(beat(Some(9_000), Some(true)).alive(10_000, 1_000));
        assert!(beat(Some(9_000), None).alive(10_000, 1_000), "a presence not counted is no sign of death");
        assert!(!beat(Some(9_000), Some(false)).alive(10_000, 1_000), "its connection closed");
        assert!(!beat(Some(8_999), Some(true)).alive(10_000, 1_000), "silent past the grace");
        assert!(!beat(None, Some(true)).alive(10_000, 1_000));
    }

    #[test]
    fn one_flag_on_enables_the_job_whatever_else_cannot_be_read() {
        let mut snap = Snapshot { flags: vec![flag("alice", Some(false)), flag("bob", None)], ..Default::default() };
        snap.problems.push("{outbound}:enabled:bob is a list, not a hash".to_owned());
        assert_eq!(
            snap.enabled(),
            Enabled::Unknown { reason: "{outbound}:enabled:bob is a list, not a hash".to_owned() }
        );
        snap.flags.push(flag("carol", Some(true)));
        assert_eq!(snap.enabled(), Enabled::Yes);
        snap.flags = vec![flag("alice", Some(false))];
        assert_eq!(snap.enabled(), Enabled::No);
        snap.flags.clear();
        assert_eq!(snap.enabled(), Enabled::No);
    }

    #[test]
    fn escape_bytes_keeps_utf8_and_escapes_the_rest() {
        assert_eq!(escape_bytes(b"abc:1"), "abc:1");
        assert_eq!(escape_bytes("süd".as_bytes()), "süd");
        assert_eq!(escape_bytes(b"\xff\xfeok"), "\\xff\\xfeok");
        assert_eq!(escape_bytes(b"a\nb"), "a\\nb");
    }

    #[test]
    fn stream_ids_parse_and_order_by_time_then_sequence() {
        let a = StreamId::parse("1700000000000-3").unwrap();
        assert_eq!(a, StreamId { ms: 1_700_000_000_000, seq: 3 });
        assert!(a < StreamId::parse("1700000000000-10").unwrap());
        assert!(a < StreamId::parse("1700000000001-0").unwrap());
        assert_eq!(a.to_string(), "1700000000000-3");
        assert_eq!(StreamId::parse("nonsense"), None);
    }
}
