//! Workers as real processes against a real Redis: exactly one runs the job;
//! `kill -9` takes the job down with the worker and the other takes over
//! within the lease; SIGTERM hands over at once; flags off stop the job; a
//! silent job shows as stale; losing Redis stops the job before the lease
//! ends; the lock looks to a Redisson client like its own.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::journal::{assert_no_overlap, journal, journal_pair, journal_worker, now_ns};
use common::procs::runs;
use common::*;
use lockwatch::connect::Target;
use lockwatch::probe::probe;
use lockwatch::status::{Config, Engine};
use lockwatch::{Keys, State};

fn holder_node(c: &mut redis::Connection) -> Option<String> {
    let field: Vec<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query(c).ok()?;
    let field = field.first()?.clone();
    ["srv-a", "srv-b"]
        .iter()
        .find(|n| {
            let f: Option<String> =
                redis::cmd("HGET").arg(format!("{{outbound}}:node:{n}")).arg(beat::LOCK_FIELD).query(c).unwrap();
            f.as_deref() == Some(field.as_str())
        })
        .map(|n| n.to_string())
}

fn beat_field(c: &mut redis::Connection, node: &str, field: &str) -> Option<String> {
    redis::cmd("HGET").arg(format!("{{outbound}}:node:{node}")).arg(field).query(c).unwrap()
}

async fn wait_holder(c: &mut redis::Connection, not: Option<&str>) -> String {
    eventually("a holder", Duration::from_secs(10), || holder_node(c).filter(|h| Some(h.as_str()) != not)).await
}

#[tokio::test]
async fn kill_9_of_the_holder_takes_its_job_along_and_the_other_takes_over() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let lease_ms = 2_000;
    let mut workers = journal_pair(&url, "2s", &j);
    let mut takeovers = Vec::new();
    for _round in 0..3 {
        let holder = wait_holder(&mut c, None).await;
        let child: u32 = eventually("the child pid", Duration::from_secs(5), || {
            beat_field(&mut c, &holder, "child_pid").and_then(|p| p.parse().ok())
        })
        .await;
        assert!(runs(child));
        let i = workers.iter().position(|(n, _)| *n == holder).unwrap();
        let killed_at = now_ns();
        let t0 = Instant::now();
        workers[i].1.kill9();
        eventually("the child to die with its worker", Duration::from_secs(1), || (!runs(child)).then_some(())).await;
        let other = if holder == "srv-a" { "srv-b" } else { "srv-a" };
        eventually("the other server's job", Duration::from_millis(lease_ms + 1_000), || {
            journal(&j).iter().any(|l| l.1 == other && l.2 > killed_at).then_some(())
        })
        .await;
        takeovers.push(t0.elapsed());
        workers[i].1 = journal_worker(&url, &holder, "2s", &j);
    }
    println!("takeover after kill -9 (lease 2 s): {takeovers:?}");
    for (_, w) in &mut workers {
        w.kill9();
    }
    assert_no_overlap(&journal(&j));
}

#[tokio::test]
async fn sigterm_hands_over_in_under_a_second() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    // A 30 s lease: a first start on a counter-less Redis would wait 30 s.
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut a = journal_worker(&url, "srv-a", "30s", &j);
    let holder = wait_holder(&mut c, None).await;
    assert_eq!(holder, "srv-a");
    let mut b = journal_worker(&url, "srv-b", "30s", &j);
    eventually("srv-b to beat", Duration::from_secs(5), || beat_field(&mut c, "srv-b", beat::STATE)).await;
    let t0 = Instant::now();
    let asked = now_ns();
    a.sigterm();
    eventually("srv-b's job", Duration::from_secs(2), || {
        journal(&j).iter().any(|l| l.1 == "srv-b" && l.2 > asked).then_some(())
    })
    .await;
    let handover = t0.elapsed();
    println!("hand-over after SIGTERM: {handover:?}");
    assert!(handover < Duration::from_secs(1), "{handover:?}");
    assert!(a.wait().unwrap().success(), "the worker exits 0 after SIGTERM");
    b.kill9();
    assert_no_overlap(&journal(&j));
}

/// A worker stopped by SIGTERM says so, that it released the lock, and
/// that it stopped: what an admin reads in `journalctl` after a stop.
#[tokio::test]
async fn a_worker_stopped_by_sigterm_says_so_and_that_it_released_the_lock() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let mut w = WorkerProcess::spawn(worker_command(&url, "srv-a", "3s", &[], "sleep 100").stderr(Stdio::piped()));
    wait_holder(&mut c, None).await;
    w.sigterm();
    let code = eventually("the worker to stop", Duration::from_secs(10), || w.try_wait().unwrap()).await;
    assert!(code.success(), "{code}");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut w.stderr.take().unwrap(), &mut said).unwrap();
    let at = |text: &str| said.find(text).unwrap_or_else(|| panic!("no {text:?} in: {said}"));
    assert!(at("SIGTERM received") < at("released the lock"), "{said}");
    assert!(at("released the lock") < at("worker stopped"), "{said}");
}

#[tokio::test]
async fn all_flags_off_stop_the_job_and_release_the_lock() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    flag(&mut c, "outbound", "bob", true);
    // A 30 s lease: a first start on a counter-less Redis would wait 30 s.
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut a = journal_worker(&url, "srv-a", "30s", &j);
    wait_holder(&mut c, None).await;
    let child: u32 = eventually("child", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-a", beat::CHILD_PID).and_then(|p| p.parse().ok())
    })
    .await;
    flag(&mut c, "outbound", "alice", false);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(runs(child), "one flag still on keeps the job");
    flag(&mut c, "outbound", "bob", false);
    eventually("the job to stop", Duration::from_secs(5), || (!runs(child)).then_some(())).await;
    eventually("the lock to be released", Duration::from_secs(5), || {
        let exists: bool = redis::cmd("EXISTS").arg("{outbound}:lock").query(&mut c).unwrap();
        (!exists).then_some(())
    })
    .await;
    // The release is recorded right after it took effect, in a write of its own.
    eventually("released and job-exited on the event stream", Duration::from_secs(5), || {
        let events: Vec<redis::Value> =
            redis::cmd("XRANGE").arg("{outbound}:events").arg("-").arg("+").query(&mut c).unwrap();
        let text = format!("{events:?}");
        (text.contains("released") && text.contains("job-exited")).then_some(())
    })
    .await;
    a.kill9();
}

