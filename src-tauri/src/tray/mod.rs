//! The tray's process (`lockwatch-tray`): a Tauri app without a window. Its
//! icon and menu are Tauri's tray; tauri-plugin-single-instance keeps it one
//! per session (a second launch opens the dashboard), tauri-plugin-autostart
//! starts it at login, tauri-plugin-store keeps the settings. The watchers
//! run on the async runtime, notifications go out through the core's
//! `notify`, and the dashboard is a second process of this executable
//! ([`crate::link`]), so no web view runs here.
//!
//! # Layout
//! - [`menu`]: the tray as pure data (icon, menu lines, tooltip).
//! - [`menu_id`]: the menu items' ids, built and parsed by one enum.
//! - [`draw`]: the icon and menu drawn from that data.
//! - [`clicks`]: what a click in the menu does.
//! - [`host`]: is there a tray on this desktop.
//! - [`dashboard_process`]: the dashboard's process, started and heard.
//! - [`start_at_login`]: her start at login, and the computer's.
//! - [`webview_runtime`]: whether this desk can show the dashboard (WebView2).

pub mod clicks;
pub mod dashboard_process;
pub mod draw;
pub mod host;
pub mod menu;
pub mod menu_id;
pub mod start_at_login;
pub mod webview_runtime;

use std::sync::Arc;

use lockwatch::Event;
use tauri::{AppHandle, Manager, RunEvent};
use tauri_plugin_autostart::MacosLauncher;

use crate::core::desk::{Desk, Surface};
use crate::core::i18n::Lang;
use crate::core::notes::{Note, NoteAction};
use crate::core::notify::toast_id;
use crate::core::settings::Overrides;
use crate::core::state::{AppState, JobState};
use crate::core::{actions, logging, runtime, watchers};
use crate::link::{Message, TEST_NOTIFICATION_ARG, View};
use crate::store;
use dashboard_process::Dashboard;

/// The tray, as the core sees it: it redraws its menu, notifies, and opens
/// the dashboard's process.
struct Tray {
    app: AppHandle,
    dashboard: Arc<Dashboard>,
}

impl Surface for Tray {
    fn redraw(&self, desk: &Desk) {
        draw::redraw(&self.app, desk);
    }

    fn status(&self, desk: &Desk, job: &JobState, _user: &str) {
        draw::redraw(&self.app, desk);
        if let Some(note) = job.status.as_ref().and_then(|s| watchers::sign_in_note(desk, s)) {
            desk.tell(&note);
        }
    }

    fn event(&self, desk: &Desk, event: &Event) {
        if let Some(note) = watchers::note_for(desk, event) {
            desk.tell(&note);
        }
    }

    fn open(&self, desk: &Desk, view: View) {
        self.dashboard.open(desk, &view);
    }

    fn on_note(&self, desk: &Desk, action: NoteAction) {
        actions::on_note(desk, action);
    }

    fn tell_tray(&self, _: &Message) -> bool {
        true
    }
}

/// Runs the tray app until Quit.
pub fn run() {
    if cfg!(target_os = "linux")
        && std::env::var_os("DISPLAY").is_none()
        && std::env::var_os("WAYLAND_DISPLAY").is_none()
    {
        fail("cannot open the display: neither DISPLAY nor WAYLAND_DISPLAY is set");
    }
    skip_gtk_gl_probe();
    match runtime::start() {
        Ok(handle) => tauri::async_runtime::set(handle),
        Err(err) => fail(&format!("cannot start its threads: {err}")),
    }
    let app = tauri::Builder::default()
        // First, so that a second launch ends before it builds anything.
        .plugin(tauri_plugin_single_instance::init(|app, args, _cwd| {
            let Some(desk) = app.try_state::<Desk>().map(|d| d.inner().clone()) else {
                tracing::info!("lockwatch was launched again while it starts: nothing to do");
                return;
            };
            if args.iter().any(|a| a == start_at_login::ARG) {
                tracing::info!("lockwatch was started at login again (two entries?): it already runs");
            } else if args.iter().any(|a| a == TEST_NOTIFICATION_ARG) {
                runtime::spawn(async move { actions::send_test_note(&desk) });
            } else {
                tracing::info!("lockwatch was launched again in this session: opening its dashboard");
                desk.open(View::default());
            }
        }))
        .plugin(tauri_plugin_autostart::init(MacosLauncher::LaunchAgent, Some(vec![start_at_login::ARG])))
        .plugin(tauri_plugin_store::Builder::default().build())
        // Nothing in it fails (Tauri would panic): an icon that cannot be
        // placed opens the dashboard instead.
        .setup(|app| {
            start(app.handle());
            Ok(())
        })
        .build(crate::context());
    match app {
        Ok(app) => app.run(|_, event| {
            // No window is ever the last one here: only Quit ends the app.
            if let RunEvent::ExitRequested { api, code: None, .. } = event {
                api.prevent_exit();
            }
        }),
        Err(err) => fail(&format!("cannot start: {err}")),
    }
}

