//! How the CLI prints statuses and events for people: short, aligned, in
//! UTC. Pure functions, so the output is unit-tested.

use std::fmt::Write as _;

use crate::status::human_duration as secs;
use crate::status::{Event, EventKind, State, Status};

/// A multi-line summary of a status.
pub fn status(s: &Status) -> String {
    let mut out = format!("{}: {} — {}\n", s.job, s.state.as_str().to_uppercase(), s.reason);
    if let Some(h) = &s.holder {
        let server = h.node.clone().unwrap_or_else(|| "(no heartbeat names it)".to_owned());
        let beat = h.heartbeat_age_ms.map(|a| format!(", heartbeat {} ago", secs(a))).unwrap_or_default();
        let _ = writeln!(out, "  server   {server}{beat}");
        let _ = writeln!(out, "  holder   {}", h.field);
    }
    if let Some(kind) = s.lock.kind {
        let ttl = match (s.lock.ttl_ms, s.lock.holders.is_empty()) {
            (_, true) => "free".to_owned(),
            (Some(t), false) => format!("expires in {}", secs(t)),
            (None, false) => "no expiry".to_owned(),
        };
        let fence = s.lock.fence.map(|f| format!(", fence {f}")).unwrap_or_default();
        let next = s.lock.next_run_ms.map(|n| format!(", next run at {}", utc(n.max(0) as u64))).unwrap_or_default();
        let _ = writeln!(out, "  lock     {} ({}, {ttl}{fence}{next})", s.lock.key, kind_name(kind));
    }
    if s.state != State::Unknown {
        let off: Vec<&str> = s.flags.iter().filter(|f| f.on != Some(true)).map(|f| f.user.as_str()).collect();
        let on = if s.enabled_users.is_empty() { "nobody".to_owned() } else { s.enabled_users.join(", ") };
        let off = if off.is_empty() { String::new() } else { format!(" (off: {})", off.join(", ")) };
        let _ = writeln!(out, "  enabled  {on}{off}");
        for n in &s.nodes {
            let age = n
                .heartbeat_age_ms
                .map(|a| format!("heartbeat {} ago", secs(a)))
                .unwrap_or_else(|| "no heartbeat".to_owned());
            let said = n.state.as_deref().unwrap_or("?");
            let state = if n.fresh { said.to_owned() } else { format!("silent, last said {said}") };
            let _ = writeln!(out, "  node     {} {state} ({age})", n.node);
        }
    }
    if let Some(since) = s.since_ms {
        let _ = writeln!(out, "  since    {}", utc(since));
    }
    for p in &s.problems {
        let _ = writeln!(out, "  problem  {p}");
    }
    out
}

/// One line for an event.
pub fn event(e: &Event) -> String {
    let what = match (e.event, &e.from, &e.to) {
        (EventKind::Failover, Some(from), Some(to)) => format!("{from} → {to}"),
        _ => e.reason.clone(),
    };
    format!("{} {} {}: {what}", utc(e.at_ms), e.event.as_str(), e.job)
}

fn kind_name(kind: crate::snapshot::LockKind) -> &'static str {
    use crate::snapshot::LockKind::*;
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
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem / 60 % 60, rem % 60)
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(utc(1_700_000_000_000), "2023-11-14 22:13:20 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
    }

    #[test]
    fn failover_line_names_both_servers() {
        use crate::status::HolderRef;
        let e = Event {
            event: EventKind::Failover,
            job: "outbound".into(),
            at_ms: 0,
            from: Some(HolderRef { field: "a:1".into(), node: Some("srv-a".into()) }),
            to: Some(HolderRef { field: "b:1".into(), node: Some("srv-b".into()) }),
            reason: String::new(),
        };
        assert_eq!(event(&e), "1970-01-01 00:00:00 UTC failover outbound: srv-a → srv-b");
    }
}
