//! The lockwatch tray app: the job's state at a glance in the tray, the
//! user's own enable flag in its menu, a notification when the job dies or
//! moves, and a dashboard window on demand. The logic lives in the
//! `lockwatch` library; this crate adds the desktop.
//!
//! # Layout
//! - [`model`]: the tray as pure data (icon, menu lines, notification policy).
//! - [`tray`]: draws the model into the tray icon and menu.
//! - [`tray_host`]: whether the desktop has a tray to show it.
//! - [`state`]: app state and the supervisor that runs a watcher per job.
//! - [`settings`]: store, environment overrides, keyring.
//! - [`store`]: loading and saving the settings file.
//! - [`notify`]: desktop notifications.
//! - [`window`]: the dashboard window.
//! - [`commands`]: the dashboard's thin Tauri commands.

pub mod commands;
pub mod model;
pub mod notify;
pub mod settings;
pub mod state;
pub mod store;
pub mod tray;
pub mod tray_host;
pub mod window;

use tauri::image::Image;
use tauri::menu::{Menu, MenuEvent};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, RunEvent};

use crate::settings::Overrides;
use crate::state::AppState;

/// Builds and runs the app until Quit.
pub fn run() {
    tray_host::quiet_xembed_icon_assertion();
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| window::open(app, "live")))
        .plugin(tauri_plugin_store::Builder::default().build())
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, None))
        .invoke_handler(tauri::generate_handler![
            commands::get_state,
            commands::set_enabled,
            commands::save_settings,
            commands::test_connection,
            commands::history
        ])
        .setup(|app| {
            init_logging(app.handle());
            let (settings, problem) = store::load(app.handle());
            app.manage(AppState::new(settings, Overrides::from_env()));
            TrayIconBuilder::with_id(tray::TRAY_ID)
                .icon(Image::from_bytes(tray::icon(lockwatch::State::Unknown))?)
                .menu(&Menu::new(app)?)
                .tooltip("lockwatch")
                .on_menu_event(on_menu)
                .build(app)?;
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move { state::restart(&handle) });
            if let Some(problem) = problem {
                notify::show(&model::Note {
                    summary: "lockwatch settings reset".into(),
                    body: problem,
                    critical: false,
                });
            }
            if std::env::var_os("LOCKWATCH_OPEN_DASHBOARD").is_some() {
                window::open(app.handle(), "live");
            } else {
                match tray_host::find() {
                    Some(host) => tracing::info!(%host, "tray host found"),
                    None => {
                        tracing::warn!(
                            "no tray host (no org.kde.StatusNotifierWatcher on the session bus, no XEmbed system tray on the display): opening the dashboard instead"
                        );
                        window::open(app.handle(), "live?notray");
                    }
                }
            }
            Ok(())
        })
        .build(tauri::generate_context!());
    let app = match app {
        Ok(app) => app,
        Err(err) => {
            eprintln!("lockwatch-tray: cannot start: {err}");
            std::process::exit(1);
        }
    };
    app.run(|_, event| {
        // No window is no reason to quit: the tray lives on. Quit's exit(0) has a code.
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
        }
    });
}

/// Menu clicks arrive on the main thread; whatever touches the app state
/// runs on the async runtime instead (see [`state::AppState`]).
fn on_menu(app: &AppHandle, event: MenuEvent) {
    let id = event.id().as_ref().to_owned();
    let app = app.clone();
    match id.as_str() {
        "open" => window::open(&app, "live"),
        "settings" => window::open(&app, "settings"),
        "quit" => app.exit(0),
        _ => {
            tauri::async_runtime::spawn(async move { on_menu_off_main(&app, &id) });
        }
    }
}

fn on_menu_off_main(app: &AppHandle, id: &str) {
    match id {
        "autostart" => toggle_autostart(app),
        _ if id.starts_with("mute:") => mute(app, &id["mute:".len()..]),
        _ if id.starts_with("flip:") => {
            let job = &id["flip:".len()..];
            match state::wish(app, job) {
                Some(wanted) => state::flip(app, job, wanted),
                None => state::redraw(app),
            }
        }
        _ => {}
    }
}

fn mute(app: &AppHandle, what: &str) {
    use chrono::{Duration as Days, Local, TimeZone};
    let now = state::desktop_now_ms();
    let until = match what {
        "1h" => Some(now + 3_600_000),
        "4h" => Some(now + 4 * 3_600_000),
        "tomorrow" => {
            let midnight = (Local::now().date_naive() + Days::days(1)).and_hms_opt(0, 0, 0);
            midnight.and_then(|m| Local.from_local_datetime(&m).earliest()).map(|t| t.timestamp_millis() as u64)
        }
        _ => None,
    };
    let settings = {
        let state = app.state::<AppState>();
        let mut inner = state.lock();
        inner.settings.mute_until_ms = until;
        inner.settings.clone()
    };
    store::save(app, &settings);
    state::redraw(app);
}

fn toggle_autostart(app: &AppHandle) {
    use tauri_plugin_autostart::ManagerExt;
    let settings = {
        let state = app.state::<AppState>();
        let mut inner = state.lock();
        inner.settings.autostart = !inner.settings.autostart;
        inner.settings.clone()
    };
    let launcher = app.autolaunch();
    let result = if settings.autostart { launcher.enable() } else { launcher.disable() };
    if let Err(err) = result {
        tracing::warn!(error = %err, "cannot change start at login");
    }
    store::save(app, &settings);
    state::redraw(app);
}

/// Logs to the platform's log dir (`lockwatch.log`) and to stderr.
fn init_logging(app: &AppHandle) {
    use tracing_subscriber::fmt::writer::MakeWriterExt;
    let filter = tracing_subscriber::EnvFilter::try_from_env("LOCKWATCH_LOG").unwrap_or_else(|_| "info".into());
    let file = app.path().app_log_dir().ok().and_then(|dir| {
        std::fs::create_dir_all(&dir).ok()?;
        std::fs::OpenOptions::new().create(true).append(true).open(dir.join("lockwatch.log")).ok()
    });
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(false);
    let _ = match file {
        Some(file) => builder.with_writer(std::sync::Mutex::new(file).and(std::io::stderr)).try_init(),
        None => builder.with_writer(std::io::stderr).try_init(),
    };
}