#[tokio::test]
async fn a_silent_job_is_stale_while_the_lock_is_still_renewed() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let mut a =
        WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "1500ms", &["--stall-after", "1s"], "sleep 600"));
    eventually("the job", Duration::from_secs(10), || {
        beat_field(&mut c, "srv-a", beat::CHILD_PID).filter(|p| !p.is_empty())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    let target = Target::new(&url, None).unwrap();
    let mut conn = target.manager().await.unwrap();
    let keys = Keys::new("outbound");
    let mut engine = Engine::new("outbound", &keys.lock, Config::default());
    let mut last = None;
    for _ in 0..3 {
        let snap = probe(&mut conn, &keys, target.endpoint()).await.unwrap();
        last = Some(engine.handle_read(&snap).status);
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let s = last.unwrap();
    assert_eq!(s.state, State::Stale, "{}", s.reason);
    assert!(s.reason.starts_with("hung"), "{}", s.reason);
    assert!(s.lock.ttl_ms.is_some(), "the lease (1.5 s) is still being renewed after 5 s");
    a.kill9();
}

#[tokio::test]
async fn losing_redis_stops_the_job_before_the_lease_runs_out() {
    let (mut server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut a = journal_worker(&url, "srv-a", "2s", &j);
    wait_holder(&mut c, None).await;
    let child: u32 = eventually("child", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-a", beat::CHILD_PID).and_then(|p| p.parse().ok())
    })
    .await;
    let pttl_before: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut c).unwrap();
    let killed_at = now_ns();
    server.kill();
    // The lease would run out at the latest pttl_before ms after the kill.
    eventually("the job to stop", Duration::from_millis(pttl_before as u64), || (!runs(child)).then_some(())).await;
    let last = journal(&j).iter().map(|l| l.2).max().unwrap();
    let margin_ms = (killed_at + pttl_before as u128 * 1_000_000).saturating_sub(last) / 1_000_000;
    println!("job stopped {margin_ms} ms before the lease could have run out");
    assert!(margin_ms > 0);
    a.kill9();
}

#[tokio::test]
async fn the_lock_is_redissons_and_a_redisson_unlock_wakes_the_worker_at_once() {
    let (server, url, mut c) = server_with_flag("alice", true);
    // A Java service holds the lock through Redisson.
    let java = "d9b0a1f2-0000-4c3e-8a1b-7c9d2e4f6a80:88";
    redisson_lock(&mut c, "{outbound}:lock", java, 60_000);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut a = journal_worker(&url, "srv-a", "3s", &j);
    eventually("srv-a to beat idle", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-a", beat::STATE).filter(|s| s == "idle")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(journal(&j).is_empty(), "the worker must wait while Redisson holds the lock");

    // Redisson's unlock: hold count to zero, DEL, publish 0 on the channel.
    let t0 = Instant::now();
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg("{outbound}:lock")
        .ignore()
        .cmd("PUBLISH")
        .arg("redisson_lock__channel:{outbound}:lock")
        .arg(0)
        .ignore()
        .query(&mut c)
        .unwrap();
    eventually("srv-a to take the lock", Duration::from_secs(2), || holder_node(&mut c)).await;
    let woke = t0.elapsed();
    println!("worker took the lock {woke:?} after a Redisson unlock");
    assert!(woke < Duration::from_millis(500), "{woke:?}");

    // As a Redisson client sees it: one field <uuid>:<thread> with hold count 1, a lease.
    let fields: Vec<(String, String)> = redis::cmd("HGETALL").arg("{outbound}:lock").query(&mut c).unwrap();
    assert_eq!(fields.len(), 1);
    let (field, count) = &fields[0];
    let (uuid, thread) = field.rsplit_once(':').unwrap();
    assert_eq!(uuid.len(), 36);
    assert!(thread.parse::<u64>().is_ok());
    assert_eq!(count, "1");
    let pttl: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut c).unwrap();
    assert!(pttl > 0 && pttl <= 3_000, "{pttl}");
    // Redisson's tryLock finds it held by someone else and gets the PTTL.
    let exists: bool = redis::cmd("HEXISTS").arg("{outbound}:lock").arg(java).query(&mut c).unwrap();
    assert!(!exists);

    // And the worker's release wakes Redisson waiters with "0".
    let mut sub = server.client().get_connection().unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.subscribe("redisson_lock__channel:{outbound}:lock").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    a.sigterm();
    let msg = pubsub.get_message().unwrap();
    assert_eq!(msg.get_payload::<String>().unwrap(), "0");
    assert!(a.wait().unwrap().success());
}

#[tokio::test]
async fn an_embedded_task_gets_the_fence_and_its_silence_shows_as_stalled() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, Ordering};

    use lockwatch::work::job::Work;
    use lockwatch::work::worker::{self, Options};

    let (_server, url, mut c) = server_with_flag("alice", true);
    let seen_fence = Arc::new(AtomicI64::new(0));
    let seen = seen_fence.clone();
    let work = Work::Task(Arc::new(move |mut ctx| {
        let seen = seen.clone();
        Box::pin(async move {
            seen.store(ctx.fence, Ordering::SeqCst);
            // Alive for a second, then silent until told to stop.
            for _ in 0..10 {
                ctx.liveness.beat();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let _ = ctx.stop.wait_for(|stop| *stop).await;
        })
    }));
    let opts = Options {
        node: "svc-1".into(),
        fallback_node: None,
        lease: lockwatch::work::lease::Lease::new(Duration::from_secs(3)),
        every: None,
        stall_after: Some(Duration::from_millis(600)),
        tick: Duration::from_millis(200),
        stop_grace: Duration::from_secs(1),
        work,
        connection: None,
    };
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let target = Target::new(&url, None).unwrap();
    let run = tokio::spawn(worker::run(target, Keys::new("outbound"), opts, async move {
        let _ = stop_rx.await;
    }));
    // The first start on this new Redis waits the 3 s lease.
    eventually("running", Duration::from_secs(10), || {
        beat_field(&mut c, "svc-1", beat::STATE).filter(|s| s == "running")
    })
    .await;
    let fence: i64 = redis::cmd("GET").arg("{outbound}:fence").query(&mut c).unwrap();
    assert_eq!(seen_fence.load(Ordering::SeqCst), fence);
    eventually("stalled", Duration::from_secs(5), || {
        beat_field(&mut c, "svc-1", beat::STATE).filter(|s| s == "stalled")
    })
    .await;
    stop_tx.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(5), run).await.unwrap().unwrap().unwrap();
    let exists: bool = redis::cmd("EXISTS").arg("{outbound}:lock").query(&mut c).unwrap();
    assert!(!exists, "released on shutdown");
    assert_eq!(beat_field(&mut c, "svc-1", beat::STATE).as_deref(), Some("idle"));
}

