//! Processes as `/proc` describes them: whether one runs, and the processes
//! a command started, so a test can prove that none is left after it stops.
//! A zombie counts as gone: on this machine PID 1 does not reap orphans, and
//! a zombie runs nothing.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use super::wait;

/// One process as `/proc/PID/stat` and `cmdline` describe it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: i32,
    pub ppid: i32,
    pub state: char,
    /// Start time in clock ticks since boot: tells a process from a later
    /// one that got the same pid.
    pub start: u64,
    pub cmdline: String,
}

impl ProcessInfo {
    /// Reads one process; `None` when it is gone (reaped).
    pub fn read(pid: i32) -> Option<ProcessInfo> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name may hold spaces and parentheses: the fields start after the last ')'.
        let rest = &stat[stat.rfind(')')? + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim_end().to_owned();
        Some(ProcessInfo {
            pid,
            state: fields.first()?.chars().next()?,
            ppid: fields.get(1)?.parse().ok()?,
            start: fields.get(19)?.parse().ok()?,
            cmdline,
        })
    }

    /// True while this very process exists and is not a zombie.
    pub fn running(&self) -> bool {
        ProcessInfo::read(self.pid).is_some_and(|now| now.start == self.start && !matches!(now.state, 'Z' | 'X'))
    }
}

/// True while process `pid` runs (a zombie waiting to be reaped does not run).
pub fn runs(pid: u32) -> bool {
    ProcessInfo::read(pid as i32).is_some_and(|p| !matches!(p.state, 'Z' | 'X'))
}

/// Every process on the machine.
pub fn all() -> Vec<ProcessInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).filter_map(ProcessInfo::read).collect()
}

/// The processes running now whose command line holds `marker`.
pub fn running_named(marker: &str) -> Vec<ProcessInfo> {
    all().into_iter().filter(|p| p.cmdline.contains(marker) && !matches!(p.state, 'Z' | 'X')).collect()
}

/// `root`'s children, their children, and so on (not `root` itself).
pub fn descendants(root: i32) -> Vec<ProcessInfo> {
    let procs = all();
    let mut found = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for p in procs.iter().filter(|p| p.ppid == parent) {
            parents.push(p.pid);
            found.push(p.clone());
        }
    }
    found
}

/// SIGKILL to `root` and every process below it together, as systemd's
/// control-group kill does: all are stopped (SIGSTOP) first, looking again
/// until no new process shows below, so none of them sees another die and
/// acts on it (a reaper letting go of its dead worker's lock); then all
/// die, those found last first and `root` last. Returns once none of them
/// runs any more (as systemd runs `ExecStopPost=` only then), with how many
/// it killed. Reaping `root`, if it is the caller's child, is the caller's.
pub fn kill_whole_tree(root: i32) -> usize {
    // SAFETY: kill(2) on a process the caller started (or one below it,
    // read from /proc just now).
    let signal = |pid: i32, sig: libc::c_int| unsafe {
        libc::kill(pid, sig);
    };
    signal(root, libc::SIGSTOP);
    let mut frozen: Vec<ProcessInfo> = ProcessInfo::read(root).into_iter().collect();
    loop {
        let new: Vec<ProcessInfo> =
            descendants(root).into_iter().filter(|p| !frozen.iter().any(|f| f.pid == p.pid)).collect();
        if new.is_empty() {
            break;
        }
        for p in new {
            signal(p.pid, libc::SIGSTOP);
            frozen.push(p);
        }
    }
    for p in frozen.iter().rev() {
        signal(p.pid, libc::SIGKILL);
    }
    let left = wait::within(Duration::from_secs(5), || frozen.iter().all(|p| !p.running()).then_some(()));
    assert!(
        left.is_some(),
        "still running 5 s after SIGKILL: {:?}",
        frozen.iter().filter(|p| p.running()).collect::<Vec<_>>()
    );
    frozen.len()
}

/// The processes a command started, collected over its whole run: a job
/// started late (after a failover) counts as much as one started first.
#[derive(Debug, Default)]
pub struct Seen(BTreeMap<(i32, u64), ProcessInfo>);

impl Seen {
    /// Adds the current descendants of `root`. A shell's child shows the
    /// shell's command line until it execs its program, and a zombie shows
    /// none: a live sighting with a command line replaces an earlier one, so
    /// each process is named by what it ran, however often this looks.
    pub fn record(&mut self, root: i32) {
        for p in descendants(root) {
            let key = (p.pid, p.start);
            let live = !matches!(p.state, 'Z' | 'X') && !p.cmdline.is_empty();
            if live || !self.0.contains_key(&key) {
                self.0.insert(key, p);
            }
        }
    }

    pub fn all(&self) -> impl Iterator<Item = &ProcessInfo> {
        self.0.values()
    }

    /// Those still running.
    pub fn left(&self) -> Vec<ProcessInfo> {
        self.0.values().filter(|p| p.running()).cloned().collect()
    }

    /// Waits until none is running; returns those still running at the deadline.
    pub fn wait_gone(&self, timeout: Duration) -> Vec<ProcessInfo> {
        match wait::within(timeout, || self.left().is_empty().then_some(())) {
            Some(()) => Vec::new(),
            None => self.left(),
        }
    }

    /// SIGKILLs whatever is still running (cleanup after a failed test).
    pub fn kill_left(&self) {
        for p in self.left() {
            // SAFETY: kill(2) on a pid this test saw its command start, checked just now.
            unsafe {
                libc::kill(p.pid, libc::SIGKILL);
            }
        }
    }
}
