//! When the watcher looks, checks and waits: its shell's pacing, decided
//! without I/O. Times are milliseconds on the shell's own clock; what was
//! heard from Redis between looks comes in as [`Ears`]; what to send next
//! ([`Ask`]) and until when to wait for a wake come out.
//!
//! A look comes at the poll interval, sooner when the status engine says
//! the state may change, backed off while looks fail, and three polls apart
//! while the beats of the node that vouches for a steady job keep coming;
//! every `full_every` it is a full read. Looks that come by the clock fall
//! on a grid (every poll interval from a phase), so that the watchers of
//! one process, sharing the grid, look together and their looks go to
//! Redis as one call. Between looks, while the last look
//! answered, a check once nothing was heard for a while (a `PING`), or, when
//! the holder's beat went quiet, a count of its presence subscription. A
//! wake, or a check that found something, asks for a look at once.

/// How many poll intervals apart the looks at a steady job are while the
/// workers' beats vouch for it (30 s with the defaults). Not longer for the
/// jobs of a roll call: a holder's presence, which vouches for them there,
/// outlives a frozen holder.
const TRUSTED_POLLS: u64 = 3;

/// What was heard between looks, as the shell's listeners keep it (ms).
pub struct Ears<'a> {
    /// When Redis was last heard from at all.
    pub last: u64,
    /// When a beat was last heard: of this node, or of any (`None`).
    pub beat: &'a dyn Fn(Option<&str>) -> Option<u64>,
}

impl Ears<'_> {
    /// Whether the workers' beats come: one heard within the last few
    /// periods. A publisher that stopped leaves the watcher to its `PING`s
    /// until another takes over.
    fn beating(&self, now: u64, k: &Knobs) -> bool {
        (self.beat)(None).is_some_and(|beat| now.saturating_sub(beat) < k.beat_every * 3)
    }

    /// Whether `node`'s beat (any worker's for `None`) came within a beat's slack.
    fn fresh(&self, node: Option<&str>, now: u64, k: &Knobs) -> bool {
        (self.beat)(node).is_some_and(|beat| now.saturating_sub(beat) < k.beat_late)
    }
}

/// What to send Redis now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// A look; `full` when the glance is not to be trusted this time.
    Look { full: bool },
    /// A check between looks: the presence subscriptions of the holder
    /// whose beat went quiet counted, or with none a `PING`; `missed` when a
    /// beat that should have come while they come did not (the first
    /// silence, a failed look to the status engine).
    Check { quiet: Option<String>, missed: bool },
}

/// The pacing's knobs (ms).
#[derive(Debug, Clone, Copy)]
pub struct Knobs {
    pub poll: u64,
    pub alive_every: u64,
    pub max_backoff: u64,
    pub full_every: u64,
    /// Failed looks in a row before the backoff starts.
    pub confirmations: u32,
    /// How often a worker beats, and when a beat is late.
    pub beat_every: u64,
    pub beat_late: u64,
}

/// How the last look went, as the shell tells it.
#[derive(Debug, Clone, Default)]
pub struct Looked {
    /// Whether the read answered.
    pub answered: bool,
    /// The node holding the lock whose presence the look counted.
    pub holder: Option<String>,
    /// Whether the lock is held at all: a free lock's steady state is
    /// vouched for by any worker's beats.
    pub held: bool,
    /// The status engine's word: when the state may change, whether it is
    /// steady, and how many looks failed in a row.
    pub next_check_ms: Option<u64>,
    pub steady: bool,
    pub failures: u32,
}

/// The pacing's state.
#[derive(Debug, Clone)]
pub struct Pace {
    knobs: Knobs,
    /// When the next look is due, by the poll interval and the engine.
    look_at: u64,
    /// For a steady job: no look before this while the beats of the node
    /// named (the holder; none: any worker) keep coming. A beat is written
    /// with the holder's heartbeat, and a worker records on the stream
    /// whatever else would end the steady state, which wakes the watcher.
    trusted: Option<(u64, Option<String>)>,
    /// When the next look is a full read.
    full_at: u64,
    /// The holder whose presence subscription the last look counted.
    holder: Option<String>,
    /// Whether Redis answered the last look and nothing failed since: only
    /// then is it checked between looks (else the looks retry, backed off).
    checking: bool,
    /// Where the grid of looks by the clock starts (ms).
    phase: u64,
}