/// A job that starts a grandchild and a grandchild in a session of its own
/// (`setsid`), both sleeping, and writes the three pids to `$DIR`.
const TREE: &str = r#"sh -c 'echo $$ > "$DIR/gc1"; exec sleep 600' &
setsid sh -c 'echo $$ > "$DIR/gc2"; exec sleep 601' &
echo $$ > "$DIR/job"
while :; do sleep 1; done"#;

/// Pids a test started indirectly, killed when the test ends however it ends.
struct Strays(Vec<u32>);

impl Drop for Strays {
    fn drop(&mut self) {
        for pid in &self.0 {
            if runs(*pid) {
                unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
            }
        }
    }
}

/// Waits for the job of `TREE` and both its grandchildren to run, then
/// forgets their pid files (so the next run's are told apart).
async fn job_tree(dir: &Path) -> Strays {
    let read = |name: &str| -> Option<u32> { std::fs::read_to_string(dir.join(name)).ok()?.trim().parse().ok() };
    let pids = eventually("the job and both grandchildren", Duration::from_secs(10), || {
        Some(vec![read("job")?, read("gc1")?, read("gc2")?]).filter(|p| p.iter().all(|p| runs(*p)))
    })
    .await;
    for name in ["job", "gc1", "gc2"] {
        let _ = std::fs::remove_file(dir.join(name));
    }
    Strays(pids)
}

async fn all_gone(what: &str, tree: &Strays) {
    eventually(what, Duration::from_secs(5), || tree.0.iter().all(|p| !runs(*p)).then_some(())).await;
}

fn tree_worker(url: &str, node: &str, dir: &Path) -> WorkerProcess {
    WorkerProcess::spawn(worker_command(url, node, "2s", &[], TREE).env("DIR", dir))
}

#[tokio::test]
async fn kill_9_of_the_worker_takes_the_jobs_whole_tree_along_setsid_or_not() {
    let (_server, url, _) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let mut a = tree_worker(&url, "srv-a", dir.path());
    let tree = job_tree(dir.path()).await;
    let t0 = Instant::now();
    a.kill9();
    all_gone("the job, its grandchild and its setsid grandchild to die with the worker", &tree).await;
    println!("whole job tree gone {:?} after kill -9 of the worker", t0.elapsed());
}

#[tokio::test]
async fn kill_9_of_the_reaper_takes_the_jobs_whole_tree_along_setsid_or_not() {
    let (_server, url, _) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let a = tree_worker(&url, "srv-a", dir.path());
    let tree = job_tree(dir.path()).await;
    let reaper = common::procs::all()
        .into_iter()
        .find(|p| p.ppid == a.pid() && p.cmdline.contains("lockwatch"))
        .expect("the worker's reaper");
    let t0 = Instant::now();
    // SAFETY: kill(2) on the reaper this test's worker started.
    unsafe { libc::kill(reaper.pid, libc::SIGKILL) };
    all_gone("the job, its grandchild and its setsid grandchild to die with the reaper", &tree).await;
    println!("whole job tree gone {:?} after kill -9 of the reaper", t0.elapsed());
}

#[tokio::test]
async fn flags_off_and_sigterm_stop_the_jobs_whole_tree_setsid_or_not() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let mut a = tree_worker(&url, "srv-a", dir.path());
    let tree = job_tree(dir.path()).await;
    flag(&mut c, "outbound", "alice", false);
    all_gone("the whole tree to stop when all flags are off", &tree).await;
    flag(&mut c, "outbound", "alice", true);
    let tree = job_tree(dir.path()).await;
    a.sigterm();
    assert!(a.wait().unwrap().success(), "the worker exits 0 after SIGTERM");
    all_gone("the whole tree to stop with the worker's SIGTERM", &tree).await;
}

#[tokio::test]
async fn a_lost_lock_kills_the_jobs_whole_tree_setsid_or_not() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let mut a = tree_worker(&url, "srv-a", dir.path());
    let tree = job_tree(dir.path()).await;
    let t0 = Instant::now();
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    all_gone("the whole tree to die when the lock is lost", &tree).await;
    println!("whole job tree gone {:?} after the lock was deleted (lease 2 s, renewal every 667 ms)", t0.elapsed());
    a.kill9();
}

#[tokio::test]
async fn the_job_keeps_its_stdout_stderr_and_exit_status() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let mut cmd = worker_command(&url, "srv-a", "2s", &[], "echo to-stdout; echo to-stderr >&2; exit 3");
    let mut a = WorkerProcess::spawn(cmd.stdout(Stdio::piped()).stderr(Stdio::piped()));
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(a.stdout.take().unwrap()));
    let err = drain(Box::new(a.stderr.take().unwrap()));
    eventually("the job's exit status in the heartbeat", Duration::from_secs(10), || {
        beat_field(&mut c, "srv-a", beat::LAST_EXIT).filter(|s| s == "exit status: 3")
    })
    .await;
    a.sigterm();
    assert!(a.wait().unwrap().success());
    assert!(out.join().unwrap().contains("to-stdout\n"));
    assert!(err.join().unwrap().contains("to-stderr\n"));
}

