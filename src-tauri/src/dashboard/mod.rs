//! The dashboard's process (`lockwatch-tray --dashboard=<view>`): a Tauri
//! app with one web page, started by the tray's process and ended with its
//! window (see [`crate::link`] for why, and for how the two talk). It
//! watches the same jobs as the tray, answers the page's commands and hands
//! the page each status and event; the tray's process notifies.
//!
//! # Layout
//! - [`window`]: the windows and the view each shows.
//! - [`commands`]: the page's thin Tauri commands.
//! - [`page`]: what the page is handed, typed.
//! - [`test_connection`]: "Test connection" in Settings.

pub mod commands;
pub mod page;
pub mod test_connection;
pub mod window;

use std::sync::Mutex;

use lockwatch::Event;
use tauri::{AppHandle, Emitter, Manager};

use crate::core::desk::{Desk, Surface};
use crate::core::i18n::Lang;
use crate::core::notes::NoteAction;
use crate::core::settings::Overrides;
use crate::core::state::{AppState, JobState};
use crate::core::{logging, runtime, watchers};
use crate::link::{self, Message, View};
use crate::store;
use page::{InEffect, LiveJob};
use window::Views;

/// The page, as the core sees it: it is handed each status and event, and
/// what took effect of the settings when that changes.
struct Page {
    app: AppHandle,
    /// What took effect, as last handed to the page.
    in_effect: Mutex<Option<InEffect>>,
}

impl Page {
    fn emit(&self, name: &str, payload: impl serde::Serialize + Clone) {
        if let Err(err) = self.app.emit(name, payload) {
            tracing::warn!(error = %err, name, "cannot hand this to the page");
        }
    }
}

impl Surface for Page {
    /// The page draws what it is handed; of the app state it shows beyond
    /// the jobs, what took effect of the settings is handed when it changed.
    fn redraw(&self, desk: &Desk) {
        let now = InEffect::of(&desk.state().lock());
        let mut shown = self.in_effect.lock().unwrap_or_else(|p| p.into_inner());
        if shown.as_ref() != Some(&now) {
            self.emit("in_effect", now.clone());
            *shown = Some(now);
        }
    }

    fn status(&self, _: &Desk, job: &JobState, user: &str) {
        self.emit("status", LiveJob::of(job, user));
    }

    fn event(&self, _: &Desk, event: &Event) {
        self.emit("event", event);
    }

    fn open(&self, desk: &Desk, view: View) {
        let (app, desk) = (self.app.clone(), desk.clone());
        let _ = self.app.run_on_main_thread(move || window::show(&app, &desk, view));
    }

    /// A refused write's note has no button; a click on it does nothing here.
    fn on_note(&self, _: &Desk, _: NoteAction) {}

    fn tell_tray(&self, message: &Message) -> bool {
        link::pipe::tell_tray(message)
    }
}

/// Runs the dashboard on `view` until its window closes or the tray app goes.
pub fn run(view: View) {
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
            commands::view,
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
            let desktop_lang = Lang::of_desktop(|name| std::env::var(name).ok());
            let state = AppState::new(settings, Overrides::from_env(), desktop_lang);
            let page = Page { app: app.handle().clone(), in_effect: Mutex::default() };
            let desk = Desk::new(state, store::File(app.handle().clone()), page);
            app.manage(desk.clone());
            app.manage(Views::default());
            serve(app.handle(), &desk, view);
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
fn serve(app: &AppHandle, desk: &Desk, view: View) {
    window::show(app, desk, view);
    let (app, desk) = (app.clone(), desk.clone());
    std::thread::spawn(move || {
        for message in link::pipe::from_tray() {
            if let Message::Show(view) = message {
                let (handle, desk) = (app.clone(), desk.clone());
                let _ = app.run_on_main_thread(move || window::show(&handle, &desk, view));
            }
        }
        // The tray app exited (or was killed): so does its dashboard.
        app.exit(0);
    });
}
