//! A report of a stretch of the job's history: how much of the time anybody
//! had the job enabled it ran (its uptime), how often it changed hands,
//! restarted or died, how long nobody ran it, and who switched it off and
//! why. Pure: a [`History`] and a window in, figures out, for
//! `lockwatch report` and whatever else shows them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::build::{History, What};

/// The figures of one job over one window (Redis time, ms).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub from_ms: u64,
    pub to_ms: u64,
    /// How long at least one supervisor had the job on; `None` when the
    /// history holds no flag at all (nobody's wish is known).
    pub enabled_ms: Option<u64>,
    /// How long a server held the job.
    pub running_ms: u64,
    /// How long it was enabled while no server held it.
    pub not_running_ms: Option<u64>,
    /// The share of the enabled time a server held it (0 to 1); `None`
    /// when it was never enabled in the window.
    pub uptime: Option<f64>,
    /// Runs begun in the window (a failover or restart begins one).
    pub runs: u32,
    pub failovers: u32,
    pub restarts: u32,
    pub deaths: u32,
    /// How long nobody ran the job around the window's failovers,
    /// restarts and deaths, in all and the longest one (a death nobody
    /// took over from yet counts until the window's end).
    pub outage_total_ms: u64,
    pub outage_longest_ms: u64,
    /// Each time a supervisor switched the job off, oldest first.
    pub switched_off: Vec<SwitchedOff>,
}

/// One supervisor switching the job off.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchedOff {
    pub at_ms: u64,
    pub user: String,
    pub host: Option<String>,
    pub reason: Option<String>,
}

