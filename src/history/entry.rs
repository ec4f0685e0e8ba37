//! The job's event stream entries, typed: what a worker writes (acquired,
//! released, lost, renew-failed, job-started, job-exited, flags-changed)
//! with structured causes, and their encoding to and decoding from stream
//! fields. Pure: no I/O.
//!
//! Each entry also carries the cause as a sentence (`reason`), so the raw
//! stream stays readable with `redis-cli`; readers decide by the `cause`
//! token. Entries written before causes had tokens are read by their exact
//! sentence.

use serde::Serialize;

pub use crate::cause::{Cause, WaitCause};
use crate::schema::entry as f;
use crate::snapshot::{StreamId, kind};

/// A supervisor's flag as a worker saw it change: whose, on or off, and the
/// flag's own time, host and reason (the flag hash's `time`, `host`, `reason`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlagFlip {
    pub user: String,
    pub on: bool,
    /// Redis time the supervisor flipped it, ms.
    pub at_ms: Option<u64>,
    /// The machine it was flipped from.
    pub host: Option<String>,
    /// Why, in the supervisor's words (`--reason`).
    pub reason: Option<String>,
}

/// What happened, as a worker records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// The lock is ours under `field` with this fence; `wait` when the job
    /// must not start yet.
    Acquired {
        fence: Option<i64>,
        field: Option<String>,
        wait: Option<(u64, Option<WaitCause>)>,
        /// The previous holder's last heartbeat (Redis ms), as the new
        /// holder found it: when a holder that wrote no end last lived.
        prev_beat_ms: Option<u64>,
    },
    /// Given up on purpose.
    Released {
        fence: Option<i64>,
        cause: Option<Cause>,
    },
    /// Taken away: the job was killed.
    Lost {
        fence: Option<i64>,
        cause: Option<Cause>,
    },
    /// A renewal failed; the watchdog retries.
    RenewFailed {
        fence: Option<i64>,
    },
    JobStarted {
        fence: Option<i64>,
        pid: Option<u32>,
    },
    JobExited {
        fence: Option<i64>,
        status: String,
    },
    /// A supervisor's flag changed.
    FlagsChanged(FlagFlip),
    /// An earlier process under this node's name held the lock under
    /// `fence` and died without a word (`kill -9`, a crash): its last
    /// heartbeat was at `last_beat_ms`. Written by the process that took the
    /// name next (a restart on the same server), whose heartbeat replaced
    /// that one, so the next holder can no longer see it.
    Died {
        fence: Option<i64>,
        last_beat_ms: Option<u64>,
    },
    /// A type this version does not know (a newer writer, a test).
    Other {
        kind: String,
    },
}

impl Record {
    /// The stream's `type` of this record.
    pub fn kind(&self) -> &str {
        match self {
            Record::Acquired { .. } => kind::ACQUIRED,
            Record::Released { .. } => kind::RELEASED,
            Record::Lost { .. } => kind::LOST,
            Record::RenewFailed { .. } => kind::RENEW_FAILED,
            Record::JobStarted { .. } => kind::JOB_STARTED,
            Record::JobExited { .. } => kind::JOB_EXITED,
            Record::FlagsChanged(_) => kind::FLAGS_CHANGED,
            Record::Died { .. } => kind::DIED,
            Record::Other { kind } => kind,
        }
    }

