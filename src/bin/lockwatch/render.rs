//! How the CLI prints statuses and events for people: short, aligned, in
//! UTC. Pure functions, so the output is unit-tested.

use std::fmt::Write as _;

use lockwatch::duration::human_duration as secs;
use lockwatch::status::{Event, EventKind, Status};

/// A multi-line summary of a status.
pub fn status(s: &Status) -> String {
    let mut out = format!("{}: {} — {}\n", s.job, s.state.as_str().to_uppercase(), s.reason);
    if let Some(h) = &s.holder {
        let server = h.node.clone().unwrap_or_else(|| "(no heartbeat names it)".to_owned());
        let beat = h.heartbeat_age_ms.map(|a| format!(", heartbeat {} ago", secs(a))).unwrap_or_default();
        let _ = writeln!(out, "  server   {server}{beat}");
        let _ = writeln!(out, "  holder   {}", h.field);
    }
    // Without a read (Redis unreachable) the lock and the flags are not
    // known: say so rather than print the blank status as "free", "nobody".
    let read = s.checked_at_ms.is_some();
    match s.lock.kind {
        Some(kind) => {
            let ttl = match (s.lock.ttl_ms, s.lock.holders.is_empty()) {
                _ if kind == lockwatch::snapshot::LockKind::Unreadable => "lease not known".to_owned(),
                (_, true) => "free".to_owned(),
                (Some(t), false) => format!("expires in {}", secs(t)),
                (None, false) => "no expiry".to_owned(),
            };
            let fence = s.lock.fence.map(|f| format!(", fence {f}")).unwrap_or_default();
            let next =
                s.lock.next_run_ms.map(|n| format!(", next run at {}", utc(n.max(0) as u64))).unwrap_or_default();
            let _ = writeln!(out, "  lock     {} ({}, {ttl}{fence}{next})", s.lock.key, kind_name(kind));
        }
        None if !read => {
            let _ = writeln!(out, "  lock     {} (not known: Redis could not be read)", s.lock.key);
        }
        None => {}
    }
    if read {
        let named = |pick: fn(Option<bool>) -> bool| -> Vec<&str> {
            s.flags.iter().filter(|f| pick(f.on)).map(|f| f.user.as_str()).collect()
        };
        let (mut off, unreadable) = (named(|on| on == Some(false)), named(|on| on.is_none()));
        // A flag Redis lost counts as on, as the workers take it.
        off.retain(|user| !s.flags_lost.iter().any(|lost| lost == user));
        let counted: Vec<String> =
            s.enabled_users.iter().cloned().chain(s.flags_lost.iter().map(|u| format!("{u} (lost)"))).collect();
        let on = if counted.is_empty() { "nobody".to_owned() } else { counted.join(", ") };
        let mut others = Vec::new();
        if !off.is_empty() {
            others.push(format!("off: {}", off.join(", ")));
        }
        if !unreadable.is_empty() {
            others.push(format!("unreadable: {}", unreadable.join(", ")));
        }
        let others = if others.is_empty() { String::new() } else { format!(" ({})", others.join("; ")) };
        let _ = writeln!(out, "  enabled  {on}{others}");
        for n in &s.nodes {
            let age = n
                .heartbeat_age_ms
                .map(|a| format!("heartbeat {} ago", secs(a)))
                .unwrap_or_else(|| "no heartbeat".to_owned());
            let said = n.state.as_deref().unwrap_or("?");
            let state = if n.fresh { said.to_owned() } else { format!("silent, last said {said}") };
            let _ = writeln!(out, "  node     {} {state} ({age})", n.node);
        }
    } else {
        let _ = writeln!(out, "  enabled  not known (Redis could not be read)");
    }
    for a in &s.acks {
        let _ = writeln!(out, "  on it    {}", on_it(a));
    }
    if let Some(since) = s.since_ms {
        let _ = writeln!(out, "  since    {}", utc(since));
    }
    if !s.flags_lost.is_empty() {
        let _ = writeln!(out, "  warning  {}", lockwatch::status::flags_lost_sentence(&s.flags_lost));
    }
    for w in s.no_standby.iter().chain(&s.eviction) {
        let _ = writeln!(out, "  warning  {w}");
    }
    for p in &s.problems {
        let _ = writeln!(out, "  problem  {p}");
    }
    out
}

/// "alice is on it since 10:02 UTC: looking at wh-a (until 11:02 UTC)".
pub fn on_it(a: &lockwatch::snapshot::Ack) -> String {
    let note = if a.note.is_empty() { String::new() } else { format!(": {}", a.note) };
    format!("{} is on it since {}{note} (until {})", a.user, clock(a.at_ms), clock(a.until_ms))
}

/// The time of day of a Redis time, `10:02 UTC`.
fn clock(ms: u64) -> String {
    let mins = ms / 60_000;
    format!("{:02}:{:02} UTC", mins / 60 % 24, mins % 60)
}

