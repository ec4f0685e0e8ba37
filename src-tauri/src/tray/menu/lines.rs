//! The menu's lines in the user's language: a job's status line, who is on
//! it, a state as a word, the mute's labels.

use lockwatch::snapshot::Ack;
use lockwatch::{State, Status};

use super::Words;
use crate::core::i18n::Tr;

/// `alice has been on it since 10:02: looking at wh-a`, in the desktop's time of
/// day; `You have been on it since 10:02` when the ack is `user`'s own.
pub fn on_it_line(a: &Ack, user: &str, words: &Words) -> String {
    let since = (words.time_of_day)(a.at_ms);
    let args = [("user", a.user.as_str().into()), ("since", since.into()), ("note", a.note.as_str().into())];
    let id = match (a.user == user, a.note.is_empty()) {
        (true, true) => "menu-on-it-own-plain",
        (true, false) => "menu-on-it-own",
        (false, true) => "menu-on-it-plain",
        (false, false) => "menu-on-it",
    };
    words.tr.ta(id, &args)
}

/// A state as a word inside a sentence.
pub fn state_word(tr: &Tr, state: State) -> String {
    tr.t(match state {
        State::Running => "state-running",
        State::Stale => "state-stale",
        State::Down => "state-down",
        State::Pending => "state-pending",
        State::Stopped => "state-stopped",
        State::Conflict => "state-conflict",
        State::Unknown => "state-unknown",
    })
}

/// One line saying the state, the server, since what time of day, and
/// while the holder's heartbeat is late, its age in seconds: it changes
/// when one of those facts does, not with every look (a running job's
/// fresh heartbeat and the growing duration are the dashboard's). Built
/// from the status's fields, not its English reason, except where only the
/// reason knows (an unknown state Redis did answer).
pub fn status_line(s: &Status, words: &Words) -> String {
    let tr = &words.tr;
    let job = s.job.as_str().into();
    let state = state_word(tr, s.state).into();
    let server = s.holder.as_ref().and_then(|h| h.node.clone());
    let mut parts = vec![match (s.state, &server) {
        (State::Running | State::Stale | State::Conflict, Some(node)) => {
            tr.ta("menu-head-server", &[("job", job), ("state", state), ("server", node.as_str().into())])
        }
        (State::Unknown, _) if s.failure == Some(lockwatch::error::RedisFailure::Auth) => {
            tr.ta("menu-head-sign-in", &[("job", job), ("state", state)])
        }
        (State::Unknown, _) if s.checked_at_ms.is_none() => {
            tr.ta("menu-head-unreadable", &[("job", job), ("state", state)])
        }
        (State::Unknown, _) => {
            tr.ta("menu-head-reason", &[("job", job), ("state", state), ("reason", headline(&s.reason).into())])
        }
        _ => tr.ta("menu-head", &[("job", job), ("state", state)]),
    }];
    if let (State::Pending, Some(until), Some(now)) = (s.state, s.pending_until_ms, s.checked_at_ms) {
        parts.push(tr.ta("menu-pending", &[("left", tr.duration(until.saturating_sub(now)).into())]));
    }
    if let (Some(since), Some(_)) = (s.since_ms, s.checked_at_ms) {
        parts.push(tr.ta("menu-since", &[("since", (words.time_of_day)(since).into())]));
    }
    if let (State::Stale, Some(age)) = (s.state, s.holder.as_ref().and_then(|h| h.heartbeat_age_ms)) {
        parts.push(tr.ta("menu-heartbeat", &[("age", tr.duration(age / 1000 * 1000).into())]));
    }
    parts.join(" · ")
}

/// The first clause of a reason, short enough for a menu line.
fn headline(reason: &str) -> String {
    const MAX: usize = 60;
    let end = [" (", ": ", "; "].iter().filter_map(|sep| reason.find(sep)).min().unwrap_or(reason.len());
    let head = &reason[..end];
    match head.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &head[..cut]),
        None => head.to_owned(),
    }
}

pub(super) fn mute_label(mute_until_ms: Option<u64>, now_ms: u64, words: &Words) -> String {
    match mute_until_ms {
        Some(until) if until > now_ms => words.tr.ta("menu-muted", &[("until", (words.time_of_day)(until).into())]),
        _ => words.tr.t("menu-mute"),
    }
}

/// "Unmute (50 min left)" while muted; nothing to offer otherwise.
pub(super) fn unmute_label(mute_until_ms: Option<u64>, now_ms: u64, tr: &Tr) -> Option<String> {
    match mute_until_ms {
        Some(until) if until > now_ms => {
            Some(tr.ta("menu-unmute-left", &[("left", tr.duration(until - now_ms).into())]))
        }
        _ => None,
    }
}
