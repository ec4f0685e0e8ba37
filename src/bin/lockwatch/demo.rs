//! `lockwatch demo`: lockwatch on one machine. A private `redis-server` in a
//! temp dir on a free port, two workers named like two warehouse servers
//! running a small outbound loop, the job enabled for you; Ctrl-C stops all.

use std::net::TcpListener;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::process::{Child, Command};

use super::Global;
use lockwatch::Keys;
use lockwatch::connect::{Conn, Target};
use lockwatch::supervise::flags;

/// The demo workers' lease: short, so a job whose worker and reaper are
/// both killed moves soon (a worker killed alone hands over at once).
const LEASE_SECS: u64 = 10;

/// The sample job: ships an order every two seconds, saying which server and fence.
const SAMPLE_LOOP: &str = r#"n=0; while :; do n=$((n+1)); echo "[$LOCKWATCH_NODE fence $LOCKWATCH_FENCE] shipped outbound order #$n"; sleep 2; done"#;

pub(super) async fn run(g: &Global) -> Result<u8> {
    let dir = tempfile_dir()?;
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).context("cannot find a free port")?.port();
    let mut redis = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--notify-keyspace-events", "Kgx", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start redis-server; install it (Debian/Ubuntu: apt-get install redis-server)")?;
    let url = format!("redis://127.0.0.1:{port}");
    let target = Target::new(&url, None)?;
    let mut conn = wait_for_redis(&target).await?;
    let user = flags::default_user(None)?;
    let keys = g.keys();
    let host = flags::this_host();
    let flip = flags::Flip { user: &user, on: true, host: &host, reason: Some("lockwatch demo") };
    flags::set_flag(&mut conn, &keys, &flip).await?;
    // This Redis was just started here and never had a holder: the first
    // start need not wait a lease for an earlier one to stop.
    lockwatch::work::lock::seed_fence(&mut conn, &keys, target.endpoint()).await?;

    let exe = std::env::current_exe().context("cannot find the lockwatch binary")?;
    let mut workers: Vec<Worker> = Vec::new();
    for node in DEMO_NODES {
        let child = Command::new(&exe)
            .args(["--redis", &url, "--job", &keys.job, "worker", "--node", node])
            .args(["--lease", &format!("{LEASE_SECS}s"), "--stall-after", "20s"])
            .args(["--", "sh", "-c", SAMPLE_LOOP])
            // The demo shows the watcher's view: its workers say only what goes wrong.
            .env("LOCKWATCH_LOG", std::env::var("LOCKWATCH_LOG").unwrap_or_else(|_| "warn".to_owned()))
            .kill_on_drop(true)
            .spawn()
            .context("cannot start a demo worker")?;
        workers.push(Worker { node, pid: child.id().map_or("?".to_owned(), |p| p.to_string()), child });
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let me = exe.display();
    eprintln!(
        "\nlockwatch demo: Redis at {url}, job {job:?} enabled for {user}.\n\
         Workers: wh-east-1 (pid {east}) and wh-west-1 (pid {west}); the first to start (usually wh-east-1) runs the sample outbound loop.\n\
         In another terminal:\n  export LOCKWATCH_REDIS_URL={url}\n  {me} watch      # live status and events\n  \
         {me} disable    # your flag off: the job stops\n  \
         kill -9 {east}             # if wh-east-1 runs it (see status): it dies, the other takes over\n\
         Ctrl-C here stops the workers and this Redis.\n",
        job = keys.job,
        east = workers[0].pid,
        west = workers[1].pid,
    );

    // Until Ctrl-C, a worker or Redis that ends is reaped at once (no
    // zombie while the demo runs) and told here.
    let stop = terminated();
    tokio::pin!(stop);
    let mut redis_up = true;
    loop {
        tokio::select! {
            _ = &mut stop => break,
            (index, status) = next_exit(&mut workers) => {
                let gone = workers.remove(index);
                let mut others: Vec<String> = workers.iter().map(|w| w.node.to_owned()).collect();
                others.extend(started_by_hand(&mut conn, &keys, &target).await);
                let next = if others.is_empty() {
                    "No worker is left, so the job cannot run: Ctrl-C and start the demo again.".to_owned()
                } else {
                    // A worker killed alone leaves its reaper, which ends the job and
                    // releases the lock at once; with both gone the lease runs out first.
                    format!(
                        "If it ran the job, {} takes over at once: its reaper ends the job and releases the lock (were the reaper killed too: within the {LEASE_SECS} s lease).",
                        others.join(" or ")
                    )
                };
                eprintln!("lockwatch demo: worker {} (pid {}) {}. {next}", gone.node, gone.pid, how(status));
            }
            status = redis.wait(), if redis_up => {
                redis_up = false;
                eprintln!(
                    "lockwatch demo: its redis-server {}; the workers cannot reach it. Ctrl-C and start the demo again.",
                    how(status)
                );
            }
        }
    }
    for w in &workers {
        if let Some(pid) = w.child.id() {
            // SAFETY: plain kill(2) on our own child's pid; it has not been reaped yet.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
    }
    for w in &mut workers {
        let _ = tokio::time::timeout(Duration::from_secs(15), w.child.wait()).await;
    }
    let _ = redis.start_kill();
    let _ = redis.wait().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(0)
}

/// The demo's own workers' names.
const DEMO_NODES: [&str; 2] = ["wh-east-1", "wh-west-1"];

/// Workers the demo did not start that beat within the last 3 s: started
/// by hand against its Redis, and as able to take the job over.
async fn started_by_hand(conn: &mut Conn, keys: &Keys, target: &Target) -> Vec<String> {
    let Ok(snap) = lockwatch::probe::probe(conn, keys, target.endpoint()).await else { return Vec::new() };
    snap.beats
        .iter()
        .filter(|b| !DEMO_NODES.contains(&b.node.as_str()))
        .filter(|b| b.beat_ms.is_some_and(|at| snap.time_ms.saturating_sub(at) < 3_000))
        .map(|b| b.node.clone())
        .collect()
}

/// A demo worker process.
struct Worker {
    node: &'static str,
    /// Printed, and still printable once the child is reaped.
    pid: String,
    child: Child,
}

/// Waits until one of `workers` ends (reaping it) and says which; never
/// completes when there are none.
async fn next_exit(workers: &mut [Worker]) -> (usize, std::io::Result<ExitStatus>) {
    if workers.is_empty() {
        return std::future::pending().await;
    }
    let waits = workers.iter_mut().map(|w| Box::pin(w.child.wait()));
    let (status, index, _) = futures_util::future::select_all(waits).await;
    (index, status)
}

/// How a process ended, for a sentence: "was killed by signal 9 (SIGKILL)".
fn how(status: std::io::Result<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exited with code {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}{}", signal_name(sig)),
            (None, None) => format!("ended ({s})"),
        },
        Err(err) => format!("ended, but its exit status cannot be read ({err})"),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => " (SIGHUP)",
        libc::SIGINT => " (SIGINT)",
        libc::SIGQUIT => " (SIGQUIT)",
        libc::SIGABRT => " (SIGABRT)",
        libc::SIGKILL => " (SIGKILL)",
        libc::SIGSEGV => " (SIGSEGV)",
        libc::SIGTERM => " (SIGTERM)",
        _ => "",
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    if let Ok(mut term) = signal(SignalKind::terminate()) {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        return;
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("lockwatch-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

async fn wait_for_redis(target: &Target) -> Result<lockwatch::connect::Conn> {
    for _ in 0..50 {
        if let Ok(conn) = target.manager().await {
            return Ok(conn);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the demo redis-server on {} did not start", target.host())
}
