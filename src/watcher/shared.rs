//! The one connection the watchers of a process send their looks and
//! checks on: made by the first that needs it, used by all (commands from
//! many jobs share it as they come), and made again once after it broke,
//! however many watchers saw it break.

use tokio::sync::Mutex;

use crate::connect::{Conn, Target};
use crate::error::{Error, RedisFailure};

/// The shared connection, or none yet; `made` counts those made, so a
/// watcher that saw an older one break does not drop a newer one.
pub(super) struct Shared {
    target: Target,
    slot: Mutex<(u64, Option<Conn>)>,
}

/// A watcher's handle on the shared connection: which one it uses.
pub(super) type Held = (u64, Conn);

impl Shared {
    pub(super) fn new(target: Target) -> Shared {
        Shared { target, slot: Mutex::new((0, None)) }
    }

    pub(super) fn target(&self) -> &Target {
        &self.target
    }

    /// The connection, when there is one (none while one is being made:
    /// the caller then looks, which waits for it within its patience).
    pub(super) fn current(&self) -> Option<Held> {
        let slot = self.slot.try_lock().ok()?;
        slot.1.clone().map(|conn| (slot.0, conn))
    }

    /// The connection, made now if there is none.
    pub(super) async fn get(&self) -> Result<Held, Error> {
        let mut slot = self.slot.lock().await;
        if let Some(conn) = &slot.1 {
            return Ok((slot.0, conn.clone()));
        }
        let conn = self.target.manager().await?;
        slot.0 += 1;
        slot.1 = Some(conn.clone());
        Ok((slot.0, conn))
    }

    /// After `err` on the connection `made`-th: when Redis could not be
    /// reached, a fresh connection next time, for every watcher, rather
    /// than trusting a dead one (which may come back to a demoted server).
    /// One made since stays.
    pub(super) async fn failed(&self, made: u64, err: &Error) {
        if err.redis_failure() != Some(RedisFailure::Unreachable) {
            return;
        }
        let mut slot = self.slot.lock().await;
        if slot.0 == made {
            slot.1 = None;
        }
    }
}
