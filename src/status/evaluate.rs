//! One snapshot judged on its own, with the little history the tracker keeps
//! (when the lock went free, when it was last seen renewed): the raw state
//! before debouncing, its reason, and the moment the verdict could change.

use crate::snapshot::{Beat, LockKind, Snapshot};

use super::{Config, Holder, State};

/// The verdict on one snapshot before debouncing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Raw {
    /// `None` while waiting out a grace: the shown state stays as it is.
    pub state: Option<State>,
    pub reason: String,
    pub holder: Option<Holder>,
    /// Redis ms from the snapshot until the verdict may change by time alone.
    pub deadline_ms: Option<u64>,
}

/// History the verdict needs besides the snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Context {
    /// Redis time since when nobody holds the lock although it is enabled.
    pub free_since_ms: Option<u64>,
    /// Whether the lock was held when last seen (a gap is then a failover
    /// window, else a start grace).
    pub was_held: bool,
    /// Redis time a renewal of the current lock was last seen.
    pub renewed_at_ms: Option<u64>,
}

pub(super) fn evaluate(snap: &Snapshot, ctx: Context, cfg: &Config) -> Raw {
    let now = snap.time_ms;
    if snap.lock.kind == LockKind::Unreadable {
        return raw(State::Unknown, problem_sentence(snap), None, None);
    }
    if snap.lock.is_held() { held(snap, ctx, cfg) } else { free(snap, ctx, cfg, now) }
}

fn held(snap: &Snapshot, ctx: Context, cfg: &Config) -> Raw {
    let now = snap.time_ms;
    let field = snap.lock.holders[0].clone();
    let beat = snap.beats.iter().find(|b| b.lock_field.as_deref() == Some(field.as_str()));
    let age = |b: &Beat| b.beat_ms.map(|t| now.saturating_sub(t));
    let fresh = |b: &Beat| age(b).is_some_and(|a| a <= cfg.heartbeat_grace_ms);
    let holder = Holder {
        field: field.clone(),
        node: beat.map(|b| b.node.clone()),
        heartbeat_age_ms: beat.and_then(age),
        fence: beat.and_then(|b| b.fence).or(snap.fence),
    };
    let who = holder.node.clone().unwrap_or_else(|| format!("lock field {field}"));
    let mut deadlines = vec![snap.lock.ttl_ms.map(|t| t + 1)];

    if snap.lock.kind == LockKind::Redisson && snap.lock.holders.len() > 1 {
        let reason = format!(
            "the lock hash holds {} fields at once ({}); a Redisson lock has one owner",
            snap.lock.holders.len(),
            snap.lock.holders.join(", ")
        );
        return raw(State::Conflict, reason, Some(holder), earliest(deadlines));
    }
    if !cfg.heartbeats {
        let reason = match snap.lock.kind {
            LockKind::Alternation => format!("{who} holds the turn (heartbeats off)"),
            _ => format!("running on {who} (heartbeats off, lock only)"),
        };
        return raw(State::Running, reason, Some(holder), earliest(deadlines));
    }

    // Another server that beats after this holding began and says it runs the
    // job is a second runner: split brain. A predecessor that stopped beating
    // before the takeover is just a dead server whose heartbeat has not aged out.
    let acquired = beat.and_then(|b| b.started_ms).unwrap_or(0);
    let rivals: Vec<&Beat> = snap
        .beats
        .iter()
        .filter(|b| {
            fresh(b) && b.claims_job() && Some(&b.node) != holder.node.as_ref() && b.beat_ms.unwrap_or(0) > acquired
        })
        .collect();
    for b in &rivals {
        deadlines.push(b.beat_ms.map(|t| (t + cfg.heartbeat_grace_ms + 1).saturating_sub(now)));
    }
    if let Some(rival) = rivals.first() {
        let reason = format!("{who} holds the lock but {} also says it runs the job: two servers at once", rival.node);
        return raw(State::Conflict, reason, Some(holder), earliest(deadlines));
    }

    let Some(beat) = beat.filter(|b| fresh(b)) else {
        return stale(snap, ctx, holder, &who, beat, deadlines);
    };
    deadlines.push(beat.beat_ms.map(|t| (t + cfg.heartbeat_grace_ms + 1).saturating_sub(now)));
    if let (Some(theirs), Some(counter)) = (beat.fence, snap.fence)
        && theirs != counter
    {
        let reason = format!(
            "{who} holds the lock with fence token {theirs} but the fence counter is at {counter}: another holding began since"
        );
        return raw(State::Conflict, reason, Some(holder), earliest(deadlines));
    }
    if beat.state.as_deref() == Some("stalled") {
        let reason = format!("hung: {who} holds the lock and beats, but its job has printed nothing for a while");
        return raw(State::Stale, reason, Some(holder), earliest(deadlines));
    }
    raw(State::Running, format!("running on {who}"), Some(holder), earliest(deadlines))
}

