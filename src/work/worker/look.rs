//! The worker's look at the job: one read of everything, and what it does
//! with it besides deciding (the engine does that): records flips, announces
//! changes, tells of a holder gone, keeps its own presence, trims junk,
//! warns of eviction, and tells whether anybody has the job enabled.

use std::time::Duration;

use tokio::time::{Instant, sleep};

use super::{REDIS_PATIENCE, Worker};
use crate::clock::millis;
use crate::error::{Action, Error};
use crate::history::budget::{self, Take};
use crate::history::{self, FlagFlip, Record};
use crate::probe;
use crate::snapshot::{Enabled, Flag, Snapshot};
use crate::work::{lost, trim};

/// How often a standby counts the holder's presence subscription between
/// its looks: one cheap command, a few a second from each standby server.
const PEEK_EVERY: Duration = Duration::from_millis(1_000);

/// A look later than this past its tick after the one before does not
/// trust what this process heard: it was paused (or cut off) meanwhile.
const LATE_BY: Duration = Duration::from_millis(500);

/// How often a worker reads everything, whatever tracking heard: a net
/// under what no write told (a registry changed by hand, a stream entry).
const FULL_EVERY: Duration = Duration::from_secs(30);

/// How often a worker asks whether Redis may evict the job's keys.
const EVICTION_CHECK_EVERY: Duration = Duration::from_secs(300);

impl Worker {
    /// Reads the job (a glance while nothing but the lock, heartbeats and
    /// presence can have changed); records the flips seen since the last read, or
    /// the flags as found at the first (every worker does: supervisors may
    /// not write the stream).
    pub(super) async fn look(&mut self) -> Result<Snapshot, Error> {
        let keys = self.keys.clone();
        let host = self.target.endpoint().clone();
        // A glance (the lock, heartbeats and presence) while the flags and
        // acknowledgements are known unchanged: tracking heard every write
        // and none came. Else, and every FULL_EVERY, everything.
        let since = self.writes.take();
        if !since.unchanged || self.full_at.is_none_or(|at| Instant::now() >= at) {
            self.known.forget();
            self.full_at = Some(Instant::now() + FULL_EVERY);
        }
        let mut known = std::mem::take(&mut self.known);
        let read = match self.conn().await {
            Ok(conn) => tokio::time::timeout(REDIS_PATIENCE, probe::look(conn, &keys, &host, &mut known)).await,
            Err(err) => Ok(Err(err)),
        };
        self.known = known;
        let read = match read {
            Ok(answer) => answer,
            Err(_) => Err(Error::Timeout { action: Action::ReadingJob, host: host.clone(), after: REDIS_PATIENCE }),
        };
        // What was heard before a failed look is news for the next one.
        let snap = read.inspect_err(|_| {
            self.known.forget();
            self.missed = true;
        })?;
        // A flip is a flag written with its time that turned it on or off: a
        // registered user with no flag yet flipped nothing, and the same
        // `on` written again (her own flood) changes nothing to record or
        // announce. The first look records the flags as found (flips made
        // before any worker ran, as the demo's); the history counts a flip
        // once, whoever recorded it how often.
        let first = self.flags_seen.is_none();
        // A look long after the one before (this process was paused, or cut
        // off) cannot tell what it missed, as the first cannot. By Redis's
        // clock, when each look read: a read begun before a pause and
        // answered after it is as old as it was sent.
        let every = self.look_every(since.tracking);
        let late = self.looked_at.is_some_and(|at| snap.time_ms.saturating_sub(at) > millis(every + LATE_BY));
        self.looked_at = Some(snap.time_ms);
        // Not heard (tracking cut, begun, or absent; a pause; the first
        // look): only the heartbeats' word says a flag was lost.
        let heard = if first || late || std::mem::take(&mut self.missed) || since.broken || !since.tracking {
            lost::Heard::Broken
        } else {
            let writes = snap
                .flags
                .iter()
                .filter_map(|f| Some((f.user.clone(), *since.keys.get(self.keys.enabled(&f.user).as_bytes())?)))
                .collect();
            lost::Heard::Every(writes)
        };
        self.judge_lost(&snap, &heard).await;
        let seen = self.flags_seen.as_deref().unwrap_or_default();
        let changed: Vec<Flag> = snap
            .flags
            .iter()
            .filter(|f| f.on.is_some() && f.at_ms.is_some())
            .filter(|f| !seen.iter().any(|s| s.user == f.user && s.on == f.on))
            .cloned()
            .collect();
        self.flags_seen = Some(snap.flags.clone());
        let recorded = self.within_budget(&changed, snap.time_ms);
        if !recorded.is_empty() {
            self.record_flips(&recorded).await;
        }
        // Supervisors may not publish: the workers tell every watcher of
        // their flips and of who is on it (with what note). An "on it"
        // rewritten with new times only is found at the desks' next look,
        // so her rewrites at a script's pace wake nobody.
        let on_it: Vec<(String, String)> = snap.acks.iter().map(|a| (a.user.clone(), a.note.clone())).collect();
        let acks_changed = self.acks_seen != on_it;
        if acks_changed {
            self.acks_seen = on_it;
        }
        if !first && (!changed.is_empty() || acks_changed) {
            self.announce().await;
        }
        self.tell_other_leases(&snap);
        self.tell_if_holder_gone(&snap).await;
        self.peek = snap
            .holder_beat()
            .filter(|b| b.node != self.opts.node && b.present == Some(true))
            .map(|b| self.keys.alive_channel(&b.node));
        self.check_own_presence(&snap);
        for key in &snap.oversized {
            self.trim(key).await;
        }
        if !snap.oversized.is_empty() {
            // Trimmed: the next look reads them again.
            self.known.forget();
        }
        Ok(snap)
    }

