//! A job's last sign of life: output lines count, and an embedded task
//! calls [`Liveness::beat`] itself.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// When the job last showed a sign of life. Output lines count; a job
/// embedded in a Rust service calls [`Liveness::beat`] itself.
#[derive(Debug, Clone)]
pub struct Liveness(Arc<Mutex<Instant>>);

impl Default for Liveness {
    fn default() -> Self {
        Liveness(Arc::new(Mutex::new(Instant::now())))
    }
}

impl Liveness {
    /// Records a sign of life now.
    pub fn beat(&self) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }

    /// Time since the last sign of life.
    pub fn silent_for(&self) -> Duration {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).elapsed()
    }
}