fn stale(
    snap: &Snapshot,
    ctx: Context,
    holder: Holder,
    who: &str,
    beat: Option<&Beat>,
    deadlines: Vec<Option<u64>>,
) -> Raw {
    let last_beat = beat.and_then(|b| b.beat_ms);
    let missing = match holder.heartbeat_age_ms {
        Some(age) => format!("{who}'s heartbeat is {} old", human_duration(age)),
        None if beat.is_some() => format!("{who}'s heartbeat has no beat time"),
        None => format!("no heartbeat names the holder {who}"),
    };
    let renewed = ctx.renewed_at_ms.is_some_and(|r| last_beat.is_none_or(|b| r > b));
    let reason = match snap.lock.ttl_ms {
        _ if renewed => format!("hung: {missing}, yet the lock is still being renewed"),
        Some(ttl) => {
            format!("dying: {missing} and no lock renewal was seen; the lock expires in {}", human_duration(ttl))
        }
        None => {
            format!("{missing} and the lock never expires; if that server is gone, the lock must be deleted by hand")
        }
    };
    raw(State::Stale, reason, Some(holder), earliest(deadlines))
}

fn free(snap: &Snapshot, ctx: Context, cfg: &Config, now: u64) -> Raw {
    let enabled: Vec<&str> = snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.as_str()).collect();
    if enabled.is_empty() {
        if snap.flags.iter().any(|f| f.on.is_none()) {
            return raw(State::Unknown, problem_sentence(snap), None, None);
        }
        return raw(State::Stopped, "nobody has it enabled".to_owned(), None, None);
    }
    let who = enabled.join(", ");
    // Without history, the gap began at the latest flip of an enabled flag
    // (or, not knowing even that, long ago).
    let since = ctx
        .free_since_ms
        .or(ctx.was_held.then_some(now))
        .unwrap_or_else(|| snap.flags.iter().filter(|f| f.on == Some(true)).filter_map(|f| f.at_ms).max().unwrap_or(0));
    let (window, waiting) = if ctx.was_held {
        (cfg.failover_window_ms, "the lock was released; waiting for another server to take over")
    } else {
        (cfg.start_grace_ms, "waiting for a server to start it")
    };
    let gap = now.saturating_sub(since);
    if gap < window {
        let reason = format!("enabled by {who}; {waiting} ({} of {})", human_duration(gap), human_duration(window));
        return Raw { state: None, reason, holder: None, deadline_ms: Some(window - gap + 1) };
    }
    let reason = format!("enabled by {who} but no server holds the lock (for {})", human_duration(gap));
    raw(State::Down, reason, None, None)
}

fn raw(state: State, reason: String, holder: Option<Holder>, deadline_ms: Option<u64>) -> Raw {
    Raw { state: Some(state), reason, holder, deadline_ms }
}

fn earliest(deadlines: Vec<Option<u64>>) -> Option<u64> {
    deadlines.into_iter().flatten().min()
}

fn problem_sentence(snap: &Snapshot) -> String {
    match snap.problems.first() {
        Some(p) => format!("unreadable: {p}"),
        None => "unreadable data".to_owned(),
    }
}

/// A duration for people: `850 ms`, `12 s`, `4 min 5 s`, `2 h 3 min`.
pub fn human_duration(ms: u64) -> String {
    match ms {
        0..1_000 => format!("{ms} ms"),
        1_000..60_000 => format!("{} s", ms / 1000),
        60_000..3_600_000 => format!("{} min {} s", ms / 60_000, ms / 1000 % 60),
        _ => format!("{} h {} min", ms / 3_600_000, ms / 60_000 % 60),
    }
}