impl Pace {
    /// Pacing from `now`, with a look at once; the first full read comes
    /// after `spread` (0 to 1) of its period, so that many desktops started
    /// at once do not read in step.
    pub fn new(knobs: Knobs, now: u64, spread: f64) -> Pace {
        let first_full = (knobs.full_every as f64 * spread.clamp(0.0, 1.0)) as u64;
        Pace { knobs, look_at: now, trusted: None, full_at: now + first_full, holder: None, checking: false, phase: 0 }
    }

    /// The same pacing with its grid of looks starting at `phase` (ms),
    /// as the other watchers of its process have theirs.
    pub fn on_grid(self, phase: u64) -> Pace {
        Pace { phase, ..self }
    }

    /// The first point of the grid of `polls` poll intervals at or after `t`.
    fn grid(&self, t: u64, polls: u64) -> u64 {
        let period = (self.knobs.poll * polls).max(1);
        let past = (t + period - self.phase % period) % period;
        if past == 0 { t } else { t + period - past }
    }

    /// When the next look is due, given the beats heard so far.
    fn look_due(&self, now: u64, ears: &Ears<'_>) -> u64 {
        match &self.trusted {
            Some((at, node)) if ears.fresh(node.as_deref(), now, &self.knobs) => *at,
            _ => self.look_at,
        }
    }

    /// When the check between looks is due: once a beat is late (nothing
    /// heard since a beat was due), or the holder's beat is; with no beats,
    /// once nothing was heard for the liveness interval.
    fn check_due(&self, now: u64, ears: &Ears<'_>) -> u64 {
        let any =
            ears.last + if ears.beating(now, &self.knobs) { self.knobs.beat_late } else { self.knobs.alive_every };
        match self.holder.as_deref().and_then(|node| (ears.beat)(Some(node))) {
            Some(beat) => any.min(beat + self.knobs.beat_late),
            None => any,
        }
    }

    /// What to send now.
    pub fn ask(&mut self, now: u64, ears: &Ears<'_>) -> Ask {
        if now >= self.look_due(now, ears) || !self.checking {
            let full = now >= self.full_at;
            if full {
                self.full_at = now + self.knobs.full_every;
            }
            return Ask::Look { full };
        }
        let quiet = self.holder.clone().filter(|node| !ears.fresh(Some(node), now, &self.knobs));
        let missed = ears.beating(now, &self.knobs) && now >= ears.last + self.knobs.beat_late;
        Ask::Check { quiet, missed }
    }

    /// A look went as `looked` says, at `now`.
    pub fn looked(&mut self, now: u64, looked: Looked) {
        self.checking = looked.answered && looked.failures == 0;
        if looked.answered {
            self.holder = looked.holder.clone();
        }
        // By the clock: the grid point about a poll interval on; backed off past it.
        let regular = if looked.failures > self.knobs.confirmations {
            let factor = 1u64 << (looked.failures - self.knobs.confirmations).min(6);
            (self.knobs.poll * factor).min(self.knobs.max_backoff)
        } else {
            self.grid(now + self.knobs.poll / 2, 1) - now
        };
        self.look_at = now + looked.next_check_ms.map_or(regular, |wait| regular.min(wait));
        // Whose beats vouch for a steady job: the holder's, or, with none, any worker's.
        let vouch = match (looked.answered, looked.held) {
            (true, true) => looked.holder.map(Some),
            (true, false) => Some(None),
            (false, _) => None,
        };
        // The grid point of the steady period at least a poll interval on.
        let trusted_at = self.grid(now + self.knobs.poll, TRUSTED_POLLS);
        self.trusted = vouch.filter(|_| looked.steady).map(|node| (trusted_at, node));
    }

