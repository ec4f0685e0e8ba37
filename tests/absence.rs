//! No proof from absence: a holder whose presence subscription, heartbeat
//! or process is missing is not taken for stopped. A worker frozen while
//! its job and reaper run on, its connections cut, keeps the next holder
//! waiting until its reaper has killed the job; `worker-gone` run anywhere
//! but as the dead worker's own unit's `ExecStopPost=` lets nothing go, and
//! as that, lets go at once.

mod common;

use std::time::{Duration, Instant};

use common::journal::{assert_no_overlap, journal, journal_worker, now_ns};
use common::procs::runs;
use common::proxy::{Mode, Proxy};
use common::unit::Unit;
use common::*;

const LEASE: &str = "3s";

/// The job's pid while `node` holds the lock, its heartbeat names it and it runs.
fn job_of(c: &mut redis::Connection, node: &str) -> Option<u32> {
    holder_job(c).filter(|(holder, pid)| holder == node && runs(*pid)).map(|(_, pid)| pid)
}

/// How many of `node`'s presence subscriptions Redis counts.
fn presence(c: &mut redis::Connection, node: &str) -> u64 {
    let counts: Vec<(String, u64)> =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(format!("{{outbound}}:alive:{node}")).query(c).unwrap();
    counts.first().map_or(0, |(_, n)| *n)
}

async fn beating(c: &mut redis::Connection, node: &str) {
    eventually(&format!("{node}'s presence"), Duration::from_secs(10), || (presence(c, node) > 0).then_some(())).await;
}

/// srv-a runs the job with `lease`, reaching Redis through a proxy the test
/// can cut, and srv-b stands by, its presence counted; both journal to `j`.
struct Cuttable {
    _server: RedisServer,
    url: String,
    c: redis::Connection,
    proxy: Proxy,
    _dir: tempfile::TempDir,
    j: std::path::PathBuf,
    a: WorkerProcess,
    _b: WorkerProcess,
    /// srv-a's job.
    a_job: u32,
}

async fn a_cuttable_runs_b_stands_by(lease: &str) -> Cuttable {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let proxy = Proxy::start(_server.port);
    let _dir = tempfile::tempdir().unwrap();
    let j = _dir.path().join("journal");
    let a = journal_worker(&proxy.url(), "srv-a", lease, &j);
    let a_job = eventually("srv-a's job", Duration::from_secs(10), || job_of(&mut c, "srv-a")).await;
    let _b = journal_worker(&url, "srv-b", lease, &j);
    beating(&mut c, "srv-b").await;
    Cuttable { _server, url, c, proxy, _dir, j, a, _b, a_job }
}

/// The recipe: srv-a's worker frozen (its reaper and job run on),
/// its connections to Redis closed, then its lock force-unlocked. srv-b
/// takes the lock but starts the job only once srv-a's reaper has killed
/// srv-a's job, by the lease (it started at once, 1.2–7.3 s of two runs,
/// when a missing presence subscription counted as proof).
#[tokio::test]
async fn a_frozen_worker_whose_connections_drop_keeps_the_next_holder_waiting() {
    // Every part bound: one left to `..` would be dropped (Redis, srv-b) here.
    let Cuttable { _server, url: _, mut c, proxy, _dir, j, a, _b, a_job } = a_cuttable_runs_b_stands_by(LEASE).await;

    let _resume = Resume(a.pid());
    // SAFETY: SIGSTOP to the worker this test started (its reaper and job run on).
    unsafe { libc::kill(a.pid(), libc::SIGSTOP) };
    tokio::time::sleep(Duration::from_millis(200)).await;
    proxy.set(Mode::Drop);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let cut_at = now_ns();
    let t0 = Instant::now();
    force_unlock(&mut c).unwrap();
    eventually("srv-b's job", Duration::from_secs(10), || {
        journal(&j).iter().any(|l| l.1 == "srv-b" && l.2 > cut_at).then_some(())
    })
    .await;
    let took = t0.elapsed();
    println!("srv-a frozen, its connections cut, its lock force-unlocked → srv-b's job after {took:?} (lease {LEASE})");
    assert!(!runs(a_job), "srv-a's job outlived its reaper's deadline");
    assert_no_overlap(&journal(&j));
}

