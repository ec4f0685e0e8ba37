//! What the unit tests of the core and of the tray's menu build their cases
//! from: a status, a job as known, an event, an ack, the words of a language.

use lockwatch::snapshot::Ack;
use lockwatch::status::{Holder, LockView};
use lockwatch::{Event, EventKind, State, Status};

use super::i18n::{Lang, Tr, tr};
use super::state::JobState;

/// The English words.
pub fn en() -> Tr {
    tr(Lang::En)
}

/// The Simplified Chinese words.
pub fn zh() -> Tr {
    tr(Lang::ZhHans)
}

/// The time of day in UTC, so the tests read the same everywhere.
pub fn utc(ms: u64) -> String {
    lockwatch::status::clock_utc(ms)[..5].to_owned()
}

/// Job `outbound` in `state`, held on `node`, enabled by `enabled`, read at 1,000 s.
pub fn status(state: State, node: Option<&str>, enabled: &[&str]) -> Status {
    Status {
        job: "outbound".into(),
        state,
        reason: "r".into(),
        holder: node.map(|n| Holder {
            field: "f:1".into(),
            node: Some(n.into()),
            heartbeat_age_ms: Some(1_200),
            fence: None,
        }),
        lock: LockView {
            key: "{outbound}:lock".into(),
            kind: None,
            holders: vec![],
            ttl_ms: None,
            fence: None,
            next_run_ms: None,
        },
        enabled_users: enabled.iter().map(|s| s.to_string()).collect(),
        flags: vec![],
        acks: vec![],
        nodes: vec![],
        checked_at_ms: Some(1_000_000),
        since_ms: Some(1_000_000 - 720_000),
        pending_until_ms: None,
        problems: vec![],
        no_standby: None,
        flags_lost: vec![],
        eviction: None,
        failure: None,
    }
}

/// Job `outbound` as known with [`status`].
pub fn known(state: State, node: Option<&str>, enabled: &[&str]) -> JobState {
    JobState { job: "outbound".into(), status: Some(status(state, node, enabled)), ..Default::default() }
}

/// An event of `kind` about `job` at Redis time 0, naming nobody.
pub fn event(kind: EventKind, job: &str) -> Event {
    Event {
        event: kind,
        job: job.into(),
        at_ms: 0,
        from: None,
        to: None,
        reason: "why".into(),
        stall: None,
        ms: None,
        no_standby: false,
    }
}

/// `user`'s "I'm on it" from `at_ms`, for an hour.
pub fn ack(user: &str, at_ms: u64, note: &str) -> Ack {
    Ack { user: user.into(), at_ms, until_ms: at_ms + 3_600_000, note: note.into() }
}
