//! The lease's watchdog: a task of its own per holding that renews the
//! lease as [`Renewer`] decides and reports each outcome to the supervision
//! loop. When the lock is not ours any more, or the lease can no longer be
//! vouched for, it kills the job itself, whatever the loop is waiting on,
//! so the job never outlives the lease.

use tokio::sync::watch;
use tokio::time::{Instant, sleep};

use crate::clock::Boot;
use crate::connect::{Conn, Target, Vouch};
use crate::work::engine::Renewal;
use crate::work::engine::renewer::{Answer, Renewer, Verdict};
use crate::work::job::Killer;
use crate::work::lock::{Lock, Renew};

/// Renews the holding whose lease a call sent at `since` confirmed, until
/// it gives up; `killer` gets each new dead-man deadline, and fires on giving up.
pub(super) async fn watchdog(target: Target, lock: Lock, report: watch::Sender<Renewal>, killer: Killer, since: Boot) {
    let mut renewer = Renewer::new(lock.lease(), since);
    let mut conn: Option<Conn> = None;
    let mut next = renewer.next_renewal();
    loop {
        sleep(next.remaining()).await;
        let sent = Boot::now();
        let deadline = Instant::now() + renewer.deadline().remaining();
        let attempt = async {
            let mut c = match conn.take() {
                Some(c) => c,
                None => target.manager().await?,
            };
            let renewed = lock.renew(&mut c).await?;
            // Renewed on a primary the sentinels do not vouch for: the
            // renewal counts for nothing (deposed: the holding is over),
            // and the next one finds the primary anew.
            let vouched =
                if renewed == Renew::Renewed { target.primary_vouched_for(&mut c).await.0 } else { Vouch::Yes };
            if vouched == Vouch::Yes {
                conn = Some(c);
            }
            Ok::<_, crate::error::Error>((renewed, vouched))
        };
        let (answer, failure) = match tokio::time::timeout_at(deadline, attempt).await {
            Ok(Ok((_, Vouch::Another))) => {
                tracing::warn!("a sentinel names another server as the primary: this holding is over");
                (Answer::NotOurs, None)
            }
            Ok(Ok((_, Vouch::TooFew))) => {
                (Answer::Unconfirmed, Some("too few sentinels answer to vouch for this primary".to_owned()))
            }
            Ok(Ok((Renew::Renewed, Vouch::Yes))) => (Answer::Renewed, None),
            Ok(Ok((Renew::NotOurs, Vouch::Yes))) => (Answer::NotOurs, None),
            Ok(Ok((Renew::Unconfirmed, Vouch::Yes))) => (Answer::Unconfirmed, None),
            Ok(Err(err)) => {
                conn = None;
                (Answer::Failed, Some(err.to_string()))
            }
            Err(_) => (Answer::TimedOut, None),
        };
        let verdict = renewer.answer(sent, Boot::now(), answer);
        match verdict {
            Verdict::Renewed { kill_at, .. } => {
                killer.feed(kill_at);
                next = renewer.next_renewal();
            }
            Verdict::Retry { at, say } => {
                if say {
                    match (&answer, &failure) {
                        (Answer::Unconfirmed, Some(why)) => {
                            tracing::warn!(
                                "the lease renewal does not count: {why}; retrying until the lease runs out"
                            );
                        }
                        (_, Some(err)) => {
                            tracing::warn!(error = %err, "lease renewal failed; retrying until the lease runs out");
                        }
                        (_, None) => tracing::warn!("no replica confirmed the lease renewal in time; retrying"),
                    }
                }
                next = at;
            }
            Verdict::GiveUp(_) => {
                killer.kill();
            }
        }
        let _ = report.send(verdict.report());
        if matches!(verdict, Verdict::GiveUp(_)) {
            return;
        }
    }
}
