//! Letting go of a dead worker's lock. When a worker dies without a word
//! (`kill -9`, a crash, the OOM killer), its job's reaper kills the job's
//! whole process tree and waits until the last of it is reaped; then, and
//! only then, it releases the lock under the holding's own field, marks the
//! holding stopped, says idle in the worker's heartbeat and records on the
//! job's stream when the job was last alive. Another server,
//! or this one's restarted worker, runs the job within a second instead of
//! waiting out the lease.
//!
//! The worker hands its reaper what that takes ([`Orphan`]: where Redis is,
//! credentials included, and which holding) through a pipe only the reaper
//! reads, never its environment or command line; the reaper is not dumpable,
//! so the job, running as the same user, cannot read it from its memory.

use serde::{Deserialize, Serialize};

use crate::connect::Conn;
#[cfg(unix)]
use crate::error::{Action, describe};
use crate::history::{self, Record};
use crate::input::ConnectionSpec;
use crate::keys::Keys;
use crate::schema::BeatState;
use crate::snapshot::{Beat, Snapshot};
use crate::work::{lease::Lease, lock::Lock};
#[cfg(unix)]
use std::time::Duration;

/// How long the reaper tries to reach Redis and let go; past that the
/// lease runs out as it would have.
#[cfg(unix)]
const PATIENCE: Duration = Duration::from_secs(5);

/// The most an [`Orphan`] may take in the pipe: what a reaper reads at most.
#[cfg(unix)]
pub(crate) const MAX_LEN: usize = 64 * 1024;

/// What a job's reaper needs to let go of its worker's lock.
#[derive(Clone, Serialize, Deserialize)]
pub struct Orphan {
    /// Where Redis is, as the worker was told (the password included).
    pub connection: ConnectionSpec,
    pub job: String,
    pub lock_key: String,
    pub node: String,
    /// The holding's own field in the lock hash.
    pub field: String,
    pub fence: i64,
    pub lease_ms: u64,
}

impl std::fmt::Debug for Orphan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Orphan").field("job", &self.job).field("node", &self.node).field("fence", &self.fence).finish()
    }
}

/// The reaper's side, and the pipe's: Unix only, where jobs run below a reaper.
#[cfg(unix)]
impl Orphan {
    /// The bytes the worker writes into the reaper's pipe.
    pub(crate) fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// What the reaper read, or `None` when it is not an orphan's description.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Orphan> {
        serde_json::from_slice(bytes).ok()
    }

    /// Lets go of the lock, in the reaper, which runs no async runtime of
    /// its own: one short-lived runtime, bounded by [`PATIENCE`]. Says what
    /// it did in one line on `log` (the worker's own stderr, and so its log).
    pub(crate) fn let_go(&self, log: &mut impl std::io::Write) {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(runtime) => runtime,
            Err(err) => {
                let _ = writeln!(
                    log,
                    "lockwatch-reaper: the worker died; cannot let go of its lock ({err}): it expires with the lease"
                );
                return;
            }
        };
        let said = match runtime.block_on(async { tokio::time::timeout(PATIENCE, self.release()).await }) {
            Ok(Ok(true)) => format!(
                "the worker of node {} died and its job's processes are gone; released the lock (fence {}) for the next holder",
                self.node, self.fence
            ),
            Ok(Ok(false)) => format!(
                "the worker of node {} died and its job's processes are gone; the lock (fence {}) was no longer its own",
                self.node, self.fence
            ),
            Ok(Err(err)) => format!(
                "the worker of node {} died; cannot let go of its lock: {err}; it expires with the lease",
                self.node
            ),
            Err(_) => format!(
                "the worker of node {} died; Redis did not answer within {} s, so its lock expires with the lease",
                self.node,
                PATIENCE.as_secs()
            ),
        };
        let _ = writeln!(log, "lockwatch-reaper: {said}");
    }

    async fn release(&self) -> Result<bool, crate::Error> {
        let target = self.connection.target()?;
        let keys = Keys::new(&self.job).with_lock_key(&self.lock_key);
        let lease = Lease::new(Duration::from_millis(self.lease_ms));
        let mut conn = target.manager().await?;
        // First the record of when the job was last alive (now: its tree was
        // just reaped), before the next holding's: the history's outage is
        // then the real one, not measured from the last heartbeat.
        let (secs, micros): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut conn)
            .await
            .map_err(|e| describe(e, Action::ReadingTime, target.endpoint()))?;
        let died = Record::Died { fence: Some(self.fence), last_beat_ms: Some(secs * 1000 + micros / 1000) };
        let_go_of(&mut conn, &keys, &self.node, &self.field, lease, &died).await
    }
}

