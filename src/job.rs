//! The worker's child process: started with the fence in its environment,
//! in its own process group, killed with the worker (`PR_SET_PDEATHSIG` on
//! Linux), its output forwarded line by line and timed for stall detection.

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::time::Instant;

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
    child: Child,
    pub pid: u32,
    pub liveness: Liveness,
}

/// The environment a job gets.
pub struct JobEnv<'a> {
    pub fence: i64,
    pub node: &'a str,
    pub job: &'a str,
}

impl Job {
    /// Starts `command` (program and arguments).
    ///
    /// # Errors
    /// The spawn error, e.g. program not found.
    pub fn start(command: &[String], env: &JobEnv<'_>) -> io::Result<Job> {
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
        let pid = child.id().unwrap_or(0);
        let liveness = Liveness::default();
        if let Some(out) = child.stdout.take() {
            tokio::spawn(forward(out, liveness.clone(), false));
        }
        if let Some(err) = child.stderr.take() {
            tokio::spawn(forward(err, liveness.clone(), true));
        }
        Ok(Job { child, pid, liveness })
    }

    /// The exit status once the job has ended (`None` while it runs).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits for the job to end.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Stops the job: SIGTERM to its process group, SIGKILL after `grace`.
    pub async fn stop(mut self, grace: Duration) -> Option<ExitStatus> {
        if let Some(status) = self.exited() {
            return Some(status);
        }
        signal_group(self.pid, Signal::Term);
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status.ok(),
            Err(_) => {
                self.kill();
                self.child.wait().await.ok()
            }
        }
    }

    /// Kills the job and its process group at once.
    pub fn kill(&mut self) {
        signal_group(self.pid, Signal::Kill);
        let _ = self.child.start_kill();
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

enum Signal {
    Term,
    Kill,
}

#[cfg(unix)]
fn signal_group(pid: u32, signal: Signal) {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return };
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
fn signal_group(_pid: u32, _signal: Signal) {}

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
