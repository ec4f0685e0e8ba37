//! Hand-overs between a real Redisson and a lockwatch worker: node-redisson
//! 1.0.4 (a port of Java Redisson's RLock, run by `tests/redisson/hold.mjs`,
//! installed by `scripts/setup-test-deps.sh`) holds `{outbound}:lock` while
//! a worker (lease 3 s) starts and waits. Redisson's unlock hands the job to
//! the worker within a second, on a new Redis and on one where lockwatch
//! held the lock before; a SIGKILLed Redisson holder within its watchdog
//! timeout and a second. And between two workers, a holder frozen while its
//! handover record is evicted and its lock force-unlocked is still waited
//! for until its reaper killed its job. Both kinds of holder journal into
//! one file (Redisson's ticks as node `java`, fence 0); no two runs overlap.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use common::journal::{Tick, assert_no_overlap, journal, journal_worker, now_ns, overlaps, runs};
use common::*;

const LEASE: &str = "3s";
/// node-redisson's `lockWatchdogTimeout`: the lock's PTTL, renewed every third of it.
const WATCHDOG_MS: u64 = 3000;
const UNLOCK_CHANNEL: &str = "redisson_lock__channel:{outbound}:lock";

/// node-redisson holding the job's lock (`tests/redisson/hold.mjs`), killed
/// on drop; what it printed, line by line.
struct Redisson {
    process: WorkerProcess,
    said: Receiver<String>,
}

impl Redisson {
    /// Starts it: it takes the lock (waiting while it is held), ticks into
    /// `journal` and unlocks after `hold` ms (`forever`: never).
    fn start(url: &str, journal: &Path, hold: &str) -> Redisson {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/redisson");
        assert!(
            dir.join("node_modules/node-redisson").is_dir(),
            "node-redisson is not installed in {}: run scripts/setup-test-deps.sh",
            dir.display()
        );
        let mut process = WorkerProcess::spawn(
            Command::new("node")
                .arg(dir.join("hold.mjs"))
                .arg(url)
                .arg(journal)
                .arg(hold)
                .arg(WATCHDOG_MS.to_string())
                .stdout(Stdio::piped()),
        );
        let stdout = process.stdout.take().unwrap();
        let (tx, said) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Redisson { process, said }
    }

    /// Waits for its line `<what> <ms>`: when (ms since 1970) it said it.
    async fn said(&self, what: &str, within: Duration) -> u64 {
        eventually(&format!("node-redisson to say `{what}`"), within, || {
            let line = self.said.try_recv().ok()?;
            line.strip_prefix(what)?.trim().parse().ok()
        })
        .await
    }
}

/// A temp dir and the journal file in it.
fn journal_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    (dir, j)
}

/// The lock's hash fields: the holding's, while one holds it.
fn lock_fields(c: &mut redis::Connection) -> Vec<String> {
    redis::cmd("HKEYS").arg("{outbound}:lock").query(c).unwrap()
}

/// A field of `node`'s heartbeat.
fn beat_field(c: &mut redis::Connection, node: &str, field: &str) -> Option<String> {
    redis::cmd("HGET").arg(format!("{{outbound}}:node:{node}")).arg(field).query(c).unwrap()
}

/// Waits until the worker `worker` of `node` beats (not an earlier one of that name).
async fn beating(c: &mut redis::Connection, node: &str, worker: &WorkerProcess) {
    let pid = worker.pid().to_string();
    eventually(&format!("{node}'s heartbeat"), Duration::from_secs(10), || {
        (beat_field(c, node, beat::PID)? == pid).then_some(())
    })
    .await;
}

/// The first tick of `node` after `after_ns`, in ns, once there is one.
async fn first_tick(j: &Path, node: &str, after_ns: u128, within: Duration) -> u128 {
    eventually(&format!("{node}'s job"), within, || {
        journal(j).iter().find(|l| l.1 == node && l.2 > after_ns).map(|l| l.2)
    })
    .await
}

