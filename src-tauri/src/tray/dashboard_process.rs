//! The tray's handle on the dashboard's process (see [`crate::link`] for
//! why it is a process and how the two talk): started on the first open,
//! told each view to show, heard until it exits, then forgotten.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::webview_runtime;
use crate::core::actions::{self, Effect};
use crate::core::desk::Desk;
use crate::core::passwords::KEYRING;
use crate::core::runtime;
use crate::core::state::OwnFlip;
use crate::link::{ARG, Message, View};

/// Set when the tray app added `GDK_GL=disable` itself (see `tray/mod.rs`):
/// the dashboard's process gets the desktop's own setting back.
static GL_PROBE_SKIPPED: AtomicBool = AtomicBool::new(false);

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
    pub fn open(self: &Arc<Self>, desk: &Desk, view: &View) {
        let mut running = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = running.as_mut() {
            // A closed pipe means the window was just closed: start a new one.
            if writeln!(r.stdin, "{}", Message::Show(view.clone()).line()).and_then(|()| r.stdin.flush()).is_ok() {
                return;
            }
        }
        if let Some(why) = webview_runtime::missing() {
            drop(running);
            tracing::warn!("cannot open the dashboard: no web view runtime ({why})");
            let tr = desk.state().lock().tr();
            webview_runtime::tell_missing(&tr);
            return;
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

fn spawn(dashboard: &Arc<Dashboard>, desk: &Desk, view: &View) -> std::io::Result<Running> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(&exe);
    cmd.arg(format!("{ARG}{}", view.arg())).stdin(Stdio::piped()).stdout(Stdio::piped());
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
        match Message::parse(&line) {
            Some(Message::SettingsSaved) => {
                let desk = desk.clone();
                runtime::spawn(async move { reload_settings(&desk) });
            }
            Some(Message::Flipped { job, on, at_ms }) => {
                actions::own_flip(desk, &job, Some(OwnFlip { on, at_ms }));
                desk.redraw();
            }
            Some(Message::TestNotification) => actions::send_test_note(desk),
            Some(Message::Password { account, password }) => KEYRING.remember(&account, &password),
            Some(Message::Show(_)) | None => {}
        }
    }
    let status = child.wait();
    tracing::info!(pid = child.id(), ?status, "dashboard closed");
    dashboard.forget(child.id());
}

/// The dashboard saved the settings: take them from the file, as at start.
fn reload_settings(desk: &Desk) {
    let settings = desk.settings_file().load();
    actions::update_settings(desk, |s| {
        *s = settings;
        Effect::Restart
    });
}
