//! What the worker runs while it holds the lock: a child process, or a task
//! of a Rust service that embeds the worker and reports signs of life with
//! [`Liveness::beat`].
//!
//! A child process runs below a [`reaper`] that takes the job's
//! whole process tree down on every stop and with the worker, even by
//! `kill -9`. It gets the fence in its environment and none of the worker's
//! Redis credentials. Its output is forwarded by threads of its own, so a
//! stdout nobody reads stalls the job (shown as `stalled`), never the
//! runtime that renews the lease and kills the job.

use std::ffi::OsStr;
use std::fmt;
use std::future::Future;
use std::io::{self, PipeReader, Read, Write};
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::Boot;
use crate::work::orphan::Orphan;
use crate::work::reaper;
#[cfg(unix)]
use crate::work::reaper::Control;

/// The work a worker runs while it holds the lock.
#[derive(Clone)]
pub enum Work {
    /// A program and its arguments. It runs below a reaper that takes its
    /// whole process tree down when the binary calls
    /// [`reaper::enter_if_asked`] first thing in `main`, as `lockwatch` does.
    Command(Vec<String>),
    /// A Rust task, for services that embed the worker: called with the
    /// holding's context each time the job starts.
    Task(TaskFn),
}

/// An embedded job: makes the future to run for one holding of the lock.
pub type TaskFn = Arc<dyn Fn(JobContext) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

impl fmt::Debug for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Work::Command(cmd) => f.debug_tuple("Command").field(cmd).finish(),
            Work::Task(_) => f.write_str("Task"),
        }
    }
}

/// What an embedded task gets: the fence to pass downstream, a liveness
/// handle to call [`Liveness::beat`] on, and a signal to stop.
#[derive(Debug, Clone)]
pub struct JobContext {
    pub fence: i64,
    pub node: String,
    pub liveness: Liveness,
    /// Turns `true` when the task must stop (lock released or lost).
    pub stop: watch::Receiver<bool>,
}

/// When the job last showed a sign of life. Output lines count; a job
/// embedded in a Rust service calls [`Liveness::beat`] itself.
#[derive(Debug, Clone)]
pub struct Liveness(Arc<Mutex<Instant>>);

impl Default for Liveness {
    fn default() -> Self {
        Liveness(Arc::new(Mutex::new(Instant::now())))
    }
}

impl Liveness {
    /// Records a sign of life now.
    pub fn beat(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Time since the last sign of life.
    pub fn silent_for(&self) -> Duration {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).elapsed()
    }
}

/// A running job.
pub struct Job {
    run: Run,
    /// Process id of the job's own process; `None` for an embedded task.
    pub pid: Option<u32>,
    pub liveness: Liveness,
}

enum Run {
    /// Below a reaper, which takes the job's whole tree down when told.
    #[cfg(unix)]
    Reaped {
        reaper: Child,
        control: Arc<Control>,
        /// Whether what the job left below the worker was swept, once the
        /// reaper's end was seen.
        swept: bool,
    },
    /// A direct child in a process group of its own (no reaper available);
    /// boxed, as it outweighs the other kinds.
    Process(Box<Child>),
    Task {
        handle: JoinHandle<()>,
        stop: watch::Sender<bool>,
        done: bool,
    },
}

/// The environment a job gets.
pub struct JobEnv<'a> {
    pub fence: i64,
    pub node: &'a str,
    pub job: &'a str,
    /// Handed to the job's reaper (never to the job), to let go of the
    /// lock should the worker die.
    pub orphan: Option<&'a Orphan>,
}

/// Variables of the worker's environment a job must not inherit: they
/// carry the Redis password or say where Redis is.
fn is_connection_var(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else { return false };
    name == "REDISCLI_AUTH"
        || name == reaper::VAR
        || ["LOCKWATCH_REDIS", "LOCKWATCH_SENTINEL", "LOCKWATCH_CLUSTER", "LOCKWATCH_TLS"]
            .iter()
            .any(|prefix| name.starts_with(prefix))
}

impl Job {
    /// Starts `work` and points `killer` at it before anything else can
    /// happen: a killer that has fired already kills it at once.
    ///
    /// # Errors
    /// Why the job could not be started, e.g. program not found.
    pub async fn start(work: &Work, env: &JobEnv<'_>, killer: &Killer) -> io::Result<Job> {
        match work {
            Work::Command(command) => Job::start_process(command, env, killer).await,
            Work::Task(task) => {
                let liveness = Liveness::default();
                let (stop, stop_rx) = watch::channel(false);
                let ctx = JobContext {
                    fence: env.fence,
                    node: env.node.to_owned(),
                    liveness: liveness.clone(),
                    stop: stop_rx,
                };
                let handle = tokio::spawn(task(ctx));
                let job = Job { run: Run::Task { handle, stop, done: false }, pid: None, liveness };
                killer.arm(&job);
                Ok(job)
            }
        }
    }