    /// The stream fields of this record written by `node`, `type` and
    /// `node` first (what the status engine and older readers look at).
    pub fn encode(&self, node: &str) -> Vec<(&'static str, String)> {
        let mut out = vec![(f::TYPE, self.kind().to_owned()), (f::NODE, node.to_owned())];
        let mut put = |name: &'static str, value: Option<String>| {
            if let Some(v) = value {
                out.push((name, v));
            }
        };
        let num = |n: Option<i64>| n.map(|n| n.to_string());
        match self {
            Record::Acquired { fence, field, wait, prev_beat_ms } => {
                put(f::FENCE, num(*fence));
                put(f::FIELD, field.clone());
                if let Some((ms, cause)) = wait {
                    put(f::WAIT_MS, Some(ms.to_string()));
                    put(f::WAIT_CAUSE, cause.map(|c| c.token().to_owned()));
                }
                put(f::PREV_BEAT_MS, prev_beat_ms.map(|t| t.to_string()));
            }
            Record::Released { fence, cause } | Record::Lost { fence, cause } => {
                put(f::FENCE, num(*fence));
                put(f::CAUSE, cause.map(|c| c.token().to_owned()));
                put(f::REASON, cause.map(|c| c.sentence().to_owned()));
            }
            Record::RenewFailed { fence } => put(f::FENCE, num(*fence)),
            Record::JobStarted { fence, pid } => {
                put(f::PID, pid.map(|p| p.to_string()));
                put(f::FENCE, num(*fence));
            }
            Record::JobExited { fence, status } => {
                put(f::STATUS, Some(status.clone()));
                put(f::FENCE, num(*fence));
            }
            Record::FlagsChanged(flip) => {
                put(f::USER, Some(flip.user.clone()));
                put(f::ON, Some(if flip.on { "1" } else { "0" }.to_owned()));
                put(f::FLAG_MS, flip.at_ms.map(|t| t.to_string()));
                put(f::HOST, flip.host.clone());
                put(f::REASON, flip.reason.clone());
            }
            Record::Died { fence, last_beat_ms } => {
                put(f::FENCE, num(*fence));
                put(f::LAST_BEAT_MS, last_beat_ms.map(|t| t.to_string()));
            }
            Record::Other { .. } => {}
        }
        out
    }

    /// The record of an entry's fields; `None` without a `type`.
    pub fn decode(fields: &[(String, String)]) -> Option<Record> {
        let get = |name: &str| fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let text = |name: &str| get(name).filter(|v| !v.is_empty()).map(str::to_owned);
        let fence = get(f::FENCE).and_then(|f| f.parse().ok());
        let cause = || Cause::decode(get(f::CAUSE), get(f::REASON));
        Some(match get(f::TYPE)? {
            kind::ACQUIRED => Record::Acquired {
                fence,
                field: text(f::FIELD),
                wait: get(f::WAIT_MS)
                    .and_then(|w| w.parse().ok())
                    .map(|ms| (ms, get(f::WAIT_CAUSE).and_then(WaitCause::decode))),
                prev_beat_ms: get(f::PREV_BEAT_MS).and_then(|t| t.parse().ok()),
            },
            kind::RELEASED => Record::Released { fence, cause: cause() },
            kind::LOST => Record::Lost { fence, cause: cause() },
            kind::RENEW_FAILED => Record::RenewFailed { fence },
            kind::JOB_STARTED => Record::JobStarted { fence, pid: get(f::PID).and_then(|p| p.parse().ok()) },
            kind::JOB_EXITED => Record::JobExited { fence, status: text(f::STATUS).unwrap_or_default() },
            kind::DIED => Record::Died { fence, last_beat_ms: get(f::LAST_BEAT_MS).and_then(|t| t.parse().ok()) },
            // Older workers wrote only `enabled` (the sum of all flags): no flip to show.
            kind::FLAGS_CHANGED => match (text(f::USER), get(f::ON)) {
                (Some(user), Some(on)) => Record::FlagsChanged(FlagFlip {
                    user,
                    on: on == "1",
                    at_ms: get(f::FLAG_MS).and_then(|t| t.parse().ok()),
                    host: text(f::HOST),
                    reason: text(f::REASON),
                }),
                _ => Record::Other { kind: kind::FLAGS_CHANGED.to_owned() },
            },
            other => Record::Other { kind: other.to_owned() },
        })
    }
}

/// One entry of the stream: when (its id), which server wrote it, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: StreamId,
    pub node: Option<String>,
    pub record: Record,
}

