//! The modelled Redis server around the job's keys: its run id and start
//! (what `INFO server` tells the lock script), a freeze (SIGSTOP), its one
//! replica (which confirms each write a `WAIT 1` asks for, unless it lags),
//! a failover to that replica (the writes it had not received are lost,
//! never one it confirmed), and a restart from the last save or empty.

use std::collections::VecDeque;

use super::redis::Data;

/// How many of the last writes a failover can lose.
pub(super) const LOSABLE: usize = 8;

#[derive(Debug)]
pub(super) struct Server {
    pub data: Data,
    /// This server process's run id, and when it started (ms).
    pub run: u32,
    pub started_at: u64,
    /// Frozen (SIGSTOP) until then: it answers nothing, and runs what was
    /// sent meanwhile once it thaws.
    pub frozen_until: u64,
    /// Writes so far, and the keys after each of the last few.
    seq: u64,
    recent: VecDeque<(u64, Data)>,
    /// The keys as of the last write a replica confirmed.
    confirmed: (u64, Data),
    /// While the replica lags: the keys as far as it has them.
    lag: Option<Data>,
    /// The last save (RDB).
    saved: Data,
    next_run: u32,
}

impl Server {
    pub fn new(data: Data, now: u64) -> Server {
        Server {
            confirmed: (0, data.clone()),
            saved: data.clone(),
            data,
            run: 1,
            started_at: now.saturating_sub(3_600_000),
            frozen_until: 0,
            seq: 0,
            recent: VecDeque::new(),
            lag: None,
            next_run: 2,
        }
    }

    pub fn frozen(&self, now: u64) -> bool {
        now < self.frozen_until
    }

    /// What `INFO server` says of its uptime (whole seconds, in ms).
    pub fn uptime(&self, now: u64) -> u64 {
        now.saturating_sub(self.started_at) / 1_000 * 1_000
    }

    /// After a write: the replica gets it (unless it lags), a failover may lose it.
    pub fn wrote(&mut self) {
        self.seq += 1;
        if self.recent.len() == LOSABLE {
            self.recent.pop_front();
        }
        self.recent.push_back((self.seq, self.data.clone()));
    }

    /// `WAIT 1`: whether the replica confirmed every write so far.
    pub fn confirm(&mut self) -> bool {
        if self.lag.is_some() {
            return false;
        }
        if self.confirmed.0 != self.seq {
            self.confirmed = (self.seq, self.data.clone());
        }
        true
    }

    /// The replica starts lagging (it keeps what it has) or catches up.
    pub fn set_lag(&mut self, lagging: bool) {
        match (lagging, self.lag.is_some()) {
            (true, false) => self.lag = Some(self.data.clone()),
            (false, true) => self.lag = None,
            _ => {}
        }
    }

    pub fn lagging(&self) -> bool {
        self.lag.is_some()
    }

    /// The replica is promoted: it lacks the last `lose` writes (but none it
    /// confirmed), or all it missed while it lagged. A new replica follows
    /// it. `restart_known`: its data counts as young as the primary's last
    /// restart (`Fix::RestartSurvivesFailover`); else its own long uptime
    /// is what `INFO server` says.
    pub fn promote(&mut self, lose: usize, restart_known: bool) {
        let data = match self.lag.take() {
            Some(data) => data,
            None => {
                let target = self.seq.saturating_sub(lose.min(LOSABLE) as u64).max(self.confirmed.0);
                if target >= self.seq {
                    self.data.clone()
                } else if target == self.confirmed.0 {
                    self.confirmed.1.clone()
                } else {
                    self.recent.iter().find(|(s, _)| *s >= target).map_or_else(|| self.data.clone(), |(_, d)| d.clone())
                }
            }
        };
        self.reset(data);
        if !restart_known {
            // A replica has run for long: its uptime says nothing of a restart.
            self.started_at = 0;
        }
        self.frozen_until = 0;
    }

    /// Restarts from the last save (`from_save`) or empty (no persistence).
    pub fn restart(&mut self, now: u64, from_save: bool) {
        let data = if from_save { self.saved.clone() } else { Data::default() };
        self.reset(data);
        self.started_at = now;
        self.frozen_until = 0;
    }

    /// An RDB save.
    pub fn save(&mut self) {
        self.saved = self.data.clone();
    }

    fn reset(&mut self, data: Data) {
        self.data = data;
        self.run = self.next_run;
        self.next_run += 1;
        self.recent.clear();
        self.confirmed = (self.seq, self.data.clone());
        self.lag = None;
    }
}
