//! The wait between two tries to reach Redis again: longer after each
//! failure, up to a few seconds, until a success resets it.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::sleep;

/// Waits longer after each failure, up to a few seconds, until reset.
#[derive(Default)]
pub struct Backoff {
    failures: u32,
}

impl Backoff {
    pub async fn wait(&mut self, stop: &mut watch::Receiver<bool>) {
        let ms = (100u64 << self.failures.min(6)).min(5_000);
        self.failures += 1;
        tokio::select! {
            _ = sleep(Duration::from_millis(ms)) => {}
            _ = stop.changed() => {}
        }
    }

    pub fn reset(&mut self) {
        self.failures = 0;
    }
}
