//! The dashboard window, in a process of its own: the tray app starts its
//! own executable again with `--dashboard=<view>` when the window is first
//! opened, and that process ends when the window is closed. This module is both ends of their talk;
//! the window itself is [`crate::dashboard`]'s.
//!
//! Why a process: the tray runs all day, the dashboard is looked at now and
//! then. A web view once opened keeps WebKit's web and network processes
//! (and its GL driver) for as long as its process lives; when the
//! dashboard's process exits, they go with it.
//!
//! The two processes talk over the child's stdin and stdout, one word a line:
//! the tray sends the view to show (and closing stdin, by exiting, ends the
//! dashboard); the dashboard says `settings` when it saved the settings, so
//! the tray reads them again, and `flipped <1|0> <at_ms> <job>` when Redis
//! took the user's own flip there, so the tray confirms it in its menu and
//! does not notify them of the start or stop they asked for. Everything
//! else each reads from Redis itself.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::desk::Desk;
use crate::model::OwnFlip;

/// The argument that gives the dashboard's process its first view.
const ARG: &str = "--dashboard=";
/// The view that asks why a job is switched off (`off?job=NAME`).
pub const SWITCH_OFF: &str = "off?job=";
/// What the dashboard's process prints after it saved the settings.
const SAVED: &str = "settings";
/// What the dashboard's process prints before a flip Redis took.
const FLIPPED: &str = "flipped ";

/// Set in the dashboard's process: it leaves notifications to the tray's.
static IN_DASHBOARD: AtomicBool = AtomicBool::new(false);
/// Set when the tray app added `GDK_GL=disable` itself (see `lib.rs`):
/// the dashboard's process gets the desktop's own setting back.
static GL_PROBE_SKIPPED: AtomicBool = AtomicBool::new(false);

/// The view to open first, from the dashboard's command line.
pub fn dashboard_arg() -> Option<String> {
    std::env::args().skip(1).find_map(|a| a.strip_prefix(ARG).map(str::to_owned))
}

/// Whether this process is the dashboard's (not the tray's).
pub fn in_dashboard() -> bool {
    IN_DASHBOARD.load(Ordering::Relaxed)
}

/// Marks this process as the dashboard's: it leaves notifications to the
/// tray's and tells it of saved settings and flips.
pub fn become_dashboard() {
    IN_DASHBOARD.store(true, Ordering::Relaxed);
}

/// The view asking why `job` is switched off.
pub fn switch_off_view(job: &str) -> String {
    format!("{SWITCH_OFF}{}", query_escaped(job))
}

/// `text` safe in a URL's query (job names are few characters, but may hold `:`).
fn query_escaped(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Remembers that the tray app disabled GTK's GL probe for itself.
pub fn gl_probe_skipped() {
    GL_PROBE_SKIPPED.store(true, Ordering::Relaxed);
}

/// The tray app's handle on the dashboard's process, while it runs.
#[derive(Default)]
pub struct Dashboard(Mutex<Option<Running>>);

struct Running {
    pid: u32,
    stdin: ChildStdin,
}

impl Dashboard {
    /// Opens (or focuses) the dashboard on `view`, from the tray's process.
    pub fn open(self: &Arc<Self>, desk: &Desk, view: &str) {
        let mut running = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = running.as_mut() {
            // A closed pipe means the window was just closed: start a new one.
            if writeln!(r.stdin, "{view}").and_then(|()| r.stdin.flush()).is_ok() {
                return;
            }
        }
        match spawn(self, desk, view) {
            Ok(r) => *running = Some(r),
            Err(err) => tracing::error!("cannot open the dashboard: {err}"),
        }
    }

    /// Forgets the process `pid` (it exited).
    fn forget(&self, pid: u32) {
        let mut running = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if running.as_ref().is_some_and(|r| r.pid == pid) {
            *running = None;
        }
    }
}

fn spawn(dashboard: &Arc<Dashboard>, desk: &Desk, view: &str) -> std::io::Result<Running> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(&exe);
    cmd.arg(format!("{ARG}{view}")).stdin(Stdio::piped()).stdout(Stdio::piped());
    if GL_PROBE_SKIPPED.load(Ordering::Relaxed) {
        cmd.env_remove("GDK_GL");
    }
    let mut child = cmd.spawn().map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", exe.display())))?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the dashboard's pipes are missing"));
    };
    tracing::info!(pid, "dashboard opened");
    let (dashboard, desk) = (dashboard.clone(), desk.clone());
    std::thread::Builder::new()
        .name("dashboard".into())
        .spawn(move || listen(&dashboard, &desk, child, BufReader::new(stdout)))?;
    Ok(Running { pid, stdin })
}

