//! Starting a job: a program below a reaper (or, without one, a direct
//! child in a process group of its own), or an embedded task; its
//! environment cleared of everything that says where Redis is.

use std::ffi::OsStr;
use std::io::{self, PipeReader};
use std::process::Stdio;
#[cfg(unix)]
use std::sync::Arc;

use tokio::process::Command;
use tokio::sync::watch;

use super::group::die_with_parent;
use super::output::{Output, forward};
use super::{Job, JobContext, JobEnv, Killer, Liveness, Run, Work};
use crate::work::reaper;

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
}

#[cfg(test)]
mod tests {
    use super::*;

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