#[tokio::test]
async fn the_job_inherits_no_redis_credentials() {
    let server = RedisServer::with_args(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}", server.port);
    let mut c = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    flag(&mut c, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("env");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    cmd.args([
        "worker",
        "--node",
        "srv-a",
        "--lease",
        "2s",
        "--",
        "sh",
        "-c",
        r#"env > "$DUMP.tmp"; mv "$DUMP.tmp" "$DUMP"; sleep 600"#,
    ])
    .env("LOCKWATCH_REDIS_URL", &url)
    .env("REDISCLI_AUTH", "s3cret-pw")
    .env("DUMP", &dump)
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let mut a = WorkerProcess::spawn(&mut cmd);
    let env =
        eventually("the job's environment", Duration::from_secs(10), || std::fs::read_to_string(&dump).ok()).await;
    a.kill9();
    assert!(env.contains("LOCKWATCH_FENCE="), "{env}");
    assert!(!env.contains("s3cret-pw"), "the job sees the worker's password:\n{env}");
    for var in ["LOCKWATCH_REDIS_URL", "REDISCLI_AUTH", "LOCKWATCH_SENTINEL", "LOCKWATCH_REAPER"] {
        assert!(!env.contains(var), "the job sees {var}:\n{env}");
    }
}

#[tokio::test]
async fn output_nobody_reads_starves_neither_the_renewals_nor_the_kill() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    // Two writers, so that both streams fill up whichever blocks first.
    let chatty = r#"echo $$ > "$DIR/job"; while :; do echo "error line nobody reads" >&2; done &
while :; do echo "output line nobody reads"; done"#;
    let mut cmd = worker_command(&url, "srv-a", "1500ms", &[], chatty);
    // Both pipes stay open and are never read: they fill up and block writers.
    let mut a = WorkerProcess::spawn(cmd.env("DIR", dir.path()).stdout(Stdio::piped()).stderr(Stdio::piped()));
    let job: u32 = eventually("the job", Duration::from_secs(10), || {
        std::fs::read_to_string(dir.path().join("job")).ok()?.trim().parse().ok()
    })
    .await;
    let _stray = Strays(vec![job]);
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        let pttl: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut c).unwrap();
        assert!(pttl > 0, "the 1.5 s lease was not renewed while the job's output was stuck (PTTL {pttl})");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(runs(job));
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    eventually("the job to be killed after the lock was deleted", Duration::from_secs(3), || {
        (!runs(job)).then_some(())
    })
    .await;
    a.kill9();
}

#[tokio::test]
async fn sigterm_while_the_worker_first_connects_stops_it_cleanly() {
    // A server that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://127.0.0.1:{}", silent.local_addr().unwrap().port());
    let mut a = WorkerProcess::spawn(&mut worker_command(&url, "srv-a", "2s", &[], "sleep 600"));
    let _first = silent.accept().unwrap();
    a.sigterm();
    let status =
        eventually("the worker to stop after SIGTERM", Duration::from_secs(30), || a.try_wait().unwrap()).await;
    assert!(
        status.success(),
        "SIGTERM during the first connection must stop the worker cleanly, not kill it: {status}"
    );
}

#[tokio::test]
async fn released_is_recorded_only_when_the_release_released() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    // A job that ignores SIGTERM, so stopping it takes the whole grace.
    let stubborn = r#"trap '' TERM; echo $$ > "$DIR/job"; while :; do sleep 0.1; done"#;
    let mut cmd = worker_command(&url, "srv-a", "3s", &["--stop-grace", "5s"], stubborn);
    let mut a = WorkerProcess::spawn(cmd.env("DIR", dir.path()));
    let job: u32 = eventually("the job", Duration::from_secs(10), || {
        std::fs::read_to_string(dir.path().join("job")).ok()?.trim().parse().ok()
    })
    .await;
    let _stray = Strays(vec![job]);
    flag(&mut c, "outbound", "alice", false);
    eventually("the worker to stop the job", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-a", beat::STATE).filter(|s| s == "stopping")
    })
    .await;
    // While the job takes its time, somebody else takes the lock over.
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg("{outbound}:lock")
        .ignore()
        .hset("{outbound}:lock", "d9b0a1f2-0000-4c3e-8a1b-7c9d2e4f6a80:88", 1)
        .ignore()
        .pexpire("{outbound}:lock", 60_000)
        .ignore()
        .query(&mut c)
        .unwrap();
    eventually("the job to end", Duration::from_secs(10), || (!runs(job)).then_some(())).await;
    eventually("the worker to be idle", Duration::from_secs(10), || {
        beat_field(&mut c, "srv-a", beat::STATE).filter(|s| s == "idle")
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let kinds: Vec<String> = stream_events(&mut c).into_iter().map(|e| e.kind).collect();
    assert!(!kinds.contains(&"released".to_owned()), "a lock taken over was recorded as released: {kinds:?}");
    assert!(kinds.contains(&"lost".to_owned()), "{kinds:?}");
    let holder: Vec<String> = redis::cmd("HKEYS").arg("{outbound}:lock").query(&mut c).unwrap();
    assert_eq!(holder, ["d9b0a1f2-0000-4c3e-8a1b-7c9d2e4f6a80:88"], "the other holder keeps the lock");
    a.kill9();
}

fn info_field(c: &mut redis::Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(c).unwrap();
    info.lines().find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_owned()))
}

#[tokio::test]
async fn without_a_replica_confirming_the_lock_the_job_stops_and_does_not_start() {
    let primary = RedisServer::start();
    let replica = RedisServer::with_args(&["--replicaof", "127.0.0.1", &primary.port.to_string()]);
    let mut c = primary.conn();
    eventually("the replica to be online", Duration::from_secs(10), || {
        info_field(&mut c, "replication", "slave0").filter(|s| s.contains("state=online"))
    })
    .await;
    let replica_pid: i32 = info_field(&mut replica.conn(), "server", "process_id").unwrap().parse().unwrap();
    flag(&mut c, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let lease = Duration::from_secs(2);
    let mut a = journal_worker(&primary.url(), "srv-a", "2s", &j);
    eventually("srv-a's job with a healthy replica", Duration::from_secs(10), || {
        journal(&j).iter().any(|l| l.1 == "srv-a").then_some(())
    })
    .await;
    let child: u32 = eventually("the child pid", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-a", beat::CHILD_PID).and_then(|p| p.parse().ok())
    })
    .await;
    let _stray = Strays(vec![child]);

    // The replica stops acknowledging: no renewal can be confirmed.
    let stopped_at = now_ns();
    unsafe { libc::kill(replica_pid, libc::SIGSTOP) };
    let _resume = Resume(replica_pid);
    eventually("the job to stop without a replica's confirmation", lease * 2, || (!runs(child)).then_some(())).await;
    let last = journal(&j).iter().map(|l| l.2).max().unwrap();
    let margin_ms = (stopped_at + lease.as_nanos()).saturating_sub(last) / 1_000_000;
    println!("job stopped {margin_ms} ms before a lease from the replica's last confirmation could have run out");
    assert!(last < stopped_at + lease.as_nanos(), "the job ran past the lease the replica knows of");
    a.kill9();

    // A fresh worker may take the lock on the primary, but it does not run the job.
    eventually("the lock to expire", lease * 3, || {
        let exists: bool = redis::cmd("EXISTS").arg("{outbound}:lock").query(&mut c).unwrap();
        (!exists).then_some(())
    })
    .await;
    let mut b = journal_worker(&primary.url(), "srv-b", "2s", &j);
    eventually("srv-b to beat", Duration::from_secs(5), || beat_field(&mut c, "srv-b", beat::SEQ)).await;
    tokio::time::sleep(lease * 2).await;
    assert!(!journal(&j).iter().any(|l| l.1 == "srv-b"), "srv-b ran the job on an unconfirmed lock");

    // The replica is back: the job runs again.
    unsafe { libc::kill(replica_pid, libc::SIGCONT) };
    eventually("srv-b's job once the replica confirms", Duration::from_secs(10), || {
        journal(&j).iter().any(|l| l.1 == "srv-b").then_some(())
    })
    .await;
    b.kill9();
    assert_no_overlap(&journal(&j));
}

