//! Hearing a supervisor's flip the moment she makes it. She may not publish
//! (a message's size has no ACL rule), so the worker asks Redis itself to
//! name every key written under the flags' and acknowledgements' prefixes
//! (broadcast tracking): each message is a key name she cannot choose
//! beyond her own. The worker then looks at once, and announces what it
//! found to every watcher. Where tracking is refused (an ACL without
//! `CLIENT TRACKING`) or unavailable (a Cluster), its look every second
//! finds the flip. So does it while someone writes these keys faster than
//! any person flips ([`FLOOD`]): the worker then stops hearing them for a
//! while ([`Calm`]), and her flood costs her connection, not the workers.
//! The same connection hears the lock written (renewed, deleted, evicted,
//! expired), so the worker looks at once, and between such news seldom.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::connect::{Backoff, Target};
use crate::keys::Keys;

/// How often the tracking connection is asked whether it still tracks
/// (`CLIENT TRACKINGINFO`): a connection that died silently would hear nothing.
const CHECK_EVERY: Duration = Duration::from_secs(15);

/// More writes than this in one second are no person's flips: a script's
/// or a flood, heard no longer for a while.
pub const FLOOD: u32 = 50;

/// How long the worker stops hearing flips after a flood: from 30 s,
/// doubled at each flood that follows the last within that pause and
/// another, up to 10 minutes.
#[derive(Debug, Default)]
struct Calm {
    pause: Duration,
}

impl Calm {
    const FIRST: Duration = Duration::from_secs(30);
    const LONGEST: Duration = Duration::from_secs(600);

    /// The pause after a flood ended hearing `heard_for` after it began.
    fn after_flood(&mut self, heard_for: Duration) -> Duration {
        // Heard calmly for longer than two pauses: the flood before is over.
        if heard_for > self.pause * 2 {
            self.pause = Duration::ZERO;
        }
        self.pause = (self.pause * 2).clamp(Self::FIRST, Self::LONGEST);
        self.pause
    }
}

/// What the worker's looks may rely on: whether every write to the flags
/// and acknowledgements is heard now, and which keys were written since the
/// last time the worker asked. While nothing changed, a look need not read
/// the flags again (a glance does); a flag gone after exactly one write
/// heard was lost, not switched off first (`work::lost`).
#[derive(Debug, Default)]
pub struct Writes {
    tracking: AtomicBool,
    written: AtomicBool,
    /// Tracking was cut or began (or Redis said it flushed everything)
    /// since the worker last asked: what was written meanwhile is not known.
    broken: AtomicBool,
    /// How many writes each key had, as heard since the worker last asked.
    keys: Mutex<HashMap<Vec<u8>, u32>>,
}

/// What was heard since the worker last asked ([`Writes::take`]).
#[derive(Debug)]
pub struct Since {
    /// Whether the last full read still shows the flags and acknowledgements:
    /// tracking heard every write since, and none came.
    pub unchanged: bool,
    /// Whether tracking was cut or began since (or Redis flushed
    /// everything): what was written meanwhile is not known.
    pub broken: bool,
    /// Whether anything tracks writes now.
    pub tracking: bool,
    /// The keys written, with how many writes each.
    pub keys: HashMap<Vec<u8>, u32>,
}

impl Writes {
    /// What was heard since the last call. Asking clears it, so a write
    /// after it is news for the next look.
    pub fn take(&self) -> Since {
        let keys = self.keys.lock().map(|mut k| std::mem::take(&mut *k)).unwrap_or_default();
        let written = self.written.swap(false, Ordering::SeqCst);
        let broken = self.broken.swap(false, Ordering::SeqCst);
        let tracking = self.tracking.load(Ordering::SeqCst);
        Since { unchanged: tracking && !written, broken, tracking, keys }
    }

    fn tracking(&self, on: bool) {
        // Writes made while nothing tracked them: the next look reads all.
        self.written.store(true, Ordering::SeqCst);
        self.broken.store(true, Ordering::SeqCst);
        self.tracking.store(on, Ordering::SeqCst);
    }

    /// Whether anything tracks the writes now: while nothing does, the
    /// worker looks every second.
    pub fn tracked(&self) -> bool {
        self.tracking.load(Ordering::SeqCst)
    }

    /// Notes an invalidation: the keys it names (the lock's own only wakes
    /// the look), or (none named, after a flush) everything.
    fn heard(&self, data: &[redis::Value], lock: &[u8]) {
        match data.first() {
            Some(redis::Value::Array(keys)) => {
                let Ok(mut counts) = self.keys.lock() else { return };
                for key in keys {
                    if let redis::Value::BulkString(name) = key
                        && name != lock
                    {
                        self.written.store(true, Ordering::SeqCst);
                        *counts.entry(name.clone()).or_default() += 1;
                    }
                }
            }
            _ => {
                self.written.store(true, Ordering::SeqCst);
                self.broken.store(true, Ordering::SeqCst);
            }
        }
    }
}

/// Whether an invalidation names a key under one of `prefixes`, or none
/// at all (a flush, which drops every key, the job's too).
fn names_ours(data: &[redis::Value], prefixes: &[Vec<u8>]) -> bool {
    match data.first() {
        Some(redis::Value::Array(keys)) => keys
            .iter()
            .any(|key| matches!(key, redis::Value::BulkString(name) if prefixes.iter().any(|p| name.starts_with(p)))),
        _ => true,
    }
}