/// One line for an event.
pub fn event(e: &Event) -> String {
    let what = match (e.event, &e.from, &e.to) {
        (EventKind::Failover, Some(from), Some(to)) if e.no_standby => {
            format!("{from} → {to}, no other server left to take it over")
        }
        (EventKind::Failover, Some(from), Some(to)) => format!("{from} → {to}"),
        _ => e.reason.clone(),
    };
    format!("{} {} {}: {what}", utc(e.at_ms), e.event.as_str(), e.job)
}

fn kind_name(kind: lockwatch::snapshot::LockKind) -> &'static str {
    use lockwatch::snapshot::LockKind::*;
    match kind {
        None => "no lock",
        Redisson => "Redisson lock",
        String => "string lock",
        Alternation => "task alternation",
        Hash => "hash",
        Unreadable => "unreadable",
    }
}

/// Milliseconds since the epoch as `2026-11-22 10:00:05 UTC`.
pub fn utc(ms: u64) -> String {
    format!("{} UTC", lockwatch::duration::date_time(ms, 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockwatch::snapshot::{Flag, Lock, LockKind, Snapshot};
    use lockwatch::status::{Config, Engine, State};

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn an_ack_says_who_is_on_it_since_when_and_why() {
        let a = lockwatch::snapshot::Ack {
            user: "alice".into(),
            at_ms: 1_700_000_000_000 - 13 * 60_000 - 20_000,
            until_ms: 1_700_003_600_000,
            note: "looking at wh-a".into(),
        };
        assert_eq!(on_it(&a), "alice is on it since 22:00 UTC: looking at wh-a (until 23:13 UTC)");
        let mut snap = enabled_job();
        snap.acks.push(a);
        let text = status(&judged(vec![Some(snap)]));
        assert!(text.contains("  on it    alice is on it since 22:00 UTC: looking at wh-a"), "{text}");
    }

    #[test]
    fn failover_line_names_both_servers() {
        use lockwatch::status::HolderRef;
        let e = Event {
            event: EventKind::Failover,
            job: "outbound".into(),
            at_ms: 0,
            from: Some(HolderRef { field: "a:1".into(), node: Some("srv-a".into()) }),
            to: Some(HolderRef { field: "b:1".into(), node: Some("srv-b".into()) }),
            reason: String::new(),
            stall: None,
            ms: None,
            no_standby: false,
        };
        assert_eq!(event(&e), "1970-01-01 00:00:00 UTC failover outbound: srv-a → srv-b");
        let alone = Event { no_standby: true, ..e };
        assert_eq!(
            event(&alone),
            "1970-01-01 00:00:00 UTC failover outbound: srv-a → srv-b, no other server left to take it over"
        );
    }

    /// What an engine shows after these reads (`None`: a failed read).
    fn judged(looks: Vec<Option<Snapshot>>) -> Status {
        let mut engine = Engine::new("outbound", "{outbound}:lock", Config::default());
        let mut last = None;
        for look in looks {
            last = Some(match look {
                Some(snap) => engine.handle_read(&snap).status,
                None => engine.handle_failure("refused", 0).status,
            });
        }
        last.unwrap()
    }

    fn enabled_job() -> Snapshot {
        let mut snap = Snapshot { time_ms: 1_700_000_000_000, ..Default::default() };
        snap.flags.push(Flag { user: "alice".into(), on: Some(true), at_ms: Some(1), host: None });
        snap
    }

    #[test]
    fn unknown_shows_the_lease_and_the_flags_as_not_known_never_free() {
        let blank = judged(vec![Some(enabled_job()), None, None]);
        assert_eq!(blank.state, State::Unknown);
        let text = status(&blank);
        assert!(!text.contains("free"), "{text}");
        assert!(text.contains("lock     {outbound}:lock (not known: Redis could not be read)"), "{text}");
        assert!(text.contains("enabled  not known (Redis could not be read)"), "{text}");

        let mut snap = enabled_job();
        snap.lock = Lock { kind: LockKind::Unreadable, redis_type: "list".into(), ..Default::default() };
        snap.problems.push("the lock key {outbound}:lock is a list".into());
        let unreadable = judged(vec![Some(snap)]);
        let text = status(&unreadable);
        assert_eq!(unreadable.state, State::Unknown);
        assert!(!text.contains("free"), "{text}");
        assert!(text.contains("(unreadable, lease not known)"), "{text}");
        assert!(text.contains("enabled  alice"), "the flags were read: {text}");
    }

    #[test]
    fn an_unreadable_flag_is_not_shown_as_off() {
        let mut snap = enabled_job();
        snap.flags[0].on = Some(false);
        snap.flags.push(Flag { user: "bob".into(), on: None, at_ms: None, host: None });
        let text = status(&judged(vec![Some(snap)]));
        assert!(text.contains("enabled  nobody (off: alice; unreadable: bob)"), "{text}");
    }

    #[test]
    fn pending_says_until_when() {
        let mut snap = enabled_job();
        snap.flags[0].at_ms = Some(snap.time_ms - 2_000);
        let text = status(&judged(vec![Some(snap)]));
        assert!(
            text.starts_with(
                "outbound: PENDING — enabled by alice; waiting for a server to start it until 22:13:28 UTC"
            ),
            "{text}"
        );
    }
}
