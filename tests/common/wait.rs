//! The one way a test waits for something: it looks again every 20 ms
//! until a check gives a value or a deadline passes, never a fixed sleep
//! (Redis expiry and the workers run in real time). [`until`] and
//! [`within`] block the thread; [`eventually`] sleeps on tokio's timer, so
//! an async test's other tasks (a watcher, a recorder) go on meanwhile.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// How long a wait sleeps between two looks.
const POLL: Duration = Duration::from_millis(20);

/// What `check` gives first, looking again until `timeout` has passed;
/// `None` when it gave nothing in time. For callers that say more than
/// "timed out" when it fails, or that want what is left at the deadline.
pub fn within<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// What `check` gives first; fails the test naming `what` when it gave
/// nothing within `timeout`.
pub fn until<T>(what: &str, timeout: Duration, check: impl FnMut() -> Option<T>) -> T {
    within(timeout, check).unwrap_or_else(|| panic!("timed out after {timeout:?} waiting for {what}"))
}

/// [`until`] for async tests.
pub async fn eventually<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}
