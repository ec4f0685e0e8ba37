//! What a watcher heard from Redis between its looks: when anything last
//! came (a message on a channel it follows, an answer), and when each
//! worker last published its beat on `{job}:beat`. While the beats come,
//! Redis answers and the holder lives, and the watcher asks neither: one
//! publish fanned out to every desktop costs Redis far less than a command
//! from each.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

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

/// When anything, and each worker's beat, was last heard.
#[derive(Debug)]
pub struct Heard(Mutex<Inner>);

#[derive(Debug)]
struct Inner {
    any: Instant,
    /// The last beat of any worker.
    beat: Option<Instant>,
    beats: HashMap<String, Instant>,
}

impl Default for Heard {
    fn default() -> Self {
        Heard(Mutex::new(Inner { any: Instant::now(), beat: None, beats: HashMap::new() }))
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
            let node = String::from_utf8_lossy(payload);
            if !inner.beats.contains_key(node.as_ref()) && inner.beats.len() >= MOST_NODES {
                inner.beats.clear();
            }
            inner.beats.insert(node.into_owned(), now);
            inner.beat = Some(now);
        }
    }

    /// Counts `node` as heard now: the holder just found, or found alive,
    /// gets a whole interval before it is asked after.
    pub fn vouch(&self, node: &str) {
        let now = Instant::now();
        let mut inner = self.inner();
        if !inner.beats.contains_key(node) && inner.beats.len() >= MOST_NODES {
            inner.beats.clear();
        }
        inner.beats.insert(node.to_owned(), now);
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

#[cfg(test)]
mod tests {
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
    fn a_flood_of_made_up_names_stays_bounded() {
        let heard = Heard::default();
        for i in 0..10_000 {
            heard.message(b"{outbound}:beat", format!("n{i}").as_bytes(), "{outbound}:beat");
        }
        assert!(heard.inner().beats.len() <= MOST_NODES);
        assert!(heard.last_beat(Some("n9999")).is_some());
    }
}