/// What the app does once Tauri runs: the state, the icon, the watchers.
fn start(app: &AppHandle) {
    logging::init(app.path().app_log_dir().ok());
    toast_id::register(app.path().app_local_data_dir().ok());
    host::quiet_xembed_icon_assertion();
    let (mut settings, problems) = store::load(app);
    settings.autostart = start_at_login::at_start(app, settings.autostart);
    let desktop_lang = Lang::of_desktop(|name| std::env::var(name).ok());
    let desk = Desk::new(
        AppState::new(settings, Overrides::from_env(), desktop_lang),
        store::File(app.clone()),
        Tray { app: app.clone(), dashboard: Arc::new(Dashboard::default()) },
    );
    app.manage(desk.clone());
    let on_menu_desk = desk.clone();
    let docked = draw::show(app, move |app, event| clicks::on_menu(app, &on_menu_desk, &event));
    if let Err(err) = &docked {
        tracing::error!("cannot put its icon in the tray ({err}): opening the dashboard instead");
    }
    let first = desk.clone();
    runtime::spawn(async move { watchers::restart(&first) });
    for said in problems {
        let summary = desk.state().lock().tr().t(said.summary);
        desk.tell(&Note::plain(summary, said.body));
    }
    if std::env::args().any(|a| a == TEST_NOTIFICATION_ARG) {
        // Asked where no lockwatch runs (another session, a remote shell):
        // sent from here, and this one goes again.
        tracing::info!("no lockwatch runs in this session: the test notification is sent from here, then it quits");
        let (tested, app) = (desk.clone(), app.clone());
        runtime::spawn(async move {
            actions::send_test_note(&tested);
            tokio::time::sleep(std::time::Duration::from_secs(10)).await;
            app.exit(0);
        });
    }
    let no_tray = View::Live { no_tray: true };
    if std::env::var_os("LOCKWATCH_OPEN_DASHBOARD").is_some() {
        desk.open(View::default());
    } else if docked.is_err() {
        desk.open(no_tray);
    } else {
        match host::find() {
            Some(host) => tracing::info!(%host, "tray host found"),
            None => {
                tracing::warn!(
                    "no tray host (no org.kde.StatusNotifierWatcher on the session bus, no XEmbed system tray on the display): opening the dashboard instead"
                );
                desk.open(no_tray);
            }
        }
    }
}

fn fail(why: &str) -> ! {
    eprintln!("lockwatch-tray: {why}");
    std::process::exit(1);
}

/// GTK 3 on X11 probes GLX when it opens the display, to pick its visuals,
/// and with that loads Mesa's driver and its LLVM (~50 MB, on a desktop
/// without a GPU driver) into a process that never draws with GL: the
/// tray's icon and menu are drawn with cairo. `GDK_GL=disable` skips only
/// that probe; a value the user set wins, and the dashboard's process gets
/// the desktop's setting back.
fn skip_gtk_gl_probe() {
    if cfg!(target_os = "linux") && std::env::var_os("GDK_GL").is_none() {
        // SAFETY: the first thing `main` does; no other thread exists yet to
        // read the environment while it changes.
        unsafe { std::env::set_var("GDK_GL", "disable") };
        dashboard_process::gl_probe_skipped();
    }
}
