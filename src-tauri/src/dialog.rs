//! The small "switch off" window: when the last supervisor with a job on
//! unticks it in the tray, they may say why before it stops everywhere.
//! A window of its own that blocks nothing; the flip happens when they
//! answer (`set_enabled` with the reason), and closing it keeps the job on.

use tauri::{AppHandle, Manager, WebviewUrl, WebviewWindowBuilder};

pub const LABEL: &str = "switch-off";

/// Opens the window asking why `job` is switched off (or brings it to
/// `job`), titled `title`. Safe from any thread.
pub fn ask_reason(app: &AppHandle, job: &str, title: String) {
    let path = format!("index.html#off?job={}", query_escaped(job));
    let handle = app.clone();
    let opened = app.run_on_main_thread(move || {
        if let Some(window) = handle.get_webview_window(LABEL) {
            let _ = window.eval(format!("location.hash = {:?}; location.reload()", &path["index.html".len()..]));
            let _ = window.set_title(&title);
            let _ = window.show();
            let _ = window.set_focus();
            return;
        }
        let built = WebviewWindowBuilder::new(&handle, LABEL, WebviewUrl::App(path.into()))
            .title(title)
            .inner_size(480.0, 240.0)
            .resizable(false)
            .build();
        if let Err(err) = built {
            tracing::error!(error = %err, "cannot open the switch-off window");
        }
    });
    if let Err(err) = opened {
        tracing::warn!(error = %err, "cannot open the switch-off window");
    }
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
    }
}
