//! A job that says when it runs: each line of its journal is `<fence>
//! <node> <unix ns>`, written every 50 ms; and the one check that no two
//! runs overlapped. Shared by every test of workers running the job.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{RedisServer, WorkerProcess, eventually, flag, seed_fence, worker_args, worker_command};

/// The job's shell loop; `$JOURNAL` names the file.
pub const JOURNAL_LOOP: &str =
    r#"while :; do echo "$LOCKWATCH_FENCE $LOCKWATCH_NODE $(date +%s%N)" >> "$JOURNAL"; sleep 0.05; done"#;

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

/// The node whose job wrote the journal's last line less than 300 ms ago
/// (it runs now), unless that is `not`.
pub fn running_now(path: &Path, not: Option<&str>) -> Option<String> {
    let lines = journal(path);
    let last = lines.last()?;
    (not != Some(last.1.as_str()) && now_ns() - last.2 < 300_000_000).then(|| last.1.clone())
}

/// No two runs overlap: in time order (the lines are put in it, whatever
/// order they come in), the fence never goes back, and a change of server
/// always comes with a new fence (a new acquisition).
pub fn assert_no_overlap(lines: &[(i64, String, u128)]) {
    let mut lines = lines.to_vec();
    lines.sort_by_key(|l| l.2);
    for pair in lines.windows(2) {
        let ((f1, n1, _), (f2, n2, _)) = (&pair[0], &pair[1]);
        assert!(f2 >= f1, "fence {f2} from {n2} after fence {f1} from {n1}: two runs overlapped");
        assert!(n1 == n2 || f2 > f1, "{n1} and {n2} both ran under fence {f1}: two runs overlapped");
    }
}

/// `lockwatch --redis <url> worker` for `node` with `lease`, journaling
/// with [`JOURNAL_LOOP`] into `journal`; its output discarded.
pub fn journal_worker(url: &str, node: &str, lease: &str, journal: &Path) -> WorkerProcess {
    WorkerProcess::spawn(worker_command(url, node, lease, &[], JOURNAL_LOOP).env("JOURNAL", journal))
}

/// The same through `cmd`, the `lockwatch` binary with its connection
/// options (a Sentinel set's, a cluster's seed).
pub fn journal_worker_via(cmd: &mut Command, node: &str, lease: &str, journal: &Path) -> WorkerProcess {
    WorkerProcess::spawn(worker_args(cmd, node, lease, &[], JOURNAL_LOOP).env("JOURNAL", journal))
}

/// How long runs under different fences overlapped in all, in ms: each
/// fence's run spans its first to its last line.
pub fn overlap_ms(lines: &[(i64, String, u128)]) -> u128 {
    let mut runs: Vec<(u128, u128)> = Vec::new();
    let mut fences: Vec<i64> = lines.iter().map(|l| l.0).collect();
    fences.sort();
    fences.dedup();
    for fence in fences {
        let times = lines.iter().filter(|l| l.0 == fence).map(|l| l.2);
        let (first, last) = (times.clone().min().unwrap_or(0), times.max().unwrap_or(0));
        runs.push((first, last));
    }
    let mut total = 0;
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            total += a.1.min(b.1).saturating_sub(a.0.max(b.0));
        }
    }
    total / 1_000_000
}

/// The node whose heartbeat names the lock's holder field.
fn holder(c: &mut redis::Connection) -> Option<String> {
    let fields: Vec<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query(c).ok()?;
    let field = fields.first()?;
    ["srv-a", "srv-b"].into_iter().map(str::to_owned).find(|n| {
        let f: Option<String> =
            redis::cmd("HGET").arg(format!("{{outbound}}:node:{n}")).arg("lock_field").query(c).unwrap_or(None);
        f.as_deref() == Some(field.as_str())
    })
}

/// srv-a and srv-b journaling into one file, one of them running the job.
pub struct Two {
    pub _dir: tempfile::TempDir,
    pub j: PathBuf,
    pub a: WorkerProcess,
    pub b: WorkerProcess,
    /// The node that ran the job when both had started.
    pub holder: String,
}

impl Two {
    /// Starts srv-a and srv-b with `lease` on a job enabled by alice (the
    /// fence counter seeded, so the first start does not wait a lease), and
    /// waits until one of them runs the job.
    pub async fn start(server: &RedisServer, lease: &str) -> Two {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("journal");
        let mut c = server.conn();
        seed_fence(&mut c);
        flag(&mut c, "outbound", "alice", true);
        let a = journal_worker(&server.url(), "srv-a", lease, &j);
        let b = journal_worker(&server.url(), "srv-b", lease, &j);
        let holder = eventually("a holder running the job", Duration::from_secs(15), || {
            let h = holder(&mut c)?;
            journal(&j).iter().any(|l| l.1 == h).then_some(h)
        })
        .await;
        Two { _dir: dir, j, a, b, holder }
    }

    /// The holder's worker process.
    pub fn holder_pid(&self) -> i32 {
        if self.holder == "srv-a" { self.a.pid() } else { self.b.pid() }
    }
}
