//! One snapshot judged on its own, with the little history the tracker keeps
//! (when the lock went free, when it was last seen renewed): the raw state
//! before debouncing, its reason, since when it holds, and the moment the
//! verdict could change.

use crate::duration::human_duration;
use crate::schema::BeatState;
use crate::snapshot::kind;
use crate::snapshot::{Beat, LockKind, Snapshot};

use super::{Config, Holder, Stall, State};

/// The verdict on one snapshot before debouncing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Raw {
    pub state: State,
    pub reason: String,
    pub holder: Option<Holder>,
    /// Redis ms from the snapshot until the verdict may change by time alone.
    pub deadline_ms: Option<u64>,
    /// Since when this verdict holds, as far as the snapshot and the history
    /// tell (`None`: not known).
    pub since_ms: Option<u64>,
    /// The gap a free, enabled lock is in (for `pending` and `down`).
    pub gap: Option<Gap>,
    /// For a holder that waits before starting the job: until when.
    pub starts_at_ms: Option<u64>,
    /// For `stale`: why, and its ms (the heartbeat's age when hung, the
    /// lock's time left when dying).
    pub stall: Option<(Stall, Option<u64>)>,
}

/// What a free lock waits for: a first start, or a takeover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Awaited {
    /// The job was just enabled: a server should start it within the start grace.
    Start,
    /// The holder just went: a server should take over within the failover window.
    Takeover,
}

/// How long a takeover is waited for when no other server is alive to make
/// it: the time a worker started again needs (systemd's `RestartSec=500ms`
/// and its start), after which the job is down, not pending.
const ALONE_WINDOW_MS: u64 = 1_500;

/// A stretch of time in which nobody held the lock although it was enabled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Gap {
    pub since_ms: u64,
    pub awaited: Awaited,
    /// No server is alive to take it over, as the last look saw (heartbeats
    /// on): only a worker started again could.
    pub alone: bool,
}

impl Gap {
    fn new(since_ms: u64, awaited: Awaited) -> Gap {
        Gap { since_ms, awaited, alone: false }
    }

    /// Redis time until which a server is expected to take the lock.
    pub fn until_ms(self, cfg: &Config) -> u64 {
        let window = match self.awaited {
            Awaited::Start => cfg.start_grace_ms,
            Awaited::Takeover if self.alone => cfg.failover_window_ms.min(ALONE_WINDOW_MS),
            Awaited::Takeover => cfg.failover_window_ms,
        };
        self.since_ms.saturating_add(window)
    }
}

/// History the verdict needs besides the snapshot.
#[derive(Debug, Clone, Default)]
pub(super) struct Context {
    /// The gap the lock is in, once the tracker has seen it begin or dated it.
    pub gap: Option<Gap>,
    /// Whether the lock was held when last seen (a gap that begins now is
    /// then a takeover, else it is dated from what Redis remembers).
    pub was_held: bool,
    /// Redis time a renewal of the current lock was last seen.
    pub renewed_at_ms: Option<u64>,
    /// The server last seen holding the current lock field (its heartbeat
    /// named it): the holding is still that server's when no heartbeat
    /// names it any more.
    pub held_by: Option<String>,
}

pub(super) fn evaluate(snap: &Snapshot, ctx: Context, cfg: &Config) -> Raw {
    if snap.lock.kind == LockKind::Unreadable {
        return raw(State::Unknown, problem_sentence(snap), None, None);
    }
    if snap.lock.is_held() { held(snap, ctx, cfg) } else { free(snap, ctx, cfg) }
}

