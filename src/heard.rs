//! What a watcher heard from Redis between its looks: when anything last
//! came (a message on a channel it follows, an answer), and when each
//! worker last published its beat on `{job}:beat`. While the beats come,
//! Redis answers and the holder lives, and the watcher asks neither: one
//! publish fanned out to every desktop costs Redis far less than a command
//! from each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::keys::Keys;

/// The most workers whose beats are kept: a job has a handful of servers;
/// whoever may publish on the channel cannot grow this past a bound.
const MOST_NODES: usize = 64;

/// How often the job's beat is published. Each one costs Redis a write to
/// every desktop, so not more often than a frozen Redis must be told
/// (within 3 s: a beat missed by [`BEAT_SLACK`] and a `PING` left
/// unanswered for the watcher's patience).
pub const BEAT_EVERY: Duration = Duration::from_millis(1800);

/// How late a beat may come before it counts as missed.
pub const BEAT_SLACK: Duration = Duration::from_millis(200);

/// How long after a beat the next counts as missed.
pub const BEAT_LATE: Duration = BEAT_EVERY.saturating_add(BEAT_SLACK);

/// When anything, and each worker's beat, was last heard.
#[derive(Debug)]
pub struct Heard(Mutex<Inner>);

#[derive(Debug)]
struct Inner {
    any: Instant,
    /// The last beat of any worker.
    beat: Option<Instant>,
    beats: HashMap<String, Instant>,
    /// The holder whose presence the last look counted: whom a roll call
    /// of many jobs asks after instead of hearing its beat.
    holder: Option<String>,
}

impl Inner {
    /// Notes `node`'s beat at `now`, keeping at most [`MOST_NODES`].
    fn beat_of(&mut self, node: &str, now: Instant) {
        if !self.beats.contains_key(node) && self.beats.len() >= MOST_NODES {
            self.beats.clear();
        }
        self.beats.insert(node.to_owned(), now);
    }
}

impl Default for Heard {
    fn default() -> Self {
        Heard(Mutex::new(Inner { any: Instant::now(), beat: None, beats: HashMap::new(), holder: None }))
    }
}

impl Heard {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Redis said something just now.
    pub fn something(&self) {
        self.inner().any = Instant::now();
    }

    /// A message came on `channel`: a beat when it is `beat_channel`, its
    /// payload the worker's node name. Anything heard proves Redis answers.
    pub fn message(&self, channel: &[u8], payload: &[u8], beat_channel: &str) {
        let now = Instant::now();
        let mut inner = self.inner();
        inner.any = now;
        if channel == beat_channel.as_bytes() {
            inner.beat_of(&String::from_utf8_lossy(payload), now);
            inner.beat = Some(now);
        }
    }

    /// Counts `node` as heard now: the holder just found, or found alive,
    /// gets a whole interval before it is asked after.
    pub fn vouch(&self, node: &str) {
        self.inner().beat_of(node, Instant::now());
    }

    /// `node`'s presence subscription was counted just now: as good as its
    /// beat (which is published while it holds and lives).
    pub fn present(&self, node: &str) {
        let now = Instant::now();
        let mut inner = self.inner();
        inner.any = now;
        inner.beat_of(node, now);
        inner.beat = Some(now);
    }

    /// Notes the holder the last look found present (none: nobody to ask after).
    pub fn holding(&self, node: Option<String>) {
        self.inner().holder = node;
    }

    /// The holder the last look found present.
    pub fn holder(&self) -> Option<String> {
        self.inner().holder.clone()
    }

    /// When anything was last heard.
    pub fn last(&self) -> Instant {
        self.inner().any
    }

    /// When `node` last beat (or was vouched for), or, with no node, any worker.
    pub fn last_beat(&self, node: Option<&str>) -> Option<Instant> {
        let inner = self.inner();
        match node {
            Some(node) => inner.beats.get(node).copied(),
            None => inner.beat,
        }
    }
}

/// Whom a pub/sub follower tells of each message on the job's channels.
pub(crate) struct Listeners {
    /// Woken by a message that asks for a look: a flip announced, a
    /// keyspace notification, an unlock unless `unlocked` takes it.
    pub wake: Arc<Notify>,
    /// Woken instead by a Redisson unlock message, when set: a worker
    /// waiting for the lock acts on it at once, unpaced (only those that
    /// may unlock publish there; a supervisor's rights do not reach it).
    unlocked: Option<Arc<Notify>>,
    /// Told of the workers' beats (a watcher's), which wake nothing, and
    /// of anything Redis says.
    heard: Option<Arc<Heard>>,
    /// Whether the beats are listened for (a watcher of many jobs asks
    /// after their holders instead: [`Heard::present`]).
    beats: bool,
    beat_channel: String,
    unlock_channel: String,
    wake_channel: String,
    /// The job's keys, whose keyspace notifications it follows.
    prefix: String,
    lock: String,
}

