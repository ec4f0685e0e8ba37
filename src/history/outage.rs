//! How long nobody ran the job around each incident of a [`History`]: the
//! dashboard's "down for" column, measured here once rather than by each
//! face of the product. Pure: the history in, a duration out.

use serde::Serialize;

use super::build::{History, What};

/// How long nobody ran the job around one failover, restart or death.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outage {
    /// How long, ms; `None` when the history does not tell.
    pub down_ms: Option<u64>,
    /// A death nobody took over from yet: `down_ms` runs until the
    /// history's `now_ms`.
    pub still_down: bool,
}

impl History {
    /// The outage around the item at `index`, when it is an incident
    /// (`None` for a run, a stop, a flip, an ack, or no item).
    ///
    /// A failover or restart is down for what the history measured
    /// (`down_ms`), else from the old holder's last run end (its last sign
    /// of life) before it to the takeover. A death is down until the next
    /// run began or, while none did, until `now_ms`.
    pub fn outage(&self, index: usize) -> Option<Outage> {
        let item = self.items.get(index)?;
        let at = item.at_ms;
        match &item.what {
            What::Death { .. } => {
                let next = self.runs().map(|(start, _, _)| start).filter(|&start| start >= at).min();
                let down_ms = next.unwrap_or(self.now_ms).saturating_sub(at);
                Some(Outage { down_ms: Some(down_ms), still_down: next.is_none() })
            }
            What::Failover { from, down_ms, .. } | What::Restart { from, down_ms, .. } => {
                let last_sign = || {
                    self.runs()
                        .filter(|(_, node, until)| *node == from.node.as_deref() && until.is_some_and(|u| u <= at))
                        .filter_map(|(_, _, until)| until)
                        .max()
                };
                let down_ms = down_ms.or_else(|| last_sign().map(|end| at - end));
                Some(Outage { down_ms, still_down: false })
            }
            _ => None,
        }
    }

    /// The runs: (start, server, end).
    fn runs(&self) -> impl Iterator<Item = (u64, Option<&str>, Option<u64>)> {
        self.items.iter().filter_map(|i| match &i.what {
            What::Run { node, until_ms, .. } => Some((i.at_ms, node.as_deref(), *until_ms)),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::build::{End, Item};
    use crate::status::HolderRef;

    fn run(at_ms: u64, node: &str, until_ms: Option<u64>) -> Item {
        let what = What::Run {
            node: Some(node.into()),
            field: Some(format!("{node}:1")),
            fence: Some(1),
            until_ms,
            end: until_ms.map(|_| End::Silent),
        };
        Item { at_ms, what }
    }

    fn holder(node: &str) -> HolderRef {
        HolderRef { field: format!("{node}:1"), node: Some(node.into()) }
    }

    fn failover(at_ms: u64, down_ms: Option<u64>) -> Item {
        let what =
            What::Failover { from: holder("a"), to: holder("b"), cause: End::Silent, reason: "x".into(), down_ms };
        Item { at_ms, what }
    }

    fn death(at_ms: u64) -> Item {
        Item {
            at_ms,
            what: What::Death { node: Some("a".into()), fence: None, cause: End::Silent, reason: "x".into() },
        }
    }

    fn history(now_ms: u64, items: Vec<Item>) -> History {
        History { now_ms, items }
    }

    #[test]
    fn a_failover_or_restart_is_down_for_what_the_history_measured() {
        let h = history(10_000, vec![run(1_000, "a", Some(5_000)), failover(5_021, Some(21))]);
        assert_eq!(h.outage(1), Some(Outage { down_ms: Some(21), still_down: false }));
        let restart = What::Restart {
            node: Some("b".into()),
            from: holder("b"),
            to: holder("b"),
            cause: End::Lost(None),
            reason: "x".into(),
            down_ms: Some(500),
        };
        let h = history(10_000, vec![Item { at_ms: 7_000, what: restart }]);
        assert_eq!(h.outage(0), Some(Outage { down_ms: Some(500), still_down: false }));
    }

    #[test]
    fn a_death_is_down_until_the_next_run_or_until_now_while_nobody_runs_it() {
        let still = history(61_000, vec![run(0, "a", Some(1_000)), death(1_000)]);
        assert_eq!(still.outage(1), Some(Outage { down_ms: Some(60_000), still_down: true }));
        let over = history(61_000, vec![run(0, "a", Some(1_000)), death(1_000), run(31_000, "b", None)]);
        assert_eq!(over.outage(1), Some(Outage { down_ms: Some(30_000), still_down: false }));
        let shown = history(10_000, vec![run(1_000, "a", Some(5_000)), failover(5_021, Some(21)), death(8_000)]);
        assert_eq!(shown.outage(2), Some(Outage { down_ms: Some(2_000), still_down: true }));
    }

    #[test]
    fn a_silent_failover_is_down_from_the_old_holder_s_last_sign_of_life_to_the_takeover() {
        let h = history(10_000, vec![run(0, "a", Some(4_000)), failover(9_000, None), run(9_000, "b", None)]);
        assert_eq!(h.outage(1), Some(Outage { down_ms: Some(5_000), still_down: false }));
        let unknown = history(10_000, vec![failover(9_000, None)]);
        assert_eq!(unknown.outage(0), Some(Outage { down_ms: None, still_down: false }), "no run to measure from");
        let later = history(10_000, vec![failover(9_000, None), run(9_500, "a", Some(9_800))]);
        assert_eq!(later.outage(0).and_then(|o| o.down_ms), None, "a run that ended after it is no sign before it");
    }

    #[test]
    fn only_incidents_have_an_outage() {
        let flag = What::Flag { user: "alice".into(), on: false, host: None, reason: None };
        let h = history(10_000, vec![run(0, "a", None), Item { at_ms: 5, what: flag }]);
        assert_eq!((h.outage(0), h.outage(1), h.outage(2)), (None, None, None));
    }

    #[test]
    fn it_serializes_as_the_page_reads_it() {
        let json = serde_json::to_value(Outage { down_ms: Some(5), still_down: true }).unwrap();
        assert_eq!(json, serde_json::json!({ "down_ms": 5, "still_down": true }));
    }
}