fn held(snap: &Snapshot, ctx: Context, cfg: &Config) -> Raw {
    let now = snap.time_ms;
    let field = snap.lock.holders[0].clone();
    let beat = snap.beats.iter().find(|b| b.lock_field.as_deref() == Some(field.as_str()));
    let age = |b: &Beat| b.beat_ms.map(|t| now.saturating_sub(t));
    let fresh = |b: &Beat| age(b).is_some_and(|a| a <= cfg.heartbeat_grace_ms);
    let holder = Holder {
        field: field.clone(),
        node: beat.map(|b| b.node.clone()).or_else(|| ctx.held_by.clone()),
        heartbeat_age_ms: beat.and_then(age),
        fence: beat.and_then(|b| b.fence).or(snap.fence),
    };
    let who = holder.node.clone().unwrap_or_else(|| format!("lock field {field}"));
    let mut deadlines = vec![snap.lock.ttl_ms.map(|t| t + 1)];
    // The holding began when its server took the lock, as far as it says.
    let taken_at = beat.and_then(|b| b.started_ms);

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
        return Raw { since_ms: taken_at, ..raw(State::Running, reason, Some(holder), earliest(deadlines)) };
    }

    // Another server that beats after this holding began and says it runs the
    // job is a second runner: split brain. A predecessor that stopped beating
    // before the takeover is just a dead server whose heartbeat has not aged out.
    let acquired = taken_at.unwrap_or(0);
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

    if let Some(b) = beat
        && b.present == Some(false)
    {
        return gone(snap, holder, &who, b, deadlines);
    }
    let Some(beat) = beat.filter(|b| fresh(b)) else {
        return stale(snap, ctx, holder, &who, beat, deadlines, cfg);
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
    if beat.state == Some(BeatState::Starting) {
        return waiting_to_start(beat, holder, &who, taken_at, deadlines, now);
    }
    if beat.state == Some(BeatState::Stalled) {
        let reason = format!("hung: {who} holds the lock and beats, but its job has printed nothing for a while");
        return raw(State::Stale, reason, Some(holder), earliest(deadlines));
    }
    let running = raw(State::Running, format!("running on {who}"), Some(holder), earliest(deadlines));
    Raw { since_ms: taken_at, ..running }
}

