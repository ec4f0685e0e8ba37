//! The fields of every hash lockwatch writes and reads, and the states a
//! worker's heartbeat says: one home for each name. The Rust writers and
//! decoders name fields by these constants; the Lua scripts get them from
//! [`lua`], a preamble built once from the same lists and put before each
//! script's text, so a script names a field as `BEAT.LOCK_FIELD` and reads
//! a whole list as `BEAT_FIELDS`. A field added here is read by the probe
//! and kept by the trim at once; a test checks that every name a script
//! uses is declared here.

use std::fmt;
use std::sync::LazyLock;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares one hash's fields: a module with a constant per field, `ALL` in
/// the order the probe reads them, and the two Lua lines [`lua`] puts
/// before every script.
macro_rules! fields {
    ($(#[$doc:meta])* $module:ident, $table:literal { $($(#[$fdoc:meta])* $konst:ident = $name:literal,)* }) => {
        $(#[$doc])*
        pub mod $module {
            $($(#[$fdoc])* pub const $konst: &str = $name;)*
            /// Every field, in the order the probe reads them.
            pub const ALL: &[&str] = &[$($konst),*];
            /// Each field by its constant's name, for the bench's copy.
            #[cfg(test)]
            pub(super) const NAMED: &[(&str, &str)] = &[$((stringify!($konst), $name)),*];
            /// `local BEAT = {LOCK_FIELD = 'lock_field', …}` and the list `BEAT_FIELDS`.
            pub(super) const LUA: &str = concat!(
                "local ", $table, " = {", $(stringify!($konst), " = '", $name, "', ",)* "}\n",
                "local ", $table, "_FIELDS = {", $("'", $name, "', ",)* "}\n",
            );
        }
    };
}

fields! {
    /// A supervisor's enable flag, `{job}:enabled:<user>`, written by her
    /// desktop or `lockwatch enable`/`disable`.
    flag, "FLAG" {
        /// `1` on, `0` off.
        ON = "on",
        /// Redis time (ms) of the flip.
        TIME = "time",
        /// The host she flipped it from.
        HOST = "host",
        /// Why, in her words (one sentence, optional).
        REASON = "reason",
    }
}

fields! {
    /// A supervisor's "I'm on it", `{job}:ack:<user>`, expiring at its end.
    ack, "ACK" {
        /// Redis time (ms) she said it.
        AT_MS = "at_ms",
        /// Redis time (ms) it ends.
        UNTIL_MS = "until_ms",
        /// One line of hers, optional.
        NOTE = "note",
    }
}

fields! {
    /// A worker's heartbeat, `{job}:node:<node>`, written every second and
    /// by the lock script in the step that takes or renews the lock.
    beat, "BEAT" {
        /// The node's name.
        NODE = "node",
        /// The host the worker runs on.
        HOST = "host",
        /// The worker's process id.
        PID = "pid",
        /// The lock field of its holding (`<uuid>:<thread>`), empty when it holds none.
        LOCK_FIELD = "lock_field",
        /// The fence of its holding.
        FENCE = "fence",
        /// A counter that only grows while Redis keeps the heartbeat: one going back shows lost data.
        SEQ = "seq",
        /// Redis time (ms) of the beat.
        BEAT_MS = "beat_ms",
        /// What the worker does: a [`BeatState`](super::BeatState).
        STATE = "state",
        /// lockwatch's version.
        VERSION = "version",
        /// Redis time (ms) it took the lock.
        STARTED_MS = "started_ms",
        /// The job's process id while it runs.
        CHILD_PID = "child_pid",
        /// How the job last ended.
        LAST_EXIT = "last_exit",
        /// Redis time (ms) a new holder's wait for an earlier one ends.
        WAIT_UNTIL_MS = "wait_until_ms",
        /// Which presence subscription the worker holds: `1` plain, `sharded`.
        PRESENCE = "presence",
        /// The run id of the Redis process that holds that subscription.
        PRESENCE_ON = "presence_on",
        /// The server a new holder waits for.
        WAITS_FOR = "waits_for",
        /// Redis time (ms) the lease was last extended.
        RENEWED_MS = "renewed_ms",
        /// This worker process's own id: a name is claimed by one process.
        INSTANCE = "instance",
        /// Where the worker process runs: the boot, its PID namespace and
        /// its systemd unit's invocation (`worker-gone` acts only for its own).
        INVOCATION = "invocation",
        /// The users whose flag Redis lost while it was on (evicted or
        /// deleted, never switched off), comma-separated: each counts as on
        /// until written again, and a worker that starts reads them here.
        FLAGS_LOST = "flags_lost",
        /// The worker's lease (ms): a new holder waits for a holding by the
        /// longer of this and its own, as its reaper kills by this one.
        LEASE_MS = "lease_ms",
        /// Redis time (ms) until which an idle worker holds back from
        /// starting the job again: switches stopped and started it too often.
        HELD_UNTIL_MS = "held_until_ms",
    }
}

fields! {
    /// The last holding, `{job}:handover`, and whether it stopped its job.
    handover, "HANDOVER" {
        /// Its node.
        NODE = "node",
        /// Its lock field.
        FIELD = "field",
        /// Its fence.
        FENCE = "fence",
        /// Its worker process (the heartbeat's `instance`): only that
        /// process's own heartbeat proves the holding stopped.
        INSTANCE = "instance",
        /// `1` once it is known to have stopped its job.
        STOPPED = "stopped",
        /// `1` once it started its job; `0` while it waits (a record
        /// without it, from an older lockwatch, counts as started).
        STARTED = "started",
        /// The holding it waited for, while it has not started its job.
        PREV_NODE = "prev_node",
        PREV_FIELD = "prev_field",
        PREV_FENCE = "prev_fence",
        PREV_INSTANCE = "prev_instance",
        /// Its lease (ms), and the waited-for one's: a holding's job may
        /// run a lease after its last sign, whatever the next one's lease.
        LEASE_MS = "lease_ms",
        PREV_LEASE_MS = "prev_lease_ms",
    }
}

fields! {
    /// One entry of the job's event stream, `{job}:events`: what a worker
    /// recorded (its `TYPE` one of [`kind`]'s), with the fields that kind has.
    entry, "ENTRY" {
        /// What happened: one of [`kind`](super::kind)'s.
        TYPE = "type",
        /// The worker's node.
        NODE = "node",
        FENCE = "fence",
        /// The holding's lock field.
        FIELD = "field",
        /// How long the new holder waited before starting (ms), and why.
        WAIT_MS = "wait_ms",
        WAIT_CAUSE = "wait_cause",
        /// The last beat of the holder before (Redis ms).
        PREV_BEAT_MS = "prev_beat_ms",
        /// Why a holding ended, as a token, and as a sentence.
        CAUSE = "cause",
        REASON = "reason",
        /// The job's process id, and how it exited.
        PID = "pid",
        STATUS = "status",
        /// A flip: whose, on or off, the flag's own time and host.
        USER = "user",
        ON = "on",
        FLAG_MS = "flag_ms",
        HOST = "host",
        /// A death: the dead holder's last beat (Redis ms).
        LAST_BEAT_MS = "last_beat_ms",
    }
}

/// The kinds of stream entries ([`entry::TYPE`]).
pub mod kind {
    pub const ACQUIRED: &str = "acquired";
    pub const RELEASED: &str = "released";
    pub const LOST: &str = "lost";
    pub const RENEW_FAILED: &str = "renew-failed";
    pub const JOB_STARTED: &str = "job-started";
    pub const JOB_EXITED: &str = "job-exited";
    pub const FLAGS_CHANGED: &str = "flags-changed";
    pub const DIED: &str = "died";
    /// Every kind lockwatch writes.
    pub const ALL: [&str; 8] = [ACQUIRED, RELEASED, LOST, RENEW_FAILED, JOB_STARTED, JOB_EXITED, FLAGS_CHANGED, DIED];
}

fields! {
    /// `serve`'s claim of one incident's message, `{job}:posted:<id>`:
    /// which process posts it, until when, what it decided, which robots
    /// have it (a field [`DONE`](claim::DONE) and the robot's name each).
    claim, "CLAIM" {
        BY = "by",
        /// Redis time (ms) the claim holds until, unless renewed.
        UNTIL = "until",
        /// `post`, `counted`, … as the claim decided.
        VERDICT = "verdict",
        /// Present once every robot has the message.
        FINISHED = "finished",
        /// Prefix of a robot's field once it has the message.
        DONE = "done:",
    }
}

fields! {
    /// `serve`'s window of repeats, `{job}:repeats`: incidents counted
    /// rather than posted while it lasts.
    window, "WINDOW" {
        /// Redis time (ms) it ends.
        ENDS = "ends",
        /// Present once the recovery in it was posted.
        RECOVERED = "recovered",
        /// Prefix of a kind's count.
        COUNT = "n:",
        /// The first and last incident counted (ms).
        FIRST = "first",
        LAST = "last",
    }
}

/// What a worker's heartbeat says it does. Another program may write the
/// heartbeat (a Redisson service's own loop): what it writes beyond these
/// is kept as [`BeatState::Other`] and counts as holding the lock.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum BeatState {
    /// It holds the lock and waits before it starts the job (an earlier
    /// holder may still run it).
    Starting,
    /// It runs the job.
    Running,
    /// It runs the job, which printed nothing for `--stall-after`.
    Stalled,
    /// It is stopping the job, which may still run.
    Stopping,
    /// It holds no lock and runs nothing.
    Idle,
    /// Anything else another program wrote.
    Other(String),
}

impl BeatState {
    /// The states lockwatch writes, each once.
    pub const KNOWN: [BeatState; 5] =
        [BeatState::Starting, BeatState::Running, BeatState::Stalled, BeatState::Stopping, BeatState::Idle];

    /// The name written in the heartbeat.
    pub fn as_str(&self) -> &str {
        match self {
            BeatState::Starting => "starting",
            BeatState::Running => "running",
            BeatState::Stalled => "stalled",
            BeatState::Stopping => "stopping",
            BeatState::Idle => "idle",
            BeatState::Other(other) => other,
        }
    }

    /// The state a heartbeat names.
    pub fn parse(name: &str) -> BeatState {
        Self::KNOWN.into_iter().find(|s| s.as_str() == name).unwrap_or_else(|| BeatState::Other(name.to_owned()))
    }

    /// It says it runs the job (a stalled job still runs).
    pub fn runs_job(&self) -> bool {
        matches!(self, BeatState::Running | BeatState::Stalled)
    }

    /// Its job may still be alive: running, stalled, or being stopped.
    pub fn job_may_live(&self) -> bool {
        self.runs_job() || *self == BeatState::Stopping
    }

    /// It says it holds the lock: anything but idle.
    pub fn holds_lock(&self) -> bool {
        *self != BeatState::Idle
    }
}

impl fmt::Display for BeatState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for BeatState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for BeatState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(BeatState::parse(&String::deserialize(deserializer)?))
    }
}

/// Redis's own time in ms, for every script: the one clock leases, beats
/// and claims are measured on.
const NOW_MS: &str = "local function now_ms()\n  local t = redis.call('TIME')\n  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\nend\n";

/// The Lua preamble of every script: each hash's field table and list,
/// `STATE`, the heartbeat's states (`STATE.RUNNING = 'running'`, …), and
/// `now_ms()`.
pub fn lua() -> &'static str {
    static PREAMBLE: LazyLock<String> = LazyLock::new(|| {
        let states: String =
            BeatState::KNOWN.iter().map(|s| format!("{} = '{s}', ", s.as_str().to_uppercase())).collect();
        let tables = [flag::LUA, ack::LUA, beat::LUA, handover::LUA, entry::LUA, claim::LUA, window::LUA].concat();
        format!("{tables}local STATE = {{{states}}}\n{NOW_MS}")
    });
    &PREAMBLE
}

