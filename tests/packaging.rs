//! The server package's systemd template units
//! (`packaging/server/lockwatch-worker@.service`, `lockwatch-serve@.service`),
//! checked the way systemd reads them: `systemd-analyze verify` on an
//! instance, in a root holding the host's units and the real `lockwatch` at
//! `/usr/bin/lockwatch`.

use std::path::Path;
use std::process::Command;

const UNIT: &str = include_str!("../packaging/server/lockwatch-worker@.service");
const SERVE_UNIT: &str = include_str!("../packaging/server/lockwatch-serve@.service");

/// `systemd-analyze verify` of `unit` as `lockwatch-worker@outbound`; its output when it fails.
fn verify(unit: &str) -> Result<(), String> {
    verify_as("lockwatch-worker", unit)
}

/// `systemd-analyze verify` of `unit`, the template `<name>@.service`, as
/// `<name>@outbound`; its output when it fails.
fn verify_as(name: &str, unit: &str) -> Result<(), String> {
    let root = tempfile::tempdir().unwrap();
    let dir = |p: &str| {
        let d = root.path().join(p);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let units = dir("usr/lib/systemd/system");
    for entry in std::fs::read_dir("/usr/lib/systemd/system").unwrap().flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), units.join(entry.file_name())).unwrap();
        }
    }
    std::fs::copy(env!("CARGO_BIN_EXE_lockwatch"), dir("usr/bin").join("lockwatch")).unwrap();
    std::fs::write(dir("etc/systemd/system").join(format!("{name}@.service")), unit).unwrap();
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(format!("--root={}", root.path().display()))
        .arg(format!("{name}@outbound.service"))
        .output()
        .expect("systemd-analyze must be installed (systemd)");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if out.status.success() && said.trim().is_empty() { Ok(()) } else { Err(said) }
}

#[test]
fn the_worker_unit_passes_systemd_analyze_verify() {
    assert!(Path::new("/usr/lib/systemd/system").is_dir(), "systemd's units are missing");
    verify(UNIT).unwrap_or_else(|said| panic!("systemd-analyze verify: {said}"));
    // The check can fail: the same unit naming a program that is not there.
    let broken = UNIT.replace("ExecStart=/usr/bin/lockwatch ", "ExecStart=/usr/bin/lockwatch-nowhere ");
    assert!(verify(&broken).is_err(), "verify accepted a unit whose program is missing");
}

#[test]
fn the_worker_unit_runs_as_its_own_user_with_the_job_s_secrets_and_restarts() {
    let lines: Vec<&str> = UNIT.lines().map(str::trim).filter(|l| !l.starts_with('#')).collect();
    for wanted in [
        "User=lockwatch",
        "EnvironmentFile=/etc/lockwatch/%i.env",
        "Wants=network-online.target",
        "After=network-online.target",
        "Restart=always",
        "KillMode=mixed",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
    ] {
        assert!(lines.contains(&wanted), "{wanted} missing from the unit");
    }
    // A value line never carries a comment (systemd would take it for part of the value).
    for line in &lines {
        assert!(!line.contains(" #"), "a comment inside a value: {line}");
    }
    let exec = lines.iter().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert!(exec.contains("--job %i") && exec.ends_with("-- $LOCKWATCH_COMMAND"), "{exec}");
}

#[test]
fn the_serve_unit_passes_systemd_analyze_verify_and_is_hardened_like_the_worker_s() {
    verify_as("lockwatch-serve", SERVE_UNIT).unwrap_or_else(|said| panic!("systemd-analyze verify: {said}"));
    let broken = SERVE_UNIT.replace("ExecStart=/usr/bin/lockwatch ", "ExecStart=/usr/bin/lockwatch-nowhere ");
    assert!(verify_as("lockwatch-serve", &broken).is_err(), "verify accepted a unit whose program is missing");
    let lines: Vec<&str> = SERVE_UNIT.lines().map(str::trim).filter(|l| !l.starts_with('#')).collect();
    // Every hardening line of the worker's unit, and more: serve starts no process.
    let worker: Vec<&str> =
        UNIT.lines().map(str::trim).filter(|l| l.starts_with("Protect") || l.starts_with("Restrict")).collect();
    for wanted in worker.iter().copied().chain([
        "User=lockwatch",
        "EnvironmentFile=/etc/lockwatch/%i.env",
        "Environment=LOCKWATCH_ROBOTS=/etc/lockwatch/%i.robots.toml",
        "Environment=LOCKWATCH_JOB=%i",
        "ExecStart=/usr/bin/lockwatch serve",
        "Restart=always",
        "NoNewPrivileges=yes",
        "MemoryDenyWriteExecute=yes",
        "CapabilityBoundingSet=",
    ]) {
        let wanted = if wanted == "ProtectHome=read-only" { "ProtectHome=yes" } else { wanted };
        assert!(lines.contains(&wanted), "{wanted} missing from the serve unit");
    }
    for line in &lines {
        assert!(!line.contains(" #"), "a comment inside a value: {line}");
    }
}