#[tokio::test]
async fn fences_never_go_back_or_repeat_after_redis_loses_its_data() {
    let mut server = RedisServer::start();
    let mut c = server.conn();
    // A counter as the workers left it: at about Redis time in ms.
    let counter = redis_ms(&mut c) as i64;
    let _: () = redis::cmd("SET").arg("{outbound}:fence").arg(counter).query(&mut c).unwrap();
    flag(&mut c, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut a = journal_worker(&server.url(), "srv-a", "2s", &j);
    let first = eventually("the job's first run", Duration::from_secs(10), || journal(&j).first().map(|l| l.0)).await;
    assert!(first > counter, "fence {first} is not above the counter {counter}");

    // FLUSHALL under the running worker: it remembers the fences it saw.
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    flag(&mut c, "outbound", "alice", true);
    let after_flush = eventually("a run after FLUSHALL", Duration::from_secs(10), || {
        journal(&j).iter().map(|l| l.0).find(|f| *f != first)
    })
    .await;
    assert!(after_flush > first, "fence {after_flush} after FLUSHALL is not above {first}");
    a.kill9();

    // A restart without persistence, and a worker that remembers nothing.
    let before = journal(&j).iter().map(|l| l.0).max().unwrap();
    server.restart();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);
    let mut b = journal_worker(&server.url(), "srv-b", "2s", &j);
    let after_restart = eventually("a run after the restart", Duration::from_secs(10), || {
        journal(&j).iter().filter(|l| l.1 == "srv-b").map(|l| l.0).next()
    })
    .await;
    assert!(after_restart > before, "fence {after_restart} after the restart is not above {before}");
    b.kill9();
    assert_no_overlap(&journal(&j));
}

/// Waits until the holder's lease was just renewed (PTTL close to the full
/// lease), so that its next renewal is a third of a lease away.
async fn just_renewed(c: &mut redis::Connection, lease_ms: i64) {
    eventually("a renewal", Duration::from_millis(lease_ms as u64), || {
        let pttl: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(c).unwrap();
        (pttl > lease_ms - 150).then_some(())
    })
    .await;
}

/// A runs the job; Redis loses its data (`lose`), and the flags are back at
/// once. Whoever takes the free lock must not run the job while A's job
/// still runs: A's job stops first, and the next run starts after it.
async fn no_second_run_after_data_loss(lose: impl FnOnce(&mut RedisServer)) {
    let (mut server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    // A 6 s lease: A renews every 2 s, B tries to acquire every second, so
    // B finds the lock free well before A's next renewal finds it gone.
    let lease_ms = 6_000;
    let mut a = journal_worker(&url, "srv-a", "6s", &j);
    let child: u32 = eventually("srv-a's job", Duration::from_millis(lease_ms as u64 + 10_000), || {
        beat_field(&mut c, "srv-a", beat::CHILD_PID).and_then(|p| p.parse().ok())
    })
    .await;
    let _stray = Strays(vec![child]);
    let a_fence = eventually("srv-a's journal", Duration::from_secs(5), || journal(&j).first().map(|l| l.0)).await;
    let mut b = journal_worker(&url, "srv-b", "6s", &j);
    eventually("srv-b to beat idle", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-b", beat::STATE).filter(|s| s == "idle")
    })
    .await;

    just_renewed(&mut c, lease_ms).await;
    lose(&mut server);
    let lost_at = now_ns();
    let mut c = server.conn();
    flag(&mut c, "outbound", "alice", true);

    let new_run = eventually("a run after the data loss", Duration::from_millis(lease_ms as u64 * 3), || {
        journal(&j).into_iter().find(|l| l.0 != a_fence)
    })
    .await;
    eventually("srv-a's job to stop", Duration::from_millis(lease_ms as u64), || (!runs(child)).then_some(())).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let lines = journal(&j);
    let a_last = lines.iter().filter(|l| l.0 == a_fence).map(|l| l.2).max().unwrap();
    println!(
        "data lost; srv-a's job stopped {} ms later, the next run ({}) began {} ms after that",
        (a_last.saturating_sub(lost_at)) / 1_000_000,
        new_run.1,
        (new_run.2 as i128 - a_last as i128) / 1_000_000,
    );
    assert!(
        new_run.2 > a_last,
        "{} started the job (fence {}) while srv-a's job (fence {a_fence}) still ran: two runs at once",
        new_run.1,
        new_run.0
    );
    assert_no_overlap(&lines);
    a.kill9();
    b.kill9();
}

#[tokio::test]
async fn flushall_under_a_running_job_starts_no_second_run_until_it_stopped() {
    no_second_run_after_data_loss(|server| {
        let _: () = redis::cmd("FLUSHALL").query(&mut server.conn()).unwrap();
    })
    .await;
}

#[tokio::test]
async fn redis_restarted_empty_under_a_running_job_starts_no_second_run_until_it_stopped() {
    no_second_run_after_data_loss(|server| server.restart()).await;
}