/// A script's text with the [`lua`] preamble before it.
pub fn script(source: &str) -> redis::Script {
    redis::Script::new(&format!("{}{source}", lua()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bench (Python) reads the names from `bench/schema.json`, made
    /// from these lists: this test says when it is behind, and writes it
    /// with `LOCKWATCH_UPDATE_TEXTS=1`.
    #[test]
    fn the_bench_has_the_same_names() {
        let tables = [
            ("flag", flag::NAMED),
            ("ack", ack::NAMED),
            ("beat", beat::NAMED),
            ("handover", handover::NAMED),
            ("entry", entry::NAMED),
            ("claim", claim::NAMED),
            ("window", window::NAMED),
        ];
        let mut json = serde_json::Map::new();
        for (table, named) in tables {
            let fields = named.iter().map(|(k, v)| ((*k).to_owned(), serde_json::Value::from(*v))).collect();
            json.insert(table.to_owned(), serde_json::Value::Object(fields));
        }
        let kinds =
            kind::ALL.iter().map(|k| (k.to_uppercase().replace('-', "_"), serde_json::Value::from(*k))).collect();
        json.insert("kind".to_owned(), serde_json::Value::Object(kinds));
        let text = format!("{}\n", serde_json::to_string_pretty(&json).unwrap());
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/schema.json");
        if std::env::var_os("LOCKWATCH_UPDATE_TEXTS").is_some() {
            std::fs::write(&path, &text).unwrap();
        }
        let written = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            written == text,
            "bench/schema.json is behind src/schema.rs: LOCKWATCH_UPDATE_TEXTS=1 cargo test --lib schema"
        );
    }

    #[test]
    fn every_state_reads_back_as_itself_and_others_are_kept() {
        for state in BeatState::KNOWN {
            assert_eq!(BeatState::parse(state.as_str()), state);
        }
        assert_eq!(BeatState::parse("busy"), BeatState::Other("busy".into()));
        assert!(BeatState::Other("busy".into()).holds_lock(), "another program's state holds the lock");
        assert!(!BeatState::Idle.holds_lock() && !BeatState::Idle.job_may_live());
        assert!(BeatState::Stopping.job_may_live() && !BeatState::Stopping.runs_job());
        assert!(!BeatState::Starting.runs_job() && BeatState::Starting.holds_lock());
    }

    #[test]
    fn the_preamble_names_every_field_and_state() {
        let lua = lua();
        assert!(lua.contains("local BEAT = {NODE = 'node', HOST = 'host', "), "{lua}");
        assert!(lua.contains("LOCK_FIELD = 'lock_field'"), "{lua}");
        assert!(lua.contains("local FLAG_FIELDS = {'on', 'time', 'host', 'reason', }"), "{lua}");
        assert!(lua.contains("local STATE = {STARTING = 'starting', RUNNING = 'running', "), "{lua}");
        assert_eq!(beat::ALL.len(), 22);
        assert!(lua.contains("local function now_ms()"), "{lua}");
    }

    /// The keys table of `docs/internals.md` names every field of every
    /// hash and stream entry declared here, and every kind, in the row of
    /// its key: a field added here and not there fails.
    #[test]
    fn the_docs_keys_table_names_every_field() {
        let doc = include_str!("../docs/internals.md");
        let row = |key: &str| -> &str {
            doc.lines().find(|l| l.starts_with(&format!("| `{key}` |"))).unwrap_or_else(|| panic!("no row for {key}"))
        };
        let named = |row: &str, name: &str| {
            row.match_indices(name).any(|(at, _)| {
                let before = row[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric() && c != '_');
                let after = row[at + name.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric() && c != '_');
                before && (after || name.ends_with(':'))
            })
        };
        let tables: [(&str, &[&str]); 7] = [
            ("{outbound}:enabled:<user>", flag::ALL),
            ("{outbound}:ack:<user>", ack::ALL),
            ("{outbound}:node:<node>", beat::ALL),
            ("{outbound}:handover", handover::ALL),
            ("{outbound}:events", entry::ALL),
            ("{outbound}:posted:<incident>", claim::ALL),
            ("{outbound}:repeats:<kind>", window::ALL),
        ];
        for (key, fields) in tables {
            for field in fields {
                assert!(named(row(key), field), "docs/internals.md's row for {key} does not name {field}");
            }
        }
        for k in kind::ALL {
            assert!(named(row("{outbound}:events"), k), "docs/internals.md does not name the kind {k}");
        }
    }

    /// Every `BEAT.X`, `FLAG.X`, `ACK.X`, `HANDOVER.X`, `ENTRY.X`, `CLAIM.X`,
    /// `WINDOW.X` and `STATE.X` a script names is in the preamble: a name that is not would be `nil` in Lua,
    /// found only when the script runs.
    #[test]
    fn the_scripts_name_only_fields_and_states_the_schema_has() {
        let lua = lua();
        let scripts = [
            include_str!("probe/probe.lua"),
            include_str!("work/lock/lock.lua"),
            include_str!("work/worker/worker.lua"),
            include_str!("work/trim.lua"),
            include_str!("serve/agree.rs"),
            include_str!("serve/lease.rs"),
        ];
        for source in scripts {
            for table in ["BEAT", "FLAG", "ACK", "HANDOVER", "ENTRY", "CLAIM", "WINDOW", "STATE"] {
                for (at, _) in source.match_indices(&format!("{table}.")) {
                    let name: String = source[at + table.len() + 1..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    let declared = lua
                        .lines()
                        .find(|l| l.starts_with(&format!("local {table} = ")))
                        .is_some_and(|l| l.contains(&format!(" {name} = ")) || l.contains(&format!("{{{name} = ")));
                    assert!(declared, "{table}.{name} is not in the schema");
                }
            }
        }
    }
}