    async fn start_process(command: &[String], env: &JobEnv<'_>, killer: &Killer) -> io::Result<Job> {
        let (program, args) = command.split_first().ok_or_else(|| io::Error::other("no command given"))?;
        let (out, out_child) = std::io::pipe()?;
        let (err, err_child) = std::io::pipe()?;
        let liveness = Liveness::default();
        let configure = |cmd: &mut Command| {
            cmd.args(args);
            for (name, _) in std::env::vars_os() {
                if is_connection_var(&name) {
                    cmd.env_remove(name);
                }
            }
            cmd.env("LOCKWATCH_FENCE", env.fence.to_string())
                .env("LOCKWATCH_NODE", env.node)
                .env("LOCKWATCH_JOB", env.job)
                .stdin(Stdio::null())
                .stdout(out_child)
                .stderr(err_child);
        };

        #[cfg(unix)]
        if reaper::available() {
            let mut cmd = reaper::Link::command(program.as_ref())?;
            configure(&mut cmd);
            let link = reaper::Link::new(&mut cmd, env.orphan)?;
            let reaper = cmd.spawn()?;
            // Closes the worker's copies of the child's ends of the pipes.
            drop(cmd);
            let (control, pid) = link.started();
            let mut job =
                Job { run: Run::Reaped { reaper, control: Arc::new(control), swept: false }, pid: None, liveness };
            killer.arm(&job);
            let started = match job.forward(out, err) {
                Ok(()) => pid.await,
                Err(err) => Err(err),
            };
            return match started {
                Ok(pid) => {
                    job.pid = Some(pid);
                    Ok(job)
                }
                Err(err) => {
                    killer.disarm();
                    job.kill();
                    job.wait().await;
                    Err(err)
                }
            };
        }

        let mut cmd = Command::new(program);
        configure(&mut cmd);
        cmd.kill_on_drop(true);
        die_with_parent(&mut cmd);
        let child = cmd.spawn()?;
        drop(cmd);
        let mut job = Job { pid: child.id(), run: Run::Process(Box::new(child)), liveness };
        killer.arm(&job);
        if let Err(err) = job.forward(out, err) {
            killer.disarm();
            job.kill();
            job.wait().await;
            return Err(err);
        }
        Ok(job)
    }

    /// Forwards the job's stdout and stderr to the worker's, each from a
    /// thread of its own; every chunk is a sign of life.
    fn forward(&self, out: PipeReader, err: PipeReader) -> io::Result<()> {
        forward(out, self.liveness.clone(), Output::Stdout)?;
        forward(err, self.liveness.clone(), Output::Stderr)
    }

    /// How the job ended, once it has (`None` while it runs).
    pub fn exited(&mut self) -> Option<String> {
        match &mut self.run {
            #[cfg(unix)]
            Run::Reaped { reaper: child, swept, .. } => {
                let status = child.try_wait().ok().flatten()?;
                sweep_after(status, swept);
                Some(status.to_string())
            }
            Run::Process(child) => child.try_wait().ok().flatten().map(|s| s.to_string()),
            Run::Task { handle, done, .. } => (*done || handle.is_finished()).then(|| "task ended".to_owned()),
        }
    }

    /// Waits for the job to end.
    pub async fn wait(&mut self) {
        match &mut self.run {
            #[cfg(unix)]
            Run::Reaped { reaper: child, swept, .. } => {
                if let Ok(status) = child.wait().await {
                    sweep_after(status, swept);
                }
            }
            Run::Process(child) => {
                let _ = child.wait().await;
            }
            Run::Task { handle, done, .. } => {
                if !*done {
                    let _ = handle.await;
                    *done = true;
                }
            }
        }
    }