fn stale(
    snap: &Snapshot,
    ctx: Context,
    holder: Holder,
    who: &str,
    beat: Option<&Beat>,
    deadlines: Vec<Option<u64>>,
    cfg: &Config,
) -> Raw {
    let last_beat = beat.and_then(|b| b.beat_ms);
    if beat.is_none()
        && let Some(node) = &holder.node
        && snap.beats.iter().any(|b| &b.node == node && b.alive(snap.time_ms, cfg.heartbeat_grace_ms))
    {
        return disowned(snap, holder, who, deadlines);
    }
    let missing = match holder.heartbeat_age_ms {
        Some(age) => format!("{who}'s heartbeat is {} old", human_duration(age)),
        None if beat.is_some() => format!("{who}'s heartbeat has no beat time"),
        None if holder.node.is_some() => format!("{who}'s heartbeat no longer names the lock it held"),
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
    let stall = match renewed {
        true => (Stall::Hung, holder.heartbeat_age_ms),
        false => (Stall::Dying, snap.lock.ttl_ms),
    };
    // Stale since the heartbeat passed its grace.
    let since = last_beat.map(|b| b.saturating_add(cfg.heartbeat_grace_ms));
    Raw { since_ms: since, stall: Some(stall), ..raw(State::Stale, reason, Some(holder), earliest(deadlines)) }
}

/// The server last seen holding the lock beats on, but its heartbeat no
/// longer names the holding: its worker gave the lock up (it could not renew
/// in time and killed its job, or it is letting go), so nothing renews the
/// lock now, whatever renewal was seen before (one sent before the worker
/// gave up may reach a Redis that was frozen only after). It goes when the
/// lock expires.
fn disowned(snap: &Snapshot, holder: Holder, who: &str, deadlines: Vec<Option<u64>>) -> Raw {
    let gave_up = format!("{who}'s heartbeat no longer names the lock it held (its worker gave it up)");
    let reason = match snap.lock.ttl_ms {
        Some(ttl) => format!("dying: {gave_up}; the lock expires in {}", human_duration(ttl)),
        None => format!(
            "dying: {gave_up}, and the lock never expires; if that server is gone, the lock must be deleted by hand"
        ),
    };
    let stall = Some((Stall::Dying, snap.lock.ttl_ms));
    Raw { stall, ..raw(State::Stale, reason, Some(holder), earliest(deadlines)) }
}

/// The holder's presence subscription is gone although its heartbeat says it
/// holds one: Redis closed its connection, so the process died (or its link
/// broke), however fresh its last beat. A worker whose connection broke
/// while it lives says so in its next beat (within a second), which ends this.
fn gone(snap: &Snapshot, holder: Holder, who: &str, beat: &Beat, deadlines: Vec<Option<u64>>) -> Raw {
    let closed = format!("{who}'s connection to Redis closed (its process died or lost its link)");
    let reason = match snap.lock.ttl_ms {
        Some(ttl) => format!("dying: {closed}; the lock expires in {}", human_duration(ttl)),
        None => format!(
            "dying: {closed}, and the lock never expires; if that server is gone, the lock must be deleted by hand"
        ),
    };
    // Gone since it was last heard of.
    let stall = Some((Stall::Dying, snap.lock.ttl_ms));
    Raw { since_ms: beat.beat_ms, stall, ..raw(State::Stale, reason, Some(holder), earliest(deadlines)) }
}

fn free(snap: &Snapshot, ctx: Context, cfg: &Config) -> Raw {
    if let Some(why) = &snap.job_absent {
        return raw(State::Unknown, why.clone(), None, None);
    }
    let now = snap.time_ms;
    let mut enabled: Vec<&str> = snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.user.as_str()).collect();
    // A flag Redis lost while it was on counts as on until written again, as the workers take it.
    let lost = if enabled.is_empty() { flags_lost(snap) } else { Vec::new() };
    enabled.extend(lost.iter().map(String::as_str));
    if enabled.is_empty() {
        if snap.flags.iter().any(|f| f.on.is_none()) {
            return raw(State::Unknown, problem_sentence(snap), None, None);
        }
        // Stopped when the last flag was switched off.
        let since = snap.flags.iter().filter_map(|f| f.at_ms).max();
        return Raw { since_ms: since, ..raw(State::Stopped, "nobody has it enabled".to_owned(), None, None) };
    }
    let who = enabled.join(", ");
    // A worker holds back: switches stopped and started the job too often.
    // Its start grace counts from the hold's end.
    if let Some(until) = held_until(snap, cfg) {
        let reason = format!(
            "enabled by {who}; switched off and on too often lately, so the servers hold back and start it again at {}",
            clock_utc(until)
        );
        let gap = Some(Gap::new(until, Awaited::Start));
        return Raw { gap, ..raw(State::Pending, reason, None, Some(until - now)) };
    }
    let mut gap =
        ctx.gap.unwrap_or_else(|| if ctx.was_held { Gap::new(now, Awaited::Takeover) } else { remembered_gap(snap) });
    gap.alone = gap.awaited == Awaited::Takeover && !anybody_could_take_over(snap, cfg);
    let until = gap.until_ms(cfg);
    if now < until {
        let window = until - gap.since_ms;
        let reason = match gap.awaited {
            Awaited::Start => format!(
                "enabled by {who}; waiting for a server to start it until {} (start grace {})",
                clock_utc(until),
                human_duration(window)
            ),
            Awaited::Takeover if gap.alone => format!(
                "the last holder let go and no other server is alive; waiting for a worker started again until {} ({})",
                clock_utc(until),
                human_duration(window)
            ),
            Awaited::Takeover => format!(
                "the last holder let go; waiting for a server to take over until {} (failover window {})",
                clock_utc(until),
                human_duration(window)
            ),
        };
        return Raw {
            since_ms: Some(gap.since_ms),
            gap: Some(gap),
            ..raw(State::Pending, reason, None, Some(until - now))
        };
    }
    // A gap dated 0 began at an unknown time (a flag without its flip time).
    // How long it has lasted is said by the view, from the status's own
    // `since`, which a down state already shown keeps (see `Edges::since`).
    let since = (gap.since_ms > 0).then_some(gap.since_ms);
    let reason = format!("enabled by {who} but no server holds the lock");
    Raw { since_ms: since, gap: Some(gap), ..raw(State::Down, reason, None, None) }
}

/// On a first look at a free, enabled lock: when the gap began, from what
/// Redis remembers. The job has been enabled since the earliest flip of a
/// flag that is on now (each has been on since its flip); the last holder
/// went when its server last beat while naming a lock field, or when the
/// stream last recorded a release, a loss or a death (a killed worker's
/// reaper records it as it lets go of the lock). The later of the two starts
/// the gap, and says whether a start or a takeover is awaited.
fn remembered_gap(snap: &Snapshot) -> Gap {
    let enabled_since =
        snap.flags.iter().filter(|f| f.on == Some(true)).map(|f| f.at_ms.unwrap_or(0)).min().unwrap_or(0);
    let last_beat_holding = snap
        .beats
        .iter()
        .filter(|b| b.lock_field.as_deref().is_some_and(|f| !f.is_empty()))
        .filter_map(|b| b.beat_ms)
        .max();
    let last_let_go = snap
        .recent_events
        .iter()
        .flatten()
        .filter(|e| [kind::RELEASED, kind::LOST, kind::DIED].contains(&e.kind.as_str()))
        .map(|e| e.id.ms)
        .max();
    match last_beat_holding.max(last_let_go) {
        Some(gone) if gone > enabled_since => Gap::new(gone, Awaited::Takeover),
        _ => Gap::new(enabled_since, Awaited::Start),
    }
}

