//! Which worker publishes the job's beat on `{job}:beat`: one every
//! [`crate::heard::BEAT_EVERY`] for the whole job, since Redis sends each
//! one to every desktop. The holder
//! does; with no holder beating, the first by name of the workers that beat
//! lately. While they change over, two may publish for a moment, or none:
//! a watcher that hears nothing asks Redis itself.

use crate::snapshot::{Beat, Snapshot};

/// How recent a heartbeat must be for its worker to count as beating.
const LATELY_MS: u64 = 3_000;

/// Whether `node` publishes the beat, by the look just read.
pub(crate) fn publishes(snap: &Snapshot, node: &str, holding: bool) -> bool {
    if holding {
        return true;
    }
    let now = snap.time_ms;
    let lately = |b: &&Beat| b.node != node && b.beat_ms.is_some_and(|t| now.saturating_sub(t) <= LATELY_MS);
    let mut others = snap.beats.iter().filter(lately);
    let holder = snap.lock.holders.first().map(String::as_str);
    match holder {
        Some(field) if others.clone().any(|b| b.lock_field.as_deref() == Some(field)) => false,
        _ => others.all(|b| b.node.as_str() > node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Lock;

    fn beat(node: &str, beat_ms: u64, field: Option<&str>) -> Beat {
        Beat { node: node.into(), beat_ms: Some(beat_ms), lock_field: field.map(Into::into), ..Beat::default() }
    }

    fn snap(holder: Option<&str>, beats: Vec<Beat>) -> Snapshot {
        let lock = Lock { holders: holder.into_iter().map(Into::into).collect(), ..Lock::default() };
        Snapshot { time_ms: 10_000, lock, beats, ..Snapshot::default() }
    }

    #[test]
    fn the_holder_publishes_and_its_standbys_do_not() {
        let s = snap(Some("a:1"), vec![beat("srv-a", 9_500, Some("a:1")), beat("srv-b", 9_800, None)]);
        assert!(publishes(&s, "srv-a", true));
        assert!(!publishes(&s, "srv-b", false));
    }

    #[test]
    fn with_no_holder_beating_the_first_worker_by_name_publishes() {
        let idle = snap(None, vec![beat("srv-a", 9_500, None), beat("srv-b", 9_800, None)]);
        assert!(publishes(&idle, "srv-a", false));
        assert!(!publishes(&idle, "srv-b", false));
        // The holder silent for longer than lately, and srv-a too: srv-b takes over.
        let silent = snap(Some("a:1"), vec![beat("srv-a", 5_000, Some("a:1")), beat("srv-b", 9_800, None)]);
        assert!(publishes(&silent, "srv-b", false));
    }

    #[test]
    fn a_lock_held_by_a_service_that_writes_no_heartbeat_leaves_it_to_the_workers() {
        let s = snap(Some("java:1"), vec![beat("srv-a", 9_500, None), beat("srv-b", 9_800, None)]);
        assert!(publishes(&s, "srv-a", false));
        assert!(!publishes(&s, "srv-b", false));
    }
}
