//! The faults the model injects, what each is, and the state of the
//! Redisson service that holds the same lock (a foreign holder: no handover
//! record, no heartbeat, no reaper). `inject` plays them on the world.

/// The Redisson service's lock field (a version-4 UUID, as Redisson's are).
pub(super) const FOREIGN_FIELD: &str = "b1a5c2a6-8a8e-4a6f-9f3e-0c2b7e1d2f11:57";
/// Its lock's lease (lockWatchdogTimeout), renewed every third.
pub(super) const FOREIGN_LEASE: u64 = 12_000;

/// Something that goes wrong (or right) at one moment.
#[derive(Debug, Clone)]
pub(super) enum Fault {
    /// The worker of a slot is stopped (SIGSTOP) this long; its reaper and job run on.
    Freeze(usize, u64),
    /// `kill -9` of the worker alone: its reaper kills the job and lets go.
    Kill(usize),
    /// systemd kills the worker's whole unit; its `ExecStopPost=` runs
    /// `worker-gone`, and the unit starts again half a second later.
    UnitKill(usize),
    /// A worker process starts in a slot where none runs (slot 2: a cloned
    /// host of slot 0's, under the same name).
    Start(usize),
    /// A slot's worker is cut off from Redis this long (its connections
    /// killed, or a firewall): its calls fail, its presence subscription
    /// vanishes. Its reaper, another process, is not.
    Cut(usize, u64),
    /// A slot's job exits by itself.
    JobExits(usize),
    /// `worker-gone` for a slot's node, run from the wrong place.
    WorkerGone(usize, Place),
    /// An operator's `DEL` of the lock, or Redisson's `forceUnlock` (which
    /// publishes the unlock message).
    Del,
    EvictHandover,
    /// A slot's node's heartbeat evicted.
    EvictBeat(usize),
    /// Eviction under `maxmemory` taking any of these at once.
    Evict {
        lock: bool,
        handover: bool,
        beats: bool,
        counter: bool,
    },
    /// A failover to the replica, which lacks the last writes (at most this
    /// many, none it confirmed; or what it missed while it lagged).
    Failover(usize),
    /// Redis restarts from its last save (`true`) or empty.
    Restart(bool),
    /// Redis is stopped (SIGSTOP) this long.
    RedisFreeze(u64),
    /// The replica lags (confirms nothing) or catches up.
    Lag(bool),
    /// Each call of a slot's worker takes this long each way from now on
    /// (a slow or distant connection).
    Latency(usize, u64),
    /// Somebody has the job enabled, or nobody.
    Flags(bool),
    /// The Redisson service wants the lock (it waits for it, then holds it).
    ForeignWants,
    /// It unlocks.
    ForeignUnlock,
    /// It dies: its lock expires with its lease.
    ForeignDies,
}

impl Fault {
    /// Whether it is a command Redis runs (or an eviction it makes), which
    /// a frozen Redis runs only when it thaws.
    pub fn waits_for_redis(&self) -> bool {
        matches!(
            self,
            Fault::Del | Fault::EvictHandover | Fault::EvictBeat(_) | Fault::Evict { .. } | Fault::ForeignUnlock
        )
    }
}

/// Where `worker-gone` runs when it should not.
#[derive(Debug, Clone, Copy)]
pub(super) enum Place {
    /// By hand on the node's host, outside any unit.
    ByHand,
    /// In a container on the node's host: another PID namespace.
    Container,
    /// As the `ExecStopPost=` of a unit on the cloned host of `srv-a`.
    ClonedHost,
}

/// The Redisson service.
#[derive(Debug, Default)]
pub(super) struct Foreign {
    pub wants: bool,
    pub holds: bool,
    pub next_try: u64,
    pub next_renew: u64,
}

impl Foreign {
    pub fn due(&self) -> Option<u64> {
        if self.holds { Some(self.next_renew) } else { self.wants.then_some(self.next_try) }
    }

    /// The unlock message: a waiting Redisson client tries at once.
    pub fn wake(&mut self, now: u64) {
        self.next_try = self.next_try.min(now);
    }
}