impl History {
    /// The report of the window from `from_ms` to `to_ms` (an empty one when
    /// `to_ms` comes first). A flag counts from its own time: before a
    /// supervisor's first flip the history holds, she counts as off.
    pub fn report(&self, from_ms: u64, to_ms: u64) -> Report {
        let to_ms = to_ms.max(from_ms);
        let within = |at: u64| (from_ms..to_ms).contains(&at);
        let runs: Vec<(u64, u64)> = self
            .items
            .iter()
            .filter_map(|i| match &i.what {
                What::Run { until_ms, .. } => Some((i.at_ms, until_ms.unwrap_or(self.now_ms))),
                _ => None,
            })
            .collect();
        let mut flips: BTreeMap<&str, Vec<(u64, bool)>> = BTreeMap::new();
        for item in &self.items {
            if let What::Flag { user, on, .. } = &item.what {
                flips.entry(user.as_str()).or_default().push((item.at_ms, *on));
            }
        }
        let enabled_at =
            |t: u64| flips.values().any(|each| each.iter().rev().find(|(at, _)| *at <= t).is_some_and(|(_, on)| *on));
        let running_at = |t: u64| runs.iter().any(|&(start, end)| start <= t && t < end);

        // Between two neighbouring points nothing changes: measure each stretch.
        let mut points: Vec<u64> = runs.iter().flat_map(|&(s, e)| [s, e]).collect();
        points.extend(flips.values().flatten().map(|(at, _)| *at));
        points.retain(|&t| within(t));
        points.extend([from_ms, to_ms]);
        points.sort_unstable();
        points.dedup();
        let (mut enabled_ms, mut running_ms, mut not_running_ms) = (0, 0, 0);
        for pair in points.windows(2) {
            let (start, length) = (pair[0], pair[1] - pair[0]);
            let (enabled, running) = (enabled_at(start), running_at(start));
            enabled_ms += if enabled { length } else { 0 };
            running_ms += if running { length } else { 0 };
            not_running_ms += if enabled && !running { length } else { 0 };
        }
        let known = !flips.is_empty();
        let uptime = (known && enabled_ms > 0).then(|| (enabled_ms - not_running_ms) as f64 / enabled_ms as f64);

        let mut report = Report {
            from_ms,
            to_ms,
            enabled_ms: known.then_some(enabled_ms),
            running_ms,
            not_running_ms: known.then_some(not_running_ms),
            uptime,
            runs: 0,
            failovers: 0,
            restarts: 0,
            deaths: 0,
            outage_total_ms: 0,
            outage_longest_ms: 0,
            switched_off: Vec::new(),
        };
        for (index, item) in self.items.iter().enumerate().filter(|(_, i)| within(i.at_ms)) {
            match &item.what {
                What::Run { .. } => report.runs += 1,
                What::Failover { .. } => report.failovers += 1,
                What::Restart { .. } => report.restarts += 1,
                What::Death { .. } => report.deaths += 1,
                What::Flag { user, on: false, host, reason } => report.switched_off.push(SwitchedOff {
                    at_ms: item.at_ms,
                    user: user.clone(),
                    host: host.clone(),
                    reason: reason.clone(),
                }),
                _ => {}
            }
            if let Some(down) = self.outage(index).and_then(|o| o.down_ms) {
                // Only what falls in the window: a death's outage follows it
                // (to the window's end at most), a takeover's comes before it
                // (from the window's start at most).
                let down = match item.what {
                    What::Death { .. } => down.min(to_ms.saturating_sub(item.at_ms)),
                    _ => down.min(item.at_ms.saturating_sub(from_ms)),
                };
                report.outage_total_ms += down;
                report.outage_longest_ms = report.outage_longest_ms.max(down);
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::build::{End, Item};
    use crate::status::HolderRef;

    const H: u64 = 3_600_000;
    const M: u64 = 60_000;

    fn run(at: u64, node: &str, until: Option<u64>) -> Item {
        let what = What::Run { node: Some(node.into()), field: None, fence: None, until_ms: until, end: None };
        Item { at_ms: at, what }
    }

    fn flag(at: u64, user: &str, on: bool, reason: Option<&str>) -> Item {
        let what = What::Flag { user: user.into(), on, host: Some("pc-7".into()), reason: reason.map(Into::into) };
        Item { at_ms: at, what }
    }

    fn holder(node: &str) -> HolderRef {
        HolderRef { field: format!("{node}:1"), node: Some(node.into()) }
    }

    /// Eight hours enabled by alice: srv-a, a failover to srv-b after 30 s,
    /// srv-b's death and 10 minutes with nobody on it, srv-a again, and
    /// alice switching it off; bob's flag, off all along, changes nothing.
    fn day(t0: u64) -> History {
        let items = vec![
            flag(t0 - H, "bob", false, None),
            flag(t0, "alice", true, None),
            run(t0, "srv-a", Some(t0 + 2 * H)),
            Item {
                at_ms: t0 + 2 * H + 30_000,
                what: What::Failover {
                    from: holder("srv-a"),
                    to: holder("srv-b"),
                    cause: End::Silent,
                    reason: String::new(),
                    down_ms: Some(30_000),
                },
            },
            run(t0 + 2 * H + 30_000, "srv-b", Some(t0 + 5 * H)),
            Item {
                at_ms: t0 + 5 * H,
                what: What::Death {
                    node: Some("srv-b".into()),
                    fence: None,
                    cause: End::Silent,
                    reason: String::new(),
                },
            },
            run(t0 + 5 * H + 10 * M, "srv-a", Some(t0 + 8 * H)),
            flag(t0 + 8 * H, "alice", false, Some("stock count")),
            Item { at_ms: t0 + 8 * H, what: What::Stopped { node: Some("srv-a".into()), fence: None } },
        ];
        History { now_ms: t0 + 12 * H, items }
    }

    #[test]
    fn a_day_with_a_failover_a_death_and_a_switch_off_adds_up() {
        let t0 = 100 * H;
        let r = day(t0).report(t0 - 2 * H, t0 + 12 * H);
        assert_eq!(r.enabled_ms, Some(8 * H));
        assert_eq!(r.running_ms, 8 * H - 30_000 - 10 * M);
        assert_eq!(r.not_running_ms, Some(30_000 + 10 * M));
        let uptime = r.uptime.unwrap();
        assert!((uptime - (8 * H - 30_000 - 10 * M) as f64 / (8 * H) as f64).abs() < 1e-9, "{uptime}");
        assert_eq!((r.runs, r.failovers, r.restarts, r.deaths), (3, 1, 0, 1));
        assert_eq!((r.outage_total_ms, r.outage_longest_ms), (30_000 + 10 * M, 10 * M));
        let off: Vec<_> = r.switched_off.iter().map(|s| (s.user.as_str(), s.reason.as_deref())).collect();
        assert_eq!(off, [("bob", None), ("alice", Some("stock count"))]);
    }

    #[test]
    fn a_window_counts_only_what_falls_in_it() {
        let t0 = 100 * H;
        // From the middle of srv-b's run to before alice's switch-off.
        let r = day(t0).report(t0 + 4 * H, t0 + 7 * H);
        assert_eq!(r.enabled_ms, Some(3 * H));
        assert_eq!(r.running_ms, 3 * H - 10 * M);
        assert_eq!((r.runs, r.failovers, r.deaths), (1, 0, 1), "srv-a's last run begins in it, the death too");
        assert_eq!(r.outage_total_ms, 10 * M);
        assert!(r.switched_off.is_empty());
        // A failover whose outage began before the window counts from its start.
        let r = day(t0).report(t0 + 2 * H + 10_000, t0 + 3 * H);
        assert_eq!((r.failovers, r.outage_total_ms), (1, 20_000));
        assert_eq!(r.not_running_ms, Some(20_000));
        // A death nobody took over from counts to the window's end.
        let mut h = day(t0);
        h.items.retain(|i| i.at_ms < t0 + 5 * H + 10 * M);
        let r = h.report(t0 + 4 * H, t0 + 6 * H);
        assert_eq!((r.deaths, r.outage_total_ms), (1, H));
        assert_eq!(r.not_running_ms, Some(H));
    }

    #[test]
    fn without_any_flag_the_enabled_time_and_uptime_are_not_known() {
        let h = History { now_ms: 10 * H, items: vec![run(H, "srv-a", None)] };
        let r = h.report(0, 10 * H);
        assert_eq!((r.enabled_ms, r.uptime, r.not_running_ms), (None, None, None));
        assert_eq!((r.running_ms, r.runs), (9 * H, 1));
        let off = History { now_ms: 10 * H, items: vec![flag(H, "alice", false, None)] };
        assert_eq!(off.report(0, 10 * H).uptime, None, "never enabled: no share to tell");
        assert_eq!(off.report(0, 10 * H).enabled_ms, Some(0));
    }
}
