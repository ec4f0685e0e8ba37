//! Where a worker runs, as the kernel and systemd tell it, and whether
//! `worker-gone` runs where it may act: as the `ExecStopPost=` of the dead
//! worker's own systemd unit, with nothing else of that unit left.
//!
//! The worker writes [`invocation`] into its heartbeat: this boot (a cloned
//! host has another), its PID namespace (a container has its own) and its
//! unit's invocation id (each start of a unit has a new one, and systemd
//! hands it to that start's `ExecStopPost=` too). `worker-gone` releases a
//! lock only when the heartbeat that holds it names its own invocation and
//! its unit's control group holds no process but itself: proof from the
//! holder's own side (its unit ran to the end), never from a process
//! missing in some `/proc`.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// This process's boot, PID namespace and systemd invocation, as one word
/// each: `boot=<id> pidns=<inode> unit=<invocation id or ->`.
pub fn invocation() -> &'static str {
    static HERE: LazyLock<String> = LazyLock::new(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let pidns = std::fs::read_link("/proc/self/ns/pid").map(|p| p.display().to_string()).unwrap_or_default();
        let unit = std::env::var("INVOCATION_ID").unwrap_or_default();
        describe(boot.trim(), &pidns, &unit)
    });
    &HERE
}

/// The words of [`invocation`], each `-` when unknown.
fn describe(boot: &str, pidns: &str, unit: &str) -> String {
    let word = |s: &str| {
        let s: String = s.chars().filter(|c| c.is_ascii_alphanumeric() || "-:[]".contains(*c)).take(64).collect();
        if s.is_empty() { "-".to_owned() } else { s }
    };
    format!("boot={} pidns={} unit={}", word(boot), word(pidns), word(unit))
}

/// Whether `heartbeat`'s invocation is this process's unit run: the same
/// boot, PID namespace and unit invocation, each known.
pub fn same_run(heartbeat: &str, here: &str) -> bool {
    heartbeat == here && !here.split(' ').any(|w| w.ends_with("=-"))
}

/// Why `worker-gone` may not act here, in one sentence; `None` when it runs
/// as a unit's `ExecStopPost=` and nothing else of the unit runs.
pub fn stop_post_refusal() -> Option<String> {
    let env = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if !env("INVOCATION_ID") || !env("SERVICE_RESULT") {
        return Some(
            "it does not run as a systemd unit's ExecStopPost= (systemd sets INVOCATION_ID and SERVICE_RESULT there); run by hand or elsewhere it cannot tell that the worker's job is gone, so the lock expires with its lease".to_owned(),
        );
    }
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let me = std::process::id();
    let mut looked = Vec::new();
    for procs in procs_files(&cgroups, Path::new("/sys/fs/cgroup")) {
        let Ok(listed) = std::fs::read_to_string(&procs) else { continue };
        let others = others_in(&listed, me);
        if others > 0 {
            return Some(format!(
                "{others} other process(es) of its unit still run ({}): the worker's job may live, so its lock stays",
                procs.display()
            ));
        }
        looked.push(procs);
    }
    looked.is_empty().then(|| {
        "it cannot read its unit's control group (no *.service line in /proc/self/cgroup with a readable cgroup.procs): it cannot tell that the worker's job is gone".to_owned()
    })
}

/// The `cgroup.procs` files of this process's unit, from `/proc/self/cgroup`
/// (`cgroups`): the unified hierarchy's (`0::<path>`, under `root` or, on a
/// hybrid host, `root/unified`) and the legacy `name=systemd` one's, where
/// the path names a `.service`.
fn procs_files(cgroups: &str, root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        let Some(relative) = path.strip_prefix('/').filter(|p| p.ends_with(".service")) else { continue };
        match controllers {
            "" => {
                files.push(root.join(relative).join("cgroup.procs"));
                files.push(root.join("unified").join(relative).join("cgroup.procs"));
            }
            "name=systemd" => files.push(root.join("systemd").join(relative).join("cgroup.procs")),
            _ => {}
        }
    }
    files
}

/// How many processes a `cgroup.procs` listing names besides `me`.
fn others_in(listed: &str, me: u32) -> usize {
    listed.split_whitespace().filter(|pid| pid.parse::<u32>().ok() != Some(me)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invocation_is_the_same_run_only_when_every_part_is_known_and_equal() {
        let here = describe("2f0c-11", "pid:[4026531836]", "9a7e");
        assert_eq!(here, "boot=2f0c-11 pidns=pid:[4026531836] unit=9a7e");
        assert!(same_run(&here, &here));
        for other in [
            describe("2f0c-12", "pid:[4026531836]", "9a7e"),
            describe("2f0c-11", "pid:[4026532001]", "9a7e"),
            describe("2f0c-11", "pid:[4026531836]", "9a7f"),
        ] {
            assert!(!same_run(&other, &here), "{other}");
        }
        let by_hand = describe("2f0c-11", "pid:[4026531836]", "");
        assert!(!same_run(&by_hand, &by_hand), "no unit: never the same run");
        assert_eq!(describe("a b\nc", "", ""), "boot=abc pidns=- unit=-");
    }

    #[test]
    fn the_units_procs_files_are_found_on_unified_hybrid_and_legacy_hosts() {
        let root = Path::new("/sys/fs/cgroup");
        let unified = "0::/system.slice/system-lockwatch\\x2dworker.slice/lockwatch-worker@outbound.service\n";
        let files = procs_files(unified, root);
        assert_eq!(
            files[0],
            root.join("system.slice/system-lockwatch\\x2dworker.slice/lockwatch-worker@outbound.service/cgroup.procs")
        );
        let legacy = "9:name=systemd:/system.slice/w.service\n4:memory:/system.slice/w.service\n0::/\n";
        assert_eq!(procs_files(legacy, root), vec![root.join("systemd/system.slice/w.service/cgroup.procs")]);
        assert!(procs_files("0::/user.slice/session-3.scope\n", root).is_empty(), "a login session is no unit");
        assert!(procs_files("0::/\n", root).is_empty());
    }

    #[test]
    fn others_in_a_listing_are_counted_without_this_process() {
        assert_eq!(others_in("412\n", 412), 0);
        assert_eq!(others_in("412\n413\n9\n", 412), 2);
        assert_eq!(others_in("", 412), 0);
    }
}