/// No two runs in the journal overlap, Redisson's (`java`) among them; and
/// the workers' runs alone have fences that grow (Redisson's have none).
fn assert_no_overlap_with_redisson(j: &Path) {
    let lines = journal(j);
    let all = runs(lines.iter().map(|(fence, node, ns)| Tick {
        node: node.clone(),
        fence: *fence,
        pid: 0,
        started: 0,
        at: u64::try_from(*ns).unwrap(),
    }));
    if let Some((a, b, ns)) = overlaps(&all).first() {
        panic!("{} (fence {}) and {} (fence {}) ran together for {ns} ns", a.node, a.fence, b.node, b.fence);
    }
    let workers: Vec<_> = lines.into_iter().filter(|l| l.1 != "java").collect();
    assert_no_overlap(&workers);
}

/// ms since 1970 of a journal time in ns.
fn ms(ns: u128) -> u64 {
    u64::try_from(ns / 1_000_000).unwrap()
}

/// Redisson holds 4 s while srv-a's worker starts and waits, then unlocks:
/// how long after the unlock srv-a's job ran, in ms.
async fn unlock_hands_over(url: &str, c: &mut redis::Connection, j: &Path) -> u64 {
    let redisson = Redisson::start(url, j, "4000");
    redisson.said("locked", Duration::from_secs(10)).await;
    let held = lock_fields(c);
    // Shown as a Redisson lock, whatever its port names its holder.
    let status = lockwatch(url, &["status", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(json["lock"]["kind"], "redisson", "{json}");
    let mut worker = journal_worker(url, "srv-a", LEASE, j);
    beating(c, "srv-a", &worker).await;
    assert_eq!(lock_fields(c), held, "Redisson let go before the worker was up: nothing to hand over");
    let unlocked = redisson.said("unlocked", Duration::from_secs(10)).await;
    let started = first_tick(j, "srv-a", u128::from(unlocked) * 1_000_000, Duration::from_secs(10)).await;
    worker.kill9();
    assert_no_overlap_with_redisson(j);
    ms(started).saturating_sub(unlocked)
}

#[tokio::test]
async fn a_redisson_unlock_hands_the_job_to_the_worker_within_a_second() {
    // A new Redis: no fence counter, no lockwatch ever held the lock.
    let (_server, url, mut c) = server_with_flag("alice", true);
    let (_dir, j) = journal_file();
    let counter: bool = redis::cmd("EXISTS").arg("{outbound}:fence").query(&mut c).unwrap();
    assert!(!counter, "a new Redis has no fence counter");
    let fresh = unlock_hands_over(&url, &mut c, &j).await;
    println!("new Redis (no fence counter): Redisson unlocked → srv-a's job runs {fresh} ms later (lease {LEASE})");

    // A Redis where lockwatch held the lock and let go (the flag switched
    // off), and Redisson took it after.
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let (_dir, j) = journal_file();
    let mut first = journal_worker(&url, "srv-a", LEASE, &j);
    first_tick(&j, "srv-a", 0, Duration::from_secs(10)).await;
    flag(&mut c, "outbound", "alice", false);
    eventually("srv-a to let go", Duration::from_secs(10), || {
        (lock_fields(&mut c).is_empty() && beat_field(&mut c, "srv-a", beat::STATE).as_deref() == Some("idle"))
            .then_some(())
    })
    .await;
    first.sigterm();
    eventually("srv-a's worker to stop", Duration::from_secs(10), || first.try_wait().unwrap()).await;
    let fence: u64 = redis::cmd("GET").arg("{outbound}:fence").query(&mut c).unwrap();
    flag(&mut c, "outbound", "alice", true);
    let after = unlock_hands_over(&url, &mut c, &j).await;
    println!("after lockwatch held it (fence {fence}): Redisson unlocked → srv-a's job runs {after} ms later");

    assert!(fresh < 1000, "new Redis: the worker started {fresh} ms after Redisson's unlock");
    assert!(after < 1000, "after a lockwatch holding: the worker started {after} ms after Redisson's unlock");
}

#[tokio::test]
async fn a_killed_redisson_holder_hands_over_within_its_expiry_and_a_second() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    // A counter, as on any Redis a worker ever held the lock on.
    seed_fence(&mut c);
    let (_dir, j) = journal_file();
    let mut redisson = Redisson::start(&url, &j, "forever");
    redisson.said("locked", Duration::from_secs(10)).await;
    let worker = journal_worker(&url, "srv-a", LEASE, &j);
    beating(&mut c, "srv-a", &worker).await;
    // Let the watchdog renew once or twice.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let held = lock_fields(&mut c);
    assert_eq!(held.len(), 1, "Redisson holds the lock");
    let pttl: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut c).unwrap();
    let killed_at = now_ns();
    let t0 = Instant::now();
    redisson.process.kill9();
    let expired = eventually("Redisson's lock to expire", Duration::from_secs(10), || {
        (lock_fields(&mut c) != held).then(|| t0.elapsed())
    })
    .await;
    let started = first_tick(&j, "srv-a", killed_at, Duration::from_secs(15)).await;
    let took = ms(started) - ms(killed_at);
    println!(
        "Redisson SIGKILLed (PTTL {pttl} ms, watchdog {WATCHDOG_MS} ms): its lock gone after {} ms, \
         srv-a's job runs {took} ms after the kill",
        expired.as_millis()
    );
    assert_no_overlap_with_redisson(&j);
    assert!(took < WATCHDOG_MS + 1000, "srv-a's job ran {took} ms after Redisson was killed");
}

