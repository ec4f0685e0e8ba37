//! The worker: runs a command on exactly one server of a cluster. It takes
//! the lock only while at least one supervisor has the job enabled, runs the
//! command while it holds it, renews the lease from a watchdog task, beats
//! from its supervision loop, stops the job the moment the lock is no longer
//! its own (or before the lease could run out while Redis is unreachable),
//! and records every lifecycle change on the job's event stream.

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio::sync::{Notify, watch};
use tokio::time::{Instant, sleep, sleep_until};

use crate::connect::Target;
use crate::error::{Error, describe};
use crate::job::{Job, JobEnv};
use crate::keys::Keys;
use crate::lock::{Acquire, Lock};
use crate::probe::probe;
use crate::watch::follow_pubsub;

static BEAT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(include_str!("worker.lua")));

/// Events kept on the stream (approximately).
const STREAM_CAP: u64 = 10_000;

/// How a worker runs its job.
#[derive(Debug, Clone)]
pub struct Options {
    /// This server's name, as supervisors see it.
    pub node: String,
    /// Lock lease; renewed every third of it.
    pub lease: Duration,
    /// Run the command every this long instead of restarting it when it exits.
    pub every: Option<Duration>,
    /// A job silent this long is reported `stalled`.
    pub stall_after: Option<Duration>,
    /// Heartbeat and flag check interval.
    pub tick: Duration,
    /// Time the job gets to exit after SIGTERM before SIGKILL.
    pub stop_grace: Duration,
    /// Program and arguments.
    pub command: Vec<String>,
}

/// The lock while held, with the job and the watchdog that renews it.
struct Holding {
    lock_ok_at: Instant,
    fence: i64,
    job: Option<Job>,
    next_start: Instant,
    restarts: u32,
    renewals: watch::Receiver<Renewal>,
    watchdog: tokio::task::JoinHandle<()>,
}