    /// How often this worker looks when nothing wakes it: seldom while
    /// `tracking` tells of writes; without it (refused, a Cluster, a
    /// flood's calm) every second, which finds a flip.
    pub(super) fn look_every(&self, tracking: bool) -> Duration {
        if tracking { self.opts.tick } else { self.opts.tick.min(super::UNTRACKED_LOOK) }
    }

    /// Judges which flags Redis lost (evicted, deleted, expired: nobody
    /// switched them off) by what was `heard` since the last look
    /// (`work::lost`), and lets the history veto a new loss: her switch-off
    /// recorded by another worker after the flag was last read on. What was
    /// lost is said in the heartbeat (`flags_lost`), for every desk to name
    /// and every worker that starts to learn.
    async fn judge_lost(&mut self, snap: &Snapshot, heard: &lost::Heard) {
        let flags: Vec<(String, lost::Found)> = snap
            .flags
            .iter()
            .map(|f| {
                let found = match f.on {
                    Some(true) => lost::Found::On,
                    _ if f.is_missing() => lost::Found::Missing,
                    Some(false) => lost::Found::Off,
                    None => lost::Found::Unreadable,
                };
                (f.user.clone(), found)
            })
            .collect();
        let word = snap.flags_lost_said(|_| true);
        let verdict = self.memory.judge(&flags, heard, word);
        let mut lost = verdict.kept;
        if !verdict.new.is_empty() {
            let switched_off = self.switched_off(&verdict.new).await;
            let new: Vec<String> = verdict.new.into_iter().filter(|u| !switched_off.contains(u)).collect();
            if !new.is_empty() {
                tracing::warn!(node = %self.opts.node, "{}", crate::status::flags_lost_sentence(&new));
            }
            lost.extend(new);
        }
        self.memory.settle(&flags, lost, verdict.waiting);
    }

    /// Those of `users` whose latest flip in the history is a switch-off.
    async fn switched_off(&mut self, users: &[String]) -> Vec<String> {
        let (keys, host) = (self.keys.clone(), self.target.endpoint().clone());
        let Ok(conn) = self.conn().await else { return Vec::new() };
        match tokio::time::timeout(REDIS_PATIENCE, history::read::latest_flips(conn, &keys, users, &host)).await {
            Ok(Ok(flips)) => flips.into_iter().filter(|(_, on)| !on).map(|(user, _)| user).collect(),
            Ok(Err(err)) => {
                tracing::debug!(error = %err, "cannot read the history's flips");
                Vec::new()
            }
            Err(_) => Vec::new(),
        }
    }