impl Entry {
    /// An entry from its id and fields; `None` when the id is not a stream
    /// id or there is no `type`.
    pub fn decode(id: &str, fields: &[(String, String)]) -> Option<Entry> {
        let node = fields.iter().find(|(k, _)| k == f::NODE).map(|(_, v)| v.clone()).filter(|n| !n.is_empty());
        Some(Entry { id: StreamId::parse(id)?, node, record: Record::decode(fields)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(fields: Vec<(&'static str, String)>) -> Vec<(String, String)> {
        fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }

    fn round_trip(record: Record) {
        let fields = owned(record.encode("srv-a"));
        let entry = Entry::decode("1700000000000-1", &fields).unwrap();
        assert_eq!(entry.record, record, "{fields:?}");
        assert_eq!(entry.node.as_deref(), Some("srv-a"));
    }

    #[test]
    fn every_record_survives_the_stream() {
        round_trip(Record::Acquired { fence: Some(7), field: Some("uuid:1".into()), wait: None, prev_beat_ms: None });
        round_trip(Record::Died { fence: Some(7), last_beat_ms: Some(1_700_000_000_000) });
        round_trip(Record::Acquired {
            fence: Some(8),
            field: Some("uuid:1".into()),
            wait: Some((30_000, Some(WaitCause::CounterMissing))),
            prev_beat_ms: Some(1_700_000_000_000),
        });
        for cause in Cause::ALL {
            round_trip(Record::Released { fence: Some(7), cause: Some(cause) });
            round_trip(Record::Lost { fence: Some(7), cause: Some(cause) });
        }
        round_trip(Record::RenewFailed { fence: Some(7) });
        round_trip(Record::JobStarted { fence: Some(7), pid: Some(4321) });
        round_trip(Record::JobExited { fence: Some(7), status: "exit 1".into() });
        round_trip(Record::FlagsChanged(FlagFlip {
            user: "alice".into(),
            on: false,
            at_ms: Some(1_700_000_000_000),
            host: Some("pc-7".into()),
            reason: Some("inventory count tonight".into()),
        }));
    }

    #[test]
    fn the_type_and_node_come_first_and_causes_are_tokens_with_a_sentence() {
        let fields = Record::Released { fence: Some(3), cause: Some(Cause::Disabled) }.encode("srv-b");
        assert_eq!(fields[0], (f::TYPE, kind::RELEASED.to_owned()));
        assert_eq!(fields[1], (f::NODE, "srv-b".to_owned()));
        assert!(fields.contains(&(f::CAUSE, "disabled".to_owned())));
        assert!(fields.contains(&(f::REASON, "nobody has the job enabled".to_owned())));
    }

    #[test]
    fn entries_of_older_workers_are_read_by_their_sentence() {
        let old = |what: &str, reason: &str| {
            Record::decode(&owned(vec![(f::TYPE, what.into()), (f::FENCE, "4".into()), (f::REASON, reason.into())]))
        };
        assert_eq!(
            old(kind::RELEASED, "nobody has the job enabled"),
            Some(Record::Released { fence: Some(4), cause: Some(Cause::Disabled) })
        );
        assert_eq!(
            old(kind::LOST, "the lock was no longer ours when releasing it (expired, deleted or taken over)"),
            Some(Record::Lost { fence: Some(4), cause: Some(Cause::Lost) })
        );
        assert_eq!(
            old(kind::LOST, "the lease could not be renewed in time (Redis unreachable)"),
            Some(Record::Lost { fence: Some(4), cause: Some(Cause::Expired) })
        );
        assert_eq!(old(kind::LOST, "something else"), Some(Record::Lost { fence: Some(4), cause: None }));
        let aggregate = owned(vec![(f::TYPE, kind::FLAGS_CHANGED.into()), ("enabled", "0".into())]);
        assert_eq!(Record::decode(&aggregate), Some(Record::Other { kind: kind::FLAGS_CHANGED.into() }));
    }

    #[test]
    fn unknown_types_are_kept_and_entries_without_a_type_or_id_are_not_entries() {
        let fields = owned(vec![(f::TYPE, "test".into())]);
        assert_eq!(Entry::decode("5-0", &fields).unwrap().record, Record::Other { kind: "test".into() });
        assert_eq!(Entry::decode("5-0", &owned(vec![(f::NODE, "a".into())])), None);
        assert_eq!(Entry::decode("nonsense", &fields), None);
    }
}
