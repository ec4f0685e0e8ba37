//! The lockwatch tray app: builds the Tauri app with its tray icon. The live
//! tray, notifications and settings grow here; the logic lives in the
//! `lockwatch` library.

use tauri::menu::{Menu, MenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{Manager, RunEvent};

/// The icon shown before anything is known.
const UNKNOWN_ICON: &[u8] = include_bytes!("../../icons/state-unknown.png");

/// Builds and runs the app until Quit.
pub fn run() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("LOCKWATCH_LOG").unwrap_or_else(|_| "info".into()))
        .init();
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_store::Builder::default().build())
        .setup(|app| {
            let status = MenuItem::with_id(app, "status", "lockwatch: starting…", false, None::<&str>)?;
            let quit = MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?;
            let menu = Menu::with_items(app, &[&status, &quit])?;
            TrayIconBuilder::with_id("lockwatch")
                .icon(tauri::image::Image::from_bytes(UNKNOWN_ICON)?)
                .menu(&menu)
                .on_menu_event(|app, event| {
                    if event.id() == "quit" {
                        app.exit(0);
                    }
                })
                .build(app)?;
            let _ = app.handle().get_webview_window("dashboard");
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
        if let RunEvent::ExitRequested { code: None, api, .. } = event {
            api.prevent_exit();
        }
    });
}

/// Shows a desktop notification; a desktop without a notification daemon
/// gets a log line instead.
pub fn notify(summary: &str, body: &str) {
    if let Err(err) = notify_rust::Notification::new().appname("lockwatch").summary(summary).body(body).show() {
        tracing::warn!(error = %err, "no notification daemon; notification not shown");
    }
}