    /// Whether anybody has the job enabled: as `snap` says, with a flag
    /// Redis lost while it was on counted as on, as it was last read, until
    /// it is written again: the job stays as it was, on this server or,
    /// after a hand-over, on the other. While a flag's loss waits for what
    /// tracking heard (a look or so), it cannot be told.
    pub(super) fn enabled_in(&self, snap: &Snapshot) -> Enabled {
        let enabled = snap.enabled();
        if enabled != Enabled::No {
            enabled
        } else if !self.memory.lost().is_empty() {
            Enabled::Yes
        } else if self.memory.waiting() {
            Enabled::Unknown {
                reason: "a flag that was on is gone; waiting to hear whether she switched it off first".to_owned(),
            }
        } else {
            Enabled::No
        }
    }

    /// Says, at start and whenever it changes, that Redis may evict the
    /// job's keys (asked every few minutes); a refused or failed question
    /// is asked again later.
    pub(super) async fn check_eviction(&mut self) {
        if self.eviction_asked.is_some_and(|at| at.elapsed() < EVICTION_CHECK_EVERY) {
            return;
        }
        self.eviction_asked = Some(Instant::now());
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        let Ok(Ok(said)) = tokio::time::timeout(REDIS_PATIENCE, crate::eviction::check(conn, &host)).await else {
            return;
        };
        if said != self.eviction_said {
            match &said {
                Some(warning) => tracing::warn!(node = %self.opts.node, "{warning}"),
                None if self.eviction_said.is_some() => {
                    tracing::info!(node = %self.opts.node, "Redis no longer evicts the job's keys");
                }
                None => {}
            }
            self.eviction_said = said;
        }
    }

    /// Makes the presence subscription again when the heartbeat just read
    /// names the process that holds it, yet it was not counted there: it is
    /// held where no probe reads (after a Redis Cluster failover the demoted
    /// owner keeps its sharded subscribers; after a switchover without
    /// `CLIENT KILL`, the old primary its plain ones), so a crash would be
    /// told only after the heartbeat's grace.
    pub(super) fn check_own_presence(&self, snap: &crate::snapshot::Snapshot) {
        let Some(held_on) = self.present.on().filter(|id| !id.is_empty()) else { return };
        let own = snap.beats.iter().find(|b| b.node == self.opts.node);
        if let Some(beat) = own
            && beat.presence_on.as_deref() == Some(held_on.as_str())
            && (beat.present == Some(false) || beat.presence_elsewhere)
        {
            self.present.subscribe_again();
        }
    }

    /// Says once when another worker of the job runs with a longer lease:
    /// a new holder waits by it only while that worker's heartbeat or the
    /// handover record names it.
    fn tell_other_leases(&mut self, snap: &Snapshot) {
        let own = millis(self.opts.lease.whole());
        let Some(other) = snap.beats.iter().find(|b| b.node != self.opts.node && b.lease_ms.is_some_and(|l| l > own))
        else {
            return;
        };
        if !std::mem::replace(&mut self.told_lease, true) {
            let theirs = crate::duration::human_duration(other.lease_ms.unwrap_or_default());
            let mine = crate::duration::human_duration(own);
            tracing::warn!(node = %self.opts.node, "{} runs the job with a lease of {theirs}, this worker with {mine}: should its heartbeat and the handover record both be lost, this one would not know to wait the longer lease; give every worker of the job the same --lease", other.node);
        }
    }