    /// The holder whose presence the last look counted.
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref()
    }

    /// A look failed between looks (a silence): no checks until one answers.
    pub fn failed(&mut self) {
        self.checking = false;
    }

    /// A look now, whatever the beats say: a wake, or a check that found
    /// something only a look can tell.
    pub fn look_now(&mut self, now: u64) {
        self.look_at = now;
        self.trusted = None;
    }

    /// The next look is a full read: something was announced.
    pub fn read_fully(&mut self, now: u64) {
        self.full_at = now;
    }

    /// Until when to wait for a wake: the next look, or the next check.
    pub fn wait_until(&self, now: u64, ears: &Ears<'_>) -> u64 {
        let look = self.look_due(now, ears);
        if self.checking { look.min(self.check_due(now, ears)) } else { look }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOBS: Knobs = Knobs {
        poll: 10_000,
        alive_every: 1_000,
        max_backoff: 10_000,
        full_every: 300_000,
        confirmations: 2,
        beat_every: 1_800,
        beat_late: 2_000,
    };

    /// Ears that heard Redis last at `last` and beats as `beats` (node, ms).
    fn ears<'a>(last: u64, beats: &'a dyn Fn(Option<&str>) -> Option<u64>) -> Ears<'a> {
        Ears { last, beat: beats }
    }

    fn steady_on(holder: &str) -> Looked {
        Looked { answered: true, holder: Some(holder.into()), held: true, steady: true, ..Looked::default() }
    }

    #[test]
    fn the_first_ask_is_a_look_and_the_first_full_read_is_spread_over_its_period() {
        let none = |_: Option<&str>| None;
        let mut p = Pace::new(KNOBS, 0, 0.5);
        assert_eq!(p.ask(0, &ears(0, &none)), Ask::Look { full: false });
        assert_eq!(p.ask(150_000, &ears(0, &none)), Ask::Look { full: true });
        assert_eq!(p.ask(150_001, &ears(0, &none)), Ask::Look { full: false }, "one full read per period");
    }

    #[test]
    fn without_beats_redis_is_pinged_after_a_second_of_silence_and_looked_at_each_poll() {
        let none = |_: Option<&str>| None;
        let mut p = Pace::new(KNOBS, 0, 1.0);
        p.looked(0, Looked { answered: true, ..Looked::default() });
        assert_eq!(p.wait_until(0, &ears(0, &none)), 1_000, "a check once a second passed silently");
        assert_eq!(p.ask(1_000, &ears(0, &none)), Ask::Check { quiet: None, missed: false });
        assert_eq!(p.wait_until(1_000, &ears(1_000, &none)), 2_000, "the answer was heard");
        assert_eq!(p.ask(10_000, &ears(9_500, &none)), Ask::Look { full: false });
    }

    #[test]
    fn a_steady_job_whose_holder_beats_is_looked_at_every_three_polls() {
        let mut p = Pace::new(KNOBS, 0, 1.0);
        p.looked(0, steady_on("a"));
        // Beats every 1.8 s keep coming: no check, and no look before 30 s.
        for t in (1_800..30_000).step_by(1_800) {
            let beats = move |_: Option<&str>| Some(t);
            assert!(p.wait_until(t, &ears(t, &beats)) > t, "at {t}");
            assert!(p.wait_until(t, &ears(t, &beats)) <= 30_000);
        }
        let beats = |_: Option<&str>| Some(29_000);
        assert_eq!(p.ask(30_000, &ears(29_000, &beats)), Ask::Look { full: false });
    }

    #[test]
    fn when_the_holders_beat_goes_quiet_its_presence_is_counted_and_a_missed_beat_is_a_silence() {
        let mut p = Pace::new(KNOBS, 0, 1.0);
        p.looked(0, steady_on("a"));
        // a's last beat at 1,800; others' too: by 4,000 both are late.
        let beats = |_: Option<&str>| Some(1_800);
        let due = p.wait_until(1_800, &ears(1_800, &beats));
        assert_eq!(due, 1_800 + KNOBS.beat_late);
        assert_eq!(p.ask(due, &ears(1_800, &beats)), Ask::Check { quiet: Some("a".into()), missed: true });
        // Another worker still beats, a's beat is late: its presence, no silence.
        let others = |node: Option<&str>| if node == Some("a") { Some(1_800) } else { Some(3_700) };
        assert_eq!(p.ask(4_100, &ears(3_700, &others)), Ask::Check { quiet: Some("a".into()), missed: false });
        // The steady trust ends with the holder's beat: the poll decides again.
        assert_eq!(p.ask(10_000, &ears(9_900, &others)), Ask::Look { full: false });
    }

    #[test]
    fn failed_looks_back_off_to_the_longest_wait_and_the_engine_may_ask_sooner() {
        let mut p = Pace::new(Knobs { poll: 1_000, ..KNOBS }, 0, 1.0);
        let none = |_: Option<&str>| None;
        let mut waits = Vec::new();
        for failures in 1..=8 {
            p.looked(0, Looked { failures, ..Looked::default() });
            waits.push(p.wait_until(0, &ears(0, &none)));
        }
        assert_eq!(waits, [1_000, 1_000, 2_000, 4_000, 8_000, 10_000, 10_000, 10_000]);
        p.looked(0, Looked { failures: 8, next_check_ms: Some(300), ..Looked::default() });
        assert_eq!(p.wait_until(0, &ears(0, &none)), 300, "a deadline of the engine comes first");
        assert_eq!(p.ask(0, &ears(0, &none)), Ask::Look { full: false }, "no checks while looks fail");
    }

    #[test]
    fn a_wake_asks_for_a_look_at_once_and_a_silence_stops_the_checks() {
        let mut p = Pace::new(KNOBS, 0, 1.0);
        p.looked(0, steady_on("a"));
        let beats = |_: Option<&str>| Some(4_000);
        p.look_now(5_000);
        assert_eq!(p.ask(5_000, &ears(4_000, &beats)), Ask::Look { full: false });
        p.read_fully(6_000);
        assert_eq!(p.ask(6_000, &ears(4_000, &beats)), Ask::Look { full: true });
        p.looked(6_000, steady_on("a"));
        p.failed();
        assert_eq!(p.wait_until(6_000, &ears(6_000, &beats)), 20_000, "the next look on the grid, no check");
    }

    #[test]
    fn watchers_on_one_grid_that_looked_at_different_times_look_next_at_the_same_time() {
        let beats = |_: Option<&str>| Some(40_000);
        let (mut a, mut b) = (Pace::new(KNOBS, 0, 1.0).on_grid(5_000), Pace::new(KNOBS, 0, 1.0).on_grid(5_000));
        a.looked(3_000, steady_on("a"));
        b.looked(17_000, steady_on("b"));
        assert_eq!(a.wait_until(40_000, &ears(40_000, &beats)), 65_000 - 30_000);
        assert_eq!(b.wait_until(40_000, &ears(40_000, &beats)), 35_000);
        let none = |_: Option<&str>| None;
        let (mut c, mut d) = (Pace::new(KNOBS, 0, 1.0).on_grid(5_000), Pace::new(KNOBS, 0, 1.0).on_grid(5_000));
        c.looked(2_000, Looked::default());
        d.looked(8_000, Looked::default());
        assert_eq!((c.wait_until(9_000, &ears(0, &none)), d.wait_until(9_000, &ears(0, &none))), (15_000, 15_000));
    }

    proptest::proptest! {
        /// Whatever the grid, a look by the clock comes about a poll interval
        /// on (half to one and a half), and a steady job's one to four.
        #[test]
        fn looks_by_the_clock_stay_near_their_interval(now in 0u64..10_000_000, phase in 0u64..100_000) {
            let beats = move |_: Option<&str>| Some(now);
            let mut p = Pace::new(KNOBS, 0, 1.0).on_grid(phase);
            p.looked(now, Looked { answered: false, ..Looked::default() });
            let next = p.look_due(now, &ears(now, &beats));
            proptest::prop_assert!((now + 5_000..now + 15_000).contains(&next), "{next} after {now}");
            p.looked(now, steady_on("a"));
            let next = p.look_due(now, &ears(now, &beats));
            proptest::prop_assert!((now + 10_000..now + 40_000).contains(&next), "{next} after {now}");
            proptest::prop_assert_eq!((next + 30_000 - phase % 30_000) % 30_000, 0, "on the grid");
        }
    }
}