/// Wakes `wake` at every write to a flag or an acknowledgement of the job,
/// and says so in `writes`, until `stop` turns true.
pub async fn hear(target: Target, keys: Keys, wake: Arc<Notify>, writes: Arc<Writes>, mut stop: watch::Receiver<bool>) {
    if target.is_cluster() {
        return;
    }
    // The lock too, when its name overlaps neither (Redis refuses
    // overlapping prefixes): its deletion, eviction or expiry is heard at
    // once, not at the next look.
    let mut prefixes = vec![keys.enabled_prefix(), keys.ack_prefix()];
    if !prefixes.iter().any(|p| p.starts_with(&keys.lock) || keys.lock.starts_with(p.as_str())) {
        prefixes.push(keys.lock.clone());
    }
    let lock = keys.lock.clone().into_bytes();
    let ours: Arc<[Vec<u8>]> = prefixes.iter().map(|p| p.clone().into_bytes()).collect();
    let mut backoff = Backoff::default();
    let mut calm = Calm::default();
    let mut said = false;
    while !*stop.borrow() {
        let (closed, flooded) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let count = Arc::new(AtomicU32::new(0));
        let on_push = {
            let (wake, closed, flooded, count, writes, lock, ours) = (
                wake.clone(),
                closed.clone(),
                flooded.clone(),
                count.clone(),
                writes.clone(),
                lock.clone(),
                ours.clone(),
            );
            move |push: redis::PushInfo| match push.kind {
                // Another client may redirect its own tracking here (Redis
                // does not tie `REDIRECT` to a user): what names none of
                // this job's keys is not ours to count or look at.
                redis::PushKind::Invalidate if !names_ours(&push.data, &ours) => {}
                redis::PushKind::Invalidate => match count.fetch_add(1, Ordering::Relaxed) {
                    n if n < FLOOD => {
                        writes.heard(&push.data, &lock);
                        wake.notify_one();
                    }
                    // A flood: the loop below hangs up at once, so the
                    // rest costs this process no more parsing.
                    FLOOD => flooded.notify_one(),
                    _ => {}
                },
                redis::PushKind::Disconnection => closed.notify_one(),
                _ => {}
            }
        };
        let mut conn = tokio::select! {
            conn = target.tracking(&prefixes, on_push) => match conn {
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
        writes.tracking(true);
        wake.notify_one();
        let heard_since = tokio::time::Instant::now();
        let mut second = tokio::time::interval(Duration::from_secs(1));
        let mut checked = tokio::time::Instant::now();
        let flooded = loop {
            tokio::select! {
                _ = closed.notified() => break false,
                _ = flooded.notified() => break true,
                _ = second.tick() => {
                    count.store(0, Ordering::Relaxed);
                    if checked.elapsed() < CHECK_EVERY {
                        continue;
                    }
                    checked = tokio::time::Instant::now();
                    // Any answer, even a refusal, says the connection lives.
                    let info = redis::cmd("CLIENT").arg("TRACKINGINFO").to_owned();
                    match tokio::time::timeout(CHECK_EVERY, info.query_async::<redis::Value>(&mut conn)).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(err)) if err.code().is_some() => {}
                        _ => break false,
                    }
                }
                _ = stop.changed() => return,
            }
        };
        drop(conn);
        writes.tracking(false);
        if flooded {
            let pause = calm.after_flood(heard_since.elapsed());
            tracing::warn!(
                "the job's flags or \"on it\" are written more than {FLOOD} times a second (a script or a flood, no person's flips): not heard as they come for {} s, the look every second finds flips meanwhile",
                pause.as_secs()
            );
            tokio::select! {
                _ = tokio::time::sleep(pause) => continue,
                _ = stop.changed() => return,
            }
        }
        backoff.wait(&mut stop).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_invalidations_of_the_jobs_own_keys_or_a_flush_count() {
        let ours = [b"{billing}:enabled:".to_vec(), b"{billing}:ack:".to_vec()];
        let named = |keys: &[&str]| {
            vec![redis::Value::Array(keys.iter().map(|k| redis::Value::BulkString(k.as_bytes().to_vec())).collect())]
        };
        assert!(names_ours(&named(&["{billing}:enabled:bob"]), &ours));
        assert!(names_ours(&named(&["{outbound}:zz1", "{billing}:ack:bob"]), &ours));
        assert!(!names_ours(&named(&["{outbound}:zz1"]), &ours), "another job's key, redirected here");
        assert!(!names_ours(&named(&["{billing}:enabledX"]), &ours));
        assert!(names_ours(&[redis::Value::Nil], &ours), "a flush drops the job's keys too");
    }

    #[test]
    fn floods_one_after_another_are_heard_ever_less_and_a_calm_spell_forgives() {
        let mut calm = Calm::default();
        let secs = |d: Duration| d.as_secs();
        assert_eq!(secs(calm.after_flood(Duration::from_secs(1))), 30);
        assert_eq!(secs(calm.after_flood(Duration::from_secs(1))), 60);
        assert_eq!(secs(calm.after_flood(Duration::from_secs(100))), 120, "100 s is within two pauses of 60 s");
        for _ in 0..10 {
            calm.after_flood(Duration::from_secs(1));
        }
        assert_eq!(secs(calm.after_flood(Duration::from_secs(1))), 600, "never longer than 10 minutes");
        assert_eq!(secs(calm.after_flood(Duration::from_secs(1_201))), 30, "heard calmly past two pauses");
    }
}
