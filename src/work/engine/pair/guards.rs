//! The product's guards as rules of the model: one flag each, all on by
//! default. A guard switched off makes the model feed (or bypass) the real
//! code as the product did without it, or as it would without it, so the
//! checker can show what each guard is there for.

use std::fmt;

/// One guard of the product against two jobs at once (or a fence going back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Guard {
    /// The handover record's wait (`before_busy`): off, the lock script names
    /// no holding before (as before the record existed: `Before::Stopped`).
    HandoverWait,
    /// Only the holding's own worker process's heartbeat speaks for it: off,
    /// any heartbeat under its node name does, and a holding under this
    /// worker's own name is never waited for (the code before `instance`).
    InstanceMatch,
    /// No proof from absence: off, a heartbeat whose presence subscription
    /// Redis does not count proves its job stopped, to `busy_elsewhere`,
    /// `before_busy` and the name's claim (the code before it).
    NoProofFromAbsence,
    /// `worker-gone` acts only as its own unit run's `ExecStopPost=`: off, it
    /// lets go wherever it runs when it sees neither the holder's presence
    /// nor its pid in its own `/proc` (the code before `unit`).
    WorkerGoneOwnUnit,
    /// The reaper's dead-man kill at `Lease::kill_after`: off, the reaper
    /// kills the job only when its worker dies.
    ReaperDeadline,
    /// The engine's own stop: off, the shell tells it the lease is always
    /// vouched for, so neither `stop_after` nor the watchdog's word stops it.
    EngineStop,
    /// The watchdog kills the job itself when it gives up: off, it only says so.
    WatchdogKill,
    /// Every acquisition takes a new fence: off, the counter never moves
    /// once it is set.
    FenceIncrement,
    /// A new fence is above the counter, every fence the worker saw, and
    /// Redis time: off, it is the counter plus one.
    FenceFloor,
    /// A foreign holder is trusted only while the fence counter stays as the
    /// refusals saw it: off, the counter is not compared.
    ForeignCounter,
    /// A holder is foreign only when no lockwatch mark (a version-8 field),
    /// handover record or heartbeat names it: off, any holder a refusal sees is.
    ForeignMark,
    /// `busy_elsewhere`: off, no other server's heartbeat is waited for.
    BusyElsewhere,
    /// Each holding takes the lock under a field of its own: off, a worker
    /// keeps one field for its whole life.
    FreshField,
    /// The lock script's wait for Redis's sake (a missing counter, a
    /// restarted Redis, an earlier wait): off, it never says wait.
    RestartWait,
    /// An acquisition or renewal counts only once a replica confirmed it
    /// (`WAIT 1`): off, every one counts.
    ReplicaConfirm,
    /// A look that finds the lock gone stops the job: off, the engine is
    /// shown the lock as its own while it holds.
    LookLost,
    /// A holding notes that it starts only while the lock is its own: off,
    /// the `started` note always succeeds.
    StartedCheck,
    /// A name stays its process's a lease past its last beat: off, the
    /// heartbeat script lets any process beat under any name.
    NameKept,
    /// The reaper lets go only of the lock under its holding's own field:
    /// off, it deletes the lock and notes the holding stopped whatever holds it.
    OrphanOwnField,
}

impl Guard {
    /// Every guard, in the order the report lists them.
    pub(super) const ALL: [Guard; 19] = [
        Guard::HandoverWait,
        Guard::InstanceMatch,
        Guard::NoProofFromAbsence,
        Guard::WorkerGoneOwnUnit,
        Guard::ReaperDeadline,
        Guard::EngineStop,
        Guard::WatchdogKill,
        Guard::FenceIncrement,
        Guard::FenceFloor,
        Guard::ForeignCounter,
        Guard::ForeignMark,
        Guard::BusyElsewhere,
        Guard::FreshField,
        Guard::RestartWait,
        Guard::ReplicaConfirm,
        Guard::LookLost,
        Guard::StartedCheck,
        Guard::NameKept,
        Guard::OrphanOwnField,
    ];

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// Which guards are on: all, unless taken out.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Guards {
    off: u32,
}

impl Guards {
    /// Every guard but `guard`.
    pub(super) fn without(guard: Guard) -> Guards {
        Guards { off: guard.bit() }
    }

    /// Every guard but these.
    pub(super) fn without_all(guards: &[Guard]) -> Guards {
        Guards { off: guards.iter().fold(0, |off, g| off | g.bit()) }
    }

    /// Whether `guard` is on.
    pub(super) fn on(self, guard: Guard) -> bool {
        self.off & guard.bit() == 0
    }
}

impl fmt::Debug for Guards {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let off: Vec<Guard> = Guard::ALL.into_iter().filter(|g| !self.on(*g)).collect();
        if off.is_empty() { f.write_str("all guards") } else { write!(f, "all guards but {off:?}") }
    }
}

/// A change the model's findings suggest, modelled so a search can look
/// past what it found; none is the product's (yet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fix {
    /// `hand_over` keeps an unknown holding before (no record) as the new
    /// record's `prev`, so a holding that never started passes it on.
    CarryUnknown,
    /// The `started` note counts only once a replica confirmed it
    /// (`WAIT 1`), as an acquisition does.
    ConfirmStarted,
    /// A replica promoted after it resynced from a restarted primary is
    /// known to hold data as old as that restart: the lock script's wait
    /// for a restarted Redis still holds after the failover.
    RestartSurvivesFailover,
    /// A refusal that finds the fence counter missing proves nothing about
    /// lockwatch holdings since (a missing counter stays missing across one
    /// that Redis lost again): no foreign holder is trusted on it.
    ForeignNeedsCounter,
}

/// The fixes the product made (`lock.lua` and `Lock::started`), which the
/// model's restatement of them follows whatever is asked. The foreign
/// holder's is the product's own in the engine (a sighting must be recent),
/// which the model drives as it is.
const ADOPTED: [Fix; 2] = [Fix::CarryUnknown, Fix::ConfirmStarted];

/// Which fixes are modelled: none, unless asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Fixes {
    on: u32,
}

impl Fixes {
    /// These fixes.
    pub(super) fn of(fixes: &[Fix]) -> Fixes {
        Fixes { on: fixes.iter().fold(0, |on, f| on | 1 << (*f as u32)) }
    }

    /// Whether `fix` is modelled: asked for, or the product's own now.
    pub(super) fn has(self, fix: Fix) -> bool {
        ADOPTED.contains(&fix) || self.on & 1 << (fix as u32) != 0
    }
}