/// The tray's side: follows what the dashboard says until it exits, then
/// reaps it and forgets it.
fn listen(dashboard: &Dashboard, desk: &Desk, mut child: Child, stdout: BufReader<std::process::ChildStdout>) {
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        if line.trim() == SAVED {
            let desk = desk.clone();
            crate::runtime::spawn(async move { reload_settings(&desk) });
        } else if let Some((job, flip)) = line.strip_prefix(FLIPPED).and_then(parse_flipped) {
            crate::actions::own_flip(desk, &job, Some(flip));
            desk.redraw();
        }
    }
    let status = child.wait();
    tracing::info!(pid = child.id(), ?status, "dashboard closed");
    dashboard.forget(child.id());
}

/// The dashboard saved the settings: take them from the file, as at start.
fn reload_settings(desk: &Desk) {
    let (settings, _) = crate::store::load(desk.app());
    crate::actions::update_settings(desk, |s| {
        *s = settings;
        crate::actions::Effect::Restart
    });
}

/// The dashboard's side, after saving the settings: tells the tray.
pub fn settings_saved() {
    if in_dashboard() {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{SAVED}").and_then(|()| out.flush()).is_err() {
            tracing::warn!("the tray app is gone; it reads the saved settings at its next start");
        }
    }
}

/// The dashboard's side, after a flip of the user's own flag Redis took:
/// tells the tray, so it confirms it rather than notify its outcome.
pub fn flipped(job: &str, flip: OwnFlip) {
    if in_dashboard() {
        let mut out = std::io::stdout().lock();
        let line = format!("{FLIPPED}{} {} {job}", u8::from(flip.on), flip.at_ms);
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            tracing::warn!("the tray app is gone; it will not confirm the flip");
        }
    }
}

/// `<1|0> <at_ms> <job>`, as [`flipped`] writes it.
fn parse_flipped(rest: &str) -> Option<(String, OwnFlip)> {
    let mut parts = rest.splitn(3, ' ');
    let on = match parts.next()? {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    let at_ms = parts.next()?.parse().ok()?;
    let job = parts.next().filter(|j| !j.is_empty())?;
    Some((job.to_owned(), OwnFlip { on, at_ms }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flip_told_by_the_dashboard_reads_back_as_written() {
        let flip = OwnFlip { on: false, at_ms: 1_764_000_000_123 };
        let line = format!("{} {} {}", u8::from(flip.on), flip.at_ms, "wh east");
        assert_eq!(parse_flipped(&line), Some(("wh east".to_owned(), flip)));
        assert_eq!(parse_flipped("1 12 "), None);
        assert_eq!(parse_flipped("yes 12 outbound"), None);
        assert_eq!(parse_flipped("1 soon outbound"), None);
    }

    #[test]
    fn a_job_name_travels_in_the_url_intact() {
        assert_eq!(switch_off_view("outbound"), "off?job=outbound");
        assert_eq!(query_escaped("wh:a b&c"), "wh%3Aa%20b%26c");
        assert_eq!(query_escaped("出"), "%E5%87%BA");
        for job in ["outbound", "wh:a b&c", "出库", "100%"] {
            assert_eq!(lockwatch::spec::percent_decode(&query_escaped(job)), job);
        }
        assert_eq!(lockwatch::spec::percent_decode("50%zz"), "50%zz");
    }
}
