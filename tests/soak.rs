//! The job never runs on two servers, under faults, with real processes.
//!
//! Three workers, each talking to one real Redis through its own fault proxy
//! (`common::proxy`), run a shell job that journals a tick every 100 ms. A
//! seeded random sequence of faults follows: a proxy that drops, resets,
//! delays or blackholes a worker's (or every worker's) connections, Redis
//! frozen with SIGSTOP, Redis restarted empty (no persistence) after which
//! the supervisor enables the job again, Redis restarted from an older
//! snapshot (taken at a random earlier cycle), a worker killed with
//! `kill -9` and started again a moment later, a worker paused (SIGSTOP)
//! past its lease, the lock force-unlocked (DEL and the unlock message), the
//! lock evicted with the holder's worker frozen meanwhile (`maxmemory` with
//! `volatile-ttl`, which takes the heartbeats too, or `allkeys-lru`, which
//! may take anything, while keys without expiry fill memory), a second
//! worker started under a running one's name (a cloned host), and the
//! holder's reaper killed (`kill -9`; the job runs its loop in a background
//! child, which must die with it), and a worker's whole unit killed as
//! systemd kills it (worker, reaper and job SIGKILLed together), then
//! `lockwatch worker-gone` run as the unit's `ExecStopPost=` and the worker
//! started again 500 ms later (`RestartSec=500ms`); a frozen worker whose
//! connections are cut and whose lock is force-unlocked (its job runs on
//! until its reaper's deadline); `worker-gone` run by hand, and from another
//! PID namespace where the soak may make one, while the worker lives (it
//! must release nothing); a supervisor rewriting her flag at Redis's speed;
//! and the handover record alone evicted, the lock force-unlocked after it.
//! Then the journals are
//! read back: runs of different servers never overlap in time, fences only
//! grow, no job outlives its worker or reaper, and no server runs two jobs
//! at once.
//!
//! `cargo test --test soak -- --nocapture` runs the short soak (2
//! minutes) and two quick checks of the tools; `cargo test --test soak
//! half_an_hour -- --ignored --nocapture` the long one (30 minutes and at
//! least 200 fault cycles; `LOCKWATCH_SOAK_MINUTES=N` for another length,
//! with as many cycles a minute). `LOCKWATCH_SOAK_SEED=N` replays a printed
//! seed: the same faults in the same order with the same timings (which
//! server holds the lock when a fault aimed at "the holder" strikes is up to
//! the run).

mod common;

use std::collections::BTreeMap;
use std::fmt;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::journal::{self, Run, Tick};
use common::procs;
use common::proxy::{Mode, Proxy};
use common::unit::Unit;
use common::{RedisServer, Resume};
use common::{beat, flag};

/// Whether a fence must also grow across a Redis restart that lost the data:
/// the worker starts a lost counter above every fence it has seen and above
/// Redis time in ms, so it must.
const FENCE_SURVIVES_DATA_LOSS: bool = true;

/// Whether two servers' runs may not overlap even when Redis lost its data
/// in between: a worker that finds the fence counter lost (or restarted
/// less than a lease ago) waits out the rest of a lease before it starts
/// the job, by when the old holder has killed its own, so they must not.
const NO_OVERLAP_AFTER_DATA_LOSS: bool = true;

const NODES: [&str; 3] = ["srv-a", "srv-b", "srv-c"];
/// How long the unit waits before it starts a killed worker again (its
/// `RestartSec=`), from the end of its `ExecStopPost=`.
const RESTART_SEC: Duration = Duration::from_millis(500);
const LEASE: &str = "2s";
const LEASE_MS: u64 = 2_000;

/// The job: every 100 ms one line `node fence pid started_us now_us`
/// appended to the journal named by its first argument, from a background
/// child (which a killed reaper must not leave running). Times are the wall
/// clock in µs (`$EPOCHREALTIME`, no fork), the same clock for every job on
/// this machine; `started_us` tells apart two processes that got the same
/// pid. `$TWIN` marks the lines of a worker started under another's name.
const JOB: &str = r#"j=$1; s=${EPOCHREALTIME/./}
(while :; do echo "$LOCKWATCH_NODE$TWIN $LOCKWATCH_FENCE $$ $s ${EPOCHREALTIME/./}" >> "$j"; sleep 0.1; done) &
wait"#;

/// In the test command: every kind of fault once (the first round, about
/// 50 s), and a minute at least; the half-hour soak below strikes at random
/// for longer.
#[test]
fn the_job_never_runs_on_two_servers_under_faults() {
    soak(Duration::from_secs(60), KINDS);
}