/// srv-a frozen with its connections cut, as above, and `worker-gone` for
/// srv-a run by hand, as a unit's `ExecStopPost=` of another run, and from
/// another PID namespace: nothing is let go each time, the live holder's job
/// runs on, and srv-b does not start beside it (it released srv-a's lock
/// 20 of 20 times, with two runs, when a PID missing in its own `/proc` and
/// an uncounted subscription counted as proof).
#[tokio::test]
async fn worker_gone_anywhere_but_its_own_units_stop_lets_nothing_go() {
    // Lease 30 s: the reaper's deadline is far, only worker-gone could let go.
    let Cuttable { _server, url, mut c, proxy, _dir, j, a, _b, a_job } = a_cuttable_runs_b_stands_by("30s").await;
    let field: Vec<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query(&mut c).unwrap();
    let _resume = Resume(a.pid());
    // SAFETY: SIGSTOP to the worker this test started.
    unsafe { libc::kill(a.pid(), libc::SIGSTOP) };
    proxy.set(Mode::Drop);
    eventually("srv-a's presence gone", Duration::from_secs(5), || (presence(&mut c, "srv-a") == 0).then_some(()))
        .await;
    let asked_at = now_ns();

    let mut gone = lockwatch_command();
    gone.args(["--redis", &url, "--job", "outbound", "worker-gone", "--node", "srv-a", "--lease", "30s"]);
    let mut tries = vec![("by hand", gone)];
    let unit = Unit::make();
    if let Some(unit) = &unit {
        let mut unshared = std::process::Command::new("unshare");
        unshared.args(["-pf", "--mount-proc"]).arg(tries[0].1.get_program()).args(tries[0].1.get_args());
        tries.push(("in another PID namespace, as a unit's ExecStopPost=", unit.wrap(&unshared, true)));
        tries.push(("as another unit run's ExecStopPost=", unit.wrap(&tries[0].1, true)));
    }
    let mut said_all = Vec::new();
    for (how, mut cmd) in tries {
        let said = run_capturing(&mut cmd).1;
        println!("worker-gone {how}: {}", said.trim());
        assert_eq!(
            redis::cmd("HKEYS").arg("{outbound}:lock").query::<Vec<String>>(&mut c).unwrap(),
            field,
            "{how}: srv-a's lock was let go; it said: {said}"
        );
        said_all.push((how, said));
    }
    for (how, said) in &said_all {
        assert!(said.contains("released nothing"), "{how}: {said}");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(runs(a_job), "srv-a's job was stopped");
    assert!(!journal(&j).iter().any(|l| l.1 == "srv-b" && l.2 > asked_at), "srv-b ran beside srv-a");
    let kinds: Vec<String> = stream_events(&mut c).into_iter().map(|e| e.kind).collect();
    assert!(!kinds.iter().any(|k| k == kind::DIED), "a live worker recorded as died: {kinds:?}");
    assert_no_overlap(&journal(&j));
}

/// Under its own unit: the worker, its reaper and job killed together, as
/// systemd kills what is left of the unit, then the unit's `ExecStopPost=
/// lockwatch worker-gone` of that same run lets go, and srv-b runs the job
/// within 2 s, not after the 30 s lease. The real systemd unit does the
/// same in `scripts/try-unit.sh`.
#[tokio::test]
async fn worker_gone_as_its_own_units_stop_hands_the_job_over_within_2_s() {
    let Some(unit) = Unit::make() else { return };
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut worker = worker_command(&url, "srv-a", "30s", &[], common::journal::JOURNAL_LOOP);
    worker.env("JOURNAL", &j);
    let _a = WorkerProcess::spawn(&mut unit.wrap(&worker, false));
    let a_job = eventually("srv-a's job", Duration::from_secs(10), || job_of(&mut c, "srv-a")).await;
    let fence: String = redis::cmd("HGET").arg("{outbound}:node:srv-a").arg(beat::FENCE).query(&mut c).unwrap();
    let _b = journal_worker(&url, "srv-b", "30s", &j);
    beating(&mut c, "srv-b").await;

    let killed_at = now_ns();
    let t0 = Instant::now();
    assert_eq!(unit.kill_all(), Vec::<i32>::new(), "the unit's processes would not die");
    assert!(!runs(a_job), "srv-a's job outlived its unit");
    let mut gone = lockwatch_command();
    gone.args(["--redis", &url, "--job", "outbound", "worker-gone", "--node", "srv-a", "--lease", "30s"]);
    let said = run_capturing(&mut unit.wrap(&gone, true)).1;
    eventually("srv-b's job", Duration::from_secs(10), || {
        journal(&j).iter().any(|l| l.1 == "srv-b" && l.2 > killed_at).then_some(())
    })
    .await;
    let handed = t0.elapsed();
    println!("the unit killed → its ExecStopPost worker-gone → srv-b's job: {handed:?} after the kill (lease 30 s)");
    assert!(handed < Duration::from_secs(2), "srv-b's job ran {handed:?} after the kill; worker-gone said: {said}");
    assert!(said.contains("node srv-a died holding the lock"), "{said}");
    let died =
        stream_events(&mut c).into_iter().find(|e| e.kind == kind::DIED && e.field(entry::NODE) == Some("srv-a"));
    assert_eq!(
        died.and_then(|e| e.field(entry::FENCE).map(str::to_owned)),
        Some(fence),
        "a died entry for srv-a's fence"
    );
    assert_no_overlap(&journal(&j));
}