/// What `worker-gone` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Gone {
    /// Let go of the lock the dead worker of `node` held under `fence`.
    Released { node: String, fence: i64 },
    /// No heartbeat of the unit's worker says it holds the lock.
    Nothing,
    /// Let nothing go, for the reason said (one sentence, lower case).
    Kept(String),
}

/// After a worker's systemd unit stopped, every process of it gone (systemd
/// runs `ExecStopPost=` only then, and a job cannot leave its unit's control
/// group): lets go of the lock the worker's heartbeat names, when the
/// worker died holding it, so the next holder need not wait out the lease.
/// Acts only as that unit's `ExecStopPost=` (systemd's word, and its
/// control group holding nothing but this process), and only for a
/// heartbeat written from that very unit run ([`crate::work::unit`]): run by
/// hand, in a container, or on a cloned host under the same name, it lets
/// nothing go. `nodes` are the names the worker may have run under.
///
/// # Errors
/// [`crate::Error`] when Redis cannot be read or refuses.
pub async fn after_unit_stopped(
    conn: &mut Conn,
    keys: &Keys,
    nodes: &[String],
    lease: Lease,
) -> Result<Gone, crate::Error> {
    if let Some(why) = crate::work::unit::stop_post_refusal() {
        return Ok(Gone::Kept(why));
    }
    let host = conn.endpoint().clone();
    let snap = crate::probe::probe(conn, keys, &host).await?;
    let b = match holding(&snap, nodes, crate::work::unit::invocation(), runs_here) {
        Holding::None => return Ok(Gone::Nothing),
        Holding::Elsewhere(b) => {
            return Ok(Gone::Kept(format!(
                "the heartbeat of node {} that holds the lock was written by another run of it (another host, container or unit start), not by this unit's: that worker may live",
                b.node
            )));
        }
        Holding::Live(b) => {
            return Ok(Gone::Kept(format!("the worker of node {} still runs: its lock stays its own", b.node)));
        }
        Holding::Gone(b) => b,
    };
    let (node, field, fence) = (b.node.clone(), b.lock_field.clone().unwrap_or_default(), b.fence.unwrap_or(0));
    let died = Record::Died { fence: b.fence, last_beat_ms: b.beat_ms };
    Ok(if let_go_of(conn, keys, &node, &field, lease, &died).await? {
        Gone::Released { node, fence }
    } else {
        Gone::Nothing
    })
}

/// What a snapshot says of a holding by one of a unit's workers.
#[derive(Debug, PartialEq, Eq)]
enum Holding<'a> {
    /// No heartbeat of theirs says it holds the lock.
    None,
    /// This one does, written by another run than this unit's (another
    /// host, container or start of the unit, or a worker not under systemd).
    Elsewhere(&'a Beat),
    /// This one does, from this unit's run, and its worker lives: its
    /// process runs (`runs` says so of its pid), or Redis counts its
    /// presence subscription.
    Live(&'a Beat),
    /// This one does, from this unit's run, whose processes are all gone.
    Gone(&'a Beat),
}

/// The heartbeat, among `nodes`, that says its worker holds the lock under
/// a field, and whether it was written from the unit run `here` and that
/// worker lives; `runs` tells whether a process of this PID namespace runs.
fn holding<'a>(snap: &'a Snapshot, nodes: &[String], here: &str, runs: impl Fn(u64) -> bool) -> Holding<'a> {
    let held = snap.beats.iter().find(|b| {
        nodes.contains(&b.node)
            && b.state.as_ref().is_some_and(BeatState::holds_lock)
            && b.lock_field.as_deref().is_some_and(|f| !f.is_empty())
    });
    match held {
        None => Holding::None,
        Some(b) if !b.invocation.as_deref().is_some_and(|i| crate::work::unit::same_run(i, here)) => {
            Holding::Elsewhere(b)
        }
        Some(b) if b.present == Some(true) || b.pid.is_some_and(&runs) => Holding::Live(b),
        Some(b) => Holding::Gone(b),
    }
}

/// Whether process `pid` runs on this host: it exists and is not a zombie.
#[cfg(target_os = "linux")]
fn runs_here(pid: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    // The state follows the name, which may hold anything, even `)`.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
    state.is_some_and(|s| !matches!(s, "Z" | "X"))
}

/// Whether process `pid` runs on this host (a zombie counts: no `/proc` to tell).
#[cfg(all(unix, not(target_os = "linux")))]
fn runs_here(pid: u64) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill(2) with signal 0 only checks that the process exists.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM))
}

/// No systemd unit to stop, and no worker-gone to run, but on Unix.
#[cfg(not(unix))]
fn runs_here(_pid: u64) -> bool {
    false
}