#[tokio::test]
async fn the_first_start_on_a_fresh_redis_waits_one_lease_and_says_starting() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let lease_ms = 2_000;
    let mut a = journal_worker(&url, "srv-a", "2s", &j);
    wait_holder(&mut c, None).await;
    // Supervisors see it waiting, not running.
    let out = lockwatch(&url, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["state"], "pending", "{status}");
    assert!(status["reason"].as_str().unwrap().contains("srv-a holds the lock and waits"), "{status}");
    assert_eq!(out.status.code(), Some(1));
    // From the acquisition on, the heartbeat says `starting` until the job runs.
    let mut states = Vec::new();
    while journal(&j).is_empty() {
        states.push(beat_field(&mut c, "srv-a", beat::STATE).unwrap_or_default());
        assert!(states.len() < 500, "the job did not start within 10 s of the acquisition");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting: Vec<&String> = states.iter().take(states.len().saturating_sub(3)).collect();
    assert!(!waiting.is_empty() && waiting.iter().all(|s| *s == "starting"), "states while waiting: {states:?}");
    let started_ms: u64 = beat_field(&mut c, "srv-a", beat::STARTED_MS).unwrap().parse().unwrap();
    let events = stream_events(&mut c);
    let acquired = events.iter().find(|e| e.kind == kind::ACQUIRED).expect("an acquired event");
    let wait: u64 = acquired.field(entry::WAIT_MS).map(|v| v.parse().unwrap()).unwrap_or(0);
    assert_eq!(wait, lease_ms, "the acquired event says the job waits one lease: {:?}", acquired.fields);
    let job_started_ms = events.iter().find(|e| e.kind == kind::JOB_STARTED).expect("a job-started event").ms;
    println!("first start on a fresh Redis: job started {} ms after the acquisition", job_started_ms - started_ms);
    assert!(job_started_ms - started_ms >= lease_ms, "the job started before one lease had passed");
    eventually("the heartbeat to say running", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-a", beat::STATE).filter(|s| s == "running")
    })
    .await;
    a.kill9();
}

#[tokio::test]
async fn the_job_cannot_read_the_workers_password_from_proc() {
    use std::os::unix::fs::PermissionsExt;

    let server = RedisServer::with_args(&["--requirepass", "s3cret-pw"]);
    let url = format!("redis://:s3cret-pw@127.0.0.1:{}", server.port);
    let mut c = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    flag(&mut c, "outbound", "alice", true);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    // The job, below its reaper, looks at its parent's and its grandparent's
    // (the worker's) environment, as any process of the same user could.
    let snoop = r#"gp=$(awk '/^PPid:/ {print $2}' "/proc/$PPID/status")
cat "/proc/$PPID/environ" > "$DIR/parent" 2>&1
cat "/proc/$gp/environ" > "$DIR/grandparent" 2>&1
echo "$PPID $gp" > "$DIR/pids.tmp"; mv "$DIR/pids.tmp" "$DIR/pids"
sleep 600"#;
    // Root reads every process's environment: worker and job run as one
    // ordinary user, the case this guards against.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", env!("CARGO_BIN_EXE_lockwatch")]);
        cmd
    } else {
        Command::new(env!("CARGO_BIN_EXE_lockwatch"))
    };
    cmd.args(["worker", "--node", "srv-a", "--lease", "2s", "--", "sh", "-c", snoop])
        .env("LOCKWATCH_REDIS_URL", &url)
        .env("DIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut a = WorkerProcess::spawn(&mut cmd);
    let pids = eventually("the job's look at its parents", Duration::from_secs(10), || {
        std::fs::read_to_string(dir.path().join("pids")).ok()
    })
    .await;
    let worker_pid = a.id();
    a.kill9();
    let pids: Vec<u32> = pids.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids.get(1), Some(&worker_pid), "the job's grandparent is the worker: {pids:?}");
    for who in ["parent", "grandparent"] {
        let seen = std::fs::read(dir.path().join(who)).unwrap();
        let seen = String::from_utf8_lossy(&seen);
        assert!(!seen.contains("s3cret-pw"), "the job read the worker's password from its {who}'s environ: {seen}");
    }
}

#[tokio::test]
async fn a_worker_whose_stderr_nobody_reads_still_kills_restarts_and_stops_its_job() {
    let (server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    // The job fills the worker's stderr, which nobody reads: every log
    // line the worker writes from then on finds stderr stuck.
    let chatty = r#"echo $$ > "$DIR/job.tmp"; mv "$DIR/job.tmp" "$DIR/job"; while :; do echo "error line nobody reads" >&2; done"#;
    let lease = Duration::from_secs(3);
    let mut cmd = worker_command(&url, "srv-a", "3s", &[], chatty);
    let mut a = WorkerProcess::spawn(cmd.env("DIR", dir.path()).stderr(Stdio::piped()));
    let read_job = || -> Option<u32> { std::fs::read_to_string(dir.path().join("job")).ok()?.trim().parse().ok() };
    let first = eventually("the job", lease + Duration::from_secs(10), read_job).await;
    let _stray = Strays(vec![first]);
    tokio::time::sleep(Duration::from_millis(500)).await;

    // The lock is lost: the job dies at once, and the worker, whose loss is
    // logged, takes the lock again and starts the job anew.
    let _: () = redis::cmd("DEL").arg("{outbound}:lock").query(&mut c).unwrap();
    eventually("the job to be killed after the lock was deleted", lease, || (!runs(first)).then_some(())).await;
    let second =
        eventually("the job to start again", Duration::from_secs(10), || read_job().filter(|p| *p != first)).await;
    let _stray2 = Strays(vec![second]);

    // Redis goes away: each failed renewal is logged, and still the job
    // stops before the lease could run out.
    let pttl_before: i64 = redis::cmd("PTTL").arg("{outbound}:lock").query(&mut c).unwrap();
    let mut server = server;
    server.kill();
    eventually("the job to stop without Redis", Duration::from_millis(pttl_before as u64), || {
        (!runs(second)).then_some(())
    })
    .await;
    a.kill9();
}

#[tokio::test]
async fn a_holder_that_lets_go_during_the_wait_leaves_the_rest_of_it_to_the_next() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let lease_ms = 4_000;
    let mut a = journal_worker(&url, "srv-a", "4s", &j);
    wait_holder(&mut c, None).await;
    let acquired_ms: u64 = beat_field(&mut c, "srv-a", beat::STARTED_MS).unwrap().parse().unwrap();
    let mut b = journal_worker(&url, "srv-b", "4s", &j);
    eventually("srv-b to beat idle", Duration::from_secs(5), || {
        beat_field(&mut c, "srv-b", beat::STATE).filter(|s| s == "idle")
    })
    .await;
    // srv-a lets go while it waits: srv-b takes the lock, and the counter
    // is there now, but an earlier holder may still run until one lease
    // after srv-a's acquisition.
    a.sigterm();
    assert!(a.wait().unwrap().success());
    wait_holder(&mut c, Some("srv-a")).await;
    assert_eq!(beat_field(&mut c, "srv-b", beat::STATE).as_deref(), Some("starting"));
    eventually("srv-b's job", Duration::from_millis(lease_ms + 5_000), || journal(&j).first().cloned()).await;
    // The job may write before its worker records that it started.
    let job_started = eventually("the job's start in the stream", Duration::from_secs(5), || {
        stream_events(&mut c).into_iter().find(|e| e.kind == kind::JOB_STARTED)
    })
    .await;
    assert_eq!(job_started.field(entry::NODE), Some("srv-b"));
    let job_started_ms = job_started.ms;
    println!("srv-b's job started {} ms after srv-a's acquisition", job_started_ms - acquired_ms);
    assert!(job_started_ms - acquired_ms >= lease_ms, "srv-b started the job within a lease of the data loss");
    b.kill9();
}