    /// Kills the job at once and waits until all of it is gone. A reaper
    /// that has not ended [`REAPER_PATIENCE`] after it was told (stopped by
    /// a signal or a debugger, hung) is killed itself: the job's own process
    /// dies with it, and what the job started falls to the worker, which
    /// sweeps it. Without that, a stopped reaper would leave the job running
    /// beside the next holder's.
    pub async fn kill_and_wait(&mut self) {
        self.kill();
        #[cfg(unix)]
        if let Run::Reaped { reaper, .. } = &mut self.run
            && tokio::time::timeout(REAPER_PATIENCE, reaper.wait()).await.is_err()
        {
            tracing::error!(
                "the job's reaper did not end within {} s of being told to kill the job (stopped or hung); killing it and all the job left",
                REAPER_PATIENCE.as_secs()
            );
            let _ = reaper.start_kill();
        }
        self.wait().await;
    }

    /// Stops the job: SIGTERM to each of its processes (or the stop signal
    /// to a task), SIGKILL (abort) after `grace`. Returns how it ended.
    pub async fn stop(mut self, grace: Duration) -> Option<String> {
        if let Some(how) = self.exited() {
            return Some(how);
        }
        match &self.run {
            #[cfg(unix)]
            Run::Reaped { control, .. } => control.terminate(),
            Run::Process(_) => signal_group(self.pid, Signal::Term),
            Run::Task { stop, .. } => {
                let _ = stop.send(true);
            }
        }
        if tokio::time::timeout(grace, self.wait()).await.is_err() {
            self.kill_and_wait().await;
        }
        self.exited()
    }

    /// Kills the job, all of its processes, at once.
    pub fn kill(&mut self) {
        if let Some(target) = self.kill_target() {
            target.kill();
        }
        if let Run::Process(child) = &mut self.run {
            let _ = child.start_kill();
        }
    }

    fn kill_target(&self) -> Option<KillTarget> {
        match &self.run {
            #[cfg(unix)]
            Run::Reaped { control, .. } => Some(KillTarget::Reaper(control.clone())),
            Run::Process(_) => self.pid.map(KillTarget::Group),
            Run::Task { handle, stop, .. } => Some(KillTarget::Task(handle.abort_handle(), stop.clone())),
        }
    }
}

/// How long a job's reaper gets to end after it was told to kill the job:
/// it kills with one signal and reaps at once, so only a stopped or hung
/// reaper takes longer.
#[cfg(unix)]
const REAPER_PATIENCE: Duration = Duration::from_secs(1);

/// Once a job's reaper has ended, the first time its end is seen: kills
/// what the job left below the worker, which is nothing unless the reaper
/// itself was killed; says so then.
#[cfg(unix)]
fn sweep_after(reaper_status: std::process::ExitStatus, swept: &mut bool) {
    if std::mem::replace(swept, true) {
        return;
    }
    let killed = reaper::sweep();
    if killed > 0 {
        tracing::error!(
            "the job's reaper ended ({reaper_status}) and left {killed} of the job's processes running; killed them"
        );
    }
}

impl Drop for Job {
    /// A job nobody holds any more must not run on: its reaper is told to
    /// kill it (a direct child is killed on drop by tokio).
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Run::Reaped { control, .. } = &self.run {
            control.kill();
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Output {
    Stdout,
    Stderr,
}

/// Copies the job's output to the worker's on a thread of its own: a stdout
/// nobody reads blocks this thread and, through the pipe, the job; never
/// the async runtime. A closed output is drained, so the job goes on.
fn forward(mut from: PipeReader, liveness: Liveness, to: Output) -> io::Result<()> {
    std::thread::Builder::new().name("job-output".to_owned()).spawn(move || {
        let mut buf = vec![0u8; 8192];
        let mut open = true;
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            liveness.beat();
            if open {
                let chunk = &buf[..n];
                let written = match to {
                    Output::Stdout => {
                        let mut out = io::stdout().lock();
                        out.write_all(chunk).and_then(|()| out.flush())
                    }
                    Output::Stderr => io::stderr().lock().write_all(chunk),
                };
                open = written.is_ok();
            }
        }
    })?;
    Ok(())
}

/// Kills a job from elsewhere (the lease watchdog) without owning it, so the
/// job dies on time even while the supervision loop waits on Redis. Once
/// fired it stays fired: a job it is pointed at afterwards dies at once.
#[derive(Debug, Clone, Default)]
pub struct Killer(Arc<Mutex<Aim>>);

#[derive(Debug, Default)]
struct Aim {
    target: Option<KillTarget>,
    fired: bool,
    /// The last dead-man deadline: the end of the lease last confirmed,
    /// less a margin, told to every reaper the killer is pointed at.
    deadline: Option<Boot>,
}

#[derive(Debug)]
enum KillTarget {
    #[cfg(unix)]
    Reaper(Arc<Control>),
    Group(u32),
    Task(tokio::task::AbortHandle, watch::Sender<bool>),
}

impl KillTarget {
    fn deadline(&self, at: Boot) {
        #[cfg(unix)]
        if let KillTarget::Reaper(control) = self {
            control.deadline(at);
        }
        #[cfg(not(unix))]
        let _ = at;
    }