/// Each proxy mode does to a real Redis connection what it says.
#[test]
fn the_fault_proxy_passes_delays_holds_drops_and_resets() {
    use std::io::{ErrorKind, Write};
    use std::net::TcpStream;

    let redis = RedisServer::start();
    let proxy = Proxy::start(redis.port);
    let connect = || {
        let c = TcpStream::connect(("127.0.0.1", proxy.port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        c
    };
    let ping = |c: &mut TcpStream| c.write_all(b"PING\r\n").unwrap();
    let answer = |c: &mut TcpStream| {
        let mut buf = [0u8; 64];
        c.read(&mut buf).map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    };

    let mut c = connect();
    ping(&mut c);
    assert_eq!(answer(&mut c).unwrap(), "+PONG\r\n");

    proxy.set(Mode::Delay(Duration::from_millis(300)));
    let t = Instant::now();
    ping(&mut c);
    assert_eq!(answer(&mut c).unwrap(), "+PONG\r\n");
    assert!(t.elapsed() >= Duration::from_millis(600), "300 ms each way: {:?}", t.elapsed());

    // Held, not lost: the answer arrives once the blackhole lifts, and a
    // connection opened meanwhile is accepted but not served.
    proxy.set(Mode::Blackhole);
    ping(&mut c);
    let mut held = connect();
    ping(&mut held);
    for c in [&mut c, &mut held] {
        c.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
        let err = answer(c).unwrap_err();
        assert!(matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut), "{err:?}");
        c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    }
    proxy.set(Mode::Pass);
    assert_eq!(answer(&mut c).unwrap(), "+PONG\r\n");
    assert_eq!(answer(&mut held).unwrap(), "+PONG\r\n");

    proxy.set(Mode::Drop);
    assert_eq!(answer(&mut c).unwrap(), "", "closed");
    assert_eq!(answer(&mut connect()).unwrap(), "", "a new connection is closed too");
    proxy.set(Mode::Pass);

    let mut c = connect();
    ping(&mut c);
    assert_eq!(answer(&mut c).unwrap(), "+PONG\r\n");
    proxy.set(Mode::Reset);
    assert_eq!(answer(&mut c).unwrap_err().kind(), ErrorKind::ConnectionReset);
    assert_eq!(answer(&mut connect()).unwrap_err().kind(), ErrorKind::ConnectionReset);
    proxy.set(Mode::Pass);
    let mut c = connect();
    ping(&mut c);
    assert_eq!(answer(&mut c).unwrap(), "+PONG\r\n");
}

/// The check itself can fail: a server talking to a Redis of its own (a
/// split brain no lock can prevent) runs the job while another does, and
/// the journals show it.
#[test]
fn the_journal_check_sees_a_server_that_runs_the_job_alongside_another() {
    let other = RedisServer::start();
    try_enable(&other).unwrap();
    let mut rig = SoakRig::start();
    rig.enable();
    rig.proxies[2].retarget(other.port);
    rig.kill_worker(2);
    rig.spawn_worker(2);
    let begin = now_us();
    std::thread::sleep(Duration::from_secs(4));
    let end = now_us();
    rig.stop_workers();
    let report = Report::new(&rig, &[], begin, end, 0);
    println!("{report}");
    assert!(!report.overlaps.is_empty(), "srv-c on its own Redis ran alongside another server");
    assert!(report.overlaps.iter().all(|(a, b, _)| a.node == "srv-c" || b.node == "srv-c"));
}

/// Found by the soak (seed 1795419316056704531, a 333 ms overlap): when a
/// worker's connection goes silent just as it takes the lock, its
/// supervision loop waits 2 s on recording `acquired`, then starts the job
/// all the same (a 2 s lease is gone by then), and waits 2 s more on
/// `job-started` before the lease watchdog can kill the job; the watchdog's
/// one kill, at 3/4 of the lease, found no job. Here srv-a's job runs on
/// beside srv-b's until the silence ends (3.9 s on the current worker).
#[test]
fn a_job_started_as_redis_goes_silent_dies_before_the_lease_runs_out() {
    let mut rig = SoakRig::idle();
    let mut c = rig.redis.conn();
    rig.spawn_worker(0);
    let idle = Instant::now();
    while !beats_idle(&mut c, NODES[0]) {
        assert!(idle.elapsed() < Duration::from_secs(20), "srv-a never beat");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A fence counter in place: the job starts at once on taking the lock
    // (on a Redis with none, the worker would first wait out a lease).
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(1).query(&mut c).unwrap();
    let begin = now_us();
    rig.enable();
    // Silence srv-a the moment its lock lands in Redis.
    let taken = Instant::now();
    while !redis::cmd("EXISTS").arg("{outbound}:lock").query::<bool>(&mut c).unwrap() {
        assert!(taken.elapsed() < Duration::from_secs(20), "srv-a never took the lock");
    }
    rig.proxies[0].set(Mode::Blackhole);
    rig.spawn_worker(1);
    std::thread::sleep(Duration::from_secs(6));
    rig.proxies[0].set(Mode::Pass);
    let end = now_us();
    rig.stop_workers();
    let report = Report::new(&rig, &[], begin, end, 0);
    println!("{report}");
    assert!(report.runs.iter().any(|r| r.node == NODES[1]), "srv-b took over");
    assert!(report.overlaps.is_empty(), "srv-a's job outlived its lease while srv-b ran it");
}

fn beats_idle(c: &mut redis::Connection, node: &str) -> bool {
    let state: Option<String> =
        redis::cmd("HGET").arg(format!("{{outbound}}:node:{node}")).arg(beat::STATE).query(c).unwrap();
    state.as_deref() == Some("idle")
}

#[test]
#[ignore = "runs 30 minutes; cargo test --test soak half_an_hour -- --ignored --nocapture"]
fn the_job_never_runs_on_two_servers_under_faults_for_half_an_hour() {
    let minutes: f64 = std::env::var("LOCKWATCH_SOAK_MINUTES").ok().and_then(|m| m.parse().ok()).unwrap_or(30.0);
    // 200 cycles in 30 minutes, and as many per minute for another length.
    soak(Duration::from_secs_f64(minutes * 60.0), (minutes * 200.0 / 30.0).ceil() as usize);
}

/// Runs faults for at least `length` and `min_cycles` cycles, then checks
/// the journals and prints the figures.
fn soak(length: Duration, min_cycles: usize) {
    let seed = std::env::var("LOCKWATCH_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64);
    println!("soak: seed {seed} (replay with LOCKWATCH_SOAK_SEED={seed})");
    let mut rng = Rng(seed);
    let mut first_round: [u64; KINDS] = std::array::from_fn(|i| i as u64);
    for i in (1..first_round.len()).rev() {
        first_round.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut rig = SoakRig::start();
    rig.enable();
    let started = Instant::now();
    while rig.journals().iter().all(|j| last_tick(j).is_none()) {
        assert!(started.elapsed() < Duration::from_secs(30), "no server started the job within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    let begin = now_us();
    let t0 = Instant::now();
    let mut cycles = Vec::new();
    while t0.elapsed() < length || cycles.len() < min_cycles {
        let fault = Fault::pick(&mut rng, cycles.len(), &first_round);
        let at = now_us();
        let since = t0.elapsed().as_secs_f64();
        let how = rig.apply(&fault);
        println!("cycle {:>3} at {since:>6.1} s: {fault}{how}", cycles.len() + 1);
        cycles.push(Cycle { fault, at, healed: now_us() });
        // Now and then a snapshot, which a later restore brings back.
        if rng.below(4) == 0 {
            rig.save();
        }
        std::thread::sleep(rng.ms(100, 2_000));
    }
    // Everything healed: a server must run the job again (generous deadline:
    // the machine may be loaded), and does so to the end.
    let healed = now_us();
    let back = Instant::now();
    while !rig.journals().iter().any(|j| last_tick(j).is_some_and(|t| t > healed))
        && back.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let end = now_us();
    rig.stop_workers();
    let report = Report::new(&rig, &cycles, begin, end, seed);
    println!("{report}");
    if !report.overlaps_after_loss.is_empty() {
        println!(
            "WARNING: the job ran on two servers at once after Redis lost its data ({} times, seed {seed}); \
             see NO_OVERLAP_AFTER_DATA_LOSS",
            report.overlaps_after_loss.len()
        );
    }
    if !report.passed() {
        let kept = rig.keep_files();
        println!("journals and worker logs kept in {}", kept.display());
    }
    assert!(
        report.overlaps.is_empty(),
        "{} overlaps between servers (seed {seed}): the job ran on two servers at once",
        report.overlaps.len()
    );
    if NO_OVERLAP_AFTER_DATA_LOSS {
        assert!(
            report.overlaps_after_loss.is_empty(),
            "{} overlaps between servers across a Redis data loss (seed {seed})",
            report.overlaps_after_loss.len()
        );
    }
    assert!(
        report.fences_back_same_data.is_empty(),
        "{} runs got a fence not above an earlier run of another server (seed {seed})",
        report.fences_back_same_data.len()
    );
    if FENCE_SURVIVES_DATA_LOSS {
        assert!(
            report.fences_back_after_loss.is_empty(),
            "{} runs after a data loss got a fence not above an earlier run (seed {seed})",
            report.fences_back_after_loss.len()
        );
    }
    assert!(report.orphans.is_empty(), "jobs outlived their worker or reaper (seed {seed}): {:?}", report.orphans);
    assert!(
        report.same_server.is_empty(),
        "{} times two jobs ran at once on one server (seed {seed})",
        report.same_server.len()
    );
    assert!(report.runs.len() > 1, "the job ran only {} times", report.runs.len());
    assert!(report.running_at_end, "no server ran the job within 30 s after the last fault healed (seed {seed})");
}

/// A seeded generator (SplitMix64): the same seed gives the same faults.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.below(hi - lo + 1))
    }
}

/// Which worker a fault strikes.
#[derive(Debug, Clone, Copy)]
enum Aim {
    /// The server running the job when the fault starts (any, if none does).
    Holder,
    Node(usize),
    All,
}

impl fmt::Display for Aim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Aim::Holder => f.write_str("the holder"),
            Aim::Node(i) => f.write_str(NODES[*i]),
            Aim::All => f.write_str("every server"),
        }
    }
}

#[derive(Debug, Clone)]
enum Fault {
    /// The proxies of `aim` switch to `mode` for `hold`, then pass again.
    Proxy { aim: Aim, mode: Mode, hold: Duration },
    /// Redis frozen (SIGSTOP) for `hold`, then SIGCONT.
    Pause { hold: Duration },
    /// Redis killed and started empty on the same port; the supervisor
    /// enables the job again `reenable` later.
    Restart { reenable: Duration },
    /// `kill -9` of a worker, started again `after` later.
    Kill { aim: Aim, after: Duration },
    /// Redis killed and started again from the last snapshot the soak took
    /// (older by up to many cycles), or empty if it took none yet.
    Restore,
    /// A worker stopped (SIGSTOP) for `hold`, past its lease, then SIGCONT.
    Freeze { aim: Aim, hold: Duration },
    /// Redisson's `forceUnlock`: DEL of the lock and the unlock message.
    Unlock,
    /// The holder's worker frozen while `maxmemory` with `policy` and keys
    /// without expiry filling memory evict the lock (and, under
    /// `volatile-ttl`, every heartbeat), and a second after; then the filler
    /// goes, and the limit, and the supervisor enables the job again.
    Evict { policy: &'static str },
    /// A second worker started under the name of the worker of `aim`.
    Twin { aim: Aim },
    /// `kill -9` of the reaper between the worker of `aim` and its job.
    ReaperKill { aim: Aim },
    /// The unit of the worker of `aim` killed as systemd kills it when the
    /// worker dies (the worker, its reaper and its job's whole tree
    /// SIGKILLed together, none left to let go of the lock); then
    /// `lockwatch worker-gone`, as its `ExecStopPost=`; then the worker
    /// started again [`RESTART_SEC`] later, as `Restart=always` does.
    UnitKill { aim: Aim },
    /// The worker of `aim` stopped (SIGSTOP), its connections cut 200 ms
    /// later (a proxy's reset, an admin's `CLIENT KILL`), the lock
    /// force-unlocked 100 ms after that; SIGCONT after `hold`. Its job runs
    /// on meanwhile: the next holder must wait for it.
    FreezeCut { aim: Aim, hold: Duration },
    /// `lockwatch worker-gone` for the live worker of `aim`, run by hand (no
    /// unit), from another PID namespace where the soak may make one: it
    /// must release nothing.
    StrayGone { aim: Aim },
    /// A supervisor rewrites her own flag (on, a new time) at Redis's speed for `hold`.
    Flood { hold: Duration },
    /// The handover record alone evicted, the lock force-unlocked 100 ms later.
    HandoverLost,
}

/// How many kinds of fault there are: each strikes once in the first round.
const KINDS: usize = 19;

impl Fault {
    /// The fault of cycle `n` (from 0): the first cycles strike each kind
    /// once, in a seeded order, so even a short soak sees them all; after
    /// that the kinds come at random, weighted.
    fn pick(rng: &mut Rng, n: usize, first_round: &[u64; KINDS]) -> Fault {
        let aim = |rng: &mut Rng, all: bool| match rng.below(100) {
            0..60 => Aim::Holder,
            60..85 => Aim::Node(rng.below(NODES.len() as u64) as usize),
            _ if all => Aim::All,
            _ => Aim::Node(rng.below(NODES.len() as u64) as usize),
        };
        // Kinds 0..4 are the proxy modes, 4 a pause, 5 a restart, 6 a kill,
        // 7 a restore, 8 a frozen worker, 9 a forced unlock, 10 and 11 an
        // eviction, 12 a twin, 13 a reaper killed, 14 a unit killed, 15 a
        // frozen worker cut off, 16 a stray worker-gone, 17 her flood, 18
        // the handover record lost.
        let kind = match first_round.get(n) {
            Some(&kind) => kind,
            None => match rng.below(100) {
                0..22 => rng.below(4),
                22..28 => 4,
                28..33 => 5,
                33..40 => 6,
                40..46 => 14,
                46..51 => 7,
                51..58 => 8,
                58..64 => 9,
                64..69 => 10,
                69..72 => 11,
                72..76 => 12,
                76..80 => 13,
                80..87 => 15,
                87..91 => 16,
                91..95 => 17,
                _ => 18,
            },
        };
        match kind {
            0..4 => {
                let aim = aim(rng, true);
                let mode = match kind {
                    0 => Mode::Drop,
                    1 => Mode::Delay(rng.ms(50, 1_500)),
                    2 => Mode::Blackhole,
                    _ => Mode::Reset,
                };
                Fault::Proxy { aim, mode, hold: rng.ms(200, 5_000) }
            }
            4 => Fault::Pause { hold: rng.ms(200, 5_000) },
            5 => Fault::Restart { reenable: rng.ms(0, 3_000) },
            6 => Fault::Kill { aim: aim(rng, false), after: rng.ms(100, 3_000) },
            7 => Fault::Restore,
            8 => Fault::Freeze { aim: aim(rng, false), hold: rng.ms(LEASE_MS, LEASE_MS * 3) },
            9 => Fault::Unlock,
            10 => Fault::Evict { policy: "volatile-ttl" },
            11 => Fault::Evict { policy: "allkeys-lru" },
            12 => Fault::Twin { aim: aim(rng, false) },
            13 => Fault::ReaperKill { aim: aim(rng, false) },
            14 => Fault::UnitKill { aim: aim(rng, false) },
            15 => Fault::FreezeCut { aim: aim(rng, false), hold: rng.ms(LEASE_MS, LEASE_MS * 3) },
            16 => Fault::StrayGone { aim: aim(rng, false) },
            17 => Fault::Flood { hold: rng.ms(500, 4_000) },
            _ => Fault::HandoverLost,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Fault::Proxy { mode: Mode::Drop, .. } => "proxy drop",
            Fault::Proxy { mode: Mode::Delay(_), .. } => "proxy delay",
            Fault::Proxy { mode: Mode::Blackhole, .. } => "proxy blackhole",
            Fault::Proxy { mode: Mode::Reset, .. } => "proxy reset",
            Fault::Proxy { mode: Mode::Pass, .. } => "proxy pass",
            Fault::Pause { .. } => "redis SIGSTOP",
            Fault::Restart { .. } => "redis restart, data lost",
            Fault::Kill { .. } => "worker kill -9",
            Fault::Restore => "redis restored from a snapshot",
            Fault::Freeze { .. } => "worker SIGSTOP past its lease",
            Fault::Unlock => "forced unlock",
            Fault::Evict { policy: "volatile-ttl" } => "lock and heartbeats evicted (volatile-ttl)",
            Fault::Evict { .. } => "keys evicted (allkeys-lru)",
            Fault::Twin { .. } => "a second worker under one name",
            Fault::ReaperKill { .. } => "reaper kill -9",
            Fault::UnitKill { .. } => "unit killed, worker-gone, restart",
            Fault::FreezeCut { .. } => "worker SIGSTOP, cut off, lock force-unlocked",
            Fault::StrayGone { .. } => "worker-gone by hand while the worker lives",
            Fault::Flood { .. } => "her flag rewritten at Redis's speed",
            Fault::HandoverLost => "handover record evicted, lock force-unlocked",
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::Proxy { aim, mode, hold } => write!(f, "proxy of {aim}: {mode:?} for {hold:?}"),
            Fault::Pause { hold } => write!(f, "Redis SIGSTOP for {hold:?}"),
            Fault::Restart { reenable } => write!(f, "Redis restarted empty, job enabled again after {reenable:?}"),
            Fault::Kill { aim, after } => write!(f, "kill -9 of the worker of {aim}, restarted after {after:?}"),
            Fault::Restore => f.write_str("Redis restarted from the last snapshot taken"),
            Fault::Freeze { aim, hold } => write!(f, "worker of {aim} stopped (SIGSTOP) for {hold:?}"),
            Fault::Unlock => f.write_str("lock force-unlocked (DEL and the unlock message)"),
            Fault::Evict { policy } => {
                write!(
                    f,
                    "the holder's worker frozen while maxmemory with {policy} evicts the lock under keys without expiry"
                )
            }
            Fault::Twin { aim } => write!(f, "a second worker started under the name of the worker of {aim}"),
            Fault::ReaperKill { aim } => write!(f, "kill -9 of the reaper of the worker of {aim}"),
            Fault::UnitKill { aim } => write!(
                f,
                "the unit of the worker of {aim} killed (worker, reaper, job), worker-gone, restarted after {RESTART_SEC:?}"
            ),
            Fault::FreezeCut { aim, hold } => write!(
                f,
                "worker of {aim} stopped (SIGSTOP) for {hold:?}, its connections reset and the lock force-unlocked meanwhile"
            ),
            Fault::StrayGone { aim } => write!(f, "worker-gone run by hand for the live worker of {aim}"),
            Fault::Flood { hold } => write!(f, "alice rewrites her flag at Redis's speed for {hold:?}"),
            Fault::HandoverLost => f.write_str("the handover record evicted, the lock force-unlocked 100 ms later"),
        }
    }
}

struct Cycle {
    fault: Fault,
    at: u64,
    healed: u64,
}

/// How `worker-gone` is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GoneRun {
    /// As the `ExecStopPost=` of the worker's unit run that was killed.
    StopPost,
    /// By hand, while the worker lives.
    Stray,
}

/// Everything the soak runs: one Redis, a fault proxy per worker, and the
/// workers behind them; all of it is killed on drop, however the test ends.
struct SoakRig {
    workers: Vec<Option<Child>>,
    /// Each worker's run of a unit of its own, as under systemd (where the
    /// soak may make one: as root); runs ended are kept until the soak ends,
    /// so a reaper letting go after its worker's death is not cut short.
    units: Vec<Option<Unit>>,
    ended_units: Vec<Unit>,
    proxies: Vec<Proxy>,
    redis: RedisServer,
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
    /// Windows (µs) in which nobody had the job enabled: from a data loss to
    /// the supervisor enabling it again.
    disabled: Vec<(u64, u64)>,
    /// Jobs found alive after their worker was killed.
    orphans: Vec<String>,
}

impl SoakRig {
    /// Redis, the proxies and every worker.
    fn start() -> SoakRig {
        let mut rig = SoakRig::idle();
        for i in 0..NODES.len() {
            rig.spawn_worker(i);
        }
        rig
    }

    /// Redis and the proxies, no worker yet.
    fn idle() -> SoakRig {
        let redis = RedisServer::start();
        let proxies = NODES.iter().map(|_| Proxy::start(redis.port)).collect();
        let dir = tempfile::Builder::new().prefix("lockwatch-soak-").tempdir().unwrap();
        let path = dir.path().to_owned();
        SoakRig {
            workers: NODES.iter().map(|_| None).collect(),
            units: NODES.iter().map(|_| None).collect(),
            ended_units: Vec::new(),
            proxies,
            redis,
            dir: Some(dir),
            path,
            disabled: Vec::new(),
            orphans: Vec::new(),
        }
    }

    fn journal(&self, i: usize) -> PathBuf {
        self.path.join(format!("journal-{}", NODES[i]))
    }

    fn journals(&self) -> Vec<PathBuf> {
        (0..NODES.len()).map(|i| self.journal(i)).collect()
    }

    /// The worker of server `i`, through its proxy, not started.
    fn worker_command(&self, i: usize) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
        cmd.args(["--redis", &self.proxies[i].url(), "worker", "--node", NODES[i], "--lease", LEASE])
            .args(["--stop-grace", "1s", "--", "bash", "-c", JOB, "lockwatch-soak-job"])
            .arg(self.journal(i))
            .env("LOCKWATCH_LOG", "info")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        cmd
    }

    fn spawn_worker(&mut self, i: usize) {
        let log =
            OpenOptions::new().create(true).append(true).open(self.path.join(format!("{}.log", NODES[i]))).unwrap();
        let unit = Unit::make();
        let mut cmd = match &unit {
            Some(unit) => unit.wrap(&self.worker_command(i), false),
            None => self.worker_command(i),
        };
        let child = cmd.stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log).spawn().unwrap();
        self.workers[i] = Some(child);
        if let Some(ended) = std::mem::replace(&mut self.units[i], unit) {
            self.ended_units.push(ended);
        }
    }

    fn kill_worker(&mut self, i: usize) {
        if let Some(mut child) = self.workers[i].take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn stop_workers(&mut self) {
        for i in 0..NODES.len() {
            self.kill_worker(i);
        }
        // A job that outlives its worker would tick on: give it a moment to
        // show, note it, then end it.
        std::thread::sleep(Duration::from_millis(300));
        for (i, node) in NODES.iter().enumerate() {
            let pids = jobs_of(&self.journal(i));
            if !pids.is_empty() {
                self.orphans.push(format!("job(s) {pids:?} of {node} alive after the soak stopped"));
            }
        }
        kill_jobs(&self.path);
    }

    /// The supervisor enables the job (again, after a data loss), retrying
    /// while Redis does not answer.
    fn enable(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match try_enable(&self.redis) {
                Ok(()) => return,
                Err(err) => {
                    assert!(Instant::now() < deadline, "cannot enable the job: {err}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// The server whose job ticked last, if within half a second.
    fn holder(&self) -> Option<usize> {
        let now = now_us();
        (0..NODES.len())
            .filter_map(|i| last_tick(&self.journal(i)).map(|t| (t, i)))
            .filter(|(t, _)| now.saturating_sub(*t) < 500_000)
            .max()
            .map(|(_, i)| i)
    }

    fn aimed(&self, aim: Aim) -> Vec<usize> {
        match aim {
            Aim::Holder => vec![self.holder().unwrap_or(0)],
            Aim::Node(i) => vec![i],
            Aim::All => (0..NODES.len()).collect(),
        }
    }

    /// Applies a fault and heals it; returns what it struck, for the log.
    fn apply(&mut self, fault: &Fault) -> String {
        match fault {
            Fault::Proxy { aim, mode, hold } => {
                let nodes = self.aimed(*aim);
                nodes.iter().for_each(|&i| self.proxies[i].set(*mode));
                std::thread::sleep(*hold);
                nodes.iter().for_each(|&i| self.proxies[i].set(Mode::Pass));
                format!(" → {}", names(&nodes))
            }
            Fault::Pause { hold } => {
                self.redis.pause();
                std::thread::sleep(*hold);
                self.redis.resume();
                String::new()
            }
            Fault::Restart { reenable } => {
                let lost = now_us();
                let port = self.redis.port;
                self.redis.restart();
                if self.redis.port != port {
                    self.proxies.iter().for_each(|p| p.retarget(self.redis.port));
                }
                std::thread::sleep(*reenable);
                self.enable();
                self.disabled.push((lost, now_us()));
                String::new()
            }
            Fault::Kill { aim, after } => {
                let i = self.aimed(*aim)[0];
                self.kill_worker(i);
                std::thread::sleep(*after);
                // PR_SET_PDEATHSIG ends the job with its worker; one still
                // alive now is a finding (and would tick on into the journal).
                let pids = jobs_of(&self.journal(i));
                if !pids.is_empty() {
                    self.orphans.push(format!("job(s) {pids:?} of {} alive {after:?} after kill -9", NODES[i]));
                    kill_jobs(&self.journal(i));
                }
                self.spawn_worker(i);
                format!(" → {}", NODES[i])
            }
            Fault::Restore => {
                let port = self.redis.port;
                self.redis.restart_from_snapshot();
                if self.redis.port != port {
                    self.proxies.iter().for_each(|p| p.retarget(self.redis.port));
                }
                // A snapshot taken while nobody had the job enabled (none
                // is) brings back flags off: the supervisor enables it again.
                self.enable();
                String::new()
            }
            Fault::Freeze { aim, hold } => {
                let i = self.aimed(*aim)[0];
                let Some(pid) = self.workers[i].as_ref().map(Child::id) else { return String::new() };
                // SAFETY: kill(2) on the pid of our own child, not yet reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
                let resume = Resume(pid as i32);
                std::thread::sleep(*hold);
                drop(resume);
                format!(" → {}", NODES[i])
            }
            Fault::Unlock => self.force_unlock(),
            Fault::Evict { policy } => {
                let held = self.holder().and_then(|i| self.workers[i].as_ref().map(|w| (i, w.id())));
                // SAFETY: kill(2) on the pid of our own child, not yet reaped.
                let frozen = held.map(|(_, pid)| {
                    unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
                    Resume(pid as i32)
                });
                let lost = now_us();
                let done = self.evict(policy).err().map(|e| format!(" (not done: {e})")).unwrap_or_default();
                std::thread::sleep(Duration::from_secs(1));
                drop(frozen);
                if *policy != "volatile-ttl" {
                    // The flags may be gone with the rest: she enables it again.
                    self.enable();
                    self.disabled.push((lost, now_us()));
                }
                format!("{}{done}", held.map(|(i, _)| format!(" → {} frozen", NODES[i])).unwrap_or_default())
            }
            Fault::Twin { aim } => {
                let i = self.aimed(*aim)[0];
                self.start_twin(i)
            }
            Fault::ReaperKill { aim } => {
                let i = self.aimed(*aim)[0];
                self.kill_reaper(i)
            }
            Fault::UnitKill { aim } => {
                let i = self.aimed(*aim)[0];
                self.kill_unit(i)
            }
            Fault::FreezeCut { aim, hold } => {
                let i = self.aimed(*aim)[0];
                let Some(pid) = self.workers[i].as_ref().map(Child::id) else { return String::new() };
                // SAFETY: kill(2) on the pid of our own child, not yet reaped.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
                let resume = Resume(pid as i32);
                std::thread::sleep(Duration::from_millis(200));
                self.proxies[i].set(Mode::Reset);
                std::thread::sleep(Duration::from_millis(100));
                self.proxies[i].set(Mode::Pass);
                let done = self.force_unlock();
                std::thread::sleep(hold.saturating_sub(Duration::from_millis(300)));
                drop(resume);
                format!(" → {}{done}", NODES[i])
            }
            Fault::StrayGone { aim } => {
                let i = self.aimed(*aim)[0];
                let said = self.worker_gone(i, GoneRun::Stray);
                if said.starts_with("released") {
                    self.orphans.push(format!("worker-gone by hand {said} of {}, whose worker lived", NODES[i]));
                }
                format!(" → {}: worker-gone {said}", NODES[i])
            }
            Fault::Flood { hold } => self.flood(*hold),
            Fault::HandoverLost => {
                let lost = self
                    .redis
                    .client()
                    .get_connection_with_timeout(Duration::from_secs(1))
                    .and_then(|mut c| redis::cmd("DEL").arg("{outbound}:handover").query::<i64>(&mut c));
                std::thread::sleep(Duration::from_millis(100));
                let done = self.force_unlock();
                match lost {
                    Ok(n) => format!(" ({n} record deleted){done}"),
                    Err(e) => format!(" (not done: {e}){done}"),
                }
            }
        }
    }

    /// Redisson's `forceUnlock`; says in the log when it could not be done.
    fn force_unlock(&self) -> String {
        let done = self
            .redis
            .client()
            .get_connection_with_timeout(Duration::from_secs(1))
            .and_then(|mut c| common::force_unlock(&mut c));
        done.err().map(|e| format!(" (not done: {e})")).unwrap_or_default()
    }

    /// Alice rewrites her own flag (on, a new time) as fast as Redis takes
    /// it, for `hold`; says how many writes.
    fn flood(&self, hold: Duration) -> String {
        let Ok(mut c) = self.redis.client().get_connection_with_timeout(Duration::from_secs(1)) else {
            return " (not done: no connection)".to_owned();
        };
        let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
        format!(" → {} writes", common::flood_flag(&mut c, hold))
    }

    /// Starts a worker under the name of worker `i`, as a cloned host would:
    /// it must stop at once, saying so, and never run the job.
    fn start_twin(&mut self, i: usize) -> String {
        let log = self.path.join(format!("{}-twin.log", NODES[i]));
        let Ok(file) = OpenOptions::new().create(true).append(true).open(&log) else { return String::new() };
        let Ok(mut twin) = self.worker_command(i).env("TWIN", "~twin").stdout(Stdio::null()).stderr(file).spawn()
        else {
            return " (not started)".to_owned();
        };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(status)) = twin.try_wait() {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                if !said.contains("another worker already runs as node") {
                    self.orphans.push(format!("a twin of {} stopped ({status}) without saying why", NODES[i]));
                }
                return format!(" → {}: stopped after {:?}", NODES[i], t.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Still trying (Redis frozen or unreachable meanwhile): no fault as
        // long as it never ran the job, which the journal would show.
        let _ = twin.kill();
        let _ = twin.wait();
        format!(" → {}: still waiting for Redis after 5 s", NODES[i])
    }

    /// Kills the reaper of worker `i` (`kill -9`): the job's processes,
    /// its background child among them, must be gone a second later.
    fn kill_reaper(&mut self, i: usize) -> String {
        let Some(worker) = self.workers[i].as_ref().map(Child::id) else { return String::new() };
        let Some(reaper) =
            procs::all().into_iter().find(|p| p.ppid == worker as i32 && p.cmdline.contains("lockwatch"))
        else {
            return format!(" → {}: no job running", NODES[i]);
        };
        // The job's processes: what names the journal, but for the worker
        // itself (its command line does too).
        let jobs: Vec<u32> = jobs_of(&self.journal(i)).into_iter().filter(|p| *p != worker).collect();
        // SAFETY: kill(2) on a process whose parent is our own worker: its reaper.
        unsafe { libc::kill(reaper.pid, libc::SIGKILL) };
        std::thread::sleep(Duration::from_secs(1));
        let left: Vec<u32> = jobs.into_iter().filter(|p| procs::runs(*p)).collect();
        if !left.is_empty() {
            self.orphans
                .push(format!("job process(es) {left:?} of {} alive 1 s after its reaper was killed", NODES[i]));
            for pid in &left {
                // SAFETY: kill(2) on a job process of this soak's own.
                unsafe { libc::kill(*pid as libc::pid_t, libc::SIGKILL) };
            }
        }
        format!(" → {}", NODES[i])
    }

    /// Kills the unit of worker `i` as systemd does when the worker dies:
    /// the worker, its reaper and its job's whole tree together, none of
    /// them left to let go of the lock. Then runs `worker-gone` as the
    /// unit's `ExecStopPost=` (once nothing of the unit runs), and starts
    /// the worker again [`RESTART_SEC`] after it ended.
    fn kill_unit(&mut self, i: usize) -> String {
        let killed = match self.workers[i].take() {
            Some(mut worker) => {
                let n = procs::kill_whole_tree(worker.id() as i32);
                let _ = worker.wait();
                n
            }
            None => 0,
        };
        if let Some(unit) = &self.units[i] {
            let left = unit.kill_all();
            if !left.is_empty() {
                self.orphans.push(format!("process(es) {left:?} of {}'s unit would not die", NODES[i]));
            }
        }
        let pids = jobs_of(&self.journal(i));
        if !pids.is_empty() {
            self.orphans.push(format!("job(s) {pids:?} of {} alive after its unit was killed", NODES[i]));
            kill_jobs(&self.journal(i));
        }
        let gone = self.worker_gone(i, GoneRun::StopPost);
        std::thread::sleep(RESTART_SEC);
        self.spawn_worker(i);
        format!(" → {}: {killed} processes killed; worker-gone {gone}", NODES[i])
    }

    /// Runs `lockwatch worker-gone` for worker `i`, with its connection
    /// options, node and lease, as its unit's `ExecStopPost=` does; its
    /// output goes to the worker's log, as to the unit's journal. Says what
    /// it did, and how long it took.
    fn worker_gone(&self, i: usize, run: GoneRun) -> String {
        let log = self.path.join(format!("{}.log", NODES[i]));
        let Ok(file) = OpenOptions::new().create(true).append(true).open(&log) else { return "not run".to_owned() };
        // As root, a stray run is made in a PID namespace of its own, where
        // no process of the worker's is seen.
        let stray_ns = run == GoneRun::Stray && common::unit::is_root();
        let mut gone = Command::new(if stray_ns { "unshare" } else { env!("CARGO_BIN_EXE_lockwatch") });
        if stray_ns {
            gone.args(["-pf", "--mount-proc", env!("CARGO_BIN_EXE_lockwatch")]);
        }
        gone.args(["--redis", &self.proxies[i].url(), "worker-gone", "--node", NODES[i], "--lease", LEASE])
            .env("LOCKWATCH_LOG", "info")
            .env("LC_ALL", "C");
        let mut cmd = match (&self.units[i], run) {
            // As the ExecStopPost= of the run of the unit that was killed.
            (Some(unit), GoneRun::StopPost) => unit.wrap(&gone, true),
            _ => gone,
        };
        cmd.stdin(Stdio::null()).stdout(Stdio::null());
        let t = Instant::now();
        let len_before = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
        let Ok(mut run) = cmd.stderr(file).spawn() else { return "not started".to_owned() };
        // systemd gives ExecStopPost= TimeoutStopSec=; here 10 s.
        let status = loop {
            match run.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if t.elapsed() < Duration::from_secs(10) => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = run.kill();
                    let _ = run.wait();
                    break None;
                }
            }
        };
        let took = t.elapsed().as_millis();
        let said = std::fs::read(&log).unwrap_or_default();
        let said = String::from_utf8_lossy(said.get(len_before as usize..).unwrap_or_default());
        match status {
            Some(s) if s.success() && said.contains("released it") => format!("released the lock in {took} ms"),
            Some(s) if s.success() => format!("let go of nothing ({took} ms)"),
            Some(s) => format!("failed ({s}, {took} ms): {}", said.trim()),
            None => format!("killed after {took} ms"),
        }
    }

    /// Takes a snapshot (`SAVE`) for a later restore; a failure is no fault.
    fn save(&self) {
        if let Ok(mut c) = self.redis.client().get_connection_with_timeout(Duration::from_secs(1)) {
            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
            let _: redis::RedisResult<()> = redis::cmd("SAVE").query(&mut c);
        }
    }

    /// Fills memory under `policy` with keys without expiry until the lock
    /// is evicted, and under `volatile-ttl` every heartbeat too (or 3 s
    /// pass), then frees it and lifts the limit.
    fn evict(&self, policy: &str) -> redis::RedisResult<()> {
        let mut c = self.redis.client().get_connection_with_timeout(Duration::from_secs(1))?;
        c.set_read_timeout(Some(Duration::from_secs(2)))?;
        let used: String = redis::cmd("INFO").arg("memory").query(&mut c)?;
        let used: u64 =
            used.lines().find_map(|l| l.strip_prefix("used_memory:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("maxmemory-policy")
            .arg(policy)
            .arg("maxmemory")
            .arg(used + 4 * 1024 * 1024)
            .query::<()>(&mut c)?;
        let value = vec![b'x'; 64 * 1024];
        let mut keys = vec!["{outbound}:lock".to_owned()];
        if policy == "volatile-ttl" {
            keys.extend(NODES.iter().map(|n| format!("{{outbound}}:node:{n}")));
        }
        let t = Instant::now();
        let mut n = 0;
        while t.elapsed() < Duration::from_secs(3) {
            // Refused (OOM) once nothing with an expiry is left: no fault.
            let _: redis::RedisResult<()> = redis::cmd("SET").arg(format!("cache:{n}")).arg(&value).query(&mut c);
            n += 1;
            if n > 64 && !redis::cmd("EXISTS").arg(&keys).query::<bool>(&mut c)? {
                break;
            }
        }
        let mut pipe = redis::pipe();
        for i in 0..n {
            pipe.del(format!("cache:{i}")).ignore();
        }
        pipe.cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).ignore();
        pipe.query(&mut c)
    }

    /// Keeps the journals and logs on disk for a look after a failure.
    fn keep_files(&mut self) -> PathBuf {
        self.dir.take().map(|d| d.keep()).unwrap_or_else(|| self.path.clone())
    }
}

impl Drop for SoakRig {
    fn drop(&mut self) {
        for i in 0..NODES.len() {
            self.kill_worker(i);
        }
        kill_jobs(&self.path);
        // The proxies and Redis (SIGKILL ends it even while stopped) follow
        // as fields.
    }
}

fn names(nodes: &[usize]) -> String {
    nodes.iter().map(|&i| NODES[i]).collect::<Vec<_>>().join(", ")
}

fn try_enable(redis: &RedisServer) -> redis::RedisResult<()> {
    let mut c = redis.client().get_connection_with_timeout(Duration::from_secs(1))?;
    c.set_read_timeout(Some(Duration::from_secs(1)))?;
    c.set_write_timeout(Some(Duration::from_secs(1)))?;
    let (s, us): (u64, u64) = redis::cmd("TIME").query(&mut c)?;
    redis::pipe()
        .cmd("HSET")
        .arg("{outbound}:enabled:alice")
        .arg(flag::ON)
        .arg("1")
        .arg(flag::TIME)
        .arg(s * 1000 + us / 1000)
        .arg(flag::HOST)
        .arg("soak-supervisor")
        .ignore()
        .cmd("SADD")
        .arg("{outbound}:users")
        .arg("alice")
        .ignore()
        .query(&mut c)
}

fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

/// Pids of live job processes (not zombies) whose command line names `marker`.
fn jobs_of(marker: &Path) -> Vec<u32> {
    procs::running_named(&marker.to_string_lossy()).iter().map(|p| p.pid as u32).collect()
}

/// Kills every job whose command line names `marker` (a journal or the soak's dir).
fn kill_jobs(marker: &Path) {
    for pid in jobs_of(marker) {
        // SAFETY: kill(2) on a pid just read from /proc whose command line
        // names this soak's own temp dir: one of the soak's jobs.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
    }
}

/// The time of the last complete line of a journal.
fn last_tick(path: &Path) -> Option<u64> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(256))).ok()?;
    let mut tail = String::new();
    file.read_to_string(&mut tail).ok()?;
    tail.lines().rev().find_map(|l| parse_tick(l).map(|t| t.at))
}

/// One journal line; `None` for a line cut short by a kill.
fn parse_tick(line: &str) -> Option<Tick> {
    let p: Vec<&str> = line.split(' ').collect();
    let [node, fence, pid, started, now] = p[..] else { return None };
    if now.len() < 16 {
        return None;
    }
    Some(Tick {
        node: node.to_owned(),
        fence: fence.parse().ok()?,
        pid: pid.parse().ok()?,
        started: started.parse().ok()?,
        at: now.parse().ok()?,
    })
}

/// Every tick of the journals (times in µs).
fn read_ticks(journals: &[PathBuf]) -> Vec<Tick> {
    let mut ticks = Vec::new();
    for path in journals {
        ticks.extend(std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(parse_tick));
    }
    ticks
}

/// What the journals say.
struct Report {
    seed: u64,
    /// When the faults began (µs): times in the report count from here.
    begin: u64,
    minutes: f64,
    cycles: BTreeMap<&'static str, usize>,
    cycle_count: usize,
    runs: Vec<Run>,
    /// Pairs of runs of different servers whose ticks interleave, with how
    /// long (µs), both runs begun on the same Redis data.
    overlaps: Vec<(Run, Run, u64)>,
    /// The same where Redis lost its data after the first run began.
    overlaps_after_loss: Vec<(Run, Run, u64)>,
    /// Two processes of one server at once (a job outliving its worker).
    same_server: Vec<(Run, Run, u64)>,
    /// A run whose fence is not above an earlier run of another server, with
    /// no data loss between them.
    fences_back_same_data: Vec<(Run, Run)>,
    /// The same across a Redis restart that lost the data.
    fences_back_after_loss: Vec<(Run, Run)>,
    /// Longest stretch (µs) with no tick from any server, where it began, and
    /// the cycle it fell in.
    longest_gap: (u64, u64, Option<usize>),
    /// The same, not counting time in which nobody had the job enabled.
    longest_gap_enabled: u64,
    /// Each change of server: the margin (µs) between the last tick of one
    /// and the first of the next, and whether Redis lost its data between
    /// their starts. A margin below `longest_tick` could hide an overlap
    /// shorter than a tick pause.
    handovers: Vec<(u64, bool)>,
    /// The longest pause between two ticks of one run: the journal's resolution.
    longest_tick: u64,
    orphans: Vec<String>,
    running_at_end: bool,
    cycle_list: Vec<(usize, String, u64, u64)>,
}

impl Report {
    fn new(rig: &SoakRig, cycles: &[Cycle], begin: u64, end: u64, seed: u64) -> Report {
        let runs = journal::runs(read_ticks(&rig.journals()));
        let losses: Vec<u64> = rig.disabled.iter().map(|d| d.0).collect();
        let mut overlaps = Vec::new();
        let mut overlaps_after_loss = Vec::new();
        let mut same_server = Vec::new();
        for (a, b, both) in journal::overlaps(&runs) {
            let loss_between = losses.iter().any(|&t| a.first < t && t <= b.first);
            if a.node != b.node && loss_between {
                overlaps_after_loss.push((a, b, both));
            } else if a.node != b.node {
                overlaps.push((a, b, both));
            } else {
                same_server.push((a, b, both));
            }
        }
        let mut fences_back_same_data = Vec::new();
        let mut fences_back_after_loss = Vec::new();
        for (i, later) in runs.iter().enumerate() {
            let last_loss = losses.iter().copied().filter(|&t| t <= later.first).max().unwrap_or(0);
            let others = runs[..i].iter().filter(|e| e.node != later.node);
            // Each run counts once, against the highest fence it should have beaten.
            if let Some(top) = others.clone().filter(|e| e.first >= last_loss).max_by_key(|e| e.fence)
                && later.fence <= top.fence
            {
                fences_back_same_data.push((top.clone(), later.clone()));
            } else if let Some(top) = others.max_by_key(|e| e.fence)
                && later.fence <= top.fence
            {
                fences_back_after_loss.push((top.clone(), later.clone()));
            }
        }

        let mut ticks: Vec<u64> = read_ticks(&rig.journals()).into_iter().map(|t| t.at).collect();
        ticks.retain(|&t| t >= begin && t <= end);
        ticks.sort_unstable();
        let mut edges = vec![begin];
        edges.extend(&ticks);
        edges.push(end);
        let disabled_within = |from: u64, to: u64| -> u64 {
            rig.disabled.iter().map(|&(a, b)| b.min(to).saturating_sub(a.max(from))).sum()
        };
        let mut longest_gap = (0, begin, None);
        let mut longest_gap_enabled = 0;
        for w in edges.windows(2) {
            let gap = w[1] - w[0];
            if gap > longest_gap.0 {
                let cycle = cycles.iter().rposition(|c| c.at <= w[1]).map(|i| i + 1);
                longest_gap = (gap, w[0], cycle);
            }
            longest_gap_enabled = longest_gap_enabled.max(gap - disabled_within(w[0], w[1]));
        }

        let longest_tick = runs.iter().map(|r| r.longest_tick).max().unwrap_or(0);
        let mut handovers = Vec::new();
        let mut last_end: Option<&Run> = None;
        for r in &runs {
            if let Some(prev) = last_end
                && prev.node != r.node
                && r.first > prev.last
            {
                let after_loss = losses.iter().any(|&t| prev.first < t && t <= r.first);
                handovers.push((r.first - prev.last, after_loss));
            }
            if last_end.is_none_or(|p| r.last > p.last) {
                last_end = Some(r);
            }
        }

        let mut kinds = BTreeMap::new();
        for c in cycles {
            *kinds.entry(c.fault.kind()).or_default() += 1;
        }
        let running_at_end = ticks.last().is_some_and(|&t| end - t < 1_000_000);
        Report {
            seed,
            begin,
            minutes: (end - begin) as f64 / 60e6,
            cycles: kinds,
            cycle_count: cycles.len(),
            runs,
            overlaps,
            overlaps_after_loss,
            same_server,
            fences_back_same_data,
            fences_back_after_loss,
            longest_gap,
            longest_gap_enabled,
            handovers,
            longest_tick,
            orphans: rig.orphans.clone(),
            running_at_end,
            cycle_list: cycles.iter().enumerate().map(|(i, c)| (i + 1, c.fault.to_string(), c.at, c.healed)).collect(),
        }
    }

    /// A run, with times in seconds since the faults began.
    fn show(&self, r: &Run) -> String {
        let s = |us: u64| (us as f64 - self.begin as f64) / 1e6;
        format!("{} fence {} (pid {}, {:.3}–{:.3} s, {} ticks)", r.node, r.fence, r.pid, s(r.first), s(r.last), r.ticks)
    }

    fn passed(&self) -> bool {
        self.overlaps.is_empty()
            && (!NO_OVERLAP_AFTER_DATA_LOSS || self.overlaps_after_loss.is_empty())
            && self.fences_back_same_data.is_empty()
            && (!FENCE_SURVIVES_DATA_LOSS || self.fences_back_after_loss.is_empty())
            && self.orphans.is_empty()
            && self.same_server.is_empty()
            && self.running_at_end
    }

    /// The fault cycles around a moment, to read a finding against.
    fn cycles_near(&self, at: u64) -> String {
        let window = LEASE_MS * 1_000 * 2;
        self.cycle_list
            .iter()
            .filter(|(_, _, from, to)| *from <= at + window / 2 && at <= to + window)
            .map(|(n, what, from, _)| {
                format!("cycle {n} ({what}) began {} ms before", (at as i64 - *from as i64) / 1000)
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |us: u64| us as f64 / 1000.0;
        writeln!(
            f,
            "soak figures (seed {}, {:.1} min of faults, {} servers, lease {LEASE}):",
            self.seed,
            self.minutes,
            NODES.len()
        )?;
        let kinds: Vec<String> = self.cycles.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(f, "  fault cycles: {} ({})", self.cycle_count, kinds.join(", "))?;
        writeln!(f, "  runs: {}, handovers between servers: {}", self.runs.len(), self.handovers.len())?;
        writeln!(f, "  overlaps between servers: {}", self.overlaps.len())?;
        for (a, b, us) in self.overlaps.iter().take(10) {
            writeln!(
                f,
                "    OVERLAP {:.1} ms: {} and {}; {}",
                ms(*us),
                self.show(a),
                self.show(b),
                self.cycles_near(b.first)
            )?;
        }
        writeln!(
            f,
            "  overlaps between servers across a Redis data loss: {} ({})",
            self.overlaps_after_loss.len(),
            if NO_OVERLAP_AFTER_DATA_LOSS { "asserted" } else { "NOT asserted: NO_OVERLAP_AFTER_DATA_LOSS is off" }
        )?;
        for (a, b, us) in self.overlaps_after_loss.iter().take(10) {
            writeln!(
                f,
                "    OVERLAP AFTER DATA LOSS {:.1} ms: {} and {}; {}",
                ms(*us),
                self.show(a),
                self.show(b),
                self.cycles_near(b.first)
            )?;
        }
        writeln!(f, "  two jobs at once on one server: {}", self.same_server.len())?;
        for (a, b, us) in self.same_server.iter().take(5) {
            writeln!(f, "    {:.1} ms: {} and {}; {}", ms(*us), self.show(a), self.show(b), self.cycles_near(b.first))?;
        }
        writeln!(f, "  fences not growing, same Redis data: {}", self.fences_back_same_data.len())?;
        for (a, b) in self.fences_back_same_data.iter().take(5) {
            writeln!(f, "    {} after {}; {}", self.show(b), self.show(a), self.cycles_near(b.first))?;
        }
        writeln!(
            f,
            "  fences not growing across a data loss: {} ({})",
            self.fences_back_after_loss.len(),
            if FENCE_SURVIVES_DATA_LOSS { "asserted" } else { "not asserted: FENCE_SURVIVES_DATA_LOSS is off" }
        )?;
        for (a, b) in self.fences_back_after_loss.iter().take(3) {
            writeln!(f, "    {} after {}", self.show(b), self.show(a))?;
        }
        let (gap, from, cycle) = self.longest_gap;
        writeln!(
            f,
            "  longest time without a runner: {:.2} s from {:.3} s (cycle {}); {:.2} s while the job was enabled",
            gap as f64 / 1e6,
            (from - self.begin) as f64 / 1e6,
            cycle.map_or("none".to_owned(), |c| c.to_string()),
            self.longest_gap_enabled as f64 / 1e6
        )?;
        for after_loss in [false, true] {
            let margins: Vec<u64> = self.handovers.iter().filter(|h| h.1 == after_loss).map(|h| h.0).collect();
            writeln!(
                f,
                "  handovers {}: {}, closest {} ms, {} closer than the longest tick pause inside a run ({:.0} ms)",
                if after_loss { "across a data loss" } else { "on the same Redis data" },
                margins.len(),
                margins.iter().min().map_or("-".to_owned(), |&c| format!("{:.1}", ms(c))),
                margins.iter().filter(|&&m| m <= self.longest_tick).count(),
                ms(self.longest_tick)
            )?;
        }
        writeln!(f, "  jobs that outlived their worker: {}", self.orphans.len())?;
        for o in self.orphans.iter().take(5) {
            writeln!(f, "    {o}")?;
        }
        write!(f, "  running at the end: {}", self.running_at_end)
    }
}
