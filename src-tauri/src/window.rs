//! The dashboard window, in a process of its own: the tray app starts this
//! same executable with `--dashboard=<view>` when the window is first
//! opened, and that process ends when the window is closed.
//!
//! Why a process: a web view, once shown, leaves its mark on the process
//! that hosted it, for as long as it runs. WebKit's code pages, its GL
//! driver and its network process stay (~100 MB here) after the window is
//! gone, and Tauri keeps WebKit's context alive on Linux on purpose. The
//! tray runs all day; the dashboard is looked at now and then. When the
//! dashboard's process exits, WebKit's web and network processes go with it.
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
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::model::OwnFlip;

pub const WINDOW: &str = "dashboard";

/// The argument that makes the executable the dashboard's process.
const ARG: &str = "--dashboard=";
/// What the dashboard's process prints after it saved the settings.
const SAVED: &str = "settings";
/// What the dashboard's process prints before a flip Redis took.
const FLIPPED: &str = "flipped ";

/// Set in the dashboard's process: it leaves notifications to the tray's.
static IN_DASHBOARD: AtomicBool = AtomicBool::new(false);
/// Set when the tray app added `GDK_GL=disable` itself (see `lib.rs`):
/// the dashboard's process gets the desktop's own setting back.
static GL_PROBE_SKIPPED: AtomicBool = AtomicBool::new(false);

/// The view to open when this process was started as the dashboard.
pub fn dashboard_arg() -> Option<String> {
    std::env::args().skip(1).find_map(|a| a.strip_prefix(ARG).map(str::to_owned))
}

/// Whether this process is the dashboard's (not the tray's).
pub fn in_dashboard() -> bool {
    IN_DASHBOARD.load(Ordering::Relaxed)
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

/// Opens (or focuses) the dashboard on `view` (`live` or `settings`).
pub fn open(app: &AppHandle, view: &str) {
    if in_dashboard() {
        show(app, view);
        return;
    }
    let Some(dashboard) = app.try_state::<Dashboard>() else { return };
    let mut running = dashboard.0.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(r) = running.as_mut() {
        // A closed pipe means the window was just closed: start a new one.
        if writeln!(r.stdin, "{view}").and_then(|()| r.stdin.flush()).is_ok() {
            return;
        }
    }
    match spawn(app, view) {
        Ok(r) => *running = Some(r),
        Err(err) => tracing::error!(error = %err, "cannot open the dashboard"),
    }
}

fn spawn(app: &AppHandle, view: &str) -> std::io::Result<Running> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.arg(format!("{ARG}{view}")).stdin(Stdio::piped()).stdout(Stdio::piped());
    if GL_PROBE_SKIPPED.load(Ordering::Relaxed) {
        cmd.env_remove("GDK_GL");
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(std::io::Error::other("the dashboard's pipes are missing"));
    };
    tracing::info!(pid, "dashboard opened");
    let app = app.clone();
    std::thread::spawn(move || listen(app, child, BufReader::new(stdout)));
    Ok(Running { pid, stdin })
}

/// The tray's side: follows what the dashboard says until it exits, then
/// reaps it and forgets it.
fn listen(app: AppHandle, mut child: Child, stdout: BufReader<std::process::ChildStdout>) {
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        if line.trim() == SAVED {
            let app = app.clone();
            tauri::async_runtime::spawn(async move { reload_settings(&app) });
        } else if let Some((job, flip)) = line.strip_prefix(FLIPPED).and_then(parse_flipped) {
            crate::actions::own_flip(&app, &job, Some(flip));
            crate::tray::redraw(&app);
        }
    }
    let status = child.wait();
    tracing::info!(pid = child.id(), ?status, "dashboard closed");
    if let Some(dashboard) = app.try_state::<Dashboard>() {
        let mut running = dashboard.0.lock().unwrap_or_else(|p| p.into_inner());
        if running.as_ref().is_some_and(|r| r.pid == child.id()) {
            *running = None;
        }
    }
}

/// The dashboard saved the settings: take them from the file, as at start.
fn reload_settings(app: &AppHandle) {
    use tauri_plugin_store::StoreExt;
    // The store plugin caches the file it opened; read it again.
    if let Err(err) = app.store(crate::settings::STORE_FILE).and_then(|s| s.reload()) {
        tracing::warn!(error = %err, "cannot read the settings the dashboard saved");
        return;
    }
    let (settings, _) = crate::store::load(app);
    crate::actions::update_settings(app, |s| {
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

/// Sets up the dashboard's process: the window on `view`, and the tray's
/// word on stdin (a view to show; the end of it closes the dashboard).
pub fn serve(app: &AppHandle, view: &str) {
    IN_DASHBOARD.store(true, Ordering::Relaxed);
    show(app, view);
    let app = app.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(view) = line else { break };
            let view = view.trim().to_owned();
            if !view.is_empty() {
                let handle = app.clone();
                let _ = app.run_on_main_thread(move || show(&handle, &view));
            }
        }
        // The tray app exited (or was killed): so does its dashboard.
        app.exit(0);
    });
}

/// Shows the window on `view`, creating it when there is none; the view
/// asking why a job is switched off has a small window of its own.
fn show(app: &AppHandle, view: &str) {
    if crate::dialog::show(app, view) {
        return;
    }
    if let Some(window) = app.get_webview_window(WINDOW) {
        let _ = window.eval(format!("location.hash = '#{view}'"));
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
        return;
    }
    let url = WebviewUrl::App(format!("index.html#{view}").into());
    if let Err(err) = WebviewWindowBuilder::new(app, WINDOW, url)
        .title("lockwatch")
        .inner_size(960.0, 680.0)
        .min_inner_size(560.0, 420.0)
        .build()
    {
        tracing::error!(error = %err, "cannot open the dashboard");
        app.exit(1);
    }
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
}
