//! A job that says when it runs: each line of its journal is `<fence>
//! <node> <unix ns>`, written every 50 ms; and the check that no two runs
//! overlapped. Shared by the failover and slot-migration tests.
#![allow(dead_code)]

use std::path::Path;
use std::process::Child;
use std::time::{SystemTime, UNIX_EPOCH};

/// The job's shell loop; `$JOURNAL` names the file.
pub const JOURNAL_LOOP: &str =
    r#"while :; do echo "$LOCKWATCH_FENCE $LOCKWATCH_NODE $(date +%s%N)" >> "$JOURNAL"; sleep 0.05; done"#;

/// A worker process, killed when the test ends however it ends.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// Journal lines as (fence, node, ns), oldest first.
pub fn journal(path: &Path) -> Vec<(i64, String, u128)> {
    let mut lines: Vec<(i64, String, u128)> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let mut p = l.split_whitespace();
            Some((p.next()?.parse().ok()?, p.next()?.to_owned(), p.next()?.parse().ok()?))
        })
        .collect();
    lines.sort_by_key(|l| l.2);
    lines
}

/// No two runs overlap: in time order, the fence never goes back, and a
/// change of server always comes with a new fence (a new acquisition).
pub fn assert_no_overlap(lines: &[(i64, String, u128)]) {
    for pair in lines.windows(2) {
        let ((f1, n1, _), (f2, n2, _)) = (&pair[0], &pair[1]);
        assert!(f2 >= f1, "fence {f2} from {n2} after fence {f1} from {n1}: two runs overlapped");
        assert!(n1 == n2 || f2 > f1, "{n1} and {n2} both ran under fence {f1}: two runs overlapped");
    }
}