/// `lockwatch demo`, stopped with SIGTERM (it stops its workers and its
/// Redis) when the test ends however it ends.
struct Demo(Child);

impl Drop for Demo {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the pid of our own child, which we have not reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn the_demo_starts_its_job_at_once_on_its_own_new_redis() {
    use std::io::BufRead;
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let mut demo = Demo(
        Command::new(env!("CARGO_BIN_EXE_lockwatch"))
            .arg("demo")
            .env("HOME", dir.path())
            .env("TMPDIR", dir.path())
            .env("USER", "alice")
            .env_remove("LOCKWATCH_REDIS_URL")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let collect = |r: Box<dyn std::io::Read + Send>| {
        let text = Arc::new(Mutex::new(String::new()));
        let into = text.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
                into.lock().unwrap().push_str(&(line + "\n"));
            }
        });
        text
    };
    let out = collect(Box::new(demo.0.stdout.take().unwrap()));
    let err = collect(Box::new(demo.0.stderr.take().unwrap()));
    let first = eventually("the demo's first shipped order", Duration::from_secs(30), || {
        out.lock().unwrap().lines().find(|l| l.contains("shipped outbound order #1")).map(str::to_owned)
    })
    .await;
    // Its own Redis had no holder before: the job does not wait a lease
    // (its first fence is above Redis time in ms, as every fence is).
    let fence: i64 = first.split("fence ").nth(1).and_then(|f| f.split(']').next()).unwrap().parse().unwrap();
    assert!(fence > 1_600_000_000_000, "{first}");
    let url = eventually("the demo to name its Redis", Duration::from_secs(10), || {
        let err = err.lock().unwrap();
        let at = err.find("Redis at ")? + "Redis at ".len();
        err[at..].split([',', ' ', '\n']).next().map(str::to_owned)
    })
    .await;
    let mut c = redis::Client::open(url.as_str()).unwrap().get_connection().unwrap();
    let acquired: Vec<StreamEvent> = stream_events(&mut c).into_iter().filter(|e| e.kind == kind::ACQUIRED).collect();
    assert!(!acquired.is_empty());
    for e in &acquired {
        assert_eq!(e.field(entry::WAIT_MS), None, "the demo's job waited: {:?}", e.fields);
    }
}

