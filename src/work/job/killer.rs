//! Killing a job from elsewhere (the lease watchdog) without owning it, and
//! telling its reaper the dead-man deadline.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::Job;
use super::group::{Signal, signal_group};
use crate::clock::Boot;
#[cfg(unix)]
use crate::work::reaper::Control;

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
pub(super) enum KillTarget {
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

    pub(super) fn kill(self) {
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
    pub(super) fn arm(&self, job: &Job) {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::work::job::{JobEnv, Work};

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
}
