//! The processes below the reaper (or the worker): the job's pid, found by
//! walking `/proc`'s parent links, and signalled all at once.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The job's pid, once started (0 before).
pub(super) static JOB: AtomicI32 = AtomicI32::new(0);
/// Set once the job's process has been reaped: its pid may be reused.
pub(super) static JOB_REAPED: AtomicBool = AtomicBool::new(false);

/// Sends `sig` to every process below the reaper: first, in one call,
/// to the job's process group (while its leader is not reaped, so the
/// group is the job's), which holds all but what left it; then to every
/// process a walk of `/proc` finds, which on a host with thousands of
/// processes takes tens of milliseconds.
pub(super) fn kill_tree(sig: libc::c_int) {
    let job = JOB.load(Ordering::SeqCst);
    if job > 0 && !JOB_REAPED.load(Ordering::SeqCst) {
        // SAFETY: kill(2) on the job's own process group.
        unsafe { libc::kill(-job, sig) };
    }
    for pid in descendants() {
        // SAFETY: kill(2) on a pid that was below us a moment ago.
        unsafe { libc::kill(pid, sig) };
    }
}

/// Every process below this one, read from `/proc`.
#[cfg(target_os = "linux")]
pub(super) fn descendants() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    let links: Vec<(i32, i32)> = dir
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            Some((pid, parent_in_stat(&stat)?))
        })
        .collect();
    below(std::process::id() as i32, &links)
}

/// Without /proc's parent links, the job's process group is all that
/// can be reached (while its leader's pid still names it).
#[cfg(not(target_os = "linux"))]
pub(super) fn descendants() -> Vec<i32> {
    let job = JOB.load(Ordering::SeqCst);
    if job > 0 && !JOB_REAPED.load(Ordering::SeqCst) { vec![-job] } else { Vec::new() }
}

/// The parent pid in a `/proc/<pid>/stat` line (the name may hold anything, even `)`).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parent_in_stat(stat: &str) -> Option<i32> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// All pids below `root`, given (pid, parent) links.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn below(root: i32, links: &[(i32, i32)]) -> Vec<i32> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for (pid, ppid) in links {
            // Links read at slightly different times may not form a tree.
            if *ppid == parent && !found.contains(pid) {
                found.push(*pid);
            }
        }
        i += 1;
    }
    found.remove(0);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_are_read_from_stat_lines_with_odd_names() {
        assert_eq!(parent_in_stat("42 (sh) S 7 42 42 0 -1"), Some(7));
        assert_eq!(parent_in_stat("43 (a) b (c)) R 42 43 7 0"), Some(42));
        assert_eq!(parent_in_stat("garbage"), None);
    }

    #[test]
    fn the_tree_below_a_process_is_found_whatever_the_order() {
        let links = [(5, 4), (2, 1), (3, 2), (4, 3), (9, 8), (6, 1), (1, 5)];
        let mut found = below(1, &links);
        found.sort();
        assert_eq!(found, [2, 3, 4, 5, 6]);
        assert!(below(9, &links).is_empty());
    }
}
