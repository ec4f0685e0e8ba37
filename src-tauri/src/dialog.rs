//! The small "switch off" window: when the last supervisor with a job on
//! unticks it in the tray, they may say why before it stops everywhere.
//! A window of its own that blocks nothing; the flip happens when they
//! answer (`set_enabled` with the reason), and closing it keeps the job on.
//! Like the dashboard, it is a web view, so it lives in the dashboard's
//! process ([`link`](crate::link)): the tray asks for the view
//! [`link::switch_off_view`](crate::link::switch_off_view), and the flip
//! made there is told back to the tray.

use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::desk::Desk;
use crate::link::SWITCH_OFF;

pub const LABEL: &str = "switch-off";

/// Shows the window for `view` when it is the one asking why (true), or
/// leaves `view` to the dashboard (false).
pub fn show(app: &AppHandle, desk: &Desk, view: &str) -> bool {
    let Some(job) = view.strip_prefix(SWITCH_OFF) else { return false };
    let title = {
        let tr = desk.state().lock().tr();
        tr.ta("dialog-off-title", &[("job", lockwatch::address::percent_decode(job).into())])
    };
    let path = format!("index.html#{view}");
    if let Some(window) = app.get_webview_window(LABEL) {
        let _ = window.eval(format!("location.hash = {:?}; location.reload()", &path["index.html".len()..]));
        let _ = window.set_title(&title);
        let _ = window.show();
        let _ = window.set_focus();
        return true;
    }
    let built = WebviewWindowBuilder::new(app, LABEL, WebviewUrl::App(path.into()))
        .title(title)
        .inner_size(480.0, 240.0)
        .resizable(false)
        .build();
    if let Err(err) = built {
        tracing::error!(error = %err, "cannot open the switch-off window");
    }
    true
}