/// Records `died` (when the holding's job was last alive), then, so the
/// history's outage is the real one, lets go of the lock held under
/// `field`; `false` when the lock was not that holding's any more.
async fn let_go_of(
    conn: &mut Conn,
    keys: &Keys,
    node: &str,
    field: &str,
    lease: Lease,
    died: &Record,
) -> Result<bool, crate::Error> {
    let host = conn.endpoint().clone();
    history::append(conn, keys, node, died, &host).await?;
    Lock::of_holding(keys.clone(), node, lease, &host, field).sharded(conn.sharded()).orphaned(conn).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_holding_from_this_unit_run_whose_worker_neither_runs_nor_is_counted_is_let_go() {
        let here = "boot=b1 pidns=pid:[1] unit=u1";
        let beat = |node: &str, state: BeatState, field: &str, present: Option<bool>, run: &str| Beat {
            node: node.into(),
            host: Some("wh-a".into()),
            pid: Some(40),
            state: Some(state),
            lock_field: Some(field.into()),
            present,
            invocation: Some(run.into()),
            ..Beat::default()
        };
        let nodes = ["wh-a".to_owned(), "wh-a@10.0.0.1".to_owned()];
        let snap = |beats: Vec<Beat>| Snapshot { beats, ..Snapshot::default() };
        let dead = |_pid| false;
        let gone = snap(vec![beat("wh-a", BeatState::Running, "u:1", Some(false), here)]);
        assert_eq!(holding(&gone, &nodes, here, dead), Holding::Gone(&gone.beats[0]));
        let unknown = snap(vec![beat("wh-a@10.0.0.1", BeatState::Starting, "u:1", None, here)]);
        assert_eq!(holding(&unknown, &nodes, here, dead), Holding::Gone(&unknown.beats[0]));
        let counted = snap(vec![beat("wh-a", BeatState::Running, "u:1", Some(true), here)]);
        assert_eq!(holding(&counted, &nodes, here, dead), Holding::Live(&counted.beats[0]));
        // Just started: its subscription is up, its heartbeat does not say so yet.
        assert_eq!(holding(&unknown, &nodes, here, |pid| pid == 40), Holding::Live(&unknown.beats[0]));
        assert_eq!(holding(&unknown, &nodes, here, |pid| pid == 41), Holding::Gone(&unknown.beats[0]));
        // Written by another run: another start of the unit, a container, a
        // cloned host, or a worker not under systemd; dead as it looks here.
        for run in ["boot=b1 pidns=pid:[1] unit=u2", "boot=b1 pidns=pid:[2] unit=u1", "boot=b2 pidns=pid:[1] unit=u1"] {
            let other = snap(vec![beat("wh-a", BeatState::Running, "u:1", Some(false), run)]);
            assert_eq!(holding(&other, &nodes, here, dead), Holding::Elsewhere(&other.beats[0]), "{run}");
        }
        let unnamed =
            snap(vec![Beat { invocation: None, ..beat("wh-a", BeatState::Running, "u:1", Some(false), here) }]);
        assert_eq!(holding(&unnamed, &nodes, here, dead), Holding::Elsewhere(&unnamed.beats[0]));
        let by_hand = "boot=b1 pidns=pid:[1] unit=-";
        let loose = snap(vec![beat("wh-a", BeatState::Running, "u:1", Some(false), by_hand)]);
        assert_eq!(holding(&loose, &nodes, by_hand, dead), Holding::Elsewhere(&loose.beats[0]), "no unit");
        let none = snap(vec![
            beat("wh-a", BeatState::Idle, "", Some(false), here),
            beat("wh-b", BeatState::Running, "u:2", Some(false), here),
            beat("wh-a", BeatState::Running, "", Some(false), here),
        ]);
        for b in &none.beats {
            let one = snap(vec![b.clone()]);
            assert_eq!(holding(&one, &nodes, here, dead), Holding::None, "{b:?}");
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn this_process_runs_and_a_pid_beyond_the_kernels_limit_does_not() {
        assert!(runs_here(u64::from(std::process::id())));
        assert!(!runs_here(u64::from(u32::MAX)));
    }

    #[test]
    #[cfg(unix)]
    fn an_orphan_reads_back_as_written_and_its_debug_hides_where_redis_is() {
        let orphan = Orphan {
            connection: ConnectionSpec::single("redis://jobs:s3cret@redis:6379", None),
            job: "outbound".into(),
            lock_key: "{outbound}:lock".into(),
            node: "wh-a".into(),
            field: "uuid:1".into(),
            fence: 7,
            lease_ms: 30_000,
        };
        let back = Orphan::decode(&orphan.encode()).expect("reads back");
        assert_eq!(
            (back.field.as_str(), back.fence, back.connection.url.as_str()),
            ("uuid:1", 7, "redis://jobs:s3cret@redis:6379")
        );
        assert!(!format!("{orphan:?}").contains("s3cret"));
        assert!(Orphan::decode(b"not json").is_none());
    }
}
