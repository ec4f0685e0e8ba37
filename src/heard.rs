//! What a watcher heard from Redis between its looks: when anything last
//! came (a message on a channel it follows, an answer), and when each
//! worker last published its beat on `{job}:beat`. While the beats come,
//! Redis answers and the holder lives, and the watcher asks neither: one
//! publish a second fanned out to every desktop costs Redis far less than a
//! command from each.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

/// The most workers whose beats are kept: a job has a handful of servers;
/// whoever may publish on the channel cannot grow this past a bound.
const MOST_NODES: usize = 64;

/// How long a watcher may hear nothing more than its liveness interval
/// before it asks: a beat comes about once a second, a little late under load.
pub const BEAT_SLACK: std::time::Duration = std::time::Duration::from_millis(300);

/// When anything, and each worker's beat, was last heard.
#[derive(Debug)]
pub struct Heard(Mutex<Inner>);

#[derive(Debug)]
struct Inner {
    any: Instant,
    beats: HashMap<String, Instant>,
}

impl Default for Heard {
    fn default() -> Self {
        Heard(Mutex::new(Inner { any: Instant::now(), beats: HashMap::new() }))
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

    /// When `node` last beat (or was vouched for).
    pub fn last_beat(&self, node: &str) -> Option<Instant> {
        self.inner().beats.get(node).copied()
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
        assert_eq!(heard.last_beat("srv-a"), None, "a wake-up is no beat");
        heard.message(b"{outbound}:beat", b"srv-a", "{outbound}:beat");
        assert!(heard.last_beat("srv-a").is_some());
        assert_eq!(heard.last_beat("srv-b"), None);
    }

    #[test]
    fn a_flood_of_made_up_names_stays_bounded() {
        let heard = Heard::default();
        for i in 0..10_000 {
            heard.message(b"{outbound}:beat", format!("n{i}").as_bytes(), "{outbound}:beat");
        }
        assert!(heard.inner().beats.len() <= MOST_NODES);
        assert!(heard.last_beat("n9999").is_some());
    }
}
