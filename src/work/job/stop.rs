//! Ending a job: how it ended, waiting for it, stopping it with a grace,
//! killing it, and sweeping what a killed reaper left below the worker.

use std::time::Duration;

use super::group::{Signal, signal_group};
use super::killer::KillTarget;
use super::{Job, Run};
#[cfg(unix)]
use crate::work::reaper;

impl Job {
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

    pub(super) fn kill_target(&self) -> Option<KillTarget> {
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
