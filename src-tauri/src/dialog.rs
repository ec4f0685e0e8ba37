//! The small "switch off" window: when the last supervisor with a job on
//! unticks it in the tray, they may say why before it stops everywhere.
//! A window of its own that blocks nothing; the flip happens when they
//! answer (`set_enabled` with the reason), and closing it keeps the job on.
//! Like the dashboard, it is a web view, so it lives in the dashboard's
//! process ([`window`](crate::window)): the tray asks for the view
//! `off?job=NAME`, and the flip made there is told back to the tray.

use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

use crate::state::AppState;

pub const LABEL: &str = "switch-off";

/// The view that asks why `job` is switched off.
const VIEW: &str = "off?job=";

/// Asks, from the tray, why `job` is switched off.
pub fn ask_reason(app: &AppHandle, job: &str) {
    crate::window::open(app, &format!("{VIEW}{}", query_escaped(job)));
}

/// In the dashboard's process: shows the window for `view` when it is the
/// one asking why (true), or leaves `view` to the dashboard (false).
pub fn show(app: &AppHandle, view: &str) -> bool {
    let Some(job) = view.strip_prefix(VIEW) else { return false };
    let title = {
        let state = app.state::<AppState>();
        let tr = state.lock().tr();
        tr.ta("dialog-off-title", &[("job", lockwatch::spec::percent_decode(job).into())])
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

/// `text` safe in a URL's query (job names are few characters, but may hold `:`).
fn query_escaped(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_name_travels_in_the_url_intact() {
        assert_eq!(query_escaped("outbound"), "outbound");
        assert_eq!(query_escaped("wh:a b&c"), "wh%3Aa%20b%26c");
        assert_eq!(query_escaped("出"), "%E5%87%BA");
        for job in ["outbound", "wh:a b&c", "出库", "100%"] {
            assert_eq!(lockwatch::spec::percent_decode(&query_escaped(job)), job);
        }
        assert_eq!(lockwatch::spec::percent_decode("50%zz"), "50%zz");
    }
}
