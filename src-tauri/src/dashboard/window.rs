//! The dashboard's windows and the view each shows. The dashboard window
//! shows the live jobs, their history or the settings; the small
//! "switch off" window asks the last supervisor with a job on why she
//! switches it off (a window of its own that blocks nothing; the flip
//! happens when she answers, and closing it keeps the job on). Each window's
//! page asks for its [`View`] when it loads (the `view` command) and is
//! handed every later one as a `view` event of its own.

use std::collections::HashMap;
use std::sync::Mutex;

use tauri::{AppHandle, Emitter, EventTarget, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::core::desk::Desk;
use crate::link::View;

/// The dashboard window's label.
pub const DASHBOARD: &str = "dashboard";
/// The switch-off window's label.
pub const SWITCH_OFF: &str = "switch-off";

/// The view each window shows, by its label.
#[derive(Default)]
pub struct Views(Mutex<HashMap<String, View>>);

impl Views {
    /// The view of the window `label` (the live one before any was asked for).
    pub fn of(&self, label: &str) -> View {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).get(label).cloned().unwrap_or_default()
    }

    fn set(&self, label: &str, view: &View) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(label.to_owned(), view.clone());
    }
}

/// Shows `view` in its window, creating the window when there is none;
/// on the main thread.
pub fn show(app: &AppHandle, desk: &Desk, view: View) {
    let (label, title) = match &view {
        View::SwitchOff { job } => {
            (SWITCH_OFF, desk.state().lock().tr().ta("dialog-off-title", &[("job", job.as_str().into())]))
        }
        _ => (DASHBOARD, "lockwatch".to_owned()),
    };
    match app.try_state::<Views>() {
        Some(views) => views.set(label, &view),
        None => tracing::error!("the dashboard keeps no views; the window shows the live one"),
    }
    if let Some(window) = app.get_webview_window(label) {
        if let Err(err) = app.emit_to(EventTarget::webview_window(label), "view", &view) {
            tracing::warn!(error = %err, "cannot hand the page its view");
        }
        let _ = window.set_title(&title);
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
        return;
    }
    let builder = WebviewWindowBuilder::new(app, label, WebviewUrl::App("index.html".into())).title(title);
    let built = match view {
        View::SwitchOff { .. } => builder.inner_size(480.0, 240.0).resizable(false).build(),
        _ => builder.inner_size(960.0, 680.0).min_inner_size(560.0, 420.0).build(),
    };
    if let Err(err) = built {
        tracing::error!(error = %err, label, "cannot open the window");
        if label == DASHBOARD {
            app.exit(1);
        }
    }
}
