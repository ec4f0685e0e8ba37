//! The dashboard's process (`lockwatch-tray --dashboard=<view>`): a Tauri
//! app with one web page, started by the tray's process and ended with its window (see
//! [`crate::link`] for why, and for how the two talk). It watches the same
//! jobs as the tray, answers the page's commands ([`crate::commands`]) and
//! hands the page each status and event.

use tauri::{AppHandle, Emitter, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::desk::{Desk, Surface};
use crate::link::{self, Message};
use crate::model::NoteAction;
use crate::settings::Overrides;
use crate::state::AppState;
use crate::{commands, dialog, i18n, logging, runtime, store, watchers};

/// The dashboard window's label.
pub const WINDOW: &str = "dashboard";

/// The page, as the shared modules see it.
struct Page(AppHandle);

impl Surface for Page {
    fn redraw(&self, _: &Desk) {}

    fn emit(&self, name: &str, payload: serde_json::Value) {
        let _ = self.0.emit(name, payload);
    }

    fn open(&self, desk: &Desk, view: &str) {
        let (app, desk, view) = (self.0.clone(), desk.clone(), view.to_owned());
        let _ = self.0.run_on_main_thread(move || show(&app, &desk, &view));
    }

    fn notifies(&self) -> bool {
        false
    }

    /// Never called: this process shows no notifications.
    fn on_note(&self, _: &Desk, _: NoteAction) {}

    fn tell_tray(&self, message: &Message) -> bool {
        link::tell_tray(message)
    }
}

/// Runs the dashboard on `view` until its window closes or the tray app goes.
pub fn run(view: String) {
    match runtime::start() {
        Ok(handle) => tauri::async_runtime::set(handle),
        Err(err) => {
            eprintln!("lockwatch-tray: the dashboard cannot start: {err}");
            std::process::exit(1);
        }
    }
    let app = tauri::Builder::default()
        .plugin(tauri_plugin_store::Builder::default().build())
        .invoke_handler(tauri::generate_handler![
            commands::get_state,
            commands::set_enabled,
            commands::close_dialog,
            commands::fit_dialog,
            commands::save_settings,
            commands::test_notification,
            commands::validate_settings,
            commands::test_connection,
            commands::history,
            commands::page_texts
        ])
        .setup(move |app| {
            logging::init(app.path().app_log_dir().ok());
            let (settings, _) = store::load(app.handle());
            let desktop_lang = i18n::Lang::of_desktop(|name| std::env::var(name).ok());
            let state = AppState::new(settings, Overrides::from_env(), desktop_lang);
            let desk = Desk::new(state, app.handle().clone(), Page(app.handle().clone()));
            app.manage(desk.clone());
            serve(app.handle(), &desk, &view);
            runtime::spawn(async move { watchers::restart(&desk) });
            Ok(())
        })
        .build(crate::context());
    match app {
        // The process ends with its last window (Tauri's default).
        Ok(app) => app.run(|_, _| {}),
        Err(err) => {
            eprintln!("lockwatch-tray: the dashboard cannot start: {err}");
            std::process::exit(1);
        }
    }
}

/// The window on `view`, and the tray's word on stdin (a view to show; the
/// end of it closes the dashboard).
fn serve(app: &AppHandle, desk: &Desk, view: &str) {
    show(app, desk, view);
    let (app, desk) = (app.clone(), desk.clone());
    std::thread::spawn(move || {
        for message in link::from_tray() {
            if let Message::Show(view) = message {
                let (handle, desk) = (app.clone(), desk.clone());
                let _ = app.run_on_main_thread(move || show(&handle, &desk, &view));
            }
        }
        // The tray app exited (or was killed): so does its dashboard.
        app.exit(0);
    });
}

/// Shows the window on `view`, creating it when there is none; the view
/// asking why a job is switched off has a small window of its own.
fn show(app: &AppHandle, desk: &Desk, view: &str) {
    if dialog::show(app, desk, view) {
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