#[tokio::test]
async fn a_lockwatch_holder_whose_record_was_evicted_is_still_waited_for() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let (_dir, j) = journal_file();
    let a = journal_worker(&url, "srv-a", LEASE, &j);
    first_tick(&j, "srv-a", 0, Duration::from_secs(10)).await;
    let b = journal_worker(&url, "srv-b", LEASE, &j);
    beating(&mut c, "srv-b", &b).await;

    let child: u32 =
        beat_field(&mut c, "srv-a", beat::CHILD_PID).and_then(|p| p.parse().ok()).expect("srv-a's job's pid");
    let frozen = Resume(a.pid());
    // SAFETY: SIGSTOP to a worker this test started; its reaper and job run on.
    unsafe { libc::kill(a.pid(), libc::SIGSTOP) };
    let stopped_at = now_ns();
    // The handover record evicted, then Redisson's forceUnlock.
    let _: () = redis::cmd("DEL").arg("{outbound}:handover").query(&mut c).unwrap();
    let _: () =
        redis::pipe().del("{outbound}:lock").ignore().publish(UNLOCK_CHANNEL, 0).ignore().query(&mut c).unwrap();
    let freed_at = now_ns();
    let taken = eventually("srv-b to take the lock", Duration::from_secs(5), || {
        let field = beat_field(&mut c, "srv-b", beat::LOCK_FIELD).filter(|f| !f.is_empty())?;
        (lock_fields(&mut c) == [field]).then(now_ns)
    })
    .await;
    let state = beat_field(&mut c, "srv-b", beat::STATE);
    assert_eq!(state.as_deref(), Some("starting"), "srv-b holds the lock and waits");
    let b_first = first_tick(&j, "srv-b", freed_at, Duration::from_secs(15)).await;
    assert!(!common::procs::runs(child), "srv-a's job still runs beside srv-b's");
    // A tick of srv-a's job after srv-b's first would be written by now.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let a_last = journal(&j).iter().filter(|l| l.1 == "srv-a").map(|l| l.2).max().unwrap();
    drop(frozen);
    println!(
        "srv-a frozen, its record evicted, its lock force-unlocked: srv-b took the lock {} ms after, \
         srv-a's job last ticked {} ms after the freeze (its reaper), srv-b's job ran {} ms after the unlock, \
         {} ms after srv-a's last tick (lease {LEASE})",
        ms(taken) - ms(freed_at),
        ms(a_last) - ms(stopped_at),
        ms(b_first) - ms(freed_at),
        ms(b_first) as i64 - ms(a_last) as i64,
    );
    assert!(a_last < b_first, "srv-b's job ran while srv-a's still did");
    assert_no_overlap(&journal(&j));
}
