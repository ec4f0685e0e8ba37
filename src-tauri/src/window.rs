//! The dashboard window: created when opened, destroyed when closed.

use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

pub const WINDOW: &str = "dashboard";

/// Opens (or focuses) the dashboard on `view` (`live` or `settings`).
pub fn open(app: &AppHandle, view: &str) {
    if let Some(window) = app.get_webview_window(WINDOW) {
        let _ = window.eval(format!("location.hash = '#{view}'"));
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
    }
}