impl Drop for Holding {
    fn drop(&mut self) {
        self.watchdog.abort();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renewal {
    Renewed(Instant),
    Lost,
    Failing,
}

/// Runs the worker until `shutdown` completes; then stops the job, releases
/// the lock and returns.
///
/// # Errors
/// Only for what cannot be retried: the command cannot be started at all.
pub async fn run(target: Target, keys: Keys, opts: Options, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
    let host = crate::flags::this_host();
    let lock = Lock::new(keys.clone(), &opts.node, opts.lease, target.host());
    let wake = Arc::new(Notify::new());
    let (stop_tx, stop_rx) = watch::channel(false);
    let waker = tokio::spawn(follow_pubsub(target.clone(), keys.clone(), wake.clone(), stop_rx));
    let mut w = Worker { target, keys, opts, host, lock, conn: None, seq: 0, enabled: None, last_exit: String::new() };
    tokio::pin!(shutdown);
    let mut holding: Option<Holding> = None;
    let result = loop {
        let mut wait = w.opts.tick;
        match w.step(&mut holding).await {
            Ok(Some(hint)) => wait = wait.min(hint),
            Ok(None) => {}
            Err(err) => break Err(err),
        }
        let safety = holding.as_ref().map(|h| h.lock_ok_at + w.opts.lease * 3 / 4);
        // Wakes on the job's exit or on news from the watchdog.
        let holding_news = async {
            match holding.as_mut() {
                Some(Holding { job: Some(job), renewals, .. }) => {
                    tokio::select! {
                        _ = job.wait() => {}
                        _ = renewals.changed() => {}
                    }
                }
                Some(Holding { renewals, .. }) => {
                    let _ = renewals.changed().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep(wait) => {}
            _ = wake.notified() => {}
            _ = holding_news => {}
            _ = async { match safety { Some(at) => sleep_until(at).await, None => std::future::pending().await } } => {}
            _ = &mut shutdown => break Ok(()),
        }
    };
    if let Some(h) = holding.take() {
        w.let_go(h, "worker stopping").await;
    }
    let _ = w.beat("idle", None, None).await;
    let _ = stop_tx.send(true);
    let _ = waker.await;
    result
}

struct Worker {
    target: Target,
    keys: Keys,
    opts: Options,
    host: String,
    lock: Lock,
    conn: Option<ConnectionManager>,
    seq: u64,
    enabled: Option<bool>,
    last_exit: String,
}

impl Worker {
    /// One turn of the supervision loop; returns how soon to look again.
    async fn step(&mut self, holding: &mut Option<Holding>) -> Result<Option<Duration>, Error> {
        // Safety first: a lock we can no longer vouch for stops the job now.
        if let Some(h) = holding.as_mut() {
            let renewal = *h.renewals.borrow_and_update();
            match renewal {
                Renewal::Renewed(at) => h.lock_ok_at = h.lock_ok_at.max(at),
                Renewal::Lost => {
                    let h = holding.take();
                    self.lose(h, "the lock is no longer ours (expired, deleted or taken over)").await;
                    return Ok(None);
                }
                Renewal::Failing => {}
            }
            if h.lock_ok_at.elapsed() >= self.opts.lease * 3 / 4 {
                let h = holding.take();
                self.lose(h, "the lease could not be renewed in time (Redis unreachable)").await;
                return Ok(None);
            }
        }

        let enabled = match self.read_enabled().await {
            Ok(enabled) => enabled,
            Err(err) => {
                tracing::warn!(node = %self.opts.node, error = %err, "cannot read the job's flags");
                self.conn = None;
                return Ok(Some(Duration::from_millis(500)));
            }
        };
        if self.enabled.is_some_and(|was| was != enabled) && holding.is_some() {
            self.record("flags-changed", &[("enabled", if enabled { "1" } else { "0" })]).await;
        }
        self.enabled = Some(enabled);

        let mut hint = None;
        match (holding.is_some(), enabled) {
            (false, true) => match self.try_acquire().await {
                Ok(Acquire::Acquired { fence }) => {
                    tracing::info!(node = %self.opts.node, fence, "acquired the lock");
                    self.record("acquired", &[("fence", &fence.to_string())]).await;
                    *holding = Some(self.hold(fence));
                }
                Ok(Acquire::Held { ttl }) => hint = ttl.map(|t| t + Duration::from_millis(2)),
                Err(err) => {
                    tracing::warn!(error = %err, "acquire failed");
                    self.conn = None;
                }
            },
            (true, false) => {
                if let Some(h) = holding.take() {
                    self.let_go(h, "nobody has the job enabled").await;
                }
            }
            _ => {}
        }

        if let Some(h) = holding.as_mut() {
            self.tend_job(h).await?;
        }
        let (state, field, fence, child) = match holding.as_ref() {
            Some(h) => {
                let stalled =
                    self.opts.stall_after.zip(h.job.as_ref()).is_some_and(|(d, j)| j.liveness.silent_for() >= d);
                (
                    if stalled { "stalled" } else { "running" },
                    Some(self.lock.field().to_owned()),
                    Some(h.fence),
                    h.job.as_ref().map(|j| j.pid),
                )
            }
            None => ("idle", None, None, None),
        };
        if let Err(err) = self.beat(state, field.as_deref().zip(fence), child).await {
            tracing::warn!(error = %err, "heartbeat failed");
            self.conn = None;
        }
        if let Some(h) = holding.as_ref()
            && h.job.is_none()
        {
            hint = Some(h.next_start.saturating_duration_since(Instant::now()));
        }
        Ok(hint)
    }

    /// Starts the job when due, notes its exit.
    async fn tend_job(&mut self, h: &mut Holding) -> Result<(), Error> {
        if let Some(job) = h.job.as_mut()
            && let Some(status) = job.exited()
        {
            self.last_exit = status.to_string();
            self.record("job-exited", &[("status", &self.last_exit.clone()), ("fence", &h.fence.to_string())]).await;
            h.job = None;
            h.next_start = match self.opts.every {
                Some(every) => h.next_start.max(Instant::now() - every) + every,
                None => {
                    h.restarts += 1;
                    Instant::now() + Duration::from_millis(500u64 << h.restarts.min(6)).min(Duration::from_secs(30))
                }
            };
        }
        if h.job.is_none() && Instant::now() >= h.next_start {
            let env = JobEnv { fence: h.fence, node: &self.opts.node, job: &self.keys.job };
            let job = Job::start(&self.opts.command, &env).map_err(|e| {
                Error::Invalid(format!(
                    "cannot start the job command {:?}: {e}; check the command after --",
                    self.opts.command.join(" ")
                ))
            })?;
            self.record("job-started", &[("pid", &job.pid.to_string()), ("fence", &h.fence.to_string())]).await;
            if self.opts.every.is_some() {
                h.next_start = Instant::now();
            }
            h.job = Some(job);
        }
        Ok(())
    }

    fn hold(&self, fence: i64) -> Holding {
        let (tx, rx) = watch::channel(Renewal::Renewed(Instant::now()));
        let watchdog = tokio::spawn(watchdog(self.target.clone(), self.lock.clone(), tx));
        Holding {
            lock_ok_at: Instant::now(),
            fence,
            job: None,
            next_start: Instant::now(),
            restarts: 0,
            renewals: rx,
            watchdog,
        }
    }

    /// Lost the lock: kill the job at once, say so if Redis listens.
    async fn lose(&mut self, h: Option<Holding>, why: &str) {
        let Some(mut h) = h else { return };
        tracing::error!(node = %self.opts.node, fence = h.fence, "{why}; killing the job");
        if let Some(mut job) = h.job.take() {
            job.kill();
            let _ = job.wait().await;
        }
        self.record("lost", &[("fence", &h.fence.to_string()), ("reason", why)]).await;
    }

    /// Gives the lock up cleanly: stop the job, stop claiming it, release.
    async fn let_go(&mut self, mut h: Holding, why: &str) {
        if let Some(job) = h.job.take() {
            let field = self.lock.field().to_owned();
            let _ = self.beat("stopping", Some((&field, h.fence)), Some(job.pid)).await;
            if let Some(status) = job.stop(self.opts.stop_grace).await {
                self.last_exit = status.to_string();
                self.record("job-exited", &[("status", &self.last_exit.clone()), ("fence", &h.fence.to_string())])
                    .await;
            }
        }
        h.watchdog.abort();
        let _ = self.beat("idle", None, None).await;
        let lock = self.lock.clone();
        let released = match self.conn().await {
            Ok(conn) => lock.release(conn).await,
            Err(err) => Err(err),
        };
        match released {
            Ok(_) => self.record("released", &[("fence", &h.fence.to_string()), ("reason", why)]).await,
            Err(err) => tracing::warn!(error = %err, "release failed; the lease will expire"),
        }
    }

    async fn conn(&mut self) -> Result<&mut ConnectionManager, Error> {
        if self.conn.is_none() {
            self.conn = Some(self.target.manager().await?);
        }
        self.conn.as_mut().ok_or_else(|| Error::Invalid("no connection".to_owned()))
    }

    async fn try_acquire(&mut self) -> Result<Acquire, Error> {
        let lock = self.lock.clone();
        lock.acquire(self.conn().await?).await
    }

    async fn read_enabled(&mut self) -> Result<bool, Error> {
        let keys = self.keys.clone();
        let host = self.target.host().to_owned();
        let snap = probe(self.conn().await?, &keys, &host).await?;
        Ok(snap.flags.iter().any(|f| f.on == Some(true)))
    }

    async fn beat(&mut self, state: &str, holding: Option<(&str, i64)>, child: Option<u32>) -> Result<(), Error> {
        self.seq += 1;
        let (field, fence) = holding.map(|(f, n)| (f.to_owned(), n.to_string())).unwrap_or_default();
        let pairs: [(&str, String); 9] = [
            ("node", self.opts.node.clone()),
            ("host", self.host.clone()),
            ("pid", std::process::id().to_string()),
            ("lock_field", field),
            ("fence", fence),
            ("seq", self.seq.to_string()),
            ("state", state.to_owned()),
            ("version", env!("CARGO_PKG_VERSION").to_owned()),
            ("child_pid", child.map(|p| p.to_string()).unwrap_or_default()),
        ];
        let keys = (self.keys.node(&self.opts.node), self.keys.nodes());
        let node = self.opts.node.clone();
        let last_exit = self.last_exit.clone();
        let host = self.target.host().to_owned();
        let mut call = BEAT.key(keys.0);
        call.key(keys.1).arg(node);
        for (k, v) in pairs {
            call.arg(k).arg(v);
        }
        call.arg("last_exit").arg(last_exit);
        let _: u64 =
            call.invoke_async(self.conn().await?).await.map_err(|e| describe(e, "writing the heartbeat", &host))?;
        Ok(())
    }

    /// Appends a lifecycle event to the job's stream; failures are logged,
    /// never fatal.
    async fn record(&mut self, kind: &str, fields: &[(&str, &str)]) {
        let stream = self.keys.events();
        let node = self.opts.node.clone();
        let Ok(conn) = self.conn().await else { return };
        let mut cmd = redis::cmd("XADD");
        cmd.arg(&stream).arg("MAXLEN").arg("~").arg(STREAM_CAP).arg("*").arg("type").arg(kind).arg("node").arg(&node);
        for (k, v) in fields {
            cmd.arg(*k).arg(*v);
        }
        if let Err(err) = cmd.query_async::<redis::Value>(conn).await {
            tracing::warn!(event = kind, error = %err, "cannot record the event");
        }
    }
}

/// Renews the lease every third of it; reports each outcome.
async fn watchdog(target: Target, lock: Lock, report: watch::Sender<Renewal>) {
    let period = lock.lease() / 3;
    let mut conn: Option<ConnectionManager> = None;
    loop {
        sleep(period).await;
        loop {
            let result = match conn.as_mut() {
                Some(c) => lock.renew(c).await,
                None => match target.manager().await {
                    Ok(c) => lock.renew(conn.insert(c)).await,
                    Err(err) => Err(err),
                },
            };
            match result {
                Ok(true) => {
                    let _ = report.send(Renewal::Renewed(Instant::now()));
                    break;
                }
                Ok(false) => {
                    let _ = report.send(Renewal::Lost);
                    return;
                }
                Err(err) => {
                    tracing::warn!(error = %err, "lease renewal failed; retrying");
                    conn = None;
                    let _ = report.send(Renewal::Failing);
                    sleep(Duration::from_millis(250)).await;
                }
            }
        }
    }
}
