//! What the worker runs while it holds the lock: a child process (started
//! with the fence in its environment, in its own process group, killed with
//! the worker by `PR_SET_PDEATHSIG` on Linux, its output forwarded and timed
//! for stall detection), or a task of a Rust service that embeds the worker
//! and reports signs of life with [`Liveness::beat`].

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The work a worker runs while it holds the lock.
#[derive(Clone)]
pub enum Work {
    /// A program and its arguments.
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
    /// Process id of a child; `None` for an embedded task.
    pub pid: Option<u32>,
    pub liveness: Liveness,
}

enum Run {
    Process(Child),
    Task { handle: JoinHandle<()>, stop: watch::Sender<bool>, done: bool },
}

/// The environment a job gets.
pub struct JobEnv<'a> {
    pub fence: i64,
    pub node: &'a str,
    pub job: &'a str,
}

impl Job {
    /// Starts `work`.
    ///
    /// # Errors
    /// The spawn error, e.g. program not found.
    pub fn start(work: &Work, env: &JobEnv<'_>) -> io::Result<Job> {
        match work {
            Work::Command(command) => Job::start_process(command, env),
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
                Ok(Job { run: Run::Task { handle, stop, done: false }, pid: None, liveness })
            }
        }
    }

    fn start_process(command: &[String], env: &JobEnv<'_>) -> io::Result<Job> {
        let (program, args) = command.split_first().ok_or_else(|| io::Error::other("no command given"))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("LOCKWATCH_FENCE", env.fence.to_string())
            .env("LOCKWATCH_NODE", env.node)
            .env("LOCKWATCH_JOB", env.job)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        die_with_parent(&mut cmd);
        let mut child = cmd.spawn()?;
        let pid = child.id();
        let liveness = Liveness::default();
        if let Some(out) = child.stdout.take() {
            tokio::spawn(forward(out, liveness.clone(), false));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(forward(err, liveness.clone(), true));
        }
        Ok(Job { run: Run::Process(child), pid, liveness })
    }

    /// How the job ended, once it has (`None` while it runs).
    pub fn exited(&mut self) -> Option<String> {
        match &mut self.run {
            Run::Process(child) => child.try_wait().ok().flatten().map(|s| s.to_string()),
            Run::Task { handle, done, .. } => (*done || handle.is_finished()).then(|| "task ended".to_owned()),
        }
    }

    /// Waits for the job to end.
    pub async fn wait(&mut self) {
        match &mut self.run {
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

    /// Stops the job: SIGTERM to its process group (or the stop signal to a
    /// task), SIGKILL (abort) after `grace`. Returns how it ended.
    pub async fn stop(mut self, grace: Duration) -> Option<String> {
        if let Some(how) = self.exited() {
            return Some(how);
        }
        match &self.run {
            Run::Process(_) => signal_group(self.pid, Signal::Term),
            Run::Task { stop, .. } => {
                let _ = stop.send(true);
            }
        }
        if tokio::time::timeout(grace, self.wait()).await.is_err() {
            self.kill();
            self.wait().await;
        }
        self.exited()
    }

    /// Kills the job (and its process group) at once.
    pub fn kill(&mut self) {
        match &mut self.run {
            Run::Process(child) => {
                signal_group(self.pid, Signal::Kill);
                let _ = child.start_kill();
            }
            Run::Task { handle, stop, .. } => {
                let _ = stop.send(true);
                handle.abort();
            }
        }
    }
}

async fn forward(stream: impl AsyncRead + Unpin, liveness: Liveness, is_err: bool) {
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        liveness.beat();
        if is_err {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// Kills a job from elsewhere (the lease watchdog) without owning it, so the
/// job dies on time even while the supervision loop waits on Redis.
#[derive(Debug, Clone, Default)]
pub struct Killer(Arc<Mutex<Option<KillTarget>>>);

#[derive(Debug)]
enum KillTarget {
    Group(u32),
    Task(tokio::task::AbortHandle, watch::Sender<bool>),
}

impl Killer {
    /// Points the killer at `job`.
    pub fn arm(&self, job: &Job) {
        let target = match &job.run {
            Run::Process(_) => job.pid.map(KillTarget::Group),
            Run::Task { handle, stop, .. } => Some(KillTarget::Task(handle.abort_handle(), stop.clone())),
        };
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = target;
    }

    /// Forgets the job (it ended; its pid may be reused).
    pub fn disarm(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Kills the job it points at, if any; true when there was one.
    pub fn kill(&self) -> bool {
        match self.0.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(KillTarget::Group(pid)) => {
                signal_group(Some(pid), Signal::Kill);
                true
            }
            Some(KillTarget::Task(abort, stop)) => {
                let _ = stop.send(true);
                abort.abort();
                true
            }
            None => false,
        }
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

/// Puts the child in its own process group and, on Linux, has the kernel
/// kill it when the worker dies, even by `kill -9`.
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