#[tokio::test]
async fn a_program_run_directly_starts_with_no_signal_blocked_and_stops_on_sigterm() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    // Not a shell (a shell resets its signal mask): the program as the job itself.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockwatch"));
    cmd.args(["--redis", &url, "worker", "--node", "srv-a", "--lease", "30s", "--stop-grace", "10s"])
        .args(["--", "sleep", "600"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut a = WorkerProcess::spawn(&mut cmd);
    let job: u32 = eventually("the job", Duration::from_secs(10), || {
        beat_field(&mut c, "srv-a", beat::CHILD_PID).and_then(|p| p.parse().ok())
    })
    .await;
    let _stray = Strays(vec![job]);
    let status = std::fs::read_to_string(format!("/proc/{job}/status")).unwrap();
    let blocked = status.lines().find_map(|l| l.strip_prefix("SigBlk:")).unwrap().trim().to_owned();
    assert_eq!(u64::from_str_radix(&blocked, 16).unwrap(), 0, "the job starts with signals blocked (SigBlk {blocked})");
    let asked = Instant::now();
    a.sigterm();
    assert!(a.wait().unwrap().success(), "the worker exits 0 after SIGTERM");
    let took = asked.elapsed();
    println!("SIGTERM to a worker running `sleep` directly: stopped after {took:?}");
    assert!(
        took < Duration::from_secs(5),
        "the job sat out the 10 s stop grace instead of ending on SIGTERM: {took:?}"
    );
}

#[tokio::test]
async fn a_flip_is_announced_by_the_worker_that_saw_it() {
    let (server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut a = journal_worker(&url, "srv-a", "30s", &j);
    wait_holder(&mut c, None).await;
    eventually("the worker to listen on the wake channel", Duration::from_secs(5), || {
        let (_, listeners): (String, i64) =
            redis::cmd("PUBSUB").arg("NUMSUB").arg("{outbound}:wake").query(&mut c).ok()?;
        (listeners >= 1).then_some(())
    })
    .await;
    // Supervisors may not publish: the worker that sees the flip at its
    // next look says so on the wake channel, naming itself.
    let mut listener = server.conn();
    listener.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe("{outbound}:wake").unwrap();
    let asked = Instant::now();
    let out = lockwatch(&url, &["disable", "--user", "alice"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let who: String = pubsub.get_message().unwrap().get_payload().unwrap();
    assert_eq!(who, "srv-a");
    drop(pubsub);
    eventually("the lock to be released", Duration::from_secs(5), || {
        let held: bool = redis::cmd("EXISTS").arg("{outbound}:lock").query(&mut c).ok()?;
        (!held).then_some(())
    })
    .await;
    println!("`lockwatch disable` of the last flag → lock released: {:?}", asked.elapsed());
    a.kill9();
}

#[tokio::test]
async fn a_killed_holder_is_reported_within_seconds_and_healthy_running_raises_no_alarm() {
    use lockwatch::EventKind;
    use lockwatch::watcher::{Options, Watcher};
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let j = dir.path().join("journal");
    let mut workers = journal_pair(&url, "30s", &j);
    let holder = wait_holder(&mut c, None).await;
    eventually("the job", Duration::from_secs(10), || journal(&j).iter().any(|l| l.1 == holder).then_some(())).await;
    // A grace longer than the bound below: only the holder's vanished
    // connection, not its heartbeat ageing, can explain an event in time.
    let engine = Config { heartbeat_grace_ms: 20_000, ..Config::default() };
    let target = Target::new(&url, None).unwrap();
    let watcher = Watcher::spawn(target, Keys::new("outbound"), Options { engine, ..Options::default() });
    let mut events = watcher.events();
    let mut status = watcher.status();
    eventually("running", Duration::from_secs(10), || {
        status.borrow_and_update().as_ref().is_some_and(|s| s.state == State::Running).then_some(())
    })
    .await;

    tokio::time::sleep(Duration::from_secs(20)).await;
    let mut healthy = Vec::new();
    while let Ok(event) = events.try_recv() {
        healthy.push(format!("{} {}", event.event.as_str(), event.reason));
    }
    assert!(healthy.is_empty(), "events in 20 s of healthy running: {healthy:?}");

    // The worker and its reaper killed together, the case the lease must
    // cover (a worker killed alone has its reaper let go of the lock at once,
    // `tests/crash.rs`): frozen first, so its reaper dies before the worker does.
    let i = workers.iter().position(|(n, _)| *n == holder).unwrap();
    let t0 = Instant::now();
    workers[i].1.kill9_with_reaper();
    let event = tokio::time::timeout(Duration::from_secs(8), events.recv())
        .await
        .expect("an event within 8 s of kill -9, well inside the 20 s grace and the 30 s lease")
        .unwrap();
    let took = t0.elapsed();
    println!(
        "kill -9 of the holder and its reaper (lease 30 s) → {} after {took:?}: {}",
        event.event.as_str(),
        event.reason
    );
    assert_eq!(event.event, EventKind::Stalled, "{}", event.reason);
    assert!(event.reason.contains("dying"), "{}", event.reason);
    let shown = status.borrow().clone().unwrap();
    assert_eq!(shown.state, State::Stale, "{}", shown.reason);
    assert!(shown.reason.contains("expires in"), "says when the lease ends: {}", shown.reason);
    watcher.stop().await;
    for (_, w) in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
}

/// Two idle workers load the lock's script once, not with every call, and
/// read the flags only when tracking heard a write: their probes are
/// glances (no `MEMORY USAGE` of the 20 flags each look) until one comes.
#[tokio::test]
async fn idle_workers_load_their_script_once_and_glance_until_a_flag_is_written() {
    let server = RedisServer::start();
    let mut c = server.conn();
    for i in 0..20 {
        flag(&mut c, "outbound", &format!("user{i:02}"), true);
    }
    let _a = WorkerProcess::spawn(&mut worker_command(&server.url(), "srv-a", "3s", &[], "exec sleep 600"));
    let _b = WorkerProcess::spawn(&mut worker_command(&server.url(), "srv-b", "3s", &[], "exec sleep 600"));
    eventually("a holder", Duration::from_secs(10), || holder_job(&mut c)).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    // The calls of each command, from one INFO (the test's own asking counts too).
    let stats = |c: &mut redis::Connection| -> String { redis::cmd("INFO").arg("commandstats").query(c).unwrap() };
    let calls = |info: &str, cmd: &str| -> u64 {
        info.lines()
            .find(|l| l.starts_with(&format!("cmdstat_{cmd}:")))
            .and_then(|l| l.split("calls=").nth(1)?.split(',').next()?.parse().ok())
            .unwrap_or(0)
    };
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let info = stats(&mut c);
    // Redis 6.2 has no functions (the probe is a script there) and counts SCRIPT LOAD as `script`.
    let loads = calls(&info, "script|load") + calls(&info, "script");
    // Redis 6.2 counts subcommands with their command: `memory` there.
    let measured = |info: &str| calls(info, "memory|usage") + calls(info, "memory");
    let (measured, looks) = (measured(&info), calls(&info, "fcall_ro") + calls(&info, "evalsha"));
    let infos = calls(&info, "info");
    println!("5 s of two idle workers: {looks} looks, {measured} MEMORY USAGE, {loads} SCRIPT LOAD, {infos} INFO");
    assert!(looks >= 5, "the workers looked {looks} times");
    assert_eq!(loads, 0, "the script was loaded again");
    // The holder's renewals (one a second at a 3 s lease) ask INFO
    // replication; the standby, which the lock held by the other would
    // refuse, does not try (before: one attempt a second, with INFO).
    assert!(infos <= 7, "{infos} INFO in 5 s: the standby tries to take a lock the other holds");
    assert_eq!(measured, 0, "the flags were read again with nothing written");
    // A flag written is read at once.
    flag(&mut c, "outbound", "user00", false);
    let read_again = || {
        let info = stats(&mut c);
        (calls(&info, "memory|usage") + calls(&info, "memory") > 0).then_some(())
    };
    eventually("the flags read again", Duration::from_secs(3), read_again).await;
}

/// Redis refusing writes (`maxmemory` reached under `noeviction`): the
/// heartbeat fails and is tried again, paced, and said once, not written
/// and logged hundreds of times a second.
#[tokio::test]
async fn a_heartbeat_redis_refuses_is_tried_again_paced_and_said_once() {
    let (_server, url, mut c) = server_with_flag("alice", true);
    seed_fence(&mut c);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut cmd = worker_command(&url, "srv-a", "30s", &[], "while :; do sleep 0.2; done");
    cmd.env("LOCKWATCH_LOG", "info").stderr(std::fs::File::create(&log).unwrap());
    let _a = WorkerProcess::spawn(&mut cmd);
    wait_holder(&mut c, None).await;
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory-policy").arg("noeviction").query(&mut c).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(1).query(&mut c).unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut c).unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut c).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).query(&mut c).unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    let failed = said.lines().filter(|l| l.contains("heartbeat failed")).count();
    let refused: u64 = info
        .lines()
        .filter_map(|l| l.split("rejected_calls=").nth(1))
        .filter_map(|rest| rest.split(',').next()?.parse::<u64>().ok())
        .sum();
    println!("4 s of refused writes: {refused} commands rejected, \"heartbeat failed\" said {failed} times");
    assert!(failed <= 1, "said {failed} times:\n{said}");
    assert!(refused < 40, "{refused} writes refused in 4 s: {info}");
}
