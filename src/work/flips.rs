//! Hearing a supervisor's flip the moment she makes it. She may not publish
//! (a message's size has no ACL rule), so the worker asks Redis itself to
//! name every key written under the flags' and acknowledgements' prefixes
//! (broadcast tracking): each message is a key name she cannot choose
//! beyond her own. The worker then looks at once, and announces what it
//! found to every watcher. Where tracking is refused (an ACL without
//! `CLIENT TRACKING`) or unavailable (a Cluster), its look every second
//! finds the flip.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::connect::{Backoff, Target};
use crate::keys::Keys;

/// How often the tracking connection is asked whether it still tracks
/// (`CLIENT TRACKINGINFO`): a connection that died silently would hear nothing.
const CHECK_EVERY: Duration = Duration::from_secs(5);

/// Wakes `wake` at every write to a flag or an acknowledgement of the job,
/// until `stop` turns true.
pub async fn hear(target: Target, keys: Keys, wake: Arc<Notify>, mut stop: watch::Receiver<bool>) {
    if target.is_cluster() {
        return;
    }
    let prefixes = [keys.enabled_prefix(), keys.ack_prefix()];
    let mut backoff = Backoff::default();
    let mut said = false;
    while !*stop.borrow() {
        let closed = Arc::new(Notify::new());
        let heard = {
            let (wake, closed) = (wake.clone(), closed.clone());
            move |push: redis::PushInfo| match push.kind {
                redis::PushKind::Invalidate => wake.notify_one(),
                redis::PushKind::Disconnection => closed.notify_one(),
                _ => {}
            }
        };
        let mut conn = tokio::select! {
            conn = target.tracking(&prefixes, heard) => match conn {
                Ok(conn) => conn,
                Err(err) => {
                    if !std::mem::replace(&mut said, true) {
                        tracing::info!(error = %err, "cannot hear flips as they are made; the worker finds them at its next look");
                    }
                    backoff.wait(&mut stop).await;
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        backoff.reset();
        said = false;
        // Writes made while no connection tracked them are found by this look.
        wake.notify_one();
        loop {
            tokio::select! {
                _ = closed.notified() => break,
                _ = tokio::time::sleep(CHECK_EVERY) => {
                    // Any answer, even a refusal, says the connection lives.
                    let info = redis::cmd("CLIENT").arg("TRACKINGINFO").to_owned();
                    match tokio::time::timeout(CHECK_EVERY, info.query_async::<redis::Value>(&mut conn)).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(err)) if err.code().is_some() => {}
                        _ => break,
                    }
                }
                _ = stop.changed() => return,
            }
        }
        backoff.wait(&mut stop).await;
    }
}