    /// Announces, once, a holder whose presence subscription Redis dropped:
    /// no watcher is told of a connection closing, and they glance seldom,
    /// so the servers that survive it tell them (within this worker's tick).
    pub(super) async fn tell_if_holder_gone(&mut self, snap: &crate::snapshot::Snapshot) {
        let Some(field) = snap.lock.holders.first() else { return };
        let gone = snap.beats.iter().find(|b| {
            b.node != self.opts.node && b.lock_field.as_deref() == Some(field.as_str()) && b.present == Some(false)
        });
        let Some(beat) = gone else { return };
        let this = (beat.node.clone(), beat.seq);
        if self.told_gone.as_ref() != Some(&this) {
            tracing::info!(node = %self.opts.node, holder = %beat.node, "the holder's connection to Redis closed");
            self.told_gone = Some(this);
            self.announce().await;
        }
    }

    /// Returns once the holder's presence subscription is gone, counted
    /// every [`PEEK_EVERY`] while this server stands by: its next look then
    /// tells every watcher within a fraction of a second, and not at the
    /// next tick. Never returns while there is nothing to count, or counting
    /// fails (the regular look then tells).
    pub(super) async fn holder_gone(&mut self, standby: bool) {
        let Some(channel) = self.peek.clone().filter(|_| standby) else {
            return std::future::pending().await;
        };
        let key = self.keys.fence();
        loop {
            sleep(PEEK_EVERY).await;
            let Ok(conn) = self.conn().await else { return std::future::pending().await };
            match tokio::time::timeout(REDIS_PATIENCE, conn.ask_owner(&key, Some(&channel))).await {
                Ok(Ok(0)) => return,
                Ok(Ok(_)) => {}
                _ => return std::future::pending().await,
            }
        }
    }

    /// Cuts a supervisor's hash that holds junk back to its fields, and says
    /// whose it was; failures are logged.
    pub(super) async fn trim(&mut self, key: &str) {
        let keys = self.keys.clone();
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        match tokio::time::timeout(REDIS_PATIENCE, trim::trim(conn, &keys, key, &host)).await {
            Ok(Ok(bytes)) => tracing::warn!(
                node = %self.opts.node,
                "{key} took {bytes} bytes, far more than lockwatch writes there: cut back to its own fields"
            ),
            Ok(Err(err)) => tracing::warn!(node = %self.opts.node, error = %err, "cannot trim {key}"),
            Err(_) => tracing::warn!(node = %self.opts.node, "cannot trim {key}: Redis did not answer in time"),
        }
    }

    /// The flips of `changed` each person's budget lets the history take
    /// (`history::budget`); says once per spell whose are left out.
    fn within_budget(&mut self, changed: &[Flag], now_ms: u64) -> Vec<Flag> {
        self.flip_budget.forget_rested(now_ms);
        let mut kept = Vec::new();
        for flag in changed {
            match self.flip_budget.take(&flag.user, now_ms) {
                Take::Record => kept.push(flag.clone()),
                Take::Skip { first: true } => tracing::warn!(
                    user = %flag.user,
                    "{} flips the flag faster than a person does: her flips still count at once, but the history records only one more every {} minutes, to keep the runs, failovers and deaths in it",
                    flag.user,
                    budget::REFILL_MS / 60_000
                ),
                Take::Skip { first: false } => {}
            }
        }
        kept
    }

    /// Records each flip in `changed` with its reason; failures are logged.
    pub(super) async fn record_flips(&mut self, changed: &[Flag]) {
        let keys = self.keys.clone();
        let host = self.target.endpoint().clone();
        let Ok(conn) = self.conn().await else { return };
        let flips = match tokio::time::timeout(REDIS_PATIENCE, history::read::flags(conn, &keys, changed, &host)).await
        {
            Ok(Ok(flips)) => flips,
            Ok(Err(err)) => {
                tracing::warn!(error = %err, "cannot read the reasons of the flags that changed");
                changed
                    .iter()
                    .map(|f| FlagFlip {
                        user: f.user.clone(),
                        on: f.on == Some(true),
                        at_ms: f.at_ms,
                        host: f.host.clone(),
                        reason: None,
                    })
                    .collect()
            }
            Err(_) => {
                tracing::warn!("cannot read the reasons of the flags that changed: Redis did not answer in time");
                return;
            }
        };
        for flip in flips {
            self.record(Record::FlagsChanged(flip)).await;
        }
    }
}