/// Whether some server could take the lock over: one whose heartbeat is
/// fresh and whose process is not known gone (its presence subscription
/// closed). Without heartbeats nothing can be told, so anybody could.
/// The first end of a hold the workers with a fresh heartbeat say they
/// keep (after too many starts by switches), while one lasts: the job
/// starts again then.
fn held_until(snap: &Snapshot, cfg: &Config) -> Option<u64> {
    let now = snap.time_ms;
    snap.beats
        .iter()
        .filter(|b| beat_fresh(b, now, cfg))
        .filter_map(|b| b.held_until_ms)
        .filter(|&until| until > now)
        .min()
}

fn anybody_could_take_over(snap: &Snapshot, cfg: &Config) -> bool {
    let now = snap.time_ms;
    let alive = |b: &&Beat| {
        b.present != Some(false) && b.beat_ms.is_some_and(|t| now.saturating_sub(t) <= cfg.heartbeat_grace_ms)
    };
    !cfg.heartbeats || snap.beats.iter().any(|b| alive(&b))
}

/// A new holder that waits before it starts the job: another server's
/// heartbeat still says it runs it, or Redis is new, restarted or lost its
/// data, so an earlier holder may still run it until its lease runs out.
fn waiting_to_start(
    beat: &Beat,
    holder: Holder,
    who: &str,
    taken_at: Option<u64>,
    mut deadlines: Vec<Option<u64>>,
    now: u64,
) -> Raw {
    let until = beat.wait_until_ms.filter(|u| *u > now);
    deadlines.push(until.map(|u| u - now + 1));
    let when = match until {
        Some(u) => format!(" for {}", human_duration(u - now)),
        None => String::new(),
    };
    let reason = match &beat.waits_for {
        Some(other) => format!(
            "{who} holds the lock and waits{when} before starting the job: {other}'s heartbeat still says it runs it, and it must stop first"
        ),
        None => format!(
            "{who} holds the lock and waits{when} before starting the job: Redis is new, restarted or lost its data, so an earlier holder must first have stopped"
        ),
    };
    Raw { since_ms: taken_at, starts_at_ms: until, ..raw(State::Pending, reason, Some(holder), earliest(deadlines)) }
}

/// A verdict with nothing but a state and its reason.
pub(super) fn raw_verdict(state: State, reason: String) -> Raw {
    raw(state, reason, None, None)
}

fn raw(state: State, reason: String, holder: Option<Holder>, deadline_ms: Option<u64>) -> Raw {
    Raw { state, reason, holder, deadline_ms, since_ms: None, gap: None, starts_at_ms: None, stall: None }
}

fn earliest(deadlines: Vec<Option<u64>>) -> Option<u64> {
    deadlines.into_iter().flatten().min()
}

fn problem_sentence(snap: &Snapshot) -> String {
    match snap.problems.first() {
        Some(p) if p.starts_with("Redis lost") => p.clone(),
        Some(p) => format!("unreadable: {p}"),
        None => "unreadable data".to_owned(),
    }
}

/// The time of day of a Redis ms time, in UTC: `10:00:15 UTC`. Enough for
/// deadlines seconds away; dates are the CLI's business.
pub fn clock_utc(ms: u64) -> String {
    let secs = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02} UTC", secs / 3600, secs / 60 % 60, secs % 60)
}

/// Whether `b` beat within the grace before `now_ms` (by its heartbeat alone).
pub(super) fn beat_fresh(b: &Beat, now_ms: u64, cfg: &Config) -> bool {
    b.beat_ms.is_some_and(|t| now_ms.saturating_sub(t) <= cfg.heartbeat_grace_ms)
}

/// The users whose flag the latest heartbeat says Redis lost while it was
/// on, and whose flag is still gone in this read (a flip since wrote it
/// again). Fresh or not: with every worker gone, their last word is still
/// the latest, and a worker started again takes it up as it is.
pub(super) fn flags_lost(snap: &Snapshot) -> Vec<String> {
    let gone = |user: &String| snap.flags.iter().any(|f| &f.user == user && f.is_missing());
    let said = snap.flags_lost_said(|_| true);
    let mut users: Vec<String> = said.iter().filter(|u| gone(u)).cloned().collect();
    users.sort();
    users.dedup();
    users
}