impl Listeners {
    /// Listeners of `keys`'s job that only wake.
    pub(crate) fn new(keys: &Keys, wake: Arc<Notify>) -> Listeners {
        Listeners {
            wake,
            unlocked: None,
            heard: None,
            beats: false,
            beat_channel: keys.beat_channel(),
            unlock_channel: keys.unlock_channel(),
            wake_channel: keys.wake_channel(),
            prefix: format!("{}:", keys.prefix),
            lock: keys.lock.clone(),
        }
    }

    /// The same, also told of the workers' beats.
    pub(crate) fn hearing(self, heard: Arc<Heard>) -> Listeners {
        Listeners { heard: Some(heard), beats: true, ..self }
    }

    /// The same, told that Redis answers but not listening for the beats.
    pub(crate) fn hearing_no_beats(self, heard: Arc<Heard>) -> Listeners {
        Listeners { heard: Some(heard), beats: false, ..self }
    }

    /// The same, with unlock messages to `unlocked` rather than `wake`.
    pub(crate) fn unlocking(self, unlocked: Arc<Notify>) -> Listeners {
        Listeners { unlocked: Some(unlocked), ..self }
    }

    /// The beat channel, when the beats are listened for.
    pub(crate) fn beat_channel(&self) -> Option<&str> {
        self.beats.then_some(self.beat_channel.as_str())
    }

    /// Whether a message on `channel` is this job's: one of its channels,
    /// or a keyspace notification of one of its keys.
    pub(crate) fn owns(&self, channel: &[u8]) -> bool {
        let channel = String::from_utf8_lossy(channel);
        if [&self.beat_channel, &self.unlock_channel, &self.wake_channel].iter().any(|c| **c == channel) {
            return true;
        }
        let key = channel.strip_prefix("__keyspace@").and_then(|rest| rest.split_once("__:")).map(|(_, key)| key);
        key.is_some_and(|key| key.starts_with(&self.prefix) || key == self.lock)
    }

    /// Notes that Redis said something, for a message another job owned.
    pub(crate) fn something(&self) {
        if let Some(heard) = &self.heard {
            heard.something();
        }
    }

    /// Tells a message on `channel` to whoever listens for it.
    pub(crate) fn message(&self, channel: &[u8], payload: &[u8]) {
        if let Some(heard) = &self.heard {
            heard.message(channel, payload, &self.beat_channel);
            if self.beats && channel == self.beat_channel.as_bytes() {
                return;
            }
        }
        match &self.unlocked {
            Some(unlocked) if channel == self.unlock_channel.as_bytes() => unlocked.notify_one(),
            _ => self.wake.notify_one(),
        }
    }
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;

    use super::*;

    #[test]
    fn a_beat_is_heard_for_its_node_and_any_message_for_redis() {
        let heard = Heard::default();
        let start = heard.last();
        std::thread::sleep(std::time::Duration::from_millis(5));
        heard.message(b"{outbound}:wake", b"srv-a", "{outbound}:beat");
        assert!(heard.last() > start);
        assert_eq!(heard.last_beat(Some("srv-a")), None, "a wake-up is no beat");
        heard.message(b"{outbound}:beat", b"srv-a", "{outbound}:beat");
        assert!(heard.last_beat(Some("srv-a")).is_some());
        assert_eq!(heard.last_beat(Some("srv-b")), None);
        assert_eq!(heard.last_beat(None), heard.last_beat(Some("srv-a")));
    }

    #[test]
    fn each_message_reaches_its_listener() {
        let keys = Keys::new("outbound");
        let (wake, unlocked, heard) = (Arc::new(Notify::new()), Arc::new(Notify::new()), Arc::new(Heard::default()));
        let listeners = Listeners::new(&keys, wake.clone()).unlocking(unlocked.clone()).hearing(heard.clone());
        let woken = |n: &Notify| n.notified().now_or_never().is_some();
        listeners.message(b"{outbound}:beat", b"srv-a");
        assert!(!woken(&wake) && !woken(&unlocked) && heard.last_beat(Some("srv-a")).is_some());
        listeners.message(b"redisson_lock__channel:{outbound}:lock", b"0");
        assert!(woken(&unlocked) && !woken(&wake));
        listeners.message(b"{outbound}:wake", b"alice");
        assert!(woken(&wake) && !woken(&unlocked));
        assert!(listeners.owns(b"__keyspace@0__:{outbound}:enabled:alice") && listeners.owns(b"{outbound}:wake"));
        assert!(!listeners.owns(b"{inbound}:wake") && !listeners.owns(b"__keyspace@0__:{inbound}:lock"));
        let plain = Listeners::new(&keys, wake.clone());
        plain.message(b"{outbound}:beat", b"srv-a");
        assert!(woken(&wake), "a follower not listening for beats wakes on anything it hears");
    }

    #[test]
    fn a_flood_of_made_up_names_stays_bounded() {
        let heard = Heard::default();
        for i in 0..10_000 {
            heard.message(b"{outbound}:beat", format!("n{i}").as_bytes(), "{outbound}:beat");
        }
        assert!(heard.inner().beats.len() <= MOST_NODES);
        assert!(heard.last_beat(Some("n9999")).is_some());
    }
}