    fn kill(self) {
        match self {
            #[cfg(unix)]
            KillTarget::Reaper(control) => control.kill(),
            KillTarget::Group(pid) => signal_group(Some(pid), Signal::Kill),
            KillTarget::Task(abort, stop) => {
                let _ = stop.send(true);
                abort.abort();
            }
        }
    }
}

impl Killer {
    fn aim(&self) -> std::sync::MutexGuard<'_, Aim> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Points the killer at `job`; kills it at once if the killer has fired.
    fn arm(&self, job: &Job) {
        let target = job.kill_target();
        let mut aim = self.aim();
        if aim.fired {
            drop(aim);
            if let Some(target) = target {
                target.kill();
            }
        } else {
            if let (Some(target), Some(at)) = (&target, aim.deadline) {
                target.deadline(at);
            }
            aim.target = target;
        }
    }

    /// Sets the dead-man deadline: a job below a reaper is killed at `at` by
    /// the reaper itself unless a later deadline comes first, even while
    /// this process cannot run. Embedded tasks and direct children have no
    /// reaper; for them the lease watchdog alone enforces the lease.
    pub fn feed(&self, at: Boot) {
        let mut aim = self.aim();
        aim.deadline = Some(at);
        if let Some(target) = &aim.target {
            target.deadline(at);
        }
    }

    /// Forgets the job (it ended; its pid may be reused).
    pub fn disarm(&self) {
        self.aim().target = None;
    }

    /// Kills the job it points at, if any, and stays fired; true when there
    /// was a job.
    pub fn kill(&self) -> bool {
        let target = {
            let mut aim = self.aim();
            aim.fired = true;
            aim.target.take()
        };
        target.map(KillTarget::kill).is_some()
    }

    /// True once [`Killer::kill`] was called.
    pub fn fired(&self) -> bool {
        self.aim().fired
    }
}

enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
fn signal_group(pid: Option<u32>, signal: Signal) {
    let Some(Ok(pid)) = pid.map(libc::pid_t::try_from) else { return };
    if pid <= 1 {
        return;
    }
    let sig = match signal {
        Signal::Term => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: kill(2) with a negative pid signals that process group; the
    // group was created for this child alone (setpgid in die_with_parent).
    unsafe {
        libc::kill(-pid, sig);
    }
}

#[cfg(not(unix))]
fn signal_group(_pid: Option<u32>, _signal: Signal) {}

/// Without a reaper: puts the child in its own process group and, on
/// Linux, has the kernel kill it when the worker dies, even by `kill -9`
/// (its own children are reached only through the group).
#[cfg(unix)]
fn die_with_parent(cmd: &mut Command) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            #[cfg(target_os = "linux")]
            {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // The worker may have died before prctl took effect.
                if libc::getppid() as u32 != parent {
                    libc::_exit(1);
                }
            }
            Ok(())
        });
    }
}

#[cfg(not(unix))]
fn die_with_parent(_cmd: &mut Command) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fired_killer_kills_the_next_job_at_once() {
        let killer = Killer::default();
        assert!(!killer.kill(), "nothing to kill yet");
        let env = JobEnv { fence: 1, node: "n", job: "j", orphan: None };
        let forever = Work::Task(Arc::new(|_ctx| Box::pin(std::future::pending())));
        let mut job = Job::start(&forever, &env, &killer).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), job.wait()).await.expect("a fired killer kills the next task");
        assert!(killer.fired());
        let sleep = Work::Command(vec!["sleep".to_owned(), "60".to_owned()]);
        let mut job = Job::start(&sleep, &env, &killer).await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), job.wait()).await.expect("a fired killer kills the next process");
    }

    #[test]
    fn connection_variables_are_kept_from_the_job() {
        for var in ["LOCKWATCH_REDIS_URL", "LOCKWATCH_SENTINEL", "LOCKWATCH_SENTINEL_MASTER", "REDISCLI_AUTH"] {
            assert!(is_connection_var(OsStr::new(var)), "{var}");
        }
        for var in ["LOCKWATCH_FENCE", "LOCKWATCH_JOB", "PATH", "REDIS_LOG"] {
            assert!(!is_connection_var(OsStr::new(var)), "{var}");
        }
    }
}
