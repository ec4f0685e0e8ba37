//! How the watchers of one process send their looks: alone, each its own
//! call on the shared connection (one job, a Cluster, a lock key in
//! another slot), or together: the looks asked within a few milliseconds
//! of each other (the watchers of a process look on one grid, so steady
//! jobs ask at the same moments) go to Redis as one call of the probe.
//! A call Redis refuses for the jobs together (a user who may not read one
//! of them) is sent again one job at a time, each with its own answer, and
//! the process reads one job at a time from then on, so the refusal is not
//! logged again; another error of the server (`LOADING` after a restart,
//! `BUSY` under another's script) does that only after [`ODD_IN_A_ROW`] in
//! a row. A call that found Redis unreachable is every job's answer.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use tokio::sync::{mpsc, oneshot, watch};

use super::shared::Shared;
use crate::error::{Error, RedisFailure};
use crate::keys::Keys;
use crate::probe::{Known, Way, look, look_many};
use crate::snapshot::Snapshot;

/// How long the first look asked waits for others to join it: the
/// watchers woken by one tick of the grid all ask within this.
const GATHER: Duration = Duration::from_millis(5);

/// How many calls together in a row the server may fail with an error of
/// its own before the looks go one job at a time for good.
const ODD_IN_A_ROW: u32 = 3;

/// A watcher's way to look.
#[derive(Clone)]
pub(super) enum Looks {
    Alone(Arc<Shared>),
    Together(Arc<Shared>, mpsc::UnboundedSender<Asked>),
}

/// One look asked of the gatherer: the job, what its watcher knows, and
/// where the answer goes (with what it knows then).
pub(super) struct Asked {
    keys: Keys,
    known: Known,
    answer: oneshot::Sender<(Known, Result<Snapshot, Error>)>,
}

impl Looks {
    /// One look at the job of `keys`.
    pub(super) async fn look(&self, keys: &Keys, known: &mut Known) -> Result<Snapshot, Error> {
        let (shared, asked) = match self {
            Looks::Together(shared, asked) if keys.lock_shares_slot() => (shared, asked),
            Looks::Alone(shared) | Looks::Together(shared, _) => return alone(shared, keys, known).await,
        };
        let (answer, answered) = oneshot::channel();
        let ask = Asked { keys: keys.clone(), known: std::mem::take(known), answer };
        if let Err(mpsc::error::SendError(ask)) = asked.send(ask) {
            // The gatherer ended (the group is stopping): alone, then.
            *known = ask.known;
            return alone(shared, keys, known).await;
        }
        match answered.await {
            Ok((back, result)) => {
                *known = back;
                result
            }
            // Only when the gatherer ended with the look unsent.
            Err(_) => alone(shared, keys, known).await,
        }
    }
}

/// Sends the looks asked, gathered, until `stop`.
pub(super) async fn gather(
    shared: Arc<Shared>,
    mut asked: mpsc::UnboundedReceiver<Asked>,
    mut stop: watch::Receiver<bool>,
) {
    let mut way = Way::default();
    let (mut together, mut odd) = (true, 0u32);
    loop {
        let first = tokio::select! {
            first = asked.recv() => first,
            _ = stop.changed() => None,
        };
        let Some(first) = first else { return };
        tokio::time::sleep(GATHER).await;
        let mut batch = vec![first];
        while let Ok(more) = asked.try_recv() {
            batch.push(more);
        }
        // A watcher that stopped waiting no longer wants its look.
        batch.retain(|ask| !ask.answer.is_closed());
        if batch.len() > 1 && together {
            match send_together(&shared, &mut batch, &mut way).await {
                Ok(()) => {
                    odd = 0;
                    continue;
                }
                Err(err) if err.redis_failure() == Some(RedisFailure::Unreachable) => {
                    // Each job alone would only find the same: this is their answer.
                    for ask in batch {
                        let _ = ask.answer.send((ask.known, Err(err.clone())));
                    }
                    continue;
                }
                Err(err) => {
                    odd += 1;
                    if err.redis_failure() == Some(RedisFailure::Permission) || odd >= ODD_IN_A_ROW {
                        tracing::info!(error = %err, "the jobs' looks go one call each from now on");
                        together = false;
                    } else {
                        tracing::debug!(error = %err, "the jobs' look together failed; each job is read alone this time");
                    }
                }
            }
        }
        // One at a time, each with its own answer (or its own error), all at once.
        join_all(batch.into_iter().map(|mut ask| {
            let shared = &shared;
            async move {
                let result = alone(shared, &ask.keys, &mut ask.known).await;
                let _ = ask.answer.send((ask.known, result));
            }
        }))
        .await;
    }
}

/// The looks of `batch` in one call, each answered; on an error none is
/// answered and `batch` is left as it was.
async fn send_together(shared: &Shared, batch: &mut Vec<Asked>, way: &mut Way) -> Result<(), Error> {
    let (made, mut conn) = shared.get().await?;
    let mut jobs: Vec<(&Keys, &mut Known)> = batch.iter_mut().map(|ask| (&ask.keys, &mut ask.known)).collect();
    let results = look_many(&mut conn, &mut jobs, shared.target().endpoint(), way).await;
    let results = match results {
        Ok(results) => results,
        Err(err) => {
            shared.failed(made, &err).await;
            return Err(err);
        }
    };
    for (ask, result) in std::mem::take(batch).into_iter().zip(results) {
        let _ = ask.answer.send((ask.known, result));
    }
    Ok(())
}

/// One look, on the shared connection (made when there is none).
async fn alone(shared: &Shared, keys: &Keys, known: &mut Known) -> Result<Snapshot, Error> {
    let (made, mut conn) = shared.get().await?;
    let result = look(&mut conn, keys, shared.target().endpoint(), known).await;
    if let Err(err) = &result {
        shared.failed(made, err).await;
    }
    result
}
