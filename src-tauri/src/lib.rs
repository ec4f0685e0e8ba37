//! The lockwatch tray app: the job's state at a glance in the tray, the
//! user's own enable flag in its menu, a notification when the job dies or
//! moves, and a dashboard window on demand. The logic lives in the
//! `lockwatch` library; this crate adds the desktop.
//!
//! # Layout
//! - [`model`]: the tray as pure data (icon, menu lines, notification policy).
//! - [`i18n`]: the words in English and Simplified Chinese (one Fluent catalog).
//! - [`tray`]: draws the model into the tray icon and menu.
//! - [`tray_host`]: whether the desktop has a tray to show it.
//! - [`menu_id`]: the menu items' ids, built and parsed by one enum.
//! - [`state`]: what the app knows (settings, statuses, watchers).
//! - [`supervisor`]: one watcher per job, its news carried into the app.
//! - [`actions`]: flip, mute, start at login, settings changes (saved and applied once).
//! - [`settings`]: stored settings, the settings form, environment overrides.
//! - [`passwords`]: the OS keyring, or memory where there is none.
//! - [`store`]: loading and saving the settings file.
//! - [`clock`]: the desktop's clock, for the mute and notifications only.
//! - [`notify`]: desktop notifications.
//! - [`window`]: the dashboard window, in a process of its own.
//! - [`dialog`]: the small window asking the last one on why they switch off.
//! - [`commands`]: the dashboard's thin Tauri commands.

pub mod actions;
pub mod clock;
pub mod commands;
pub mod dialog;
pub mod i18n;
pub mod menu_id;
pub mod model;
pub mod notify;
pub mod passwords;
pub mod settings;
pub mod state;
pub mod store;
pub mod supervisor;
pub mod tray;
pub mod tray_host;
pub mod window;

use tauri::image::Image;
use tauri::menu::{Menu, MenuEvent};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, RunEvent};

use crate::menu_id::MenuId;
use crate::settings::Overrides;
use crate::state::AppState;

/// Builds and runs the app until Quit; started with `--dashboard=<view>`,
/// the dashboard's process instead, until its window closes (see [`window`]).
pub fn run() {
    let dashboard = window::dashboard_arg();
    if dashboard.is_none() {
        skip_gtk_gl_probe();
    }
    tray_host::quiet_xembed_icon_assertion();
    let mut builder = tauri::Builder::default();
    if dashboard.is_none() {
        builder = builder
            .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| window::open(app, "live")))
            .manage(window::Dashboard::default());
    }
    let is_dashboard = dashboard.is_some();
    let app = builder
        .plugin(tauri_plugin_store::Builder::default().build())
        .plugin(tauri_plugin_autostart::init(tauri_plugin_autostart::MacosLauncher::LaunchAgent, None))
        .invoke_handler(tauri::generate_handler![
            commands::get_state,
            commands::set_enabled,
            commands::close_dialog,
            commands::save_settings,
            commands::validate_settings,
            commands::test_connection,
            commands::history,
            commands::page_texts
        ])
        .setup(move |app| {
            init_logging(app.handle());
            let (settings, problem) = store::load(app.handle());
            let desktop_lang = i18n::Lang::of_desktop(|name| std::env::var(name).ok());
            let lang = settings.language.resolve(desktop_lang);
            app.manage(AppState::new(settings, Overrides::from_env(), desktop_lang));
            if let Some(view) = &dashboard {
                window::serve(app.handle(), view);
                let handle = app.handle().clone();
                tauri::async_runtime::spawn(async move { supervisor::restart(&handle) });
                return Ok(());
            }
            TrayIconBuilder::with_id(tray::TRAY_ID)
                .icon(Image::from_bytes(tray::icon(lockwatch::State::Unknown))?)
                .menu(&Menu::new(app)?)
                .tooltip("lockwatch")
                .on_menu_event(on_menu)
                .build(app)?;
            let handle = app.handle().clone();
            tauri::async_runtime::spawn(async move { supervisor::restart(&handle) });
            if let Some(problem) = problem {
                let tr = i18n::tr(lang);
                let note = model::Note::plain(tr.t("note-settings-reset"), problem);
                notify::show(app.handle(), &note, &tr, notify::Style { sound: false });
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
    app.run(move |_, event| {
        // No window is no reason to quit: the tray lives on. Quit's exit(0)
        // has a code. The dashboard's process ends with its window.
        if let RunEvent::ExitRequested { code: None, api, .. } = event
            && !is_dashboard
        {
            api.prevent_exit();
        }
    });
}

/// GTK 3 on X11 probes GLX when it opens the display, to pick its visuals,
/// and with that loads Mesa's driver and its LLVM (~50 MB, on a desktop
/// without a GPU driver) into a process that never draws with GL: the
/// tray's icon and menu are drawn with cairo, and the web view lives in the
/// dashboard's process, which gets the desktop's setting back. `GDK_GL=disable`
/// skips only that probe; a value the user set wins.
fn skip_gtk_gl_probe() {
    if std::env::var_os("GDK_GL").is_none() {
        // SAFETY: the first thing `main` does; no other thread exists yet to
        // read the environment while it changes.
        unsafe { std::env::set_var("GDK_GL", "disable") };
        window::gl_probe_skipped();
    }
}

/// Menu clicks arrive on the main thread; whatever touches the app state
/// runs on the async runtime instead (see [`state::AppState`]).
fn on_menu(app: &AppHandle, event: MenuEvent) {
    let Some(id) = MenuId::parse(event.id().as_ref()) else { return };
    match id {
        MenuId::Open => window::open(app, "live"),
        MenuId::Settings => window::open(app, "settings"),
        MenuId::Quit => app.exit(0),
        MenuId::Autostart => off_main(app, actions::toggle_autostart),
        MenuId::Mute(how) => off_main(app, move |app| actions::mute(app, how)),
        MenuId::Flip(job) => off_main(app, move |app| actions::toggle_flag(app, &job)),
        MenuId::Ack(job) => off_main(app, move |app| actions::toggle_ack(app, &job)),
        // The status and a refused flip's short line lead to the details.
        MenuId::Status(_) | MenuId::Error(_) => window::open(app, "live"),
        MenuId::Others(_) | MenuId::OnIt { .. } | MenuId::Confirm(_) | MenuId::MuteMenu => {}
    }
}

fn off_main(app: &AppHandle, action: impl FnOnce(&AppHandle) + Send + 'static) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move { action(&app) });
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
