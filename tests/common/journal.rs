//! A job that says when it runs: each line of its journal is `<fence>
//! <node> <unix ns>`, written every 50 ms; and the one check that no two
//! runs overlapped ([`overlaps`]), which the soak's journals go through as
//! well. Shared by every test of workers running the job.
#![allow(dead_code)]

use super::beat;
use std::collections::BTreeMap;
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

/// Waits until the run of `fence` writes 2.5 s after `since_ns` (past a
/// 2 s start grace, so it was not stopped): a tick may come late on a
/// loaded machine, a stopped run never writes again under its fence.
pub async fn still_runs(path: &Path, fence: i64, since_ns: u128, what: &str) {
    eventually(&format!("{what}: the run of fence {fence} going on"), Duration::from_secs(5), || {
        journal(path).iter().any(|l| l.0 == fence && l.2 > since_ns + 2_500_000_000).then_some(())
    })
    .await;
}

/// The node whose job wrote the journal's last line less than 300 ms ago
/// (it runs now), unless that is `not`.
pub fn running_now(path: &Path, not: Option<&str>) -> Option<String> {
    let lines = journal(path);
    let last = lines.last()?;
    (not != Some(last.1.as_str()) && now_ns() - last.2 < 300_000_000).then(|| last.1.clone())
}

/// One line of a journal as the check reads it: which job process wrote
/// it, and when. Times are in the journal's own unit (ns in
/// [`JOURNAL_LOOP`]'s, µs in the soak's), the same clock for every job.
pub struct Tick {
    pub node: String,
    pub fence: i64,
    /// The job's pid, where the journal has it (0 where it does not).
    pub pid: u32,
    /// When that process started (0 where the journal does not say): tells
    /// apart two processes that got the same pid.
    pub started: u64,
    pub at: u64,
}

/// One run of the job: the ticks of one job process (one node, one fence).
#[derive(Debug, Clone)]
pub struct Run {
    pub node: String,
    pub fence: i64,
    pub pid: u32,
    pub first: u64,
    pub last: u64,
    pub ticks: usize,
    /// The longest pause between two of its ticks: the journal's real resolution.
    pub longest_tick: u64,
}

/// The runs the ticks make, ordered by their first tick (then their last).
pub fn runs(ticks: impl IntoIterator<Item = Tick>) -> Vec<Run> {
    let mut by_process: BTreeMap<(String, i64, u32, u64), Vec<u64>> = BTreeMap::new();
    for tick in ticks {
        by_process.entry((tick.node, tick.fence, tick.pid, tick.started)).or_default().push(tick.at);
    }
    let mut runs: Vec<Run> = by_process
        .into_iter()
        .map(|((node, fence, pid, _), mut times)| {
            times.sort_unstable();
            let longest_tick = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            Run { node, fence, pid, first: times[0], last: times[times.len() - 1], ticks: times.len(), longest_tick }
        })
        .collect();
    runs.sort_by_key(|r| (r.first, r.last));
    runs
}

/// The one no-overlap check: every two runs whose ticks interleave, with
/// for how long they ran together. `runs` are ordered as [`runs`] orders
/// them. Which overlaps fail a test is the caller's to say (the soak tells
/// two servers from two processes of one, and overlaps across a data loss).
pub fn overlaps(runs: &[Run]) -> Vec<(Run, Run, u64)> {
    let mut found = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            // Ordered by first tick: b starts at or after a.
            if b.first <= a.last {
                found.push((a.clone(), b.clone(), a.last.min(b.last) - b.first));
            }
        }
    }
    found
}

/// The runs of a [`JOURNAL_LOOP`] journal, one a node and fence (its lines
/// name no pid).
fn journal_runs(lines: &[(i64, String, u128)]) -> Vec<Run> {
    runs(lines.iter().map(|(fence, node, ns)| Tick {
        node: node.clone(),
        fence: *fence,
        pid: 0,
        started: 0,
        at: u64::try_from(*ns).expect("ns since 1970 fit in a u64"),
    }))
}

/// No two runs overlap ([`overlaps`]), and each run has a higher fence than
/// the run before it: a server never runs under a fence it or another had
/// (a change of server comes with a new acquisition).
pub fn assert_no_overlap(lines: &[(i64, String, u128)]) {
    let runs = journal_runs(lines);
    if let Some((a, b, ns)) = overlaps(&runs).first() {
        panic!(
            "{} (fence {}) and {} (fence {}) ran together for {ns} ns: two runs overlapped",
            a.node, a.fence, b.node, b.fence
        );
    }
    for pair in runs.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            b.fence > a.fence,
            "fence {} from {} after fence {} from {}: two runs overlapped",
            b.fence,
            b.node,
            a.fence,
            a.node
        );
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

/// srv-a and srv-b journaling to `journal`, each named beside its process.
pub fn journal_pair(url: &str, lease: &str, journal: &Path) -> Vec<(&'static str, WorkerProcess)> {
    ["srv-a", "srv-b"].into_iter().map(|node| (node, journal_worker(url, node, lease, journal))).collect()
}

/// How long runs overlapped in all ([`overlaps`]), in ms.
pub fn overlap_ms(lines: &[(i64, String, u128)]) -> u64 {
    overlaps(&journal_runs(lines)).iter().map(|(_, _, ns)| ns).sum::<u64>() / 1_000_000
}

/// The node whose heartbeat names the lock's holder field.
fn holder(c: &mut redis::Connection) -> Option<String> {
    holder_of(c, "outbound")
}

/// Of srv-a and srv-b, the one whose heartbeat names `job`'s lock holder field.
pub fn holder_of(c: &mut redis::Connection, job: &str) -> Option<String> {
    let fields: Vec<String> = redis::cmd("HKEYS").arg(format!("{{{job}}}:lock")).query(c).ok()?;
    let field = fields.first()?;
    ["srv-a", "srv-b"].into_iter().map(str::to_owned).find(|n| {
        let f: Option<String> =
            redis::cmd("HGET").arg(format!("{{{job}}}:node:{n}")).arg(beat::LOCK_FIELD).query(c).unwrap_or(None);
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
